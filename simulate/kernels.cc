// Tracing mlbert's model into a kernel plan, and timing a micro-step from it (see kernels.h).
#include "simulate/kernels.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>

#include "bert/batch.h"
#include "bert/model.h"
#include "bert/ops.h"
#include "bert/parameters.h"

namespace mlbert::simulate {
namespace {

using bert::DType;
using bert::Tensor;

// One traced kernel at one micro-batch shape.
struct RawKernel {
  KernelKind kind = KernelKind::memory;
  const char* op = "";
  double flops = 0, bytes = 0, rows = 0, cols = 0;
  bool quantized = false, synchronizes = false;
};

// An Ops that records what the CUDA backend would launch for each call (bert/cuda/cuda_ops.cc: a
// GEMM per product with its bias and activation in the epilogue, a small kernel to add an
// epilogue's bias gradient into f32, one kernel per row-wise op, two for the backward ops that
// reduce over rows) and computes nothing. Memory is reserved address space (PROT_NONE), so views
// into it are real addresses of a real mapping and no memory is committed for the 336M
// parameters.
class TracingOps final : public bert::Ops {
 public:
  ~TracingOps() override {
    for (const auto& [address, bytes] : mappings_) ::munmap(address, bytes);
  }
  std::string name() const override { return "trace"; }
  DType compute_dtype() const override { return DType::f16; }

  Tensor allocate(DType dtype, size_t numel) override {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t bytes =
        (std::max<size_t>(numel * bert::dtype_size(dtype), 1) + page - 1) / page * page;
    void* address =
        ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (address == MAP_FAILED) throw std::runtime_error("kernel trace: cannot reserve addresses");
    mappings_[address] = bytes;
    return Tensor{address, dtype, numel};
  }
  void release(Tensor tensor) override {
    const auto it = mappings_.find(tensor.data);
    if (it == mappings_.end()) return;
    ::munmap(it->first, it->second);
    mappings_.erase(it);
  }
  void copy_from_host(Tensor dst, const void* src, size_t bytes) override {
    // Kept for the attention ops, whose work depends on the sequence lengths.
    std::vector<std::int32_t>& values = uploads_[dst.data];
    values.resize(bytes / sizeof(std::int32_t));
    if (!values.empty()) std::memcpy(values.data(), src, values.size() * sizeof(std::int32_t));
    memory("copy_from_host", static_cast<double>(bytes));
  }
  void copy_to_host(void* dst, Tensor, size_t bytes) override {
    std::memset(dst, 0, bytes);  // the model reads statistics back: zeros will do
    memory("copy_to_host", static_cast<double>(bytes)).synchronizes = true;
  }
  void copy(Tensor dst, Tensor src) override { memory("copy", double(dst.bytes() + src.bytes())); }
  void fill_zero(Tensor tensor) override { memory("fill_zero", double(tensor.bytes())); }
  void cast(Tensor dst, Tensor src) override { memory("cast", double(dst.bytes() + src.bytes())); }
  void synchronize() override {
    if (!kernels_.empty()) kernels_.back().synchronizes = true;
  }

