// Timing BERT-large training steps on the CUDA backend (see step_timing.h).
#include "bench/cuda/step_timing.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "bert/cuda/cuda_check.h"
#include "bert/cuda/gemm.h"
#include "bert/model.h"
#include "bert/parameters.h"

namespace mlbert::bench {

namespace cuda = mlbert::cuda;
using bert::DType;

namespace {

constexpr int kMaxPredictions = 76;

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

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

namespace {

// The model's limits: the largest micro-batch in each dimension.
bert::ModelLimits limits_of(const std::vector<bert::Batch>& micro) {
  bert::ModelLimits limits;
  for (const bert::Batch& b : micro) {
    limits.max_tokens = std::max(limits.max_tokens, b.num_tokens());
    limits.max_sequences = std::max(limits.max_sequences, b.num_sequences());
    limits.max_masked = std::max(limits.max_masked, b.num_masked());
  }
  limits.max_seqlen = 512;
  return limits;
}

// One optimizer update as training runs it: the global gradient norm (with the fp16 scaler's
// overflow check), then LAMB.
void optimizer_step(bert::Ops& ops, cuda::CudaOps& cuda_ops, bert::ParameterStore& params,
                    const bert::Buffer& exp_avg, const bert::Buffer& exp_avg_sq,
                    const bert::Buffer& norm_total, bool fp16, int step) {
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
}

// What a timed step runs on, all set up by time_steps.
struct StepState {
  cuda::CudaOps& cuda_ops;
  bert::ProfilingOps& ops;  // forwards to cuda_ops; profiles only the --breakdown steps
  bert::ParameterStore& params;
  bert::Model& model;
  const bert::Buffer& exp_avg;
  const bert::Buffer& exp_avg_sq;
  const bert::Buffer& norm_total;
  bool fp16;
};

// What the steps measured, before the medians.
struct StepRecord {
  std::vector<double> wall, fwd_bwd, optimizer;  // ms, one entry a timed step
  size_t allocations = 0;                        // device allocations before the first timed step
  int skipped_before_timing = 0;                 // steps the fp16 scaler skipped before it
};

// A step's micro-batches forward and backward, gradients accumulated; the last one's result.
bert::StepResult forward_backward(const StepState& s, const StepRun& run,
                                  bert::ForwardBackwardOptions fb, int step) {
  const int micro = static_cast<int>(run.micro_batches.size());
  bert::StepResult r;
  for (int a = 0; a < micro; ++a) {
    const bert::Batch& batch = run.micro_batches[static_cast<size_t>(a)];
    s.ops.set_attention_squares(sum_of_squared_lengths(batch));
    fb.zero_grads = a == 0;
    r = s.model.forward_backward(
        batch, bert::DropoutKey{run.seed, static_cast<uint32_t>(step * micro + a)}, {}, fb);
  }
  return r;
}

// The warm-up, timed and --breakdown steps; the op-by-op totals and the loss go to `timing`.
StepRecord run_steps(const StepState& s, const StepRun& run, StepTiming& timing) {
  const int micro = static_cast<int>(run.micro_batches.size());
  cudaEvent_t e0, e1, e2;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  CUDA_CHECK(cudaEventCreate(&e2));
  StepRecord rec;
  const int timed_end = run.warmup + run.steps;
  for (int step = 0; step < timed_end + run.breakdown; ++step) {
    if (step == run.warmup) rec.allocations = s.cuda_ops.device_allocations();
    s.ops.synchronize();
    bert::ForwardBackwardOptions fb;
    if (s.fp16) {
      // The loss is scaled by what the device scaler holds for this step (2^17 at first, halved
      // after each overflow), over the micro-batches as training divides it; the optimizer's
      // unscale undoes exactly that scale.
      const cuda::LossScaleState state = s.cuda_ops.loss_scale_state();
      fb.loss_scale = state.scale;
      if (step == run.warmup) rec.skipped_before_timing = state.skipped_steps;
    }
    fb.loss_scale /= static_cast<float>(micro);
    if (step >= timed_end) s.ops.start();  // the op-by-op steps, each on its own
    const auto t0 = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaEventRecord(e0, s.cuda_ops.stream()));
    const bert::StepResult r = forward_backward(s, run, fb, step);
    CUDA_CHECK(cudaEventRecord(e1, s.cuda_ops.stream()));
    optimizer_step(s.ops, s.cuda_ops, s.params, s.exp_avg, s.exp_avg_sq, s.norm_total, s.fp16,
                   step);
    CUDA_CHECK(cudaEventRecord(e2, s.cuda_ops.stream()));
    if (step >= timed_end) timing.breakdown += s.ops.stop();
    s.ops.synchronize();
    const auto t1 = std::chrono::steady_clock::now();
    if (step >= run.warmup && step < timed_end) {
      float a = 0, b = 0;
      CUDA_CHECK(cudaEventElapsedTime(&a, e0, e1));
      CUDA_CHECK(cudaEventElapsedTime(&b, e1, e2));
      rec.wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      rec.fwd_bwd.push_back(a);
      rec.optimizer.push_back(b);
      timing.loss = r.total_loss;
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaEventDestroy(e2);
  return rec;
}

// The medians, the allocations and fp16 skips during the timed steps, and the backend's reports.
void summarize(StepTiming& timing, const StepRecord& rec, cuda::CudaOps& cuda_ops, bool fp16) {
  timing.wall_ms = median(rec.wall);
  timing.fwd_bwd_ms = median(rec.fwd_bwd);
  timing.optimizer_ms = median(rec.optimizer);
  timing.allocations_during_steps = cuda_ops.device_allocations() - rec.allocations;
  if (fp16) {
    const cuda::LossScaleState state = cuda_ops.loss_scale_state();
    timing.skipped_warmup = rec.skipped_before_timing;
    timing.skipped_timed = state.skipped_steps - rec.skipped_before_timing;
    timing.final_loss_scale = state.scale;
  }
  timing.fusion = cuda_ops.gemm().fusion_report();
  timing.tuning = cuda_ops.gemm().tuning_report();
  timing.graphs = cuda_ops.step_report();
}

}  // namespace

StepTiming time_steps(const bert::BertConfig& config, const StepRun& run) {
  const bert::ModelLimits limits = limits_of(run.micro_batches);
  cuda::CudaOpsOptions options = run.options;
  options.compute_dtype = run.dtype;
  options.workspace_limits = cuda::workspace_limits_for(config, limits);
  cuda::CudaOps cuda_ops(options);
  // Every op goes through the profiling wrapper, which only forwards until --breakdown's steps.
  CudaEventClock clock(cuda_ops.stream());
  bert::ProfilingOps ops(cuda_ops, clock);
  bert::ParameterStore params(config, ops);
  params.init_truncated_normal(run.seed);
  bert::Model model(params, limits);
  bert::Buffer exp_avg(ops, DType::f32, params.flat_size()),
      exp_avg_sq(ops, DType::f32, params.flat_size());
  bert::Buffer norm_total(ops, DType::f32, 2);
  const bool fp16 = run.dtype == DType::f16;
  if (fp16) cuda_ops.enable_device_loss_scaling(cuda::LossScaleConfig{});

  StepTiming timing;
  const StepState state{cuda_ops, ops, params, model, exp_avg, exp_avg_sq, norm_total, fp16};
  const StepRecord rec = run_steps(state, run, timing);
  summarize(timing, rec, cuda_ops, fp16);
  cuda_ops.save_gemm_plans();
  if (!std::isfinite(timing.loss)) throw std::runtime_error("the loss is not finite");
  return timing;
}

}  // namespace mlbert::bench
