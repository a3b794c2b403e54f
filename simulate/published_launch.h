// What a published launch implies for how its implementation ran: the host's issue of the kernels
// (eager from Python or CUDA graphs), the gradient path (DistributedFusedLAMB sharded by node,
// Samsung's overlapped per-bucket clipping, NVIDIA's flat allreduce after backward), the shapes
// the kernels run on (padding, packing), the load balancing, the optimizer and the read-backs a
// step makes, each with where it came from.
//
// Design choice: derived once, by derive_launch, from what the result folder states (the launch
// line its logs echo, the MLLOG records, system.json); the readers of a published result
// (cluster_from_result, simulation_options_for) ask this value and never combine flags themselves.
#pragma once

#include <string>

#include "harness/config/system_config.h"

namespace mlbert::simulate {

struct PublishedResult;

// What a derived property comes from.
enum class Basis {
  launch_flag,         // a flag of the launch line the logs echo
  mllog,               // an MLLOG record of the logs
  system_description,  // a field of system.json
  reference_launch,    // NVIDIA's reference launch, taken where the logs echo no flag
  unstated,            // nothing the folder states: the simulator's default
};

// A property's value, what kind of statement gave it and which one ("--use_cuda_graph",
// "d_batch_size", "framework"; empty when unstated).
template <typename T>
struct Derived {
  T value{};
  Basis basis = Basis::unstated;
  std::string source;
};

// How the host issues a step's kernels.
enum class HostIssue {
  cpp_launches,  // no framework stated: mlbert's own launches from C++
  eager_python,  // an eager framework (PyTorch): one op at a time from Python
  cuda_graphs,   // the step replayed from CUDA graphs: no host issue per kernel
};

// How the gradients are reduced, and which passes the implementation makes over them.
enum class GradientPath {
  mlbert_buckets,    // nothing stated: mlbert's overlapped f32 buckets
  distributed_lamb,  // apex DistributedFusedLAMB: fp16, after backward, optimizer sharded by node
  // Samsung's own code (--local_gradient_clip without --baseline): DDP allreduces 25 MiB fp16
  // buckets as backward fills them, a comm hook norming and scaling each first.
  ddp_bucket_clipping,
  // NVIDIA's --allreduce_post_accumulation: the whole gradient in one allreduce after backward.
  post_accumulation_allreduce,
};

// The shapes the kernels run on.
enum class Shapes {
  unpadded,      // the real tokens of each sequence
  padded,        // sequences x max_seq_length tokens, attention on the real lengths (--pad_fmha)
  fully_padded,  // attention on the padded length too: a model that never removes the padding
  packed,        // rows of max_seq_length tokens holding several samples, attention on real lengths
};

// What a step's host does beyond issuing kernels where it issues them eagerly (CUDA graphs replay
// a step with none of it): read-backs, each emptying the GPU's queue, the host work beside them
// and a buffer broadcast.
struct HostReadBacks {
  Derived<int> before_encoder;     // unpadding's read-backs (kUnpadReadBacks)
  Derived<int> before_heads;       // the dense sequence output's (kDenseSeqOutputReadBacks)
  Derived<bool> per_bucket_hook;   // Samsung's DDP comm hook: one per gradient bucket
  Derived<bool> loss_scaler;       // apex amp's scaler after backward, then per-tensor host loops
  Derived<bool> buffer_broadcast;  // DDP broadcasting the FMHA layers' QKV buffers before forward
};

struct PublishedLaunch {
  // The logs echo no launch flag and the framework is PyTorch: NVIDIA's reference launch
  // (kReferenceLaunchFlags) is taken, which the PyTorch submissions derive from.
  Derived<bool> reference_launch;
  Derived<HostIssue> host_issue;
  Derived<GradientPath> gradient_path;
  // On the post_accumulation_allreduce path only: the allreduce in fp16, and the local gradient's
  // norm and scaling before it (--local_gradient_clip with --baseline).
  bool fp16_allreduce = false;
  bool clip_before_allreduce = false;
  Derived<Shapes> shapes;
  int packing = 1;  // samples per packed row (Shapes::packed), else 1
  Derived<harness::LoadBalancing> load_balancing;
  Derived<harness::OptimizerKind> optimizer;
  HostReadBacks read_backs;

  // Samsung's path clips each bucket before its allreduce; every other clips after it.
  harness::ClippingMode clipping() const {
    return gradient_path.value == GradientPath::ddp_bucket_clipping
               ? harness::ClippingMode::bucket_before_allreduce
               : harness::ClippingMode::after_allreduce;
  }
  bool padded() const { return shapes.value != Shapes::unpadded; }
};

// The launch `result` states: its launch_line, framework, opt_name, and d_batch_size over its
// global batch and system.json's GPUs (packing). read_published_result sets result.launch to it.
PublishedLaunch derive_launch(const PublishedResult& result);

}  // namespace mlbert::simulate