  void linear_forward(const bert::LinearForwardParams& p) override {
    if (p.m == 0) return;
    const double m = double(p.m), n = double(p.n), k = double(p.k);
    for (int b = 0; b < p.batch; ++b) {
      const double out = m * n * (p.pre_activation.defined() ? 2 : 1);
      gemm("linear_forward", m, n, k, e() * (m * k + k * n + out + (p.bias.defined() ? n : 0)),
           true);
    }
  }
  void linear_backward(const bert::LinearBackwardParams& p) override {
    if (p.m == 0) return;
    const double m = double(p.m), n = double(p.n), k = double(p.k);
    for (int b = 0; b < p.batch; ++b) {
      if (p.activation != bert::Activation::none) memory("activation_backward", e() * 3 * m * n);
      if (p.d_input.defined()) {
        const bool accumulate = p.accumulate_d_input || b > 0;
        const bool fused = p.input_activation != bert::Activation::none;
        gemm("linear_backward data", m, k, n,
             e() * (m * n + n * k + m * k * (1 + (accumulate ? 1 : 0) + (fused ? 1 : 0))), true);
        if (fused && p.d_input_bias.defined()) memory("bias_gradient_add", 12 * k);
      }
      // The weight gradient: tokens are the reduction depth; the f32 gradient is read and written.
      gemm("linear_backward weight", k, n, m, e() * (m * k + m * n) + 8 * k * n, false);
      if (p.d_bias.defined()) memory("bias_gradient_add", 12 * n);
    }
  }
  void layer_norm_forward(const bert::LayerNormForwardParams& p) override {
    const double rw = double(p.rows) * double(p.width);
    memory("layer_norm_forward", e() * rw * (3 + (p.residual.defined() ? 1 : 0)) +
                                     e() * double(p.width) * (p.bias.defined() ? 3 : 2) +
                                     8 * double(p.rows));
  }
  void layer_norm_backward(const bert::LayerNormBackwardParams& p) override {
    if (p.rows == 0) return;
    const double rw = double(p.rows) * double(p.width);
    const double residual = p.d_residual.defined() ? (p.accumulate_d_residual ? 2 : 1) : 0;
    memory("layer_norm_backward", e() * rw * (3 + residual) + 8 * double(p.rows));
    memory("layer_norm_backward columns", 24 * double(p.width));
  }
  void embedding_forward(const bert::EmbeddingForwardParams& p) override {
    const double t = double(p.tokens), h = double(p.hidden);
    memory("embedding_forward", 12 * t + e() * t * h * 5 + 8 * t);
  }
  void embedding_backward(const bert::EmbeddingBackwardParams& p) override {
    const double t = double(p.tokens), h = double(p.hidden);
    memory("embedding_backward", 12 * t + e() * t * h * 2 + 8 * t + 24 * t * h);
    memory("embedding_backward columns", 16 * h);
  }
  void attention_forward(const bert::AttentionForwardParams& p) override {
    // QK^T and PV: 2 x 2 s^2 d FLOPs per sequence and head.
    const double hidden = double(p.heads) * double(p.head_dim), t = double(p.tokens);
    attention("attention_forward", 4 * hidden * squares(p.cu_seqlens, p.num_sequences),
              e() * 4 * t * hidden + 4 * double(p.heads) * t);
  }
  void attention_backward(const bert::AttentionBackwardParams& p) override {
    // P recomputed from QK^T, then dV, dP, dQ and dK: 5 x 2 s^2 d.
    const double hidden = double(p.heads) * double(p.head_dim), t = double(p.tokens);
    attention("attention_backward", 10 * hidden * squares(p.cu_seqlens, p.num_sequences),
              e() * 8 * t * hidden + 4 * double(p.heads) * t);
  }
  void gather_rows(const bert::GatherRowsParams& p) override {
    memory("gather_rows", e() * 2 * double(p.count) * double(p.width) + 4 * double(p.count));
  }
  void scatter_add_rows(const bert::ScatterAddRowsParams& p) override {
    memory("scatter_add_rows", e() * 3 * double(p.count) * double(p.width) + 4 * double(p.count));
  }
  void cross_entropy(const bert::CrossEntropyParams& p) override {
    memory("cross_entropy", e() * 2 * double(p.rows) * double(p.row_stride) + 4 * double(p.rows));
  }
  void l2_norm(const bert::L2NormParams& p) override {
    memory("l2_norm", double(p.buffer.bytes()));
  }
  void scale(Tensor x, float) override { memory("scale", 2 * double(x.bytes())); }
  void adam_update(const bert::AdamParams& p) override {
    memory("adam_update", 7 * double(p.master.bytes()));
  }
  void lamb_update(const bert::LambParams& p) override {
    memory("lamb_update", 12 * double(p.master.bytes()));
  }

