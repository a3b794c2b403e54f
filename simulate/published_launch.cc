// Deriving what a published launch implies (see published_launch.h).
#include "simulate/published_launch.h"

#include <algorithm>

#include "simulate/constants.h"
#include "simulate/profile.h"
#include "simulate/results.h"
#include "simulate/simulator.h"
#include "simulate/system_fields.h"

namespace mlbert::simulate {
namespace {

using harness::LoadBalancing;

// Samples per packed row: the samples each GPU trains per micro-step over the logged d_batch_size
// (rows), when that is a whole number from 2 to kMaxPacking; 1 otherwise (the shape undetermined,
// no d_batch_size, or rows that are samples).
int packing_factor(const PublishedResult& r) {
  if (!r.device_batch_size || *r.device_batch_size < 1 || r.global_batch_size < 1) return 1;
  std::int64_t world = 0;
  try {
    world = static_cast<std::int64_t>(positive_count(r.system, "number_of_nodes", r.system_file)) *
            positive_count(r.system, "accelerators_per_node", r.system_file);
  } catch (const std::invalid_argument&) {
    return 1;  // cluster_from_result names the field
  }
  // rows = world x accumulation x d_batch_size, refused once past the batch (no overflow).
  const std::int64_t gbs = r.global_batch_size, accumulation = std::max(1, r.gradient_accumulation);
  std::int64_t rows = *r.device_batch_size;
  if (rows > gbs / accumulation) return 1;
  rows *= accumulation;
  if (rows > gbs / world) return 1;
  rows *= world;
  if (gbs % rows != 0) return 1;
  const std::int64_t packing = gbs / rows;
  return packing <= kMaxPacking ? static_cast<int>(packing) : 1;
}

// Frameworks whose ops a Python program issues one by one (eager execution).
bool eager_framework(const std::string& framework) {
  return ascii_lower(framework).find("pytorch") != std::string::npos;
}

// No flag of a launch line (the logs of most submissions echo none, or only the container's
// `docker exec --env=...`): a PyTorch run is taken to be NVIDIA's reference launch.
Derived<bool> reference_launch(const PublishedResult& r) {
  if (!r.launch_line.flags.empty()) return {false, Basis::launch_flag, r.launch_line.flags.front()};
  return {eager_framework(r.framework), Basis::system_description, "framework"};
}

// NVIDIA's packed configs, all but two, replay CUDA graphs: so does a packed reference launch.
Derived<HostIssue> host_issue(const PublishedResult& r, const PublishedLaunch& l) {
  if (r.launch_line.use_cuda_graph)
    return {HostIssue::cuda_graphs, Basis::launch_flag, "--use_cuda_graph"};
  if (l.packing > 1 && l.reference_launch.value)
    return {HostIssue::cuda_graphs, Basis::reference_launch, "d_batch_size"};
  if (eager_framework(r.framework))
    return {HostIssue::eager_python, Basis::system_description, "framework"};
  return {HostIssue::cpp_launches, Basis::unstated, ""};
}

Derived<GradientPath> gradient_path(const LaunchLine& line, const PublishedLaunch& l) {
  if (line.distributed_lamb)
    return {GradientPath::distributed_lamb, Basis::launch_flag, "--distributed_lamb"};
  if (l.reference_launch.value)
    return {GradientPath::distributed_lamb, Basis::reference_launch, kReferenceLaunchFlags};
  // Samsung's line carries --allreduce_post_accumulation too; only --baseline takes that path.
  if (line.local_gradient_clip && !line.baseline)
    return {GradientPath::ddp_bucket_clipping, Basis::launch_flag, "--local_gradient_clip"};
  if (line.allreduce_post_accumulation)
    return {GradientPath::post_accumulation_allreduce, Basis::launch_flag,
            "--allreduce_post_accumulation"};
  return {GradientPath::mlbert_buckets, Basis::unstated, ""};
}

// Packed samples come in rows of max_seq_length tokens (the kernels run on the rows, padded);
// NVIDIA's run_pretraining.py pads every sequence to max_seq_length unless told otherwise.
Derived<Shapes> shapes(const LaunchLine& line, int packing) {
  if (packing > 1) return {Shapes::packed, Basis::mllog, "d_batch_size"};
  if (line.nvidia_run_pretraining && !line.unpad && !line.pad_fmha && !line.packed_samples)
    return {Shapes::fully_padded, Basis::launch_flag, "run_pretraining.py"};
  if (line.pad_fmha) return {Shapes::padded, Basis::launch_flag, "--pad_fmha"};
  if (line.unpad)
    return {Shapes::unpadded, Basis::launch_flag, line.unpad_fmha ? "--unpad_fmha" : "--unpad"};
  return {Shapes::unpadded, Basis::unstated, ""};
}

// A padded model's ranks all do the same work, and packing evens the rows: neither exchanges.
Derived<LoadBalancing> load_balancing(const LaunchLine& line, const Derived<Shapes>& shapes) {
  if (line.group_exchange_padding)
    return {LoadBalancing::node_exchange, Basis::launch_flag, "--group_exchange_padding"};
  if (line.exchange_padding)
    return {LoadBalancing::global_exchange, Basis::launch_flag, "--exchange_padding"};
  if (shapes.value == Shapes::fully_padded || shapes.value == Shapes::packed)
    return {LoadBalancing::none, shapes.basis, shapes.source};
  return {LoadBalancing::global_exchange, Basis::unstated, ""};
}

Derived<harness::OptimizerKind> optimizer(const PublishedResult& r) {
  if (r.opt_name)
    return {ascii_lower(*r.opt_name).find("adam") != std::string::npos
                ? harness::OptimizerKind::adamw
                : harness::OptimizerKind::lamb,
            Basis::mllog, "opt_name"};
  if (r.launch_line.adam) return {harness::OptimizerKind::adamw, Basis::launch_flag, "--optimizer"};
  return {harness::OptimizerKind::lamb, Basis::unstated, ""};
}

// The read-backs of an eagerly issued step: unpadding's and the dense sequence output's for every
// such launch; Samsung's DDP path adds its hook per bucket, amp's loss scaler and DDP's buffer
// broadcast.
HostReadBacks read_backs(const LaunchLine& line, const PublishedLaunch& l) {
  HostReadBacks b;
  if (l.host_issue.value != HostIssue::eager_python) {
    for (Derived<int>* count : {&b.before_encoder, &b.before_heads})
      *count = {0, l.host_issue.basis, l.host_issue.source};
    for (Derived<bool>* on : {&b.per_bucket_hook, &b.loss_scaler, &b.buffer_broadcast})
      *on = {false, l.host_issue.basis, l.host_issue.source};
    return b;
  }
  if (line.unpad)
    b.before_encoder = {kUnpadReadBacks, Basis::launch_flag,
                        line.unpad_fmha ? "--unpad_fmha" : "--unpad"};
  if (line.dense_seq_output)
    b.before_heads = {kDenseSeqOutputReadBacks, Basis::launch_flag, "--dense_seq_output"};
  if (l.gradient_path.value != GradientPath::ddp_bucket_clipping) return b;
  b.per_bucket_hook = {true, l.gradient_path.basis, l.gradient_path.source};
  if (line.use_apex_amp) b.loss_scaler = {true, Basis::launch_flag, "--use_apex_amp"};
  if (line.unpad_fmha) b.buffer_broadcast = {true, Basis::launch_flag, "--unpad_fmha"};
  return b;
}

}  // namespace

PublishedLaunch derive_launch(const PublishedResult& r) {
  const LaunchLine& line = r.launch_line;
  PublishedLaunch l;
  l.packing = packing_factor(r);
  l.reference_launch = reference_launch(r);
  l.host_issue = host_issue(r, l);
  l.gradient_path = gradient_path(line, l);
  const bool flat = l.gradient_path.value == GradientPath::post_accumulation_allreduce;
  l.fp16_allreduce = flat && line.allreduce_post_accumulation_fp16;
  l.clip_before_allreduce = flat && line.local_gradient_clip;
  l.shapes = shapes(line, l.packing);
  l.load_balancing = load_balancing(line, l.shapes);
  l.optimizer = optimizer(r);
  l.read_backs = read_backs(line, l);
  return l;
}

}  // namespace mlbert::simulate
