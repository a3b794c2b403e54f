// cuBLASLt GEMM runner with a per-problem algorithm cache, and the tiled fallback GEMM.
#include "bert/cuda/gemm.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bert/cuda/common.cuh"

namespace mlbert::cuda {
namespace {

cudaDataType_t cuda_type(MatrixType type) {
  switch (type) {
    case MatrixType::f16:
      return CUDA_R_16F;
    case MatrixType::bf16:
      return CUDA_R_16BF;
    case MatrixType::f32:
      return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

cublasLtEpilogue_t lt_epilogue(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::none:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::bias:
      return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::gelu_aux_bias:
      return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case GemmEpilogue::dgelu_bgrad:
      return CUBLASLT_EPILOGUE_DGELU_BGRAD;
    case GemmEpilogue::bgrad_a:
      return CUBLASLT_EPILOGUE_BGRADA;
    case GemmEpilogue::bgrad_b:
      return CUBLASLT_EPILOGUE_BGRADB;
    case GemmEpilogue::dgelu:
      return CUBLASLT_EPILOGUE_DGELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool uses_aux(GemmEpilogue e) {
  return epilogue_uses_aux(e);
}
bool uses_bias_grad(GemmEpilogue e) {
  return epilogue_writes_bias_grad(e);
}
bool uses_bias(GemmEpilogue e) {
  return epilogue_reads_bias(e);
}

// A cuBLASLt status a first cublasLtMatmul may answer for a combination the heuristic offered but
// the kernel does not take (the documentation names INVALID_VALUE for unsupported vector types).
bool is_refusal(cublasStatus_t status) {
  return status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE;
}

template <typename V>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const V& value) {
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}

void set_epilogue_pointers(cublasLtMatmulDesc_t desc, const GemmArgs& args) {
  if (uses_bias(args.epilogue)) set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias);
  if (uses_bias_grad(args.epilogue))
    set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(args.bias_grad));
  if (uses_aux(args.epilogue))
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, static_cast<const void*>(args.aux));
}

void validate(const GemmArgs& args) {
  const ColumnMajorGemm& g = args.shape;
  if (g.m <= 0 || g.n <= 0 || g.k <= 0)
    throw std::invalid_argument("gemm: empty problem " + describe(g));
  if (args.a == nullptr || args.b == nullptr || args.d == nullptr)
    throw std::invalid_argument("gemm: null operand for " + describe(g));
  if (uses_bias(args.epilogue) && args.bias == nullptr)
    throw std::invalid_argument(std::string("gemm: epilogue ") + gemm_epilogue_name(args.epilogue) +
                                " needs a bias");
  if (uses_bias_grad(args.epilogue) && args.bias_grad == nullptr)
    throw std::invalid_argument(std::string("gemm: epilogue ") + gemm_epilogue_name(args.epilogue) +
                                " needs a bias_grad");
  if (uses_aux(args.epilogue) &&
      (args.aux == nullptr || args.aux_ld < g.m || args.aux_ld % kGemmAuxLdMultiple != 0))
    throw std::invalid_argument("gemm: GELU aux buffer missing or its ld " +
                                std::to_string(args.aux_ld) + " is not a multiple of 8 >= m for " +
                                describe(g));
}

}  // namespace

std::string refusal_report_key(const GemmArgs& args) {
  const ColumnMajorGemm& g = args.shape;
  std::string key = std::string(gemm_epilogue_name(args.epilogue)) + " A/B " +
                    matrix_type_name(args.ab_type) + " C/D " + matrix_type_name(args.d_type);
  if (args.epilogue != GemmEpilogue::none)
    key += std::string(" vector ") + matrix_type_name(args.bias_type);
  return key + " m=" + std::to_string(g.m) + (g.trans_a ? " A^T" : " A") +
         " lda=" + std::to_string(g.lda) + (g.trans_b ? " B^T" : " B") +
         " ldb=" + std::to_string(g.ldb) + " ldd=" + std::to_string(g.ldd);
}

namespace {
// The device a tuned choice belongs to: the current GPU's name, the driver and cuBLASLt versions.
std::string current_tuning_device() {
  int device = 0, driver = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp props{};
  CUDA_CHECK(cudaGetDeviceProperties(&props, device));
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  return tuning_device(props.name, driver, cublasLtGetVersion());
}
}  // namespace

