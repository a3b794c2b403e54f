// bert_cuda_bench: throughput of one BERT-large training step (forward, backward, global gradient
// norm, LAMB) on the CUDA backend in bf16 and fp16, for a padded batch (16 x 512) and a realistic
// unpadded length mix (docs/reference.md, "The length mix"), with the MFU of its "Compute". In
// the same process it measures two baselines of the device: a large bf16 GEMM through cuBLASLt and
// a device-to-device copy, and prints the step's FLOP rate as a ratio of the GEMM ceiling.
// PyTorch on the same GPU is timed by torch_bert_step.py (scripts/device_check.sh runs both).
// fp16 steps use the device loss scaler; each step's loss is scaled by the scale the device holds
// for it (read back before the step), and the table reports the steps the scaler skipped and the
// final scale, so an overflow can neither go unnoticed nor inflate the figure. With --check the
// exit status is 1 unless every configuration has a finite loss, seq/s > 0, no skipped timed step
// and no device allocation after the warm-up. Exit 77 when there is no CUDA device.
//
// With --json FILE the measurements are also written there (format "mlbert-device-bench/1": the
// device, the two baselines, and per configuration the micro-batch's shape and the timed
// forward+backward and optimizer), which `mlbert simulate calibrate --bench FILE` turns into a
// measured accelerator profile.
//
// With --breakdown N, N more steps per configuration run with a CUDA event before and after every
// op (bert/op_profile.h): the time per op family (GEMMs, attention forward and backward,
// LayerNorm, embedding, loss, optimizer, the rest), each against its ceiling (the GEMM baseline
// for GEMMs and attention, the copy baseline for the memory-bound families), the GPU's idle time
// between ops, the three largest gaps, and the same by op and shape. Those steps are not in the
// timed figures.
//
//   bert_cuda_bench [--dtype bf16|fp16|both] [--mix padded|mix|both] [--steps N] [--warmup N]
//                   [--batch N] [--seed N] [--peak-tflops X] [--check] [--json FILE]
//                   [--breakdown N] [--epilogues default|all|no-gelu|no-bias-grad|none]
//                   [--dropout all|no-attention|none] [--attention-dropout-bits
//                   drawn-twice|forward-keeps|kernel-keeps] [--attention-kernels
//                   classic|fa2|auto] [--attention-deterministic-dq]
//
// --epilogues sets which of cuBLASLt's fused GELU and bias-gradient epilogues may run
// (CudaOpsOptions), so the fused and unfused paths of the same step can be set side by side:
// default (the backend's choice: every epilogue but DGELU_BGRAD), all (DGELU_BGRAD too), no-gelu
// (no GELU_AUX_BIAS), no-bias-grad (no BGRADA/BGRADB), none; DGELU_BGRAD runs only under all.
// --dropout sets the attention-probability dropout (no-attention) or every dropout (none) of the
// model to 0, which skips drawing those masks: what the Philox draws cost in each kernel family.
// Not a training configuration (MLPerf BERT trains with 0.1 everywhere); the step's FLOPs stay.
// --attention-dropout-bits sets where the attention's dropout bits come from
// (CudaOpsOptions::attention_dropout_bits; kernel-keeps by default).
// --attention-kernels picks the 64-row or the FlashAttention-2-class attention kernels, or by
// sequence length (CudaOpsOptions::attention_kernels; classic by default);
// --attention-deterministic-dq sums their dQ in a fixed order (fa2 only).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bert/batch.h"
#include "bert/config.h"
#include "bert/cuda/cuda_check.h"
#include "bert/cuda/cuda_ops.h"
#include "bert/cuda/device_info.h"
#include "bert/cuda/gemm.h"
#include "bert/model.h"
#include "bert/op_profile.h"
#include "bert/parameters.h"

