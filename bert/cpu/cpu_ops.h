// CpuOps: the fp32 reference backend of the Ops contract (bert/ops.h), on host memory.
//
// Design choice: one thread pool. GEMMs are split into per-thread blocks of the output, each run
// by single-threaded OpenBLAS on an OpenMP thread; everything else is plain loops parallelized
// with OpenMP over rows, sequences x heads, or columns for reductions, written so each output
// element is owned by one thread (no atomics; results do not depend on the thread count except
// through how BLAS blocks its sums). A CpuOps is used by one host thread at a time.
#pragma once
#include <string>
#include <vector>

#include "bert/ops.h"

namespace mlbert::bert {

class CpuOps final : public Ops {
 public:
  // Makes OpenBLAS single-threaded process-wide: GEMMs are split over the OpenMP threads instead
  // (bert/cpu/gemm.h), so set the thread count with OMP_NUM_THREADS / omp_set_num_threads.
  CpuOps();
  // The same, asking the model for `preferences` (tests run the model's other arrangements on the
  // reference backend).
  explicit CpuOps(const OpsPreferences& preferences);
  std::string name() const override { return "cpu"; }
  DType compute_dtype() const override { return DType::f32; }
  OpsPreferences preferences() const override { return preferences_; }

  Tensor allocate(DType dtype, size_t numel) override;
  void release(Tensor tensor) override;
  void copy_from_host(Tensor dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, Tensor src, size_t bytes) override;
  void copy(Tensor dst, Tensor src) override;
  void fill_zero(Tensor tensor) override;
  void cast(Tensor dst, Tensor src) override;
  void synchronize() override {}

  void linear_forward(const LinearForwardParams& p) override;
  void linear_backward(const LinearBackwardParams& p) override;
  void layer_norm_forward(const LayerNormForwardParams& p) override;
  void layer_norm_backward(const LayerNormBackwardParams& p) override;
  void embedding_forward(const EmbeddingForwardParams& p) override;
  void embedding_backward(const EmbeddingBackwardParams& p) override;
  void attention_forward(const AttentionForwardParams& p) override;
  void attention_backward(const AttentionBackwardParams& p) override;
  void gather_rows(const GatherRowsParams& p) override;
  void scatter_add_rows(const ScatterAddRowsParams& p) override;
  void cross_entropy(const CrossEntropyParams& p) override;

  void l2_norm(const L2NormParams& p) override;
  void scale(Tensor x, float factor) override;
  void adam_update(const AdamParams& p) override;
  void lamb_update(const LambParams& p) override;

 private:
  // Per-thread scratch of at least `floats` elements, kept between calls so the attention's
  // L x L score blocks are not reallocated (and page-faulted) on every layer. Call
  // reserve_scratch before the OpenMP region; each thread then only touches its own buffer.
  void reserve_scratch(size_t floats_per_thread);
  float* scratch(int thread) { return scratch_[static_cast<size_t>(thread)].data(); }
  std::vector<std::vector<float>> scratch_;
  OpsPreferences preferences_;
};

// GELU (tanh approximation) and its derivative, shared by the CPU kernels and tests.
float gelu_tanh(float x);
float gelu_tanh_grad(float x);
float gelu_erf(float x);
float gelu_erf_grad(float x);

}  // namespace mlbert::bert