GemmRunner::GemmRunner(size_t workspace_bytes, size_t plan_capacity, GemmTuning tuning)
    : workspace_bytes_(workspace_bytes),
      cache_(plan_capacity),
      tuning_(std::move(tuning)),
      tuned_(current_tuning_device()) {
  validate(tuning_);
  if (!tuning_.plans_file.empty()) tuned_.load(tuning_.plans_file);
  CUBLAS_CHECK(cublasLtCreate(&handle_));
  if (workspace_bytes_ > 0) CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

void GemmRunner::destroy(Plan& plan) {
  if (plan.a) cublasLtMatrixLayoutDestroy(plan.a);
  if (plan.b) cublasLtMatrixLayoutDestroy(plan.b);
  if (plan.d) cublasLtMatrixLayoutDestroy(plan.d);
  if (plan.desc) cublasLtMatmulDescDestroy(plan.desc);
  plan = Plan{};
}

GemmRunner::~GemmRunner() {
  cache_.for_each([](Plan& plan) { destroy(plan); });
  if (timing_output_) cudaFree(timing_output_);
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

namespace {

// The alignments cuBLASLt's heuristic is told (and a plan is cached for): A, B, D, the bias or
// bias-gradient vector, the aux matrix.
struct Alignments {
  uint32_t a = 0, b = 0, d = 0, bias = 0, aux = 0;
};
Alignments alignments_of(const GemmArgs& args) {
  auto of = [](const void* p) { return pointer_alignment(reinterpret_cast<uintptr_t>(p)); };
  const void* vector = uses_bias(args.epilogue)        ? args.bias
                       : uses_bias_grad(args.epilogue) ? args.bias_grad
                                                       : nullptr;
  return {of(args.a), of(args.b), of(args.d), vector ? of(vector) : 0,
          uses_aux(args.epilogue) ? of(args.aux) : 0};
}

template <typename V>
void set_preference(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                    const V& value) {
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
}

// What the heuristic may offer for `args`: within the workspace, the operands' alignments, and
// for a 16-bit output only split-K products that add their partial sums in f32 (the in-place and
// output-type schemes round each partial to fp16/bf16, which the device check saw as 2-4x the
// error of one rounding on the small-N products, NSP's N = 2 and a width of 13, on an H200).
cublasLtMatmulPreference_t make_preference(const GemmArgs& args, const Alignments& align,
                                           uint64_t max_workspace) {
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  set_preference(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_workspace);
  set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align.a);
  set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align.b);
  set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align.d);
  set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align.d);
  const uint32_t reductions = args.d_type == MatrixType::f32
                                  ? uint32_t{CUBLASLT_REDUCTION_SCHEME_MASK}
                                  : uint32_t{CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE};
  set_preference(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reductions);
  return pref;
}

}  // namespace

// The operation and matrix descriptors of a problem.
void GemmRunner::create_descriptors(Plan& plan, const GemmArgs& args) {
  const ColumnMajorGemm& g = args.shape;
  const cudaDataType_t ab = cuda_type(args.ab_type), dt = cuda_type(args.d_type);
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_desc(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, op_a);
  set_desc(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, op_b);
  const cublasLtEpilogue_t epilogue = lt_epilogue(args.epilogue);
  set_desc(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  if (args.epilogue != GemmEpilogue::none) {
    const int32_t bias_type = cuda_type(args.bias_type);
    set_desc(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type);
  }
  if (uses_aux(args.epilogue))
    set_desc(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, args.aux_ld);
  set_epilogue_pointers(plan.desc, args);
  // Stored shapes: op(A) is m x k, so A is stored k x m when transposed.
  CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&plan.a, ab, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda));
  CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&plan.b, ab, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.d, dt, g.m, g.n, g.ldd));
}