namespace {

using mlbert::bert::DType;
namespace bert = mlbert::bert;
namespace cuda = mlbert::cuda;

constexpr int kSkipped = 77;
constexpr int kMaxPredictions = 76;

struct Options {
  std::vector<DType> dtypes{DType::bf16, DType::f16};
  std::vector<std::string> mixes{"padded", "mix"};
  int steps = 10, warmup = 3, batch = 16;
  uint64_t seed = 1234;
  double peak_tflops = 0;  // 0: from the device name
  bool check = false;
  std::string json;   // --json FILE: the measurements for `mlbert simulate calibrate --bench`
  int breakdown = 0;  // --breakdown N: steps timed op by op after the timed steps
  std::string epilogues = "default";  // --epilogues: which fused cuBLASLt epilogues may run
  std::string dropout = "all";        // --dropout: which dropout sites draw masks
  cuda::AttentionDropoutBits attention_dropout_bits = cuda::CudaOpsOptions{}.attention_dropout_bits;
  cuda::AttentionKernels attention_kernels = cuda::CudaOpsOptions{}.attention_kernels;
  bool attention_deterministic_dq = false;
};

// A timestamp is an event recorded on the backend's stream; events are created as needed and
// reused across steps.
class CudaEventClock final : public bert::OpClock {
 public:
  explicit CudaEventClock(cudaStream_t stream) : stream_(stream) {}
  ~CudaEventClock() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  void mark() override {
    if (used_ == events_.size()) {
      cudaEvent_t e;
      CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    CUDA_CHECK(cudaEventRecord(events_[used_++], stream_));
  }
  std::vector<double> elapsed() override {
    std::vector<double> out;
    if (used_ == 0) return out;
    CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1]));
    for (size_t i = 1; i < used_; ++i) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i - 1], events_[i]));
      out.push_back(ms * 1e-3);
    }
    return out;
  }
  void clear() override { used_ = 0; }

 private:
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

// The sum over sequences of length^2 (what attention's work grows with).
double sum_of_squared_lengths(const bert::Batch& batch) {
  double squares = 0;
  for (size_t s = 0; s < batch.num_sequences(); ++s) {
    const double len = batch.cu_seqlens[s + 1] - batch.cu_seqlens[s];
    squares += len * len;
  }
  return squares;
}

// The shape of a micro-batch as the simulator's kernel model takes it (simulate/kernels.h).
nlohmann::json batch_shape(const bert::Batch& batch) {
  return {{"tokens", batch.num_tokens()},
          {"sequences", batch.num_sequences()},
          {"predictions", batch.num_masked()},
          {"squares", sum_of_squared_lengths(batch)}};
}

// docs/reference.md, "Compute": 6*N_enc*s + 12*L*H*s^2 + 6*p*(H^2 + H*V) per sequence.
double step_flops(const bert::BertConfig& c, const bert::Batch& batch) {
  const double L = static_cast<double>(c.num_hidden_layers), H = static_cast<double>(c.hidden_size);
  const double F = static_cast<double>(c.intermediate_size), V = static_cast<double>(c.vocab_size);
  const double n_enc = L * (4 * H * H + 2 * H * F);
  double flops = 0;
  std::vector<int> masked(batch.num_sequences(), 0);
  for (size_t s = 0, m = 0; s < batch.num_sequences(); ++s)
    while (m < batch.masked_lm_positions.size() &&
           batch.masked_lm_positions[m] < batch.cu_seqlens[s + 1])
      ++masked[s], ++m;
  for (size_t s = 0; s < batch.num_sequences(); ++s) {
    const double len = batch.cu_seqlens[s + 1] - batch.cu_seqlens[s];
    flops += 6 * n_enc * len + 12 * L * H * len * len + 6 * masked[s] * (H * H + H * V);
  }
  return flops;
}

