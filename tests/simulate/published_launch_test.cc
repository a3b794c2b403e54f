// What a published launch implies (derive_launch): each derived property from a statement of the
// result folder that sets it and one that does not, and where the value came from.
#include <catch2/catch.hpp>

#include <fstream>

#include "simulate/constants.h"
#include "simulate/published_launch.h"
#include "simulate/results.h"
#include "tests/common/process_temp_dir.h"

namespace {

using mlbert::harness::ClippingMode;
using mlbert::harness::LoadBalancing;
using mlbert::harness::OptimizerKind;
using namespace mlbert::simulate;

constexpr const char* kPytorch = "PyTorch NVIDIA Release 21.09";

// A result whose log echoes `launch` (a command line, or nothing) and whose system.json names
// `framework`, its launch derived; 2 nodes x 8 GPUs at GBS 64 (4 samples per GPU), with
// `rows` as its d_batch_size when given.
PublishedResult launched(const std::string& launch, const std::string& framework = kPytorch,
                         std::optional<std::int64_t> rows = std::nullopt) {
  static const mlbert::test::ProcessTempDir dir("mlbert_published_launch_test_");
  std::filesystem::create_directories(dir.path);
  const auto log = dir.path / "result_0.txt";
  std::ofstream(log) << launch << "\n";
  PublishedResult r;
  r.system = {{"number_of_nodes", "2"}, {"accelerators_per_node", "8"}};
  r.global_batch_size = 64;
  r.device_batch_size = rows;
  r.framework = framework;
  r.launch_line = read_launch_line(log);
  r.launch = derive_launch(r);
  return r;
}

// The read-backs of an eager PyTorch step whose launch line passes `flags`.
HostReadBacks read_backs_of(const std::string& flags) {
  return launched("python train.py " + flags).launch.read_backs;
}

}  // namespace

TEST_CASE("a PyTorch result whose logs echo no launch flag is NVIDIA's reference launch",
          "[simulate][launch]") {
  for (const std::string launch : {"", "+ docker exec -it --env=BATCHSIZE bert"}) {
    INFO(launch);
    const auto reference = launched(launch).launch.reference_launch;
    CHECK(reference.value);
    CHECK(reference.basis == Basis::system_description);
    CHECK(reference.source == "framework");
  }
  // A flag of its own, or a framework NVIDIA's PyTorch launch says nothing of: not it.
  const auto own = launched("python train.py --unpad").launch.reference_launch;
  CHECK_FALSE(own.value);
  CHECK(own.basis == Basis::launch_flag);
  CHECK(own.source == "--unpad");
  CHECK_FALSE(launched("", "MXNet NVIDIA Release 21.09").launch.reference_launch.value);
}

TEST_CASE("the host issues kernels from CUDA graphs, eagerly from PyTorch, or from C++",
          "[simulate][launch]") {
  const auto graphs = launched("python train.py --use_cuda_graph").launch.host_issue;
  CHECK(graphs.value == HostIssue::cuda_graphs);
  CHECK(graphs.basis == Basis::launch_flag);
  CHECK(graphs.source == "--use_cuda_graph");
  // Packed rows under the reference launch: NVIDIA's packed configs replay CUDA graphs.
  const auto packed_reference = launched("", kPytorch, 2).launch.host_issue;
  CHECK(packed_reference.value == HostIssue::cuda_graphs);
  CHECK(packed_reference.basis == Basis::reference_launch);
  CHECK(packed_reference.source == "d_batch_size");
  // Packed rows on a launch line of its own, or unpacked under the reference launch: eager.
  CHECK(launched("python train.py --unpad", kPytorch, 2).launch.host_issue.value ==
        HostIssue::eager_python);
  const auto eager = launched("").launch.host_issue;
  CHECK(eager.value == HostIssue::eager_python);
  CHECK(eager.basis == Basis::system_description);
  const auto cpp = launched("python train.py --unpad", "").launch.host_issue;
  CHECK(cpp.value == HostIssue::cpp_launches);
  CHECK(cpp.basis == Basis::unstated);
}