  std::vector<RawKernel> take() { return std::move(kernels_); }
  std::size_t recorded() const { return kernels_.size(); }

 private:
  static double e() { return 2; }  // bytes of the f16 compute dtype
  RawKernel& memory(const char* op, double bytes) {
    kernels_.push_back(RawKernel{KernelKind::memory, op, 0, bytes});
    return kernels_.back();
  }
  void gemm(const char* op, double rows, double cols, double depth, double bytes, bool quantized) {
    kernels_.push_back(
        RawKernel{KernelKind::gemm, op, 2 * rows * cols * depth, bytes, rows, cols, quantized});
  }
  void attention(const char* op, double flops, double bytes) {
    kernels_.push_back(RawKernel{KernelKind::attention, op, flops, bytes});
  }
  double squares(const Tensor& cu_seqlens, std::int64_t sequences) const {
    const auto it = uploads_.find(cu_seqlens.data);
    if (it == uploads_.end() || it->second.size() < static_cast<size_t>(sequences) + 1)
      throw std::logic_error("kernel trace: attention's cu_seqlens were never uploaded");
    double sum = 0;
    for (std::int64_t i = 0; i < sequences; ++i) {
      const double len = it->second[i + 1] - it->second[i];
      sum += len * len;
    }
    return sum;
  }