GemmRunner::Plan& GemmRunner::plan_for(const GemmArgs& args, cudaStream_t stream) {
  const ColumnMajorGemm& g = args.shape;
  const Alignments align = alignments_of(args);
  const Key key{g.m,
                g.n,
                g.k,
                g.lda,
                g.ldb,
                g.ldd,
                g.trans_a,
                g.trans_b,
                static_cast<int>(args.ab_type),
                static_cast<int>(args.d_type),
                static_cast<int>(args.epilogue),
                static_cast<int>(args.bias_type),
                uses_aux(args.epilogue) ? args.aux_ld : 0,
                align.a,
                align.b,
                align.d,
                align.bias,
                align.aux};
  if (Plan* found = cache_.find(key)) return *found;

  Plan plan;
  plan.use = uses_.size();
  for (size_t i = 0; i < uses_.size(); ++i)
    if (uses_[i].epilogue == args.epilogue && uses_[i].vector_type == args.bias_type) plan.use = i;
  if (plan.use == uses_.size()) uses_.push_back(EpilogueUse{args.epilogue, args.bias_type, 0, 0});
  create_descriptors(plan, args);
  cublasLtMatmulPreference_t pref = make_preference(args, align, workspace_bytes_);
  // (A unique_ptr array: nvcc 13's front end fails on a std::vector of this C struct.)
  std::unique_ptr<cublasLtMatmulHeuristicResult_t[]> results(
      new cublasLtMatmulHeuristicResult_t[static_cast<size_t>(tuning_.candidates)]());
  int found_count = 0;
  ++heuristic_queries_;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, plan.desc, plan.a, plan.b, plan.d, plan.d, pref,
                                     tuning_.candidates, results.get(), &found_count);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status == CUBLAS_STATUS_SUCCESS && found_count > 0) {
    plan.algo = choose_algorithm(plan, args, results.get(), found_count, stream);
    plan.supported = true;
  } else if (status != CUBLAS_STATUS_SUCCESS && !is_refusal(status)) {
    CUBLAS_CHECK(status);
  }
  // Destroying an evicted plan's descriptors is safe even while the stream still runs its last
  // product: cublasLtMatmul consumes them when it enqueues (frameworks destroy theirs after each
  // call).
  Plan& cached = cache_.insert(key, plan, [](Plan& evicted) { destroy(evicted); });
  if (!cached.supported)
    refuse(cached, args,
           status == CUBLAS_STATUS_SUCCESS
               ? std::string("the heuristic found no algorithm")
               : std::string("the heuristic answered ") + cublas_status_name(status));
  return cached;
}

void GemmRunner::refuse(Plan& plan, const GemmArgs& args, const std::string& reason) {
  plan.supported = false;
  ++uses_[plan.use].refused_plans;
  if (tuning_.strict)
    throw std::runtime_error(
        "cuBLASLt refused " +
        describe_problem(args.epilogue, args.ab_type, args.d_type, args.bias_type, args.shape) +
        ": " + reason + "; a strict GEMM run does not fall back to " +
        (args.fallback ? args.fallback : "a fallback"));
  // Said once per product: its other token counts are only counted (fusion_report).
  if (!reported_refusals_.insert(refusal_report_key(args)).second) return;
  std::fprintf(
      stderr,
      "mlbert cuda: cuBLASLt refused %s: %s; running %s instead (said once for this product, "
      "whatever its token count)\n",
      describe_problem(args.epilogue, args.ab_type, args.d_type, args.bias_type, args.shape)
          .c_str(),
      reason.c_str(), args.fallback ? args.fallback : "a fallback");
  std::fflush(stderr);
}

// ---- tuning: the heuristic's first candidates timed once per problem (gemm_tuning.h) -------------

namespace {
constexpr int kTimingRuns = 3;  // after one untimed run

AlgoWords words_of(const cublasLtMatmulAlgo_t& algo) {
  AlgoWords w;
  std::memcpy(w.words.data(), algo.data, sizeof(algo.data));
  return w;
}
cublasLtMatmulAlgo_t algo_of(const AlgoWords& w) {
  cublasLtMatmulAlgo_t algo{};
  std::memcpy(algo.data, w.words.data(), sizeof(algo.data));
  return algo;
}
bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}
size_t matrix_bytes(MatrixType type) {
  return type == MatrixType::f32 ? 4 : 2;
}
}  // namespace

cublasLtMatmulAlgo_t GemmRunner::choose_algorithm(const Plan& plan, const GemmArgs& args,
                                                  const cublasLtMatmulHeuristicResult_t* found,
                                                  int count, cudaStream_t stream) {
  if (tuning_.candidates <= 1) return found[0].algo;
  const std::string key = tuning_key(args);
  if (const TunedPlan* kept = tuned_.find(key)) {
    for (int i = 0; i < count; ++i) {
      if (words_of(found[i].algo) == kept->algo) {
        ++reused_choices_;
        return found[i].algo;
      }
    }
    // Not among this shape's candidates: cuBLASLt may still take it for this shape.
    cublasLtMatmulAlgo_t algo = algo_of(kept->algo);
    cublasLtMatmulHeuristicResult_t check{};
    if (cublasLtMatmulAlgoCheck(handle_, plan.desc, plan.a, plan.b, plan.d, plan.d, &algo,
                                &check) == CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= workspace_bytes_) {
      ++reused_choices_;
      return algo;
    }
    ++unmatched_choices_;
    return found[0].algo;
  }
  if (count == 1 || capturing(stream)) return found[0].algo;
  std::vector<double> microseconds(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) microseconds[i] = time_algorithm(plan, args, found[i].algo, stream);
  const size_t best = fastest_candidate(microseconds);
  if (best == microseconds.size()) return found[0].algo;  // none ran: its first run reports why
  tuned_.record(key, TunedPlan{words_of(found[best].algo), microseconds[best], count});
  ++timed_problems_;
  return found[best].algo;
}

