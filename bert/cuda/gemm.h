// cuBLASLt GEMMs with epilogues for the CUDA backend, plus a plain tiled fallback kernel for shapes
// cuBLASLt has no algorithm for (e.g. the 2-wide NSP output layer on some versions).
//
// Design choice: a GemmRunner owns one cuBLASLt handle and one preallocated workspace, and caches
// per problem (shapes, types, epilogue, pointer alignments) the descriptors and the heuristic's
// best algorithm, so steady-state steps make no heuristic queries and no allocations. A problem
// cuBLASLt refuses (no algorithm, or its first cublasLtMatmul answers "not supported") is cached
// as refused and named on stderr once, with the caller's fallback; fusion_report() says how often
// each epilogue ran fused.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bert/cuda/gemm_plan.h"

namespace mlbert::cuda {

struct GemmArgs {
  ColumnMajorGemm shape;
  MatrixType ab_type = MatrixType::bf16;  // A and B
  MatrixType d_type = MatrixType::bf16;   // C and D (C is D: beta != 0 accumulates in place)
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  GemmEpilogue epilogue = GemmEpilogue::none;
  const void* bias = nullptr;  // bias, gelu_aux_bias: [rows of D]
  void* bias_grad = nullptr;   // dgelu_bgrad, bgrad_a, bgrad_b: written (=), never accumulated
  MatrixType bias_type = MatrixType::bf16;  // of bias / bias_grad: epilogue_vector_type(d_type)
  void* aux = nullptr;  // gelu_aux_bias (written) / dgelu_bgrad (read): pre-activation, type d_type
  int64_t aux_ld = 0;
  // What the caller does when cuBLASLt refuses this problem (named in the refusal's stderr line).
  const char* fallback = "the tiled fallback GEMM";
};

// 32 MiB: what cuBLASLt's documentation recommends for Hopper (more than enough for Ampere).
constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;

class GemmRunner {
 public:
  explicit GemmRunner(size_t workspace_bytes = kGemmWorkspaceBytes);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Enqueues the product on `stream`. Returns false, launching nothing, when cuBLASLt offers no
  // algorithm for this problem (the caller then falls back); throws on any other failure.
  bool run(const GemmArgs& args, cudaStream_t stream);

  size_t cached_problems() const { return cache_.size(); }
  size_t heuristic_queries() const { return heuristic_queries_; }
  // Fused runs and refused plans per (epilogue, vector type), in first-use order.
  const std::vector<EpilogueUse>& epilogue_uses() const { return uses_; }
  std::string fusion_report() const { return mlbert::cuda::fusion_report(uses_); }

 private:
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int,
                         int, int, int64_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>;
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool supported = false;
    bool ran = false;  // cublasLtMatmul accepted it once
    size_t use = 0;    // index into uses_
  };
  Plan& plan_for(const GemmArgs& args);
  void refuse(Plan& plan, const GemmArgs& args, const std::string& reason);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, Plan> cache_;
  size_t heuristic_queries_ = 0;
  std::vector<EpilogueUse> uses_;
};

// Plain tiled GEMM (fp32 accumulate) with the same column-major conventions, alpha/beta and an
// optional bias along D's rows. Slow but shape-agnostic: the fallback when run() returns false.
void fallback_gemm(const GemmArgs& args, cudaStream_t stream);

}  // namespace mlbert::cuda