// The paper's per-batch length quotas (6/3/2/5 of 16 from the bins 1-128, 129-256, 257-384,
// 385-512), lengths uniform inside a bin; or every sequence 512 long ("padded").
bert::Batch make_batch(const bert::BertConfig& c, const std::string& mix, int batch_size,
                       std::mt19937_64& rng) {
  std::vector<int> lengths;
  if (mix == "padded") {
    lengths.assign(batch_size, 512);
  } else {
    const int quotas[4] = {6, 3, 2, 5};
    for (int i = 0; i < batch_size; ++i) {
      const int slot = i % 16;
      const int bin = slot < quotas[0] ? 0 : slot < quotas[0] + quotas[1] ? 1 : slot < 11 ? 2 : 3;
      lengths.push_back(bin * 128 + 1 + static_cast<int>(rng() % 128));
    }
  }
  bert::Batch batch;
  for (int len : lengths) {
    std::vector<int32_t> ids(len), segments(len), positions, labels;
    for (int i = 0; i < len; ++i) {
      ids[i] = 1 + static_cast<int32_t>(rng() % (c.vocab_size - 1));
      segments[i] = i < len / 2 ? 0 : 1;
    }
    const int masked =
        std::min(kMaxPredictions, std::max(1, static_cast<int>(std::lround(0.15 * len))));
    std::vector<int> order(len);
    for (int i = 0; i < len; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    order.resize(masked);
    std::sort(order.begin(), order.end());
    for (int p : order) {
      positions.push_back(p);
      labels.push_back(1 + static_cast<int32_t>(rng() % (c.vocab_size - 1)));
    }
    batch.append_sequence(ids, segments, positions, labels, static_cast<int32_t>(rng() % 2));
  }
  return batch;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Baseline 1: an 8192^3 bf16 GEMM through the same cuBLASLt runner (TFLOP/s).
double gemm_ceiling_tflops() {
  constexpr int64_t n = 8192;
  void *a = nullptr, *b = nullptr, *d = nullptr;
  CUDA_CHECK(cudaMalloc(&a, n * n * 2));
  CUDA_CHECK(cudaMalloc(&b, n * n * 2));
  CUDA_CHECK(cudaMalloc(&d, n * n * 2));
  // Random-looking bits (never zeros: zeros run faster than real data).
  std::vector<uint16_t> host(n * n);
  std::mt19937 rng(3);
  for (auto& x : host)
    x = static_cast<uint16_t>(0x3c00 + (rng() % 0x300) - 0x180);  // bf16 in ~[0.3, 1.7]
  CUDA_CHECK(cudaMemcpy(a, host.data(), n * n * 2, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(b, host.data(), n * n * 2, cudaMemcpyHostToDevice));
  cuda::GemmRunner runner;
  cuda::GemmArgs g;
  g.shape.m = g.shape.n = g.shape.k = n;
  g.shape.lda = g.shape.ldb = g.shape.ldd = n;
  g.ab_type = g.d_type = cuda::MatrixType::bf16;
  g.a = a;
  g.b = b;
  g.d = d;
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) runner.run(g, nullptr);
  std::vector<double> ms;
  for (int i = 0; i < 10; ++i) {
    CUDA_CHECK(cudaEventRecord(start));
    runner.run(g, nullptr);
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  return 2.0 * n * n * n / (median(ms) * 1e-3) / 1e12;
}

// Baseline 2: device-to-device copy bandwidth, bytes read + written (GB/s).
double copy_bandwidth_gbs() {
  constexpr size_t bytes = size_t{2} << 30;
  void *src = nullptr, *dst = nullptr;
  CUDA_CHECK(cudaMalloc(&src, bytes));
  CUDA_CHECK(cudaMalloc(&dst, bytes));
  CUDA_CHECK(cudaMemset(src, 1, bytes));
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int i = 0; i < 8; ++i) {
    CUDA_CHECK(cudaEventRecord(start));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i >= 2) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * bytes / (median(ms) * 1e-3) / 1e9;
}

double datasheet_peak_tflops(const std::string& name) {
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos ||
      name.find("H800") != std::string::npos || name.find("GH200") != std::string::npos)
    return 989.4;  // dense bf16/fp16, SXM
  if (name.find("A100") != std::string::npos || name.find("A800") != std::string::npos)
    return 312.0;
  return 0;
}

struct StepTiming {
  double wall_ms = 0, fwd_bwd_ms = 0, optimizer_ms = 0;
  double loss = 0;
  size_t allocations_during_steps = 0;
  int skipped_warmup = 0, skipped_timed = 0;  // steps the fp16 scaler skipped (overflow)
  double final_loss_scale = 1;                // fp16: the device scaler's scale after the run
  std::string fusion;                         // which cuBLASLt epilogues ran fused
  bert::FamilyTotals breakdown;               // --breakdown: the op-by-op steps
};

StepTiming time_steps(DType dtype, const bert::BertConfig& config, const bert::Batch& batch,
                      const Options& o) {
  bert::ModelLimits limits;
  limits.max_tokens = batch.num_tokens();
  limits.max_sequences = batch.num_sequences();
  limits.max_masked = batch.num_masked();
  limits.max_seqlen = 512;
  cuda::CudaOpsOptions options = cuda::cuda_ops_options_for(config, limits, dtype);
  options.attention_dropout_bits = o.attention_dropout_bits;
  options.attention_kernels = o.attention_kernels;
  options.attention_deterministic_dq = o.attention_deterministic_dq;
  // "default" keeps the backend's own choice (CudaOpsOptions); the others set all three.
  if (o.epilogues != "default") {
    options.gelu_epilogue = o.epilogues == "all" || o.epilogues == "no-bias-grad";
    options.bias_grad_epilogue = o.epilogues == "all" || o.epilogues == "no-gelu";
    options.dgelu_bgrad_epilogue = o.epilogues == "all";
  }
  cuda::CudaOps cuda_ops(options);
  // Every op goes through the profiling wrapper, which only forwards until --breakdown's steps.
  CudaEventClock clock(cuda_ops.stream());
  bert::ProfilingOps ops(cuda_ops, clock);
  ops.set_attention_squares(sum_of_squared_lengths(batch));
  bert::ParameterStore params(config, ops);
  params.init_truncated_normal(o.seed);
  bert::Model model(params, limits);
  bert::Buffer exp_avg(ops, DType::f32, params.flat_size()),
      exp_avg_sq(ops, DType::f32, params.flat_size());
  bert::Buffer norm_total(ops, DType::f32, 2);
  const bool fp16 = dtype == DType::f16;
  if (fp16) cuda_ops.enable_device_loss_scaling(cuda::LossScaleConfig{});
  bert::ForwardBackwardOptions fb;

  cudaEvent_t e0, e1, e2;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  CUDA_CHECK(cudaEventCreate(&e2));
  std::vector<double> wall, fwd_bwd, optimizer;
  size_t allocations = 0;
  StepTiming timing;
  int skipped_before_timing = 0;
  const int timed_end = o.warmup + o.steps;
  for (int step = 0; step < timed_end + o.breakdown; ++step) {
    if (step == o.warmup) allocations = cuda_ops.device_allocations();
    ops.synchronize();
    if (fp16) {
      // The loss is scaled by what the device scaler holds for this step (2^17 at first, halved
      // after each overflow); its step_unscale undoes exactly that scale.
      const cuda::LossScaleState state = cuda_ops.loss_scale_state();
      fb.loss_scale = state.scale;
      if (step == o.warmup) skipped_before_timing = state.skipped_steps;
    }
    if (step >= timed_end) ops.start();  // the op-by-op steps, each on its own
    const auto t0 = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaEventRecord(e0, cuda_ops.stream()));
    const bert::StepResult r = model.forward_backward(
        batch, bert::DropoutKey{o.seed, static_cast<uint32_t>(step)}, {}, fb);
    CUDA_CHECK(cudaEventRecord(e1, cuda_ops.stream()));
    bert::L2NormParams norm;
    norm.buffer = params.grad();
    norm.segments = params.segments();
    norm.total = norm_total.tensor();
    ops.l2_norm(norm);
    if (fp16) cuda_ops.update_loss_scale(norm_total.tensor());
    bert::LambParams lamb;
    lamb.master = params.master();
    lamb.grad = params.grad();
    lamb.exp_avg = exp_avg.tensor();
    lamb.exp_avg_sq = exp_avg_sq.tensor();
    lamb.compute = params.compute();
    lamb.segments = params.segments();
    lamb.lr = 1e-5f;  // small: the weights stay in range over the timed steps
    lamb.beta1 = 0.9f;
    lamb.beta2 = 0.999f;
    lamb.weight_decay = 0.01f;
    lamb.step = step + 1;
    ops.lamb_update(lamb);
    CUDA_CHECK(cudaEventRecord(e2, cuda_ops.stream()));
    if (step >= timed_end) timing.breakdown += ops.stop();
    ops.synchronize();
    const auto t1 = std::chrono::steady_clock::now();
    if (step >= o.warmup && step < timed_end) {
      float a = 0, b = 0;
      CUDA_CHECK(cudaEventElapsedTime(&a, e0, e1));
      CUDA_CHECK(cudaEventElapsedTime(&b, e1, e2));
      wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      fwd_bwd.push_back(a);
      optimizer.push_back(b);
      timing.loss = r.total_loss;
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaEventDestroy(e2);
  timing.wall_ms = median(wall);
  timing.fwd_bwd_ms = median(fwd_bwd);
  timing.optimizer_ms = median(optimizer);
  timing.allocations_during_steps = cuda_ops.device_allocations() - allocations;
  if (fp16) {
    const cuda::LossScaleState state = cuda_ops.loss_scale_state();
    timing.skipped_warmup = skipped_before_timing;
    timing.skipped_timed = state.skipped_steps - skipped_before_timing;
    timing.final_loss_scale = state.scale;
  }
  timing.fusion = cuda_ops.gemm().fusion_report();
  if (!std::isfinite(timing.loss)) throw std::runtime_error("the loss is not finite");
  return timing;
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line into the device check's log, so a stage cut short keeps what it measured.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--dtype") {
      const std::string v = next();
      o.dtypes.clear();
      if (v == "bf16" || v == "both") o.dtypes.push_back(DType::bf16);
      if (v == "fp16" || v == "both") o.dtypes.push_back(DType::f16);
    } else if (arg == "--mix") {
      const std::string v = next();
      o.mixes.clear();
      if (v == "padded" || v == "both") o.mixes.push_back("padded");
      if (v == "mix" || v == "both") o.mixes.push_back("mix");
    } else if (arg == "--steps")
      o.steps = std::atoi(next().c_str());
    else if (arg == "--warmup")
      o.warmup = std::atoi(next().c_str());
    else if (arg == "--batch")
      o.batch = std::atoi(next().c_str());
    else if (arg == "--seed")
      o.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (arg == "--peak-tflops")
      o.peak_tflops = std::atof(next().c_str());
    else if (arg == "--check")
      o.check = true;
    else if (arg == "--json")
      o.json = next();
    else if (arg == "--breakdown")
      o.breakdown = std::atoi(next().c_str());
    else if (arg == "--epilogues") {
      o.epilogues = next();
      if (o.epilogues != "default" && o.epilogues != "all" && o.epilogues != "no-gelu" &&
          o.epilogues != "no-bias-grad" && o.epilogues != "none") {
        std::fprintf(stderr,
                     "--epilogues: '%s' is not default, all, no-gelu, no-bias-grad or none\n",
                     o.epilogues.c_str());
        return 2;
      }
    } else if (arg == "--dropout") {
      o.dropout = next();
      if (o.dropout != "all" && o.dropout != "no-attention" && o.dropout != "none") {
        std::fprintf(stderr, "--dropout: '%s' is not all, no-attention or none\n",
                     o.dropout.c_str());
        return 2;
      }
    } else if (arg == "--attention-dropout-bits") {
      try {
        o.attention_dropout_bits = cuda::parse_attention_dropout_bits(next());
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "--attention-dropout-bits: %s\n", e.what());
        return 2;
      }
    } else if (arg == "--attention-kernels") {
      try {
        o.attention_kernels = cuda::parse_attention_kernels(next());
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "--attention-kernels: %s\n", e.what());
        return 2;
      }
    } else if (arg == "--attention-deterministic-dq") {
      o.attention_deterministic_dq = true;
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--dtype bf16|fp16|both] [--mix padded|mix|both] [--steps N] [--warmup N] "
          "[--batch N] [--seed N] [--peak-tflops X] [--check] [--json FILE] [--breakdown N] "
          "[--epilogues default|all|no-gelu|no-bias-grad|none] [--dropout all|no-attention|none] "
          "[--attention-dropout-bits drawn-twice|forward-keeps|kernel-keeps] "
          "[--attention-kernels classic|fa2|auto] [--attention-deterministic-dq]\n",
          argv[0]);
      return 2;
    }
  }
  if (o.dtypes.empty() || o.mixes.empty() || o.steps < 1 || o.warmup < 1 || o.batch < 1 ||
      o.breakdown < 0) {
    std::fprintf(stderr, "bad options\n");
    return 2;
  }
  const auto devices = cuda::cuda_devices();
  if (devices.empty()) {
    std::printf("no CUDA device: bert_cuda_bench skipped\n");
    return kSkipped;
  }
  try {
    const auto& dev = devices[0];
    const double peak = o.peak_tflops > 0 ? o.peak_tflops : datasheet_peak_tflops(dev.name);
    std::printf("device: %s\n", dev.describe().c_str());
    const double gemm = gemm_ceiling_tflops();
    const double copy = copy_bandwidth_gbs();
    std::printf(
        "baseline: bf16 GEMM 8192^3 through cuBLASLt %.1f TFLOP/s; device copy %.0f GB/s (read + "
        "write)\n",
        gemm, copy);
    std::printf("peak used for MFU: %.1f TFLOP/s (%s); cuBLASLt epilogues allowed: %s\n", peak,
                o.peak_tflops > 0 ? "--peak-tflops" : "datasheet, dense", o.epilogues.c_str());
    bert::BertConfig config = bert::BertConfig::preset("bert-large");
    if (o.dropout != "all") config.attention_probs_dropout_prob = 0;
    if (o.dropout == "none") config.hidden_dropout_prob = 0;
    if (o.dropout != "all")
      std::printf("dropout: %s (not a training configuration)\n", o.dropout.c_str());
    std::printf("attention dropout bits: %s; attention kernels: %s%s\n",
                cuda::attention_dropout_bits_name(o.attention_dropout_bits),
                cuda::attention_kernels_name(o.attention_kernels),
                o.attention_deterministic_dq ? " (deterministic dQ)" : "");
    std::printf("%-6s %-7s %7s %7s %9s %9s %9s %9s %7s %8s %7s %8s %9s\n", "dtype", "mix", "tokens",
                "TFLOP", "step ms", "fwd+bwd", "optim ms", "seq/s", "MFU", "of GEMM", "allocs",
                "skipped", "scale");
    std::vector<std::string> failures;
    nlohmann::json measured = {
        {"format", "mlbert-device-bench/1"},
        {"model", "bert-large"},
        {"device",
         {{"name", dev.name}, {"multiprocessors", dev.sm_count}, {"describe", dev.describe()}}},
        {"gemm_tflops", gemm},
        {"copy_gbs", copy},
        {"epilogues", o.epilogues},
        {"dropout", o.dropout},
        {"attention_dropout_bits", cuda::attention_dropout_bits_name(o.attention_dropout_bits)},
        {"attention_kernels", cuda::attention_kernels_name(o.attention_kernels)},
        {"attention_deterministic_dq", o.attention_deterministic_dq},
        {"steps", nlohmann::json::array()}};
    nlohmann::json breakdowns = nlohmann::json::array();
    for (const std::string& mix : o.mixes) {
      std::mt19937_64 rng(o.seed);
      const bert::Batch batch = make_batch(config, mix, o.batch, rng);
      const double flops = step_flops(config, batch);
      for (DType dtype : o.dtypes) {
        const StepTiming t = time_steps(dtype, config, batch, o);
        const double rate = flops / (t.wall_ms * 1e-3) / 1e12;
        const double seq_per_s = o.batch / (t.wall_ms * 1e-3);
        const bool fp16 = dtype == DType::f16;
        const std::string skipped =
            fp16 ? std::to_string(t.skipped_timed) + "+" + std::to_string(t.skipped_warmup) + "w"
                 : "-";
        std::printf("%-6s %-7s %7zu %7.2f %9.2f %9.2f %9.2f %9.1f %6.1f%% %7.1f%% %7zu %8s %9.0f\n",
                    bert::dtype_name(dtype), mix.c_str(), batch.num_tokens(), flops / 1e12,
                    t.wall_ms, t.fwd_bwd_ms, t.optimizer_ms, seq_per_s,
                    peak > 0 ? 100.0 * rate / peak : 0.0, 100.0 * rate / gemm,
                    t.allocations_during_steps, skipped.c_str(), t.final_loss_scale);
        std::printf("  %s %s: %s\n", bert::dtype_name(dtype), mix.c_str(), t.fusion.c_str());
        if (o.breakdown > 0) {
          const auto rows = bert::family_rows(t.breakdown, gemm, copy, o.breakdown);
          std::printf(
              "  %s %s, op by op over %d steps (event per op; not in the figures above):\n%s",
              bert::dtype_name(dtype), mix.c_str(), o.breakdown,
              bert::format_family_table(rows, t.breakdown, o.breakdown).c_str());
          const auto details = bert::detail_rows(t.breakdown, gemm, copy, o.breakdown);
          std::printf("  by op and shape, largest gap first (12 of %zu):\n%s", details.size(),
                      bert::format_detail_table(details, 12).c_str());
          nlohmann::json families = nlohmann::json::array(), ops_json = nlohmann::json::array();
          for (const auto& r : details)
            ops_json.push_back({{"op", r.name},
                                {"family", bert::op_family_name(r.family)},
                                {"calls", r.calls},
                                {"ms", r.ms},
                                {"rate", r.rate},
                                {"of_ceiling", r.of_ceiling},
                                {"gap_ms", r.gap_ms}});
          for (const auto& r : rows)
            families.push_back({{"family", bert::op_family_name(r.family)},
                                {"calls", r.calls},
                                {"ms", r.ms},
                                {"share", r.share},
                                {"rate", r.rate},
                                {"of_ceiling", r.of_ceiling},
                                {"gap_ms", r.gap_ms}});
          breakdowns.push_back({{"dtype", bert::dtype_name(dtype)},
                                {"mix", mix},
                                {"span_ms", 1e3 * t.breakdown.span_seconds / o.breakdown},
                                {"families", families},
                                {"ops", ops_json}});
        }
        std::printf(
            "RESULT mlbert %s %s seq_per_s=%.2f mfu=%.4f step_ms=%.3f tflops=%.2f "
            "gemm_ratio=%.4f skipped=%d loss_scale=%.0f\n",
            bert::dtype_name(dtype), mix.c_str(), seq_per_s, peak > 0 ? rate / peak : 0.0,
            t.wall_ms, rate, rate / gemm, t.skipped_timed, t.final_loss_scale);
        std::fflush(stdout);
        nlohmann::json entry = batch_shape(batch);
        entry["dtype"] = bert::dtype_name(dtype);
        entry["mix"] = mix;
        entry["fwd_bwd_ms"] = t.fwd_bwd_ms;
        entry["optimizer_ms"] = t.optimizer_ms;
        entry["wall_ms"] = t.wall_ms;
        entry["skipped_timed"] = t.skipped_timed;
        measured["steps"].push_back(entry);
        const std::string where = std::string(bert::dtype_name(dtype)) + " " + mix + ": ";
        if (!(seq_per_s > 0) || !std::isfinite(seq_per_s))
          failures.push_back(where + "seq/s is not positive");
        if (t.skipped_timed > 0)
          failures.push_back(where + std::to_string(t.skipped_timed) +
                             " timed steps skipped by the loss scaler (overflow)");
        if (t.allocations_during_steps > 0)
          failures.push_back(where + std::to_string(t.allocations_during_steps) +
                             " device allocations in the steps after warm-up");
      }
    }
    if (!breakdowns.empty()) measured["breakdown"] = breakdowns;
    if (!o.json.empty()) {
      std::ofstream out(o.json);
      out << measured.dump(2) << "\n";
      if (!out) throw std::runtime_error(o.json + ": cannot write the measurements");
      std::printf("measurements written to %s\n", o.json.c_str());
    }
    if (o.check) {
      for (const auto& f : failures) std::printf("bert_cuda_bench: check FAILED: %s\n", f.c_str());
      if (!failures.empty()) return 1;
      std::printf(
          "bert_cuda_bench: check passed (finite loss, seq/s > 0, no skipped timed step, "
          "no allocation after warm-up)\n");
    }
  } catch (const std::exception& e) {
    std::printf("bert_cuda_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