// An accumulating product (beta != 0) is timed on a copy of its output, which the timing runs
// may add to freely; one that writes its output (beta 0) is timed in place, where the real run
// then writes it once more.
void* GemmRunner::output_copy(const GemmArgs& args, cudaStream_t stream) {
  const size_t bytes =
      static_cast<size_t>(args.shape.ldd) * static_cast<size_t>(args.shape.n) *
      matrix_bytes(args.d_type);
  if (bytes > timing_output_bytes_) {
    CUDA_CHECK(cudaStreamSynchronize(stream));
    if (timing_output_) CUDA_CHECK(cudaFree(timing_output_));
    timing_output_ = nullptr;
    CUDA_CHECK(cudaMalloc(&timing_output_, bytes));
    timing_output_bytes_ = bytes;
    ++tuning_allocations_;
  }
  CUDA_CHECK(cudaMemcpyAsync(timing_output_, args.d, bytes, cudaMemcpyDeviceToDevice, stream));
  return timing_output_;
}

double GemmRunner::time_algorithm(const Plan& plan, const GemmArgs& args,
                                  const cublasLtMatmulAlgo_t& algo, cudaStream_t stream) {
  void* d = args.beta != 0.0f ? output_copy(args, stream) : args.d;
  set_epilogue_pointers(plan.desc, args);
  auto run = [&] {
    return cublasLtMatmul(handle_, plan.desc, &args.alpha, args.a, plan.a, args.b, plan.b,
                          &args.beta, d, plan.d, d, plan.d, &algo, workspace_, workspace_bytes_,
                          stream);
  };
  if (run() != CUBLAS_STATUS_SUCCESS) return INFINITY;
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start, stream));
  bool ran = true;
  for (int r = 0; r < kTimingRuns && ran; ++r) ran = run() == CUBLAS_STATUS_SUCCESS;
  CUDA_CHECK(cudaEventRecord(stop, stream));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ran ? 1e3 * ms / kTimingRuns : INFINITY;
}

std::string GemmRunner::tuning_report() const {
  if (tuning_.candidates <= 1) return "GEMM algorithms: the first heuristic";
  return "GEMM algorithms: the fastest of up to " + std::to_string(tuning_.candidates) +
         " candidates, timed once per problem: " + std::to_string(timed_problems_) +
         " problems timed, " + std::to_string(reused_choices_) + " took a kept choice, " +
         std::to_string(unmatched_choices_) + " could not (the first candidate instead)" +
         (tuning_.plans_file.empty() ? ""
                                     : "; plans file " + tuning_.plans_file.string() + " (" +
                                           std::to_string(tuned_.size()) + " choices)");
}

void GemmRunner::save_tuned_plans() const {
  if (!tuning_.plans_file.empty()) tuned_.save(tuning_.plans_file);
}