TEST_CASE("the gradient path: sharded LAMB, Samsung's clipped DDP buckets, a flat allreduce",
          "[simulate][launch]") {
  const auto path = [](const std::string& flags) {
    return launched("python train.py " + flags).launch;
  };
  const std::string flat = " --allreduce_post_accumulation";
  const auto lamb = path("--distributed_lamb --local_gradient_clip" + flat).gradient_path;
  CHECK(lamb.value == GradientPath::distributed_lamb);
  CHECK(lamb.basis == Basis::launch_flag);
  const auto reference = launched("").launch.gradient_path;
  CHECK(reference.value == GradientPath::distributed_lamb);
  CHECK(reference.basis == Basis::reference_launch);
  CHECK(reference.source == kReferenceLaunchFlags);
  // Samsung's line carries --allreduce_post_accumulation too; only --baseline takes it.
  const PublishedLaunch samsung = path("--local_gradient_clip" + flat);
  CHECK(samsung.gradient_path.value == GradientPath::ddp_bucket_clipping);
  CHECK(samsung.gradient_path.source == "--local_gradient_clip");
  CHECK(samsung.clipping() == ClippingMode::bucket_before_allreduce);
  CHECK_FALSE(samsung.clip_before_allreduce);
  const PublishedLaunch baseline = path("--local_gradient_clip --baseline" + flat);
  CHECK(baseline.gradient_path.value == GradientPath::post_accumulation_allreduce);
  CHECK(baseline.clipping() == ClippingMode::after_allreduce);
  CHECK(baseline.clip_before_allreduce);
  CHECK_FALSE(baseline.fp16_allreduce);
  const PublishedLaunch fp16 = path(flat + " --allreduce_post_accumulation_fp16");
  CHECK(fp16.gradient_path.value == GradientPath::post_accumulation_allreduce);
  CHECK(fp16.fp16_allreduce);
  CHECK_FALSE(fp16.clip_before_allreduce);
  // The flat path's qualifiers belong to it alone.
  CHECK_FALSE(path("--distributed_lamb --allreduce_post_accumulation_fp16").fp16_allreduce);
  const auto unstated = path("--unpad").gradient_path;
  CHECK(unstated.value == GradientPath::mlbert_buckets);
  CHECK(unstated.basis == Basis::unstated);
  CHECK(path("--unpad").clipping() == ClippingMode::after_allreduce);
}

TEST_CASE("the kernels' shapes: packed rows, padding kept or static, or the real tokens",
          "[simulate][launch]") {
  // d_batch_size 2 rows for 4 samples per GPU: 2 per row.
  const PublishedLaunch packed = launched("python train.py --unpad", kPytorch, 2).launch;
  CHECK(packed.shapes.value == Shapes::packed);
  CHECK(packed.shapes.basis == Basis::mllog);
  CHECK(packed.packing == 2);
  CHECK(packed.padded());
  // Rows that are the samples, or that do not divide them: not packed.
  for (const std::int64_t rows : {4, 3}) {
    const PublishedLaunch unpacked = launched("python train.py --unpad", kPytorch, rows).launch;
    CHECK(unpacked.shapes.value == Shapes::unpadded);
    CHECK(unpacked.packing == 1);
  }
  // NVIDIA's run_pretraining.py never removes the padding unless told to.
  const std::string nvidia = "python run_pretraining.py --train_batch_size=20 --fused_mha";
  const auto full = launched(nvidia).launch.shapes;
  CHECK(full.value == Shapes::fully_padded);
  CHECK(full.basis == Basis::launch_flag);
  CHECK(launched(nvidia + " --unpad").launch.shapes.value == Shapes::unpadded);
  CHECK(launched(nvidia + " --packed_samples").launch.shapes.value == Shapes::unpadded);
  CHECK(launched("python train.py --train_batch_size=20").launch.shapes.value == Shapes::unpadded);
  const PublishedLaunch padded = launched(nvidia + " --pad_fmha").launch;
  CHECK(padded.shapes.value == Shapes::padded);
  CHECK(padded.shapes.source == "--pad_fmha");
  CHECK(padded.padded());
  const PublishedLaunch real = launched("python train.py --unpad_fmha").launch;
  CHECK(real.shapes.source == "--unpad_fmha");
  CHECK_FALSE(real.padded());
}

TEST_CASE("the load balancing: as the launch line states it, none for padded or packed shapes",
          "[simulate][launch]") {
  const auto balancing = [](const std::string& launch, std::optional<std::int64_t> rows = {}) {
    return launched(launch, kPytorch, rows).launch.load_balancing;
  };
  const auto node = balancing("python train.py --group_exchange_padding --exchange_padding");
  CHECK(node.value == LoadBalancing::node_exchange);
  CHECK(node.source == "--group_exchange_padding");
  const auto global = balancing("python train.py --exchange_padding");
  CHECK(global.value == LoadBalancing::global_exchange);
  CHECK(global.basis == Basis::launch_flag);
  const auto padded = balancing("python run_pretraining.py --train_batch_size=20");
  CHECK(padded.value == LoadBalancing::none);
  CHECK(padded.basis == Basis::launch_flag);
  const auto packed = balancing("python train.py --unpad", 2);
  CHECK(packed.value == LoadBalancing::none);
  CHECK(packed.basis == Basis::mllog);
  CHECK(balancing("python train.py --exchange_padding", 2).value == LoadBalancing::global_exchange);
  const auto assumed = balancing("python train.py --unpad");
  CHECK(assumed.value == LoadBalancing::global_exchange);
  CHECK(assumed.basis == Basis::unstated);
}

