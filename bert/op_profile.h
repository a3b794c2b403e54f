// Where one training step's time goes, op family by op family: a ProfilingOps wraps a backend,
// forwards every call to it unchanged and, while recording, puts a timestamp before and after each
// op together with the op's family and the work it does (FLOPs, minimum bytes moved). The family
// totals are then set against the device's measured ceilings (GEMM rate for GEMMs and attention,
// copy bandwidth for the rest) to show which family is furthest from its ceiling.
//
// Design choice: the clock is an interface. On CUDA (bench/cuda) a timestamp is an event recorded
// on the backend's stream, so an op's interval is what the GPU spent on it, and the gaps between
// ops are the GPU waiting for the host; on the CPU backend (whose ops run synchronously) it is the
// host clock, which is how the accounting is unit-tested without a GPU.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bert/ops.h"

namespace mlbert::bert {

enum class OpFamily : uint8_t {
  gemm,                // linear_forward, linear_backward (with their fused epilogues)
  attention_forward,   //
  attention_backward,  //
  layer_norm,          // layer_norm_forward/backward (bias, dropout, residual fused)
  embedding,           // embedding_forward/backward (LayerNorm and dropout fused)
  loss,                // cross_entropy
  optimizer,           // l2_norm, scale, bucket_clip, adam_update, lamb_update
  other,               // casts, copies, fills, row gather/scatter, host transfers
};
inline constexpr size_t kOpFamilies = 8;
const char* op_family_name(OpFamily family);

// Timestamps in issue order; elapsed() waits for the last one and returns the seconds between
// consecutive marks since clear().
class OpClock {
 public:
  virtual ~OpClock() = default;
  virtual void mark() = 0;
  virtual std::vector<double> elapsed() = 0;
  virtual void clear() = 0;
};

// The host's steady clock: right for a backend whose ops finish before they return (the CPU).
class HostOpClock final : public OpClock {
 public:
  void mark() override;
  std::vector<double> elapsed() override;
  void clear() override { marks_.clear(); }

 private:
  std::vector<double> marks_;
};

// One op and shape (e.g. "linear_backward n=1024 k=4096"): the finer rows under the families.
struct OpDetail {
  std::string key;
  OpFamily family = OpFamily::other;
  double seconds = 0, flops = 0, bytes = 0;
  size_t calls = 0;
};

// What a recording holds: the ops by op and shape, and its span.
struct FamilyTotals {
  std::vector<OpDetail> details;  // in order of first appearance
  double span_seconds = 0;  // first op's start to last op's end (ops and the gaps between them)
  // A family's sums over its details.
  double seconds(OpFamily family) const;
  double flops(OpFamily family) const;
  double bytes(OpFamily family) const;
  size_t calls(OpFamily family) const;
  double op_seconds() const;
  FamilyTotals& operator+=(const FamilyTotals& other);  // several recordings (steps) together
};

class ProfilingOps final : public Ops {
 public:
  ProfilingOps(Ops& inner, OpClock& clock) : inner_(inner), clock_(clock) {}

  // Attention FLOPs need the sum over sequences of length^2, which lives on the device; the caller
  // states it for the batch it runs (0: attention FLOPs are not counted).
  void set_attention_squares(double sum_of_squared_lengths) { squares_ = sum_of_squared_lengths; }
  void start();         // clears and records from now on
  FamilyTotals stop();  // stops recording; waits for the clock; totals of the recorded ops

  std::string name() const override { return inner_.name(); }
  DType compute_dtype() const override { return inner_.compute_dtype(); }
  OpsPreferences preferences() const override { return inner_.preferences(); }
  Tensor allocate(DType dtype, size_t numel) override { return inner_.allocate(dtype, numel); }
  void release(Tensor tensor) override { inner_.release(tensor); }
  void copy_from_host(Tensor dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, Tensor src, size_t bytes) override;
  void copy(Tensor dst, Tensor src) override;
  void fill_zero(Tensor tensor) override;
  void cast(Tensor dst, Tensor src) override;
  void synchronize() override { inner_.synchronize(); }