bool GemmRunner::run(const GemmArgs& args, cudaStream_t stream) {
  validate(args);
  Plan& plan = plan_for(args, stream);
  if (!plan.supported) return false;
  set_epilogue_pointers(plan.desc, args);
  const cublasStatus_t status = cublasLtMatmul(
      handle_, plan.desc, &args.alpha, args.a, plan.a, args.b, plan.b, &args.beta, args.d, plan.d,
      args.d, plan.d, &plan.algo, workspace_, workspace_bytes_, stream);
  if (!plan.ran && is_refusal(status)) {
    refuse(plan, args,
           std::string("its first cublasLtMatmul answered ") + cublas_status_name(status));
    return false;
  }
  CUBLAS_CHECK(status);
  plan.ran = true;
  ++uses_[plan.use].fused_runs;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Fallback GEMM: 32x32 output tiles, 256 threads each owning 4 outputs, k in steps of 32.

namespace {

constexpr int kFallbackTile = 32;
constexpr int kFallbackThreads = 256;

template <typename T>
__device__ __forceinline__ float load_as_float(const void* base, int64_t index) {
  return to_float(static_cast<const T*>(base)[index]);
}

__device__ __forceinline__ float load_matrix(MatrixType type, const void* base, int64_t index) {
  switch (type) {
    case MatrixType::f16:
      return load_as_float<__half>(base, index);
    case MatrixType::bf16:
      return load_as_float<__nv_bfloat16>(base, index);
    default:
      return load_as_float<float>(base, index);
  }
}

__device__ __forceinline__ void store_matrix(MatrixType type, void* base, int64_t index,
                                             float value) {
  switch (type) {
    case MatrixType::f16:
      static_cast<__half*>(base)[index] = __float2half_rn(value);
      break;
    case MatrixType::bf16:
      static_cast<__nv_bfloat16*>(base)[index] = __float2bfloat16_rn(value);
      break;
    default:
      static_cast<float*>(base)[index] = value;
      break;
  }
}

__global__ void fallback_gemm_kernel(const GemmArgs args) {
  const ColumnMajorGemm& g = args.shape;
  __shared__ float tile_a[kFallbackTile][kFallbackTile + 1];  // [m][k]
  __shared__ float tile_b[kFallbackTile][kFallbackTile + 1];  // [k][n]
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kFallbackTile;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * kFallbackTile;
  const int tm = threadIdx.x % kFallbackTile;  // output row within the tile
  const int tn = threadIdx.x / kFallbackTile;  // first of 4 output columns (stride 8)
  constexpr int kColsPerThread = kFallbackTile * kFallbackTile / kFallbackThreads;
  constexpr int kColStride = kFallbackThreads / kFallbackTile;
  float acc[kColsPerThread] = {};
  for (int64_t k0 = 0; k0 < g.k; k0 += kFallbackTile) {
    for (int i = threadIdx.x; i < kFallbackTile * kFallbackTile; i += kFallbackThreads) {
      const int r = i % kFallbackTile, c = i / kFallbackTile;
      const int64_t am = m0 + r, ak = k0 + c;
      float a = 0.0f;
      if (am < g.m && ak < g.k)
        a = load_matrix(args.ab_type, args.a, g.trans_a ? ak + am * g.lda : am + ak * g.lda);
      tile_a[r][c] = a;
      const int64_t bk = k0 + r, bn = n0 + c;
      float b = 0.0f;
      if (bk < g.k && bn < g.n)
        b = load_matrix(args.ab_type, args.b, g.trans_b ? bn + bk * g.ldb : bk + bn * g.ldb);
      tile_b[r][c] = b;
    }
    __syncthreads();
    for (int kk = 0; kk < kFallbackTile; ++kk) {
      const float a = tile_a[tm][kk];
#pragma unroll
      for (int j = 0; j < kColsPerThread; ++j) acc[j] += a * tile_b[kk][tn + j * kColStride];
    }
    __syncthreads();
  }
  const int64_t row = m0 + tm;
  if (row >= g.m) return;
#pragma unroll
  for (int j = 0; j < kColsPerThread; ++j) {
    const int64_t col = n0 + tn + j * kColStride;
    if (col >= g.n) continue;
    const int64_t index = row + col * g.ldd;
    float value = args.alpha * acc[j];
    if (args.beta != 0.0f) value += args.beta * load_matrix(args.d_type, args.d, index);
    if (args.epilogue == GemmEpilogue::bias) value += load_matrix(args.bias_type, args.bias, row);
    store_matrix(args.d_type, args.d, index, value);
  }
}

}  // namespace

void fallback_gemm(const GemmArgs& args, cudaStream_t stream) {
  validate(args);
  if (args.epilogue != GemmEpilogue::none && args.epilogue != GemmEpilogue::bias)
    throw std::invalid_argument(std::string("fallback_gemm: epilogue ") +
                                gemm_epilogue_name(args.epilogue) +
                                " is not supported; run the plain product and a separate kernel");
  const dim3 grid(ceil_div(args.shape.m, kFallbackTile), ceil_div(args.shape.n, kFallbackTile));
  fallback_gemm_kernel<<<grid, kFallbackThreads, 0, stream>>>(args);
  CUDA_CHECK_LAUNCH();
}

}  // namespace mlbert::cuda