  std::map<void*, size_t> mappings_;
  std::map<const void*, std::vector<std::int32_t>> uploads_;
  std::vector<RawKernel> kernels_;
};

// A micro-batch of sequences with these lengths and `predictions` masked positions (spread over
// the sequences, at most one per token).
bert::Batch make_batch(const std::vector<int>& lengths, int predictions) {
  bert::Batch batch;
  int left = predictions;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const int len = lengths[i];
    const int here = i + 1 == lengths.size()
                         ? left
                         : std::min(left, static_cast<int>(predictions / lengths.size()));
    if (here > len) throw std::logic_error("kernel trace: more predictions than tokens");
    left -= here;
    std::vector<std::int32_t> ids(static_cast<size_t>(len), 5), segments(static_cast<size_t>(len));
    std::vector<std::int32_t> positions, labels;
    for (int j = 0; j < here; ++j) {
      positions.push_back(j);
      labels.push_back(7);
    }
    batch.append_sequence(ids, segments, positions, labels, 0);
  }
  return batch;
}

struct Trace {
  MicroBatchShape shape;
  std::vector<RawKernel> train, eval;
  std::vector<GradReady> grad_ready;
};

Trace trace_once(const bert::BertConfig& config, const std::vector<int>& lengths, int predictions) {
  Trace t;
  const bert::Batch batch = make_batch(lengths, predictions);
  for (int len : lengths) {
    t.shape.tokens += len;
    t.shape.squares += double(len) * len;
  }
  t.shape.sequences = double(lengths.size());
  t.shape.predictions = predictions;
  TracingOps ops;
  bert::ParameterStore params(config, ops);
  bert::ModelLimits limits;
  limits.max_tokens = batch.num_tokens();
  limits.max_sequences = batch.num_sequences();
  limits.max_masked = batch.num_masked();
  limits.max_seqlen = batch.max_seqlen;
  bert::Model model(params, limits);
  ops.take();  // construction
  model.forward_backward(batch, bert::DropoutKey{1, 1}, [&](std::size_t prefix) {
    t.grad_ready.push_back(GradReady{ops.recorded(), prefix});
  });
  t.train = ops.take();
  model.evaluate(batch);
  t.eval = ops.take();
  return t;
}

// Solves the 5 x 5 system rows . x = rhs (Gaussian elimination with partial pivoting).
std::array<double, 5> solve(std::array<std::array<double, 5>, 5> a, std::array<double, 5> b) {
  for (int c = 0; c < 5; ++c) {
    int pivot = c;
    for (int r = c + 1; r < 5; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    if (std::abs(a[pivot][c]) < 1e-12)
      throw std::logic_error("kernel trace: shapes not independent");
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (int r = 0; r < 5; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int k = c; k < 5; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  std::array<double, 5> x{};
  for (int c = 0; c < 5; ++c) x[c] = b[c] / a[c][c];
  return x;
}

std::array<double, 5> basis(const MicroBatchShape& s) {
  return {1, s.tokens, s.sequences, s.predictions, s.squares};
}

Affine fit(const std::vector<Trace>& traces, std::size_t n, bool eval, std::size_t i,
           double RawKernel::*field) {
  std::array<std::array<double, 5>, 5> a{};
  std::array<double, 5> b{};
  for (std::size_t r = 0; r < n; ++r) {
    a[r] = basis(traces[r].shape);
    b[r] = (eval ? traces[r].eval : traces[r].train)[i].*field;
  }
  const auto x = solve(a, b);
  Affine f{x[0], x[1], x[2], x[3], x[4]};
  // Coefficients that are rounding noise of an exact zero.
  for (double* c : {&f.c0, &f.t, &f.s, &f.p, &f.q})
    if (std::abs(*c) < 1e-9 * (1 + std::abs(f.c0) + std::abs(f.t))) *c = 0;
  return f;
}

std::vector<Kernel> fit_plan(const std::vector<Trace>& traces, bool eval) {
  const std::size_t fitted = 5;
  const auto& first = eval ? traces[0].eval : traces[0].train;
  for (const Trace& t : traces) {
    const auto& k = eval ? t.eval : t.train;
    if (k.size() != first.size())
      throw std::logic_error(
          "kernel trace: the model issues a different number of kernels for "
          "different micro-batch shapes");
    for (std::size_t i = 0; i < k.size(); ++i)
      if (k[i].kind != first[i].kind || std::strcmp(k[i].op, first[i].op) != 0)
        throw std::logic_error(std::string("kernel trace: kernel ") + std::to_string(i) +
                               " changes with the micro-batch shape");
  }
  std::vector<Kernel> plan;
  for (std::size_t i = 0; i < first.size(); ++i) {
    Kernel k;
    k.kind = first[i].kind;
    k.op = first[i].op;
    k.flops = fit(traces, fitted, eval, i, &RawKernel::flops);
    k.bytes = fit(traces, fitted, eval, i, &RawKernel::bytes);
    k.rows = fit(traces, fitted, eval, i, &RawKernel::rows);
    k.cols = first[i].cols;
    k.quantized = first[i].quantized;
    k.synchronizes = first[i].synchronizes;
    // The check: the affine forms reproduce the traces they were not fitted to.
    for (std::size_t r = fitted; r < traces.size(); ++r) {
      const RawKernel& raw = (eval ? traces[r].eval : traces[r].train)[i];
      for (const auto& [form, value] :
           {std::pair{k.flops, raw.flops}, {k.bytes, raw.bytes}, {k.rows, raw.rows}})
        if (std::abs(form.at(traces[r].shape) - value) > 1e-6 * (1 + std::abs(value)))
          throw std::logic_error("kernel trace: " + k.op + " (kernel " + std::to_string(i) +
                                 ") is not affine in tokens, sequences, predictions and squares");
    }
    plan.push_back(k);
  }
  return plan;
}

}  // namespace

double wave_efficiency(double tiles, int multiprocessors) {
  if (multiprocessors <= 0 || tiles <= 0) return 1;
  const double waves = std::ceil(tiles / multiprocessors);
  return tiles / (waves * multiprocessors);
}

KernelTime KernelPlan::time(const std::vector<Kernel>& kernels, const MicroBatchShape& shape,
                            const KernelRates& rates, const std::vector<HostEvent>& events) {
  KernelTime out;
  double issued = 0, end = 0;
  auto event = events.begin();
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    for (; event != events.end() && event->before <= i; ++event) {
      for (int r = 0; r < event->syncs; ++r) issued = std::max(issued, end) + kReadBackSeconds;
      issued += event->host_seconds;
    }
    const Kernel& k = kernels[i];
    const double bytes = std::max(0.0, k.bytes.at(shape));
    double gpu = bytes / rates.memory_bytes_per_second;
    if (k.kind != KernelKind::memory) {
      double rate = rates.tensor_flops_per_second;
      if (k.quantized) {
        const double rows = std::max(0.0, k.rows.at(shape));
        rate *= wave_efficiency(std::ceil(rows / kGemmTileRows) * std::ceil(k.cols / kGemmTileCols),
                                rates.multiprocessors);
      }
      gpu = std::max(gpu, std::max(0.0, k.flops.at(shape)) / rate);
    }
    issued += rates.host_seconds_per_kernel;
    end = std::max(issued, end) + gpu;
    out.gpu_seconds += gpu;
    if (k.synchronizes) issued = end;  // the host waits for the read back
  }
  out.seconds = end;
  return out;
}

double KernelPlan::seconds_per_token(const std::vector<Kernel>& kernels, const KernelRates& r) {
  double s = 0;
  for (const Kernel& k : kernels)
    s += k.bytes.t / r.memory_bytes_per_second +
         (k.kind == KernelKind::memory ? 0 : k.flops.t / r.tensor_flops_per_second);
  return s;
}

double KernelPlan::seconds_per_square(const std::vector<Kernel>& kernels, const KernelRates& r) {
  double s = 0;
  for (const Kernel& k : kernels)
    s += k.bytes.q / r.memory_bytes_per_second +
         (k.kind == KernelKind::memory ? 0 : k.flops.q / r.tensor_flops_per_second);
  return s;
}

Affine KernelPlan::total_flops(const std::vector<Kernel>& kernels, KernelKind kind) {
  Affine sum;
  for (const Kernel& k : kernels) {
    if (k.kind != kind) continue;
    sum.c0 += k.flops.c0;
    sum.t += k.flops.t;
    sum.s += k.flops.s;
    sum.p += k.flops.p;
    sum.q += k.flops.q;
  }
  return sum;
}

KernelPlan trace_kernel_plan(const bert::BertConfig& config) {
  // Five shapes whose (1, T, S, P, Q) are linearly independent, then one to check against.
  const std::vector<std::pair<std::vector<int>, int>> shapes = {
      {{8, 8}, 2}, {{8, 16}, 2}, {{12, 12}, 2}, {{8, 8, 8}, 2}, {{8, 8}, 5}, {{5, 9, 20}, 7}};
  std::vector<Trace> traces;
  for (const auto& [lengths, predictions] : shapes)
    traces.push_back(trace_once(config, lengths, predictions));
  KernelPlan plan;
  plan.train = fit_plan(traces, false);
  plan.eval = fit_plan(traces, true);
  plan.layers = static_cast<int>(config.num_hidden_layers);
  // Where backward finishes each gradient prefix does not move with the shape (the same kernels
  // in the same order), and neither do the phase boundaries.
  plan.grad_ready = traces.front().grad_ready;
  for (const Trace& t : traces) {
    bool same = t.grad_ready.size() == plan.grad_ready.size();
    for (std::size_t i = 0; same && i < t.grad_ready.size(); ++i)
      same = t.grad_ready[i].kernels == plan.grad_ready[i].kernels &&
             t.grad_ready[i].flat_prefix == plan.grad_ready[i].flat_prefix;
    if (!same)
      throw std::logic_error(
          "kernel trace: gradients become final at other kernels for "
          "another micro-batch shape");
  }
  const auto first = [&](const char* op) {
    for (std::size_t i = 0; i < plan.train.size(); ++i)
      if (plan.train[i].op == op) return i;
    throw std::logic_error(std::string("kernel trace: no ") + op + " kernel in a training step");
  };
  plan.encoder_start = first("linear_forward");  // layer 0's QKV projection
  plan.heads_start = first("gather_rows");       // the masked positions the MLM head reads
  return plan;
}

}  // namespace mlbert::simulate