  void linear_forward(const LinearForwardParams& p) override;
  void linear_backward(const LinearBackwardParams& p) override;
  void layer_norm_forward(const LayerNormForwardParams& p) override;
  void layer_norm_backward(const LayerNormBackwardParams& p) override;
  void embedding_forward(const EmbeddingForwardParams& p) override;
  void embedding_backward(const EmbeddingBackwardParams& p) override;
  size_t attention_saved_bytes(int64_t tokens, int64_t num_sequences, int64_t heads,
                               int max_seqlen) const override {
    return inner_.attention_saved_bytes(tokens, num_sequences, heads, max_seqlen);
  }
  size_t layer_norm_saved_bytes(int64_t rows, int64_t width) const override {
    return inner_.layer_norm_saved_bytes(rows, width);
  }
  void attention_forward(const AttentionForwardParams& p) override;
  void attention_backward(const AttentionBackwardParams& p) override;
  void gather_rows(const GatherRowsParams& p) override;
  void scatter_add_rows(const ScatterAddRowsParams& p) override;
  void cross_entropy(const CrossEntropyParams& p) override;
  void l2_norm(const L2NormParams& p) override;
  void scale(Tensor x, float factor) override;
  void bucket_clip(const BucketClipParams& p) override;
  void adam_update(const AdamParams& p) override;
  void lamb_update(const LambParams& p) override;
  // Steps are recorded by the backend only while nothing is being profiled (a replay would hide
  // the ops from the clock).
  bool begin_step(const StepShape& shape, uint64_t seed, uint32_t step) override {
    forwarding_step_ = !recording_;
    return forwarding_step_ && inner_.begin_step(shape, seed, step);
  }
  void end_step(bool completed) override {
    if (forwarding_step_) inner_.end_step(completed);
    forwarding_step_ = false;
  }

 private:
  // The op's shape, turned into a detail key only for recorded ops.
  struct Shape {
    int64_t n = 0, k = 0;
    int batch = 1;
    const char* note = "";
  };
  template <typename Call>
  void timed(OpFamily family, const char* op, Shape shape, double flops, double bytes, Call&& call);

  struct Record {
    OpFamily family;
    const char* op;
    Shape shape;
    double flops, bytes;
  };
  Ops& inner_;
  OpClock& clock_;
  double squares_ = 0;
  bool recording_ = false;
  bool forwarding_step_ = false;
  std::vector<Record> records_;
};

// The families against the device's ceilings. Attention and GEMM FLOPs are set against the GEMM
// rate, the other families' minimum bytes against the copy bandwidth; a family's gap is its time
// minus the time it would take at its ceiling.
struct FamilyRow {
  OpFamily family;
  std::string name;          // the family's, or the detail's key
  double ms = 0, share = 0;  // per step; share of the span
  double rate = 0;           // TFLOP/s (gemm, attention) or GB/s (the rest)
  double of_ceiling = 0;     // rate / ceiling
  double gap_ms = 0;         // ms - ms at the ceiling
  size_t calls = 0;
};
std::vector<FamilyRow> family_rows(const FamilyTotals& totals, double gemm_tflops, double copy_gbs,
                                   int steps);
// The same for each op and shape, largest gap first.
std::vector<FamilyRow> detail_rows(const FamilyTotals& totals, double gemm_tflops, double copy_gbs,
                                   int steps);
// A table of the rows, the GPU's idle time (span minus ops) and the three largest gaps.
std::string format_family_table(const std::vector<FamilyRow>& rows, const FamilyTotals& totals,
                                int steps);
// The first `limit` detail rows as a table.
std::string format_detail_table(const std::vector<FamilyRow>& rows, size_t limit);

}  // namespace mlbert::bert
