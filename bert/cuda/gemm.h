// cuBLASLt GEMMs with epilogues for the CUDA backend, plus a plain tiled fallback kernel for shapes
// cuBLASLt has no algorithm for (e.g. the 2-wide NSP output layer on some versions).
//
// Design choice: a GemmRunner owns one cuBLASLt handle and one preallocated workspace, and caches
// per problem (shapes, types, epilogue, pointer alignments) the descriptors and the algorithm
// (the heuristic's first, or with GemmTuning::candidates > 1 the fastest of its first candidates,
// timed once: gemm_tuning.h), so steady-state steps make no heuristic queries and no allocations.
// The cache
// holds at most a few hundred problems, least recently used out first: packed batches bring a new
// token count (a new problem for every layer's GEMMs) nearly every step, so an unbounded cache
// would grow over a whole run. A problem cuBLASLt refuses (no algorithm, or its first
// cublasLtMatmul answers "not supported") is cached as refused and named on stderr, once per
// product whatever its token count, with the caller's fallback; fusion_report() says how often
// each epilogue ran fused and how many plans were refused.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bert/cuda/gemm_plan.h"
#include "bert/cuda/gemm_tuning.h"

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
// Cached problems: one token count of a BERT-large step needs a few dozen (the layers' products
// per pointer alignment, the heads'), so this keeps the plans of ~10 recent token counts.
constexpr size_t kGemmPlanCacheCapacity = 512;

// A map holding at most `capacity` entries: find() makes an entry the most recently used, and
// insert() into a full map first evicts the least recently used one, handing it to the caller's
// `on_evict` (which releases what it owns). References to values stay valid until their entry is
// evicted or the map is destroyed. Host-only (unit-tested without a GPU).
template <typename Key, typename Value>
class LruMap {
 public:
  explicit LruMap(size_t capacity) : capacity_(capacity) {
    if (capacity == 0) throw std::invalid_argument("LruMap: capacity must be positive");
  }
  size_t size() const { return index_.size(); }
  size_t capacity() const { return capacity_; }
  size_t evictions() const { return evictions_; }

  Value* find(const Key& key) {
    auto found = index_.find(key);
    if (found == index_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, found->second);
    return &found->second->second;
  }
  // `key` must be absent.
  template <typename OnEvict>
  Value& insert(const Key& key, Value value, OnEvict on_evict) {
    if (index_.count(key) != 0) throw std::logic_error("LruMap: key already present");
    if (index_.size() >= capacity_) {
      auto oldest = std::prev(entries_.end());
      on_evict(oldest->second);
      index_.erase(oldest->first);
      entries_.erase(oldest);
      ++evictions_;
    }
    entries_.emplace_front(key, std::move(value));
    index_.emplace(key, entries_.begin());
    return entries_.front().second;
  }
  // Every value, most recently used first.
  template <typename F>
  void for_each(F f) {
    for (auto& entry : entries_) f(entry.second);
  }

 private:
  using Entries = std::list<std::pair<Key, Value>>;
  size_t capacity_;
  size_t evictions_ = 0;
  Entries entries_;  // most recently used first
  std::map<Key, typename Entries::iterator> index_;
};

// What a refusal's stderr line is said once for: the problem without its token count (n of the
// forward and data-gradient products, k of the weight-gradient products; the leading dimensions
// still pin the layer's other sizes), with the types and the epilogue.
std::string refusal_report_key(const GemmArgs& args);

class GemmRunner {
 public:
  explicit GemmRunner(size_t workspace_bytes = kGemmWorkspaceBytes,
                      size_t plan_capacity = kGemmPlanCacheCapacity, GemmTuning tuning = {});
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Enqueues the product on `stream`. Returns false, launching nothing, when cuBLASLt offers no
  // algorithm for this problem (the caller then falls back; with GemmTuning::strict it throws
  // instead); throws on any other failure. A problem seen for the first time is planned here, and
  // with tuning its candidates are timed on `stream` (synchronizing it; never while the stream is
  // being captured into a CUDA graph: then the first candidate is taken).
  bool run(const GemmArgs& args, cudaStream_t stream);

  size_t cached_problems() const { return cache_.size(); }
  size_t plan_capacity() const { return cache_.capacity(); }
  size_t evicted_plans() const { return cache_.evictions(); }
  size_t heuristic_queries() const { return heuristic_queries_; }
  // Fused runs and refused plans per (epilogue, vector type), in first-use order.
  const std::vector<EpilogueUse>& epilogue_uses() const { return uses_; }
  std::string fusion_report() const { return mlbert::cuda::fusion_report(uses_); }

  // How the algorithms were chosen: "GEMM algorithms: the first heuristic", or the candidates
  // timed, with the problems timed, those that took a kept choice and those whose kept choice
  // cuBLASLt no longer offered (they took the first candidate).
  std::string tuning_report() const;
  // Writes the tuned choices to GemmTuning::plans_file (nothing without one).
  void save_tuned_plans() const;
  // cudaMalloc calls of the timing (its copy of an accumulating product's output).
  size_t tuning_allocations() const { return tuning_allocations_; }

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
  Plan& plan_for(const GemmArgs& args, cudaStream_t stream);
  static void create_descriptors(Plan& plan, const GemmArgs& args);
  void refuse(Plan& plan, const GemmArgs& args, const std::string& reason);
  static void destroy(Plan& plan);
  cublasLtMatmulAlgo_t choose_algorithm(const Plan& plan, const GemmArgs& args,
                                        const cublasLtMatmulHeuristicResult_t* found, int count,
                                        cudaStream_t stream);
  double time_algorithm(const Plan& plan, const GemmArgs& args, const cublasLtMatmulAlgo_t& algo,
                        cudaStream_t stream);
  void* output_copy(const GemmArgs& args, cudaStream_t stream);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  LruMap<Key, Plan> cache_;
  size_t heuristic_queries_ = 0;
  std::vector<EpilogueUse> uses_;
  std::set<std::string> reported_refusals_;  // refusal_report_key of each refusal named on stderr
  GemmTuning tuning_;
  TunedPlans tuned_;
  size_t timed_problems_ = 0, reused_choices_ = 0, unmatched_choices_ = 0;
  void* timing_output_ = nullptr;  // the copy of D an accumulating product is timed on
  size_t timing_output_bytes_ = 0;
  size_t tuning_allocations_ = 0;
};

// Plain tiled GEMM (fp32 accumulate) with the same column-major conventions, alpha/beta and an
// optional bias along D's rows. Slow but shape-agnostic: the fallback when run() returns false.
void fallback_gemm(const GemmArgs& args, cudaStream_t stream);

}  // namespace mlbert::cuda
