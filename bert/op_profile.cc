#include "bert/op_profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace mlbert::bert {

const char* op_family_name(OpFamily family) {
  switch (family) {
    case OpFamily::gemm:
      return "GEMM";
    case OpFamily::attention_forward:
      return "attention forward";
    case OpFamily::attention_backward:
      return "attention backward";
    case OpFamily::layer_norm:
      return "LayerNorm";
    case OpFamily::embedding:
      return "embedding";
    case OpFamily::loss:
      return "loss";
    case OpFamily::optimizer:
      return "optimizer";
    case OpFamily::other:
      return "other";
  }
  return "?";
}

void HostOpClock::mark() {
  marks_.push_back(
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::vector<double> HostOpClock::elapsed() {
  std::vector<double> out;
  for (size_t i = 1; i < marks_.size(); ++i) out.push_back(marks_[i] - marks_[i - 1]);
  return out;
}

namespace {

// Adds d into the detail of its key, or appends it.
void add_detail(std::vector<OpDetail>& details, const OpDetail& d) {
  for (OpDetail& have : details)
    if (have.key == d.key) {
      have.seconds += d.seconds;
      have.flops += d.flops;
      have.bytes += d.bytes;
      have.calls += d.calls;
      return;
    }
  details.push_back(d);
}

// A field of the details of one family, summed.
template <typename Field>
double family_sum(const std::vector<OpDetail>& details, OpFamily family, Field field) {
  double sum = 0;
  for (const OpDetail& d : details)
    if (d.family == family) sum += static_cast<double>(d.*field);
  return sum;
}
}  // namespace

double FamilyTotals::seconds(OpFamily f) const {
  return family_sum(details, f, &OpDetail::seconds);
}
double FamilyTotals::flops(OpFamily f) const {
  return family_sum(details, f, &OpDetail::flops);
}
double FamilyTotals::bytes(OpFamily f) const {
  return family_sum(details, f, &OpDetail::bytes);
}
size_t FamilyTotals::calls(OpFamily f) const {
  return static_cast<size_t>(family_sum(details, f, &OpDetail::calls));
}

double FamilyTotals::op_seconds() const {
  double sum = 0;
  for (const OpDetail& d : details) sum += d.seconds;
  return sum;
}

FamilyTotals& FamilyTotals::operator+=(const FamilyTotals& other) {
  span_seconds += other.span_seconds;
  for (const OpDetail& d : other.details) add_detail(details, d);
  return *this;
}

// ---- Work per op: FLOPs of the products, and the bytes each tensor is read or written once -----

namespace {

double bytes_of(const Tensor& t) {
  return t.defined() ? static_cast<double>(t.bytes()) : 0.0;
}

double segment_elements(std::span<const TensorSegment> segments) {
  double n = 0;
  for (const auto& s : segments) n += static_cast<double>(s.numel);
  return n;
}

const char* activation_note(Activation a) {
  switch (a) {
    case Activation::none:
      return "";
    case Activation::gelu:
      return "gelu";
    case Activation::tanh:
      return "tanh";
    case Activation::gelu_erf:
      return "gelu_erf";
  }
  return "";
}

std::string detail_key(const char* op, int64_t n, int64_t k, int batch, const char* note) {
  std::string key = op;
  if (n) key += " n=" + std::to_string(n);
  if (k) key += " k=" + std::to_string(k);
  if (batch > 1) key += " x" + std::to_string(batch);
  if (*note) key += std::string(" ") + note;
  return key;
}

}  // namespace

template <typename Call>
void ProfilingOps::timed(OpFamily family, const char* op, Shape shape, double flops, double bytes,
                         Call&& call) {
  if (!recording_) {
    call();
    return;
  }
  clock_.mark();
  call();
  clock_.mark();
  records_.push_back({family, op, shape, flops, bytes});
}

void ProfilingOps::start() {
  clock_.clear();
  records_.clear();
  recording_ = true;
}

FamilyTotals ProfilingOps::stop() {
  recording_ = false;
  FamilyTotals totals;
  if (records_.empty()) return totals;
  const std::vector<double> intervals = clock_.elapsed();
  if (intervals.size() != 2 * records_.size() - 1)
    throw std::logic_error("ProfilingOps: " + std::to_string(intervals.size()) +
                           " clock intervals for " + std::to_string(records_.size()) + " ops");
  for (size_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    add_detail(totals.details, {detail_key(r.op, r.shape.n, r.shape.k, r.shape.batch, r.shape.note),
                                r.family, intervals[2 * i], r.flops, r.bytes, 1});
  }
  totals.span_seconds = std::accumulate(intervals.begin(), intervals.end(), 0.0);
  records_.clear();
  return totals;
}

void ProfilingOps::copy_from_host(Tensor dst, const void* src, size_t bytes) {
  timed(OpFamily::other, "copy_from_host", {}, 0, static_cast<double>(bytes),
        [&] { inner_.copy_from_host(dst, src, bytes); });
}
void ProfilingOps::copy_to_host(void* dst, Tensor src, size_t bytes) {
  timed(OpFamily::other, "copy_to_host", {}, 0, static_cast<double>(bytes),
        [&] { inner_.copy_to_host(dst, src, bytes); });
}
void ProfilingOps::copy(Tensor dst, Tensor src) {
  timed(OpFamily::other, "copy", {}, 0, bytes_of(dst) + bytes_of(src),
        [&] { inner_.copy(dst, src); });
}
void ProfilingOps::fill_zero(Tensor tensor) {
  timed(OpFamily::other, "fill_zero", {}, 0, bytes_of(tensor), [&] { inner_.fill_zero(tensor); });
}
void ProfilingOps::cast(Tensor dst, Tensor src) {
  timed(OpFamily::other, "cast", {}, 0, bytes_of(dst) + bytes_of(src),
        [&] { inner_.cast(dst, src); });
}

void ProfilingOps::linear_forward(const LinearForwardParams& p) {
  const double es = static_cast<double>(dtype_size(p.input.dtype));
  const double m = static_cast<double>(p.m), n = static_cast<double>(p.n),
               k = static_cast<double>(p.k), b = p.batch;
  const double outputs = p.pre_activation.defined() ? 2 : 1;
  const double bytes = es * (m * k + b * (k * n + n + outputs * m * n));
  timed(OpFamily::gemm, "linear_forward", {p.n, p.k, p.batch, activation_note(p.activation)},
        2 * m * n * k * b, bytes, [&] { inner_.linear_forward(p); });
}

void ProfilingOps::linear_backward(const LinearBackwardParams& p) {
  const double es = static_cast<double>(dtype_size(p.input.dtype));
  const double m = static_cast<double>(p.m), n = static_cast<double>(p.n),
               k = static_cast<double>(p.k), b = p.batch;
  const double products = p.d_input.defined() ? 2 : 1;  // weight gradient, input gradient
  double bytes = es * (b * m * n + m * k + b * k * n) + 4.0 * 2 * b * k * n;  // d_weight f32 r+w
  if (p.d_input.defined()) bytes += es * m * k;
  if (p.activation != Activation::none) bytes += es * 2 * b * m * n;  // pre-activation, d_out
  const char* note = !p.d_input.defined()                     ? "weight only"
                     : p.input_activation != Activation::none ? "+input gelu"
                     : p.activation != Activation::none       ? activation_note(p.activation)
                                                              : "";
  timed(OpFamily::gemm, "linear_backward", {p.n, p.k, p.batch, note}, 2 * m * n * k * b * products,
        bytes, [&] { inner_.linear_backward(p); });
}

void ProfilingOps::layer_norm_forward(const LayerNormForwardParams& p) {
  const double es = static_cast<double>(dtype_size(p.x.dtype));
  const double rw = static_cast<double>(p.rows * p.width);
  const double bytes = es * rw * (p.residual.defined() ? 4 : 3) + 8.0 * p.rows;
  timed(OpFamily::layer_norm, "layer_norm_forward",
        {p.width, 0, 1, p.residual.defined() ? "+residual" : ""}, 0, bytes,
        [&] { inner_.layer_norm_forward(p); });
}

void ProfilingOps::layer_norm_backward(const LayerNormBackwardParams& p) {
  const double es = static_cast<double>(dtype_size(p.d_out.dtype));
  const double rw = static_cast<double>(p.rows * p.width);
  double tensors = 3;  // d_out, ln_input, d_x
  if (p.d_residual.defined()) tensors += p.accumulate_d_residual ? 2 : 1;
  timed(OpFamily::layer_norm, "layer_norm_backward",
        {p.width, 0, 1, p.d_residual.defined() ? "+residual" : ""}, 0,
        es * rw * tensors + 8.0 * p.rows, [&] { inner_.layer_norm_backward(p); });
}

void ProfilingOps::embedding_forward(const EmbeddingForwardParams& p) {
  const double es = static_cast<double>(dtype_size(p.out.dtype));
  const double th = static_cast<double>(p.tokens * p.hidden);
  // three table rows read, out and ln_input written, three ids per token
  timed(OpFamily::embedding, "embedding_forward", {}, 0, es * th * 5 + 12.0 * p.tokens,
        [&] { inner_.embedding_forward(p); });
}

void ProfilingOps::embedding_backward(const EmbeddingBackwardParams& p) {
  const double es = static_cast<double>(dtype_size(p.d_out.dtype));
  const double th = static_cast<double>(p.tokens * p.hidden);
  // d_out and ln_input read; three f32 gradient rows read and written per token
  timed(OpFamily::embedding, "embedding_backward", {}, 0,
        es * th * 2 + 4.0 * th * 6 + 12.0 * p.tokens, [&] { inner_.embedding_backward(p); });
}

void ProfilingOps::attention_forward(const AttentionForwardParams& p) {
  const double es = static_cast<double>(dtype_size(p.q.dtype));
  const double hidden = static_cast<double>(p.heads * p.head_dim);
  const double th = static_cast<double>(p.tokens) * hidden;
  // S = QK^T and O = PV: 2 len^2 head_dim each per head
  timed(OpFamily::attention_forward, "attention_forward", {}, 4 * hidden * squares_,
        es * th * 4 + 4.0 * p.heads * p.tokens, [&] { inner_.attention_forward(p); });
}

void ProfilingOps::attention_backward(const AttentionBackwardParams& p) {
  const double es = static_cast<double>(dtype_size(p.q.dtype));
  const double hidden = static_cast<double>(p.heads * p.head_dim);
  const double th = static_cast<double>(p.tokens) * hidden;
  // S recomputed, dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q: five products
  timed(OpFamily::attention_backward, "attention_backward", {}, 10 * hidden * squares_,
        es * th * 8 + 4.0 * p.heads * p.tokens, [&] { inner_.attention_backward(p); });
}

void ProfilingOps::gather_rows(const GatherRowsParams& p) {
  const double es = static_cast<double>(dtype_size(p.out.dtype));
  timed(OpFamily::other, "gather_rows", {p.width}, 0,
        es * 2.0 * static_cast<double>(p.count * p.width) + 4.0 * p.count,
        [&] { inner_.gather_rows(p); });
}

void ProfilingOps::scatter_add_rows(const ScatterAddRowsParams& p) {
  const double rw = static_cast<double>(p.count * p.width);
  const double bytes = static_cast<double>(dtype_size(p.d_out.dtype)) * rw +
                       2.0 * static_cast<double>(dtype_size(p.d_src.dtype)) * rw + 4.0 * p.count;
  timed(OpFamily::other, "scatter_add_rows", {p.width}, 0, bytes,
        [&] { inner_.scatter_add_rows(p); });
}

void ProfilingOps::cross_entropy(const CrossEntropyParams& p) {
  const double es = static_cast<double>(dtype_size(p.logits.dtype));
  const double cells = static_cast<double>(p.rows * p.row_stride);
  timed(OpFamily::loss, "cross_entropy", {p.classes}, 0, es * cells * 2 + 4.0 * p.rows,
        [&] { inner_.cross_entropy(p); });
}

void ProfilingOps::l2_norm(const L2NormParams& p) {
  timed(OpFamily::optimizer, "l2_norm", {}, 0, 4.0 * segment_elements(p.segments),
        [&] { inner_.l2_norm(p); });
}

void ProfilingOps::scale(Tensor x, float factor) {
  timed(OpFamily::optimizer, "scale", {}, 0, 2 * bytes_of(x), [&] { inner_.scale(x, factor); });
}

void ProfilingOps::bucket_clip(const BucketClipParams& p) {
  timed(OpFamily::optimizer, "bucket_clip", {}, 0, 2 * bytes_of(p.x),
        [&] { inner_.bucket_clip(p); });
}

void ProfilingOps::adam_update(const AdamParams& p) {
  const double n = segment_elements(p.segments);
  // master, exp_avg, exp_avg_sq read and written, grad read, compute copy written
  const double compute = p.compute.defined() ? static_cast<double>(dtype_size(p.compute.dtype)) : 0;
  timed(OpFamily::optimizer, "adam_update", {}, 0, n * (4.0 * 7 + compute),
        [&] { inner_.adam_update(p); });
}

void ProfilingOps::lamb_update(const LambParams& p) {
  const double n = segment_elements(p.segments);
  // as Adam, plus the update written into grad and read back for the trust ratio and the step
  const double compute = p.compute.defined() ? static_cast<double>(dtype_size(p.compute.dtype)) : 0;
  timed(OpFamily::optimizer, "lamb_update", {}, 0, n * (4.0 * 9 + compute),
        [&] { inner_.lamb_update(p); });
}

// ---- The table
// -------------------------------------------------------------------------------------

namespace {
bool tensor_rate(OpFamily f) {
  return f == OpFamily::gemm || f == OpFamily::attention_forward ||
         f == OpFamily::attention_backward;
}
}  // namespace

namespace {

// One row from `calls` ops over `steps` steps.
FamilyRow make_row(OpFamily family, std::string name, double seconds, double flops, double bytes,
                   size_t calls, double span_seconds, double gemm_tflops, double copy_gbs,
                   int steps) {
  FamilyRow r;
  r.family = family;
  r.name = std::move(name);
  r.calls = calls / static_cast<size_t>(steps);
  r.ms = 1e3 * seconds / steps;
  r.share = span_seconds > 0 ? seconds / span_seconds : 0;
  double ideal = 0;
  if (tensor_rate(family)) {
    r.rate = seconds > 0 ? flops / seconds / 1e12 : 0;
    r.of_ceiling = gemm_tflops > 0 ? r.rate / gemm_tflops : 0;
    ideal = gemm_tflops > 0 ? flops / (gemm_tflops * 1e12) : 0;
  } else {
    r.rate = seconds > 0 ? bytes / seconds / 1e9 : 0;
    r.of_ceiling = copy_gbs > 0 ? r.rate / copy_gbs : 0;
    ideal = copy_gbs > 0 ? bytes / (copy_gbs * 1e9) : 0;
  }
  r.gap_ms = 1e3 * std::max(0.0, seconds - ideal) / steps;
  return r;
}

std::string rate_text(const FamilyRow& r) {
  char rate[32];
  std::snprintf(rate, sizeof rate, tensor_rate(r.family) ? "%.1f TFLOP/s" : "%.0f GB/s", r.rate);
  return rate;
}

}  // namespace

std::vector<FamilyRow> family_rows(const FamilyTotals& totals, double gemm_tflops, double copy_gbs,
                                   int steps) {
  if (steps < 1) throw std::invalid_argument("family_rows: steps must be at least 1");
  std::vector<FamilyRow> rows;
  for (size_t i = 0; i < kOpFamilies; ++i) {
    const auto family = static_cast<OpFamily>(i);
    if (totals.calls(family) == 0) continue;
    rows.push_back(make_row(family, op_family_name(family), totals.seconds(family),
                            totals.flops(family), totals.bytes(family), totals.calls(family),
                            totals.span_seconds, gemm_tflops, copy_gbs, steps));
  }
  return rows;
}

std::vector<FamilyRow> detail_rows(const FamilyTotals& totals, double gemm_tflops, double copy_gbs,
                                   int steps) {
  if (steps < 1) throw std::invalid_argument("detail_rows: steps must be at least 1");
  std::vector<FamilyRow> rows;
  for (const OpDetail& d : totals.details)
    rows.push_back(make_row(d.family, d.key, d.seconds, d.flops, d.bytes, d.calls,
                            totals.span_seconds, gemm_tflops, copy_gbs, steps));
  std::stable_sort(rows.begin(), rows.end(),
                   [](const FamilyRow& a, const FamilyRow& b) { return a.gap_ms > b.gap_ms; });
  return rows;
}

std::string format_detail_table(const std::vector<FamilyRow>& rows, size_t limit) {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "  %-46s %6s %9s %7s %14s %10s %9s\n", "op and shape", "calls",
                "ms/step", "share", "rate", "of ceiling", "gap ms");
  out += line;
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    const FamilyRow& r = rows[i];
    std::snprintf(line, sizeof line, "  %-46s %6zu %9.3f %6.1f%% %14s %9.1f%% %9.3f\n",
                  r.name.c_str(), r.calls, r.ms, 100 * r.share, rate_text(r).c_str(),
                  100 * r.of_ceiling, r.gap_ms);
    out += line;
  }
  return out;
}