TEST_CASE("the optimizer: MLLOG opt_name, else an Adam on the launch line, else LAMB assumed",
          "[simulate][launch]") {
  PublishedResult r = launched("python train.py --optimizer=FusedAdam");
  CHECK(r.launch.optimizer.value == OptimizerKind::adamw);
  CHECK(r.launch.optimizer.basis == Basis::launch_flag);
  r.opt_name = "LAMB";
  r.launch = derive_launch(r);
  CHECK(r.launch.optimizer.value == OptimizerKind::lamb);
  CHECK(r.launch.optimizer.basis == Basis::mllog);
  r = launched("python train.py --optimizer=lamb");
  CHECK(r.launch.optimizer.value == OptimizerKind::lamb);
  CHECK(r.launch.optimizer.basis == Basis::unstated);
  r.opt_name = "adamw";
  r.launch = derive_launch(r);
  CHECK(r.launch.optimizer.value == OptimizerKind::adamw);
  CHECK(r.launch.optimizer.source == "opt_name");
}

TEST_CASE("unpadding reads back before the encoder on an eagerly issued step only",
          "[simulate][launch]") {
  const auto fused = read_backs_of("--unpad_fmha").before_encoder;
  CHECK(fused.value == kUnpadReadBacks);
  CHECK(fused.source == "--unpad_fmha");
  CHECK(read_backs_of("--unpad").before_encoder.value == kUnpadReadBacks);
  CHECK(read_backs_of("--pad_fmha").before_encoder.value == 0);
  const auto graphs = read_backs_of("--unpad --use_cuda_graph").before_encoder;
  CHECK(graphs.value == 0);
  CHECK(graphs.source == "--use_cuda_graph");
  CHECK(launched("python train.py --unpad", "").launch.read_backs.before_encoder.value == 0);
}

TEST_CASE("the dense sequence output reads back before the heads on an eager step",
          "[simulate][launch]") {
  CHECK(read_backs_of("--dense_seq_output").before_heads.value == kDenseSeqOutputReadBacks);
  CHECK(read_backs_of("--dense_seq_output").before_heads.basis == Basis::launch_flag);
  CHECK(read_backs_of("--unpad").before_heads.value == 0);
  CHECK(read_backs_of("--dense_seq_output --use_cuda_graph").before_heads.value == 0);
}

TEST_CASE("Samsung's DDP hook reads back per bucket on its own path only", "[simulate][launch]") {
  const auto hook = read_backs_of("--local_gradient_clip").per_bucket_hook;
  CHECK(hook.value);
  CHECK(hook.source == "--local_gradient_clip");
  for (const std::string other :
       {"--local_gradient_clip --baseline", "--local_gradient_clip --distributed_lamb",
        "--local_gradient_clip --use_cuda_graph", "--unpad"}) {
    INFO(other);
    CHECK_FALSE(read_backs_of(other).per_bucket_hook.value);
  }
}

// On Samsung's path (--local_gradient_clip) a flag adds its host work: apex amp's loss scaler
// reads back after backward, DDP broadcasts the FMHA module's QKV buffers before each forward.
TEST_CASE("apex amp's loss scaler and DDP's FMHA buffer broadcast come with Samsung's path",
          "[simulate][launch]") {
  const HostReadBacks amp = read_backs_of("--local_gradient_clip --use_apex_amp");
  CHECK(amp.loss_scaler.value);
  CHECK(amp.loss_scaler.source == "--use_apex_amp");
  CHECK_FALSE(amp.buffer_broadcast.value);
  const HostReadBacks fmha = read_backs_of("--local_gradient_clip --unpad_fmha");
  CHECK(fmha.buffer_broadcast.value);
  CHECK(fmha.buffer_broadcast.source == "--unpad_fmha");
  CHECK_FALSE(fmha.loss_scaler.value);
  // Without the path, or on it with --unpad (no FMHA module): neither.
  for (const std::string other : {"--use_apex_amp --unpad_fmha", "--local_gradient_clip --unpad",
                                  "--local_gradient_clip --baseline --use_apex_amp --unpad_fmha"}) {
    INFO(other);
    CHECK_FALSE(read_backs_of(other).loss_scaler.value);
    CHECK_FALSE(read_backs_of(other).buffer_broadcast.value);
  }
}