std::string format_family_table(const std::vector<FamilyRow>& rows, const FamilyTotals& totals,
                                int steps) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "  %-19s %6s %9s %7s %14s %10s %9s\n", "family", "calls",
                "ms/step", "share", "rate", "of ceiling", "gap ms");
  out += line;
  for (const FamilyRow& r : rows) {
    std::snprintf(line, sizeof line, "  %-19s %6zu %9.3f %6.1f%% %14s %9.1f%% %9.3f\n",
                  r.name.c_str(), r.calls, r.ms, 100 * r.share, rate_text(r).c_str(),
                  100 * r.of_ceiling, r.gap_ms);
    out += line;
  }
  const double ops_ms = 1e3 * totals.op_seconds() / steps,
               span_ms = 1e3 * totals.span_seconds / steps;
  std::snprintf(line, sizeof line,
                "  ops %.3f ms, GPU idle between ops %.3f ms (%.1f%%), span %.3f ms per step\n",
                ops_ms, span_ms - ops_ms, span_ms > 0 ? 100 * (span_ms - ops_ms) / span_ms : 0,
                span_ms);
  out += line;
  std::vector<FamilyRow> by_gap = rows;
  std::sort(by_gap.begin(), by_gap.end(),
            [](const FamilyRow& a, const FamilyRow& b) { return a.gap_ms > b.gap_ms; });
  out += "  largest gaps to the ceiling:";
  for (size_t i = 0; i < by_gap.size() && i < 3; ++i) {
    std::snprintf(line, sizeof line, "%s %s %.3f ms", i ? "," : "", by_gap[i].name.c_str(),
                  by_gap[i].gap_ms);
    out += line;
  }
  out += "\n";
  return out;
}

}  // namespace mlbert::bert
