// CudaOps: argument checks, dtype mapping and dispatch of every Ops call to the bert/cuda kernels
// and cuBLASLt (see cuda_ops.h).
#include "bert/cuda/cuda_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "bert/cuda/attention.h"
#include "bert/cuda/cross_entropy.h"
#include "bert/cuda/cuda_check.h"
#include "bert/cuda/elementwise.h"
#include "bert/cuda/embedding.h"
#include "bert/cuda/gemm_plan.h"
#include "bert/cuda/layer_norm.h"
#include "bert/cuda/layer_norm_layout.h"
#include "bert/cuda/step_recorder.h"

namespace mlbert::cuda {
namespace {

using bert::DType;
using bert::Tensor;

// Device error bits beyond the embedding's (see embedding.h).
constexpr uint32_t kErrorGatherIndex = 1u << 8;
constexpr uint32_t kErrorScatterIndex = 1u << 9;
constexpr uint32_t kErrorLabel = 1u << 10;

void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(op) + ": " + what);
}

// `t` must be defined (unless numel is 0), of `dtype`, and hold at least `numel` elements.
void require_tensor(const Tensor& t, DType dtype, size_t numel, const char* op, const char* field) {
  require(t.defined() || numel == 0, op, std::string(field) + " is not set");
  require(t.dtype == dtype, op,
          std::string(field) + " has dtype " + bert::dtype_name(t.dtype) + ", expected " +
              bert::dtype_name(dtype));
  require(t.numel >= numel, op,
          std::string(field) + " holds " + std::to_string(t.numel) + " elements, needs " +
              std::to_string(numel));
}

ComputeType compute_type_of(DType dtype) {
  if (dtype == DType::f16) return ComputeType::f16;
  if (dtype == DType::bf16) return ComputeType::bf16;
  throw std::invalid_argument(std::string("CudaOps: compute dtype must be f16 or bf16, not ") +
                              bert::dtype_name(dtype));
}

MatrixType matrix_type_of(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return MatrixType::f16;
    case DType::bf16:
      return MatrixType::bf16;
    case DType::f32:
      return MatrixType::f32;
    default:
      throw std::invalid_argument("gemm: integer matrices are not supported");
  }
}

ElementType element_type_of(DType dtype, const char* op) {
  switch (dtype) {
    case DType::f32:
      return ElementType::f32;
    case DType::f16:
      return ElementType::f16;
    case DType::bf16:
      return ElementType::bf16;
    default:
      throw std::invalid_argument(std::string(op) + ": i32 tensors cannot be converted");
  }
}

ElementType element_type_of(MatrixType type) {
  switch (type) {
    case MatrixType::f32:
      return ElementType::f32;
    case MatrixType::f16:
      return ElementType::f16;
    case MatrixType::bf16:
      return ElementType::bf16;
  }
  return ElementType::f32;
}

ActivationKind activation_kind(bert::Activation act) {
  switch (act) {
    case bert::Activation::gelu:
      return ActivationKind::gelu_tanh;
    case bert::Activation::gelu_erf:
      return ActivationKind::gelu_erf;
    case bert::Activation::tanh:
      return ActivationKind::tanh;
    default:
      throw std::invalid_argument("activation: none has no kernel");
  }
}

const char* describe_device_errors(uint32_t flags, std::string& out) {
  out.clear();
  auto add = [&](uint32_t bit, const char* what) {
    if (flags & bit) out += (out.empty() ? "" : "; ") + std::string(what);
  };
  add(kEmbeddingBadInputId, "embedding: an input_ids entry is outside the word table");
  add(kEmbeddingBadPositionId, "embedding: a position_ids entry is outside the position table");
  add(kEmbeddingBadSegmentId, "embedding: a segment_ids entry is outside the token-type table");
  add(kErrorGatherIndex, "gather_rows: an index is outside the source rows");
  add(kErrorScatterIndex, "scatter_add_rows: an index is outside d_src's rows");
  add(kErrorLabel, "cross_entropy: a label is outside [0, classes)");
  add(kAttentionBadCuSeqlens,
      "attention: cu_seqlens has an empty sequence, one longer than max_seqlen or one past the "
      "tokens");
  return out.c_str();
}

template <typename P>
char* byte_ptr(const Tensor& t, size_t element_offset) {
  return static_cast<char*>(t.data) + element_offset * bert::dtype_size(t.dtype);
}

}  // namespace

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver/device" error
    return 0;
  }
  return count;
}

bool set_cuda_device(int device) {
  if (cudaSetDevice(device) == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

CudaOpsOptions cuda_ops_options_for(const bert::BertConfig& config, const bert::ModelLimits& limits,
                                    DType compute_dtype) {
  CudaOpsOptions options;
  options.compute_dtype = compute_dtype;
  options.workspace_limits = workspace_limits_for(config, limits);
  return options;
}

std::unique_ptr<CudaOps> make_cuda_ops(const bert::BertConfig& config,
                                       const bert::ModelLimits& limits,
                                       const std::string& precision, int device) {
  const ComputeType type = parse_compute_type(precision);
  CudaOpsOptions options =
      cuda_ops_options_for(config, limits, type == ComputeType::f16 ? DType::f16 : DType::bf16);
  options.device = device;
  return std::make_unique<CudaOps>(options);
}

CudaOps::CudaOps(const CudaOpsOptions& options)
    : options_(options), type_(compute_type_of(options.compute_dtype)) {
  if (options.attention_deterministic_dq && options.attention_kernels != AttentionKernels::fa2)
    throw std::invalid_argument(
        std::string("CudaOps: attention_deterministic_dq needs attention_kernels fa2 (got ") +
        attention_kernels_name(options.attention_kernels) + ")");
  if (cuda_device_count() <= options.device)
    throw std::runtime_error("CudaOps: no CUDA device " + std::to_string(options.device) +
                             " (found " + std::to_string(cuda_device_count()) + ")");
  CUDA_CHECK(cudaSetDevice(options.device));
  cudaDeviceProp props{};
  CUDA_CHECK(cudaGetDeviceProperties(&props, options.device));
  if (props.major < 8)
    throw std::runtime_error(std::string("CudaOps: ") + props.name + " is sm_" +
                             std::to_string(props.major) + std::to_string(props.minor) +
                             "; the kernels need sm_80 or newer");
  sm_count_ = props.multiProcessorCount;
  device_name_ = props.name;
  attention_configure_device();
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  GemmTuning tuning;
  tuning.candidates = options.gemm_candidates;
  tuning.plans_file = options.gemm_plans_file;
  tuning.strict = options.gemm_strict;
  gemm_ = std::make_unique<GemmRunner>(options.gemm_workspace_bytes, kGemmPlanCacheCapacity,
                                       std::move(tuning));
  ++device_allocations_;  // the GEMM workspace
  error_flags_ = static_cast<uint32_t*>(device_malloc(sizeof(uint32_t)));
  CUDA_CHECK(cudaMemsetAsync(error_flags_, 0, sizeof(uint32_t), stream_));
  if (options.workspace_limits.max_tokens > 0)
    scratch(cuda::workspace_bytes(options.workspace_limits, sm_count_));
  if (options.cuda_graphs) {
    steps_ = std::make_unique<StepRecorder>();
    ++device_allocations_;  // its dropout key
  }
}

CudaOps::~CudaOps() {
  if (stream_) cudaStreamSynchronize(stream_);
  steps_.reset();
  for (CachedTable& t : tables_) cudaFree(t.device);
  if (workspace_) cudaFree(workspace_);
  if (error_flags_) cudaFree(error_flags_);
  if (loss_scale_) cudaFree(loss_scale_);
  gemm_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

// ---- recorded steps ---------------------------------------------------------------------------

bool CudaOps::begin_step(const bert::StepShape& shape, uint64_t seed, uint32_t step) {
  return steps_ != nullptr && steps_->begin(shape, seed, step, stream_);
}

void CudaOps::end_step(bool completed) {
  if (steps_ != nullptr) steps_->end(completed, stream_);
}

bert::DropoutMask CudaOps::kernel_mask(const bert::DropoutMask& mask) const {
  return steps_ != nullptr ? steps_->kernel_mask(mask) : mask;
}

bert::DropoutMask CudaOps::attention_mask(const char* op, const bert::DropoutMask& mask) const {
  if (!kAttentionReadsDeviceDropoutKey && mask.enabled && steps_ != nullptr && steps_->capturing())
    throw std::runtime_error(std::string(op) +
                             ": a recorded step (cuda_graphs) would replay this step's attention "
                             "dropout mask: the attention kernels do not read the dropout key from "
                             "device memory yet; run without attention dropout or without graphs");
  return kernel_mask(mask);
}

std::string CudaOps::step_report() const {
  return steps_ != nullptr ? steps_->report() : "CUDA graphs: off";
}

bert::OpsPreferences CudaOps::preferences() const {
  bert::OpsPreferences p;
  p.qkv_layout = options_.fused_qkv ? bert::QkvLayout::fused : bert::QkvLayout::separate;
  p.ffn1_bias_grad_with_weight_grad = options_.dgelu_epilogue;
  p.record_steps = options_.cuda_graphs;
  return p;
}

std::string CudaOps::name() const {
  return std::string("cuda (") + device_name_ + ", " + bert::dtype_name(options_.compute_dtype) +
         ")";
}

void* CudaOps::device_malloc(size_t bytes) {
  void* ptr = nullptr;
  CUDA_CHECK(cudaMalloc(&ptr, std::max<size_t>(bytes, 1)));
  ++device_allocations_;
  return ptr;
}

void* CudaOps::scratch(size_t bytes) {
  if (bytes <= workspace_bytes_) return workspace_;
  if (steps_ != nullptr && steps_->capturing())
    throw std::runtime_error("CudaOps: a step being recorded needs " + std::to_string(bytes) +
                             " bytes of workspace, more than its first run sized (" +
                             std::to_string(workspace_bytes_) + ")");
  // Growth (only before the workspace has seen the largest step): wait for users of the old one.
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  if (workspace_) CUDA_CHECK(cudaFree(workspace_));
  workspace_ = nullptr;
  workspace_bytes_ = 0;
  const size_t size = align_up(bytes);
  workspace_ = device_malloc(size);
  workspace_bytes_ = size;
  return workspace_;
}

void CudaOps::check_device_errors() {
  uint32_t flags = 0;
  CUDA_CHECK(cudaMemcpyAsync(&flags, error_flags_, sizeof(flags), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  if (flags != 0) {
    CUDA_CHECK(cudaMemsetAsync(error_flags_, 0, sizeof(uint32_t), stream_));
    std::string what;
    throw std::runtime_error(std::string("CudaOps: bad input found on the device: ") +
                             describe_device_errors(flags, what));
  }
}

// ---- memory -----------------------------------------------------------------------------------

Tensor CudaOps::allocate(DType dtype, size_t numel) {
  Tensor t;
  t.dtype = dtype;
  t.numel = numel;
  if (numel == 0) return t;
  const size_t bytes = align_up(numel * bert::dtype_size(dtype));
  t.data = device_malloc(bytes);
  CUDA_CHECK(cudaMemsetAsync(t.data, 0, bytes, stream_));
  return t;
}

void CudaOps::release(Tensor tensor) {
  if (!tensor.defined()) return;
  // Buffers release in destructors, also while unwinding from a device fault, whose sticky error
  // every call then returns: throwing here would end the process in std::terminate before the run
  // logs why it stopped. The fault was or will be reported by a checked call.
  (void)cudaStreamSynchronize(stream_);
  (void)cudaFree(tensor.data);
}

void CudaOps::copy_from_host(Tensor dst, const void* src, size_t bytes) {
  require(bytes <= dst.bytes(), "copy_from_host", "more bytes than the tensor holds");
  // From pageable memory the call returns once `src` has been staged, so the caller may reuse it.
  if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst.data, src, bytes, cudaMemcpyHostToDevice, stream_));
}

void CudaOps::copy_to_host(void* dst, Tensor src, size_t bytes) {
  require(bytes <= src.bytes(), "copy_to_host", "more bytes than the tensor holds");
  if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src.data, bytes, cudaMemcpyDeviceToHost, stream_));
  check_device_errors();  // synchronizes
}

void CudaOps::copy(Tensor dst, Tensor src) {
  require(dst.dtype == src.dtype && dst.numel == src.numel, "copy",
          "dst and src differ in dtype or size");
  if (src.numel)
    CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, src.bytes(), cudaMemcpyDeviceToDevice, stream_));
}

void CudaOps::fill_zero(Tensor tensor) {
  if (tensor.numel) CUDA_CHECK(cudaMemsetAsync(tensor.data, 0, tensor.bytes(), stream_));
}

void CudaOps::cast(Tensor dst, Tensor src) {
  require(dst.numel == src.numel, "cast", "dst and src differ in size");
  convert(element_type_of(dst.dtype, "cast"), dst.data, element_type_of(src.dtype, "cast"),
          src.data, static_cast<int64_t>(src.numel), stream_);
}

void CudaOps::synchronize() {
  check_device_errors();
}

// ---- GEMMs ------------------------------------------------------------------------------------

void CudaOps::linear_gemm(const GemmArgs& args) {
  if (gemm_->run(args, stream_)) return;
  fallback_gemm(args, stream_);
}

void CudaOps::linear_forward(const bert::LinearForwardParams& p) {
  const char* op = "linear_forward";
  const DType ct = options_.compute_dtype;
  require(p.batch >= 1, op, "batch must be at least 1");
  require(p.m >= 0 && p.n > 0 && p.k > 0, op, "n and k must be positive, m non-negative");
  if (p.m == 0) return;
  const size_t M = p.m, N = p.n, K = p.k, B = p.batch;
  const size_t weight_stride = B > 1 ? p.weight_stride : N * K;
  const size_t bias_stride = B > 1 ? p.bias_stride : N;
  const size_t out_stride = B > 1 ? p.out_stride : M * N;
  require_tensor(p.input, ct, M * K, op, "input");
  require_tensor(p.weight, ct, (B - 1) * weight_stride + N * K, op, "weight");
  if (p.bias.defined()) require_tensor(p.bias, ct, (B - 1) * bias_stride + N, op, "bias");
  require_tensor(p.out, ct, (B - 1) * out_stride + M * N, op, "out");
  const bool has_act = p.activation != bert::Activation::none;
  if (p.pre_activation.defined())
    require_tensor(p.pre_activation, ct, (B - 1) * out_stride + M * N, op, "pre_activation");
  require(has_act || !p.pre_activation.defined(), op,
          "pre_activation is set without an activation");

  const ColumnMajorGemm shape = plan_linear_forward(p.m, p.n, p.k, p.weight_transposed);
  const bool tanh_gelu = p.activation == bert::Activation::gelu && options_.gelu_epilogue;
  for (size_t b = 0; b < B; ++b) {
    GemmArgs g;
    g.shape = shape;
    g.ab_type = g.d_type = g.bias_type = matrix_type_of(ct);
    g.a = byte_ptr<void>(p.weight, b * weight_stride);
    g.b = p.input.data;
    void* out = byte_ptr<void>(p.out, b * out_stride);
    void* pre =
        p.pre_activation.defined() ? byte_ptr<void>(p.pre_activation, b * out_stride) : nullptr;
    const void* bias = p.bias.defined() ? byte_ptr<void>(p.bias, b * bias_stride) : nullptr;
    const GemmEpilogue epilogue =
        forward_epilogue(bias != nullptr, tanh_gelu, pre != nullptr, shape.ldd);
    if (epilogue == GemmEpilogue::gelu_aux_bias) {
      g.d = out;
      g.epilogue = epilogue;
      g.bias = bias;
      g.aux = pre;
      g.aux_ld = shape.ldd;
      g.fallback = "GEMM with BIAS, then the GELU kernel";
      if (gemm_->run(g, stream_)) continue;
    }
    g.fallback = "the tiled fallback GEMM";
    // Plain product (+ bias) into the pre-activation (or the output), then the activation.
    g.d = (has_act && pre != nullptr) ? pre : out;
    g.epilogue = bias != nullptr ? GemmEpilogue::bias : GemmEpilogue::none;
    g.bias = bias;
    g.aux = nullptr;
    g.aux_ld = 0;
    linear_gemm(g);
    if (has_act)
      activation_forward(type_, activation_kind(p.activation), g.d, out,
                         static_cast<int64_t>(M * N), stream_);
  }
}

// d_input = (d_pre . W^T) * act'(input_pre_activation), d_input_bias += its column sums: the plain
// GEMM, the activation gradient and a column sum; or, for the tanh GELU when the options ask for
// it and cuBLASLt offers one, one GEMM with the DGELU_BGRAD epilogue (dgelu_bgrad_epilogue) or
// with DGELU followed by the column sum (dgelu_epilogue). DGELU_BGRAD writes the bias gradient in
// d_input's type (cuBLASLt's rule, see epilogue_vector_type) into scratch, summed over the tokens
// in f32 inside the GEMM and rounded once; a small kernel adds it into the f32 d_input_bias.
void CudaOps::input_activation_backward(const bert::LinearBackwardParams& p, GemmArgs g,
                                        const LinearScratch& scratch) {
  const int64_t M = p.m, K = p.k;
  float* d_input_bias = p.d_input_bias.defined() ? p.d_input_bias.as<float>() : nullptr;
  const EpilogueChoice choice =
      data_gradient_epilogue(p.input_activation == bert::Activation::gelu,
                             d_input_bias != nullptr && options_.dgelu_bgrad_epilogue,
                             options_.dgelu_epilogue, g.shape.ldd, g.d_type);
  if (choice.epilogue != GemmEpilogue::none) {
    GemmArgs fused = g;
    fused.epilogue = choice.epilogue;
    fused.aux = p.input_pre_activation.data;
    fused.aux_ld = g.shape.ldd;
    if (choice.epilogue == GemmEpilogue::dgelu_bgrad) fused.bias_grad = scratch.bias;
    fused.bias_type = choice.vector_type;
    fused.fallback = "the plain GEMM, the GELU-gradient kernel and an f32 column sum";
    if (gemm_->run(fused, stream_)) {
      if (choice.epilogue == GemmEpilogue::dgelu_bgrad)
        add_to_f32(d_input_bias, element_type_of(fused.bias_type), scratch.bias, K, stream_);
      else if (d_input_bias != nullptr)
        column_sum_add(type_, g.d, M, K, d_input_bias, scratch.columns, scratch.column_bytes,
                       stream_);
      return;
    }
  }
  linear_gemm(g);
  activation_backward(type_, activation_kind(p.input_activation), g.d, p.input_pre_activation.data,
                      M * K, stream_);
  if (d_input_bias != nullptr)
    column_sum_add(type_, g.d, M, K, d_input_bias, scratch.columns, scratch.column_bytes, stream_);
}

// linear_backward's argument checks; the strides of the batch entries.
CudaOps::LinearStrides CudaOps::check_linear_backward(const bert::LinearBackwardParams& p) const {
  const char* op = "linear_backward";
  const DType ct = options_.compute_dtype;
  require(p.batch >= 1, op, "batch must be at least 1");
  require(p.m >= 0 && p.n > 0 && p.k > 0, op, "n and k must be positive, m non-negative");
  const size_t M = p.m, N = p.n, K = p.k, B = p.batch;
  const LinearStrides z{B > 1 ? p.weight_stride : N * K, B > 1 ? p.bias_stride : N,
                        B > 1 ? p.out_stride : M * N};
  if (M == 0) return z;
  require_tensor(p.d_out, ct, (B - 1) * z.out + M * N, op, "d_out");
  require_tensor(p.input, ct, M * K, op, "input");
  require_tensor(p.weight, ct, (B - 1) * z.weight + N * K, op, "weight");
  require_tensor(p.d_weight, DType::f32, (B - 1) * z.weight + N * K, op, "d_weight");
  if (p.d_bias.defined()) require_tensor(p.d_bias, DType::f32, (B - 1) * z.bias + N, op, "d_bias");
  if (p.d_input.defined()) require_tensor(p.d_input, ct, M * K, op, "d_input");
  if (p.input_activation != bert::Activation::none) {
    bert::require_input_activation_fusable(op, p);
    require_tensor(p.input_pre_activation, ct, M * K, op, "input_pre_activation");
    if (p.d_input_bias.defined()) require_tensor(p.d_input_bias, DType::f32, K, op, "d_input_bias");
  }
  if (p.activation != bert::Activation::none) {
    const bool uses_out = p.activation == bert::Activation::tanh;
    require_tensor(uses_out ? p.out : p.pre_activation, ct, (B - 1) * z.out + M * N, op,
                   uses_out ? "out" : "pre_activation");
  }
  return z;
}

// Batch entry b's weight gradient, with its bias gradient from the BGRADA/BGRADB epilogue when
// allowed and offered, else from an f32 column sum.
void CudaOps::weight_gradient(const bert::LinearBackwardParams& p, const LinearStrides& z, size_t b,
                              const LinearScratch& scratch) {
  const ColumnMajorGemm shape = plan_linear_backward_weight(p.m, p.n, p.k, p.weight_transposed);
  const void* d_pre = byte_ptr<void>(p.d_out, b * z.out);
  GemmArgs g;
  g.shape = shape;
  g.ab_type = matrix_type_of(options_.compute_dtype);
  g.d_type = MatrixType::f32;
  g.a = shape.a == LinearOperand::d_out ? d_pre : p.input.data;
  g.b = shape.b == LinearOperand::d_out ? d_pre : p.input.data;
  g.d = byte_ptr<void>(p.d_weight, b * z.weight);
  g.beta = 1.0f;
  float* d_bias =
      p.d_bias.defined() ? reinterpret_cast<float*>(byte_ptr<void>(p.d_bias, b * z.bias)) : nullptr;
  const EpilogueChoice choice =
      weight_gradient_epilogue(shape, d_bias != nullptr && options_.bias_grad_epilogue, g.d_type);
  if (choice.epilogue != GemmEpilogue::none) {
    GemmArgs with_bias = g;
    with_bias.epilogue = choice.epilogue;
    with_bias.bias_grad = scratch.bias;
    with_bias.bias_type = choice.vector_type;
    with_bias.fallback = "the plain GEMM and an f32 column sum";
    if (gemm_->run(with_bias, stream_)) {
      add_to_f32(d_bias, element_type_of(with_bias.bias_type), scratch.bias,
                 static_cast<int64_t>(p.n), stream_);
      return;
    }
  }
  linear_gemm(g);
  if (d_bias != nullptr)
    column_sum_add(type_, d_pre, p.m, p.n, d_bias, scratch.columns, scratch.column_bytes, stream_);
}

void CudaOps::linear_backward(const bert::LinearBackwardParams& p) {
  const LinearStrides z = check_linear_backward(p);
  const size_t M = p.m, N = p.n, K = p.k, B = p.batch;
  if (M == 0) {
    if (p.d_input.defined() && !p.accumulate_d_input) fill_zero(p.d_input.slice(0, 0));
    return;
  }
  if (p.activation != bert::Activation::none) {
    const Tensor& x = p.activation == bert::Activation::tanh ? p.out : p.pre_activation;
    for (size_t b = 0; b < B; ++b)
      activation_backward(type_, activation_kind(p.activation), byte_ptr<void>(p.d_out, b * z.out),
                          byte_ptr<void>(x, b * z.out), static_cast<int64_t>(M * N), stream_);
  }
  // Scratch: the epilogue's bias gradient [N or K], then column-sum partials for the fallback.
  // The weight side (d_bias, width N) and the input side (d_input_bias, width K) use it in turn.
  const size_t width = std::max(N, K);
  const size_t bias_bytes = align_up(width * sizeof(float));
  LinearScratch work;
  if (p.d_bias.defined() || p.d_input_bias.defined()) {
    work.column_bytes = column_sum_workspace_bytes(p.m, static_cast<int64_t>(width));
    work.bias = scratch(bias_bytes + work.column_bytes);
    work.columns = reinterpret_cast<float*>(static_cast<char*>(work.bias) + bias_bytes);
  }
  const ColumnMajorGemm data_shape = plan_linear_backward_data(p.m, p.n, p.k, p.weight_transposed);
  for (size_t b = 0; b < B; ++b) {
    if (p.d_input.defined()) {
      GemmArgs g;
      g.shape = data_shape;
      g.ab_type = g.d_type = matrix_type_of(options_.compute_dtype);
      g.a = byte_ptr<void>(p.weight, b * z.weight);
      g.b = byte_ptr<void>(p.d_out, b * z.out);
      g.d = p.d_input.data;
      g.beta = (b == 0 && !p.accumulate_d_input) ? 0.0f : 1.0f;
      if (p.input_activation != bert::Activation::none)
        input_activation_backward(p, g, work);
      else
        linear_gemm(g);
    }
    weight_gradient(p, z, b, work);
  }
}

// ---- LayerNorm, embeddings ----------------------------------------------------------------------

void CudaOps::layer_norm_forward(const bert::LayerNormForwardParams& p) {
  const char* op = "layer_norm_forward";
  const DType ct = options_.compute_dtype;
  const size_t R = p.rows, W = p.width;
  require(p.rows >= 0 && p.width > 0, op, "rows must be non-negative and width positive");
  require_tensor(p.x, ct, R * W, op, "x");
  if (p.bias.defined()) require_tensor(p.bias, ct, W, op, "bias");
  if (p.residual.defined()) require_tensor(p.residual, ct, R * W, op, "residual");
  require_tensor(p.gamma, ct, W, op, "gamma");
  require_tensor(p.beta, ct, W, op, "beta");
  require_tensor(p.out, ct, R * W, op, "out");
  require_tensor(p.ln_input, ct, R * W, op, "ln_input");
  require_tensor(p.mean, DType::f32, R, op, "mean");
  require_tensor(p.rstd, DType::f32, R, op, "rstd");
  LayerNormForwardArgs a;
  a.type = type_;
  a.x = p.x.data;
  a.bias = p.bias.defined() ? p.bias.data : nullptr;
  a.residual = p.residual.defined() ? p.residual.data : nullptr;
  a.gamma = p.gamma.data;
  a.beta = p.beta.data;
  a.out = p.out.data;
  a.ln_input = p.ln_input.data;
  a.mean = p.mean.as<float>();
  a.rstd = p.rstd.as<float>();
  a.dropout = kernel_mask(p.dropout);
  a.rows = p.rows;
  a.width = p.width;
  a.eps = p.eps;
  a.keep_bits = layer_norm_keep_buffer(op, p.saved, p.dropout, p.rows, p.width);
  cuda::layer_norm_forward(a, stream_);
}

size_t CudaOps::layer_norm_saved_bytes(int64_t rows, int64_t width) const {
  if (!options_.layer_norm_keep_bits || rows <= 0 || width <= 0) return 0;
  return static_cast<size_t>(layer_norm_keep_bytes(rows, width));
}

// The keep-bit buffer of a LayerNorm call: `saved` when this backend keeps bits and the call has
// dropout, else null (the backward then draws the mask).
uint8_t* CudaOps::layer_norm_keep_buffer(const char* op, const Tensor& saved,
                                         const bert::DropoutMask& dropout, int64_t rows,
                                         int64_t width) const {
  const size_t bytes = layer_norm_saved_bytes(rows, width);
  if (!saved.defined() || !dropout.enabled || bytes == 0) return nullptr;
  require_tensor(saved, DType::i32, (bytes + sizeof(int32_t) - 1) / sizeof(int32_t), op, "saved");
  return static_cast<uint8_t*>(saved.data);
}

void CudaOps::layer_norm_backward(const bert::LayerNormBackwardParams& p) {
  const char* op = "layer_norm_backward";
  const DType ct = options_.compute_dtype;
  const size_t R = p.rows, W = p.width;
  require(p.rows >= 0 && p.width > 0, op, "rows must be non-negative and width positive");
  require_tensor(p.d_out, ct, R * W, op, "d_out");
  require_tensor(p.ln_input, ct, R * W, op, "ln_input");
  require_tensor(p.mean, DType::f32, R, op, "mean");
  require_tensor(p.rstd, DType::f32, R, op, "rstd");
  require_tensor(p.gamma, ct, W, op, "gamma");
  require_tensor(p.d_x, ct, R * W, op, "d_x");
  if (p.d_residual.defined()) require_tensor(p.d_residual, ct, R * W, op, "d_residual");
  require_tensor(p.d_gamma, DType::f32, W, op, "d_gamma");
  require_tensor(p.d_beta, DType::f32, W, op, "d_beta");
  if (p.d_bias.defined()) require_tensor(p.d_bias, DType::f32, W, op, "d_bias");
  if (R == 0) return;
  LayerNormBackwardArgs a;
  a.type = type_;
  a.d_out = p.d_out.data;
  a.ln_input = p.ln_input.data;
  a.mean = p.mean.as<const float>();
  a.rstd = p.rstd.as<const float>();
  a.gamma = p.gamma.data;
  a.d_x = p.d_x.data;
  a.d_residual = p.d_residual.defined() ? p.d_residual.data : nullptr;
  a.accumulate_d_residual = p.accumulate_d_residual;
  a.d_gamma = p.d_gamma.as<float>();
  a.d_beta = p.d_beta.as<float>();
  a.d_bias = p.d_bias.defined() ? p.d_bias.as<float>() : nullptr;
  a.dropout = kernel_mask(p.dropout);
  a.rows = p.rows;
  a.width = p.width;
  a.keep_bits = layer_norm_keep_buffer(op, p.saved, p.dropout, p.rows, p.width);
  if (options_.layer_norm_streaming) {
    const size_t bytes = layer_norm_backward_stream_workspace_bytes(p.rows, p.width, sm_count_);
    cuda::layer_norm_backward_stream(a, static_cast<float*>(scratch(bytes)), bytes, sm_count_,
                                     stream_);
    return;
  }
  const size_t bytes = layer_norm_backward_workspace_bytes(p.rows, p.width, sm_count_);
  cuda::layer_norm_backward(a, static_cast<float*>(scratch(bytes)), bytes, sm_count_, stream_);
}

namespace {
EmbeddingTables embedding_tables(const Tensor& ids, const Tensor& positions, const Tensor& segments,
                                 const Tensor& word, const Tensor& position,
                                 const Tensor& token_type, int64_t hidden) {
  EmbeddingTables t;
  t.input_ids = ids.as<const int32_t>();
  t.position_ids = positions.as<const int32_t>();
  t.segment_ids = segments.as<const int32_t>();
  t.word_rows = static_cast<int64_t>(word.numel) / hidden;
  t.position_rows = static_cast<int64_t>(position.numel) / hidden;
  t.token_type_rows = static_cast<int64_t>(token_type.numel) / hidden;
  return t;
}
}  // namespace

void CudaOps::embedding_forward(const bert::EmbeddingForwardParams& p) {
  const char* op = "embedding_forward";
  const DType ct = options_.compute_dtype;
  const size_t T = p.tokens, H = p.hidden;
  require(p.tokens >= 0 && p.hidden > 0, op, "tokens must be non-negative and hidden positive");
  require_tensor(p.input_ids, DType::i32, T, op, "input_ids");
  require_tensor(p.position_ids, DType::i32, T, op, "position_ids");
  require_tensor(p.segment_ids, DType::i32, T, op, "segment_ids");
  require_tensor(p.word, ct, H, op, "word");
  require_tensor(p.position, ct, H, op, "position");
  require_tensor(p.token_type, ct, H, op, "token_type");
  require_tensor(p.gamma, ct, H, op, "gamma");
  require_tensor(p.beta, ct, H, op, "beta");
  require_tensor(p.out, ct, T * H, op, "out");
  require_tensor(p.ln_input, ct, T * H, op, "ln_input");
  require_tensor(p.mean, DType::f32, T, op, "mean");
  require_tensor(p.rstd, DType::f32, T, op, "rstd");
  EmbeddingForwardArgs a;
  a.type = type_;
  a.ids = embedding_tables(p.input_ids, p.position_ids, p.segment_ids, p.word, p.position,
                           p.token_type, p.hidden);
  a.word = p.word.data;
  a.position = p.position.data;
  a.token_type = p.token_type.data;
  a.gamma = p.gamma.data;
  a.beta = p.beta.data;
  a.out = p.out.data;
  a.ln_input = p.ln_input.data;
  a.mean = p.mean.as<float>();
  a.rstd = p.rstd.as<float>();
  a.dropout = kernel_mask(p.dropout);
  a.tokens = p.tokens;
  a.hidden = p.hidden;
  a.eps = p.eps;
  a.error_flags = error_flags_;
  cuda::embedding_forward(a, sm_count_, stream_);
}

void CudaOps::embedding_backward(const bert::EmbeddingBackwardParams& p) {
  const char* op = "embedding_backward";
  const DType ct = options_.compute_dtype;
  const size_t T = p.tokens, H = p.hidden;
  require(p.tokens >= 0 && p.hidden > 0, op, "tokens must be non-negative and hidden positive");
  require_tensor(p.d_out, ct, T * H, op, "d_out");
  require_tensor(p.input_ids, DType::i32, T, op, "input_ids");
  require_tensor(p.position_ids, DType::i32, T, op, "position_ids");
  require_tensor(p.segment_ids, DType::i32, T, op, "segment_ids");
  require_tensor(p.ln_input, ct, T * H, op, "ln_input");
  require_tensor(p.mean, DType::f32, T, op, "mean");
  require_tensor(p.rstd, DType::f32, T, op, "rstd");
  require_tensor(p.gamma, ct, H, op, "gamma");
  require_tensor(p.d_word, DType::f32, H, op, "d_word");
  require_tensor(p.d_position, DType::f32, H, op, "d_position");
  require_tensor(p.d_token_type, DType::f32, H, op, "d_token_type");
  require_tensor(p.d_gamma, DType::f32, H, op, "d_gamma");
  require_tensor(p.d_beta, DType::f32, H, op, "d_beta");
  if (T == 0) return;
  EmbeddingBackwardArgs a;
  a.type = type_;
  a.ids = embedding_tables(p.input_ids, p.position_ids, p.segment_ids, p.d_word, p.d_position,
                           p.d_token_type, p.hidden);
  a.d_out = p.d_out.data;
  a.ln_input = p.ln_input.data;
  a.mean = p.mean.as<const float>();
  a.rstd = p.rstd.as<const float>();
  a.gamma = p.gamma.data;
  a.d_word = p.d_word.as<float>();
  a.d_position = p.d_position.as<float>();
  a.d_token_type = p.d_token_type.as<float>();
  a.d_gamma = p.d_gamma.as<float>();
  a.d_beta = p.d_beta.as<float>();
  a.dropout = kernel_mask(p.dropout);
  a.tokens = p.tokens;
  a.hidden = p.hidden;
  a.error_flags = error_flags_;
  const size_t bytes = embedding_backward_workspace_bytes(p.tokens, p.hidden, sm_count_);
  cuda::embedding_backward(a, static_cast<float*>(scratch(bytes)), bytes, sm_count_, stream_);
}

// ---- attention ----------------------------------------------------------------------------------

namespace {
// Rows of q, k, v and their gradients: bert::AttentionForwardParams::qkv_row_stride, hidden when 0.
size_t qkv_row_stride_of(const char* op, int64_t stride, size_t hidden) {
  require(stride == 0 || stride >= static_cast<int64_t>(hidden), op,
          "qkv_row_stride must be 0 or at least heads * head_dim");
  return stride == 0 ? hidden : static_cast<size_t>(stride);
}

AttentionParams attention_common(const char* op, DType ct, const Tensor& q, const Tensor& k,
                                 const Tensor& v, const Tensor& cu_seqlens, const Tensor& lse,
                                 int64_t tokens, int64_t num_sequences, int64_t heads,
                                 int64_t head_dim, int max_seqlen, float scale,
                                 const bert::DropoutMask& dropout, uint32_t* error_flags,
                                 int64_t qkv_row_stride) {
  require(
      head_dim == kAttentionHeadDim, op,
      "the CUDA attention kernels support head_dim 64 only (got " + std::to_string(head_dim) + ")");
  require(tokens > 0 && num_sequences > 0 && heads > 0 && max_seqlen > 0, op,
          "tokens, num_sequences, heads and max_seqlen must be positive");
  const size_t hidden = static_cast<size_t>(heads * head_dim);
  const size_t T = static_cast<size_t>(tokens);
  const size_t qkv_stride = qkv_row_stride_of(op, qkv_row_stride, hidden);
  require_tensor(q, ct, (T - 1) * qkv_stride + hidden, op, "q");
  require_tensor(k, ct, (T - 1) * qkv_stride + hidden, op, "k");
  require_tensor(v, ct, (T - 1) * qkv_stride + hidden, op, "v");
  require_tensor(cu_seqlens, DType::i32, static_cast<size_t>(num_sequences) + 1, op, "cu_seqlens");
  require_tensor(lse, DType::f32, static_cast<size_t>(heads) * T, op, "softmax_lse");
  AttentionParams a;
  a.q = q.data;
  a.k = k.data;
  a.v = v.data;
  a.q_row_stride = a.k_row_stride = a.v_row_stride = static_cast<int64_t>(qkv_stride);
  a.out_row_stride = static_cast<int64_t>(hidden);
  a.softmax_lse = lse.as<float>();
  a.cu_seqlens = cu_seqlens.as<const int>();
  a.num_seqs = static_cast<int>(num_sequences);
  a.num_heads = static_cast<int>(heads);
  a.max_seqlen = max_seqlen;
  a.total_tokens = static_cast<int>(tokens);
  a.softmax_scale = scale;
  a.dropout = dropout;
  a.error_flags = error_flags;
  return a;
}
}  // namespace

const char* attention_dropout_bits_name(AttentionDropoutBits mode) {
  switch (mode) {
    case AttentionDropoutBits::drawn_twice:
      return "drawn-twice";
    case AttentionDropoutBits::forward_keeps:
      return "forward-keeps";
    case AttentionDropoutBits::kernel_keeps:
      return "kernel-keeps";
  }
  return "?";
}

AttentionDropoutBits parse_attention_dropout_bits(const std::string& name) {
  for (AttentionDropoutBits mode :
       {AttentionDropoutBits::drawn_twice, AttentionDropoutBits::forward_keeps,
        AttentionDropoutBits::kernel_keeps})
    if (name == attention_dropout_bits_name(mode)) return mode;
  throw std::invalid_argument("attention dropout bits '" + name +
                              "' is not drawn-twice, forward-keeps or kernel-keeps");
}

const char* attention_kernels_name(AttentionKernels kernels) {
  switch (kernels) {
    case AttentionKernels::classic:
      return "classic";
    case AttentionKernels::fa2:
      return "fa2";
    case AttentionKernels::automatic:
      return "auto";
  }
  return "?";
}

AttentionKernels parse_attention_kernels(const std::string& name) {
  for (AttentionKernels kernels :
       {AttentionKernels::classic, AttentionKernels::fa2, AttentionKernels::automatic})
    if (name == attention_kernels_name(kernels)) return kernels;
  throw std::invalid_argument("attention kernels '" + name + "' is not classic, fa2 or auto");
}

size_t attention_saved_bytes(AttentionDropoutBits mode, int64_t tokens, int64_t num_sequences,
                             int64_t heads, int max_seqlen) {
  if (mode == AttentionDropoutBits::drawn_twice || tokens <= 0 || num_sequences <= 0 ||
      max_seqlen <= 0)
    return 0;
  const uint64_t bytes = attention_keep_bytes(tokens, num_sequences, heads, max_seqlen);
  // The attention kernels address the buffer with 32-bit byte offsets; refused here, when the
  // model sizes its buffers, rather than at the first training step.
  if (bytes > UINT32_MAX)
    throw std::invalid_argument(
        "CudaOps: the attention dropout keep bits of " + std::to_string(tokens) + " tokens in " +
        std::to_string(num_sequences) + " sequences (" + std::to_string(bytes) +
        " bytes a layer) exceed the kernels' 4 GiB of byte offsets; run with attention dropout "
        "bits " +
        attention_dropout_bits_name(AttentionDropoutBits::drawn_twice));
  return static_cast<size_t>(bytes);
}

size_t CudaOps::attention_saved_bytes(int64_t tokens, int64_t num_sequences, int64_t heads,
                                      int max_seqlen) const {
  return cuda::attention_saved_bytes(options_.attention_dropout_bits, tokens, num_sequences, heads,
                                     max_seqlen);
}

namespace {
// The keep-bit buffer of an attention call: `saved` when this backend keeps bits and the call has
// dropout, else null (the backward then draws them).
uint8_t* attention_keep_buffer(const CudaOps& ops, const char* op, const Tensor& saved,
                               const bert::DropoutMask& dropout, int64_t tokens,
                               int64_t num_sequences, int64_t heads, int max_seqlen) {
  const size_t bytes = ops.attention_saved_bytes(tokens, num_sequences, heads, max_seqlen);
  if (!saved.defined() || !dropout.enabled || bytes == 0) return nullptr;
  require_tensor(saved, DType::i32, (bytes + sizeof(int32_t) - 1) / sizeof(int32_t), op, "saved");
  return static_cast<uint8_t*>(saved.data);
}
}  // namespace

void CudaOps::attention_forward(const bert::AttentionForwardParams& p) {
  const char* op = "attention_forward";
  const DType ct = options_.compute_dtype;
  if (p.tokens == 0) return;
  AttentionParams a =
      attention_common(op, ct, p.q, p.k, p.v, p.cu_seqlens, p.softmax_lse, p.tokens,
                       p.num_sequences, p.heads, p.head_dim, p.max_seqlen, p.scale,
                       attention_mask(op, p.dropout), error_flags_, p.qkv_row_stride);
  require_tensor(p.out, ct, static_cast<size_t>(p.tokens * p.heads * p.head_dim), op, "out");
  a.out = p.out.data;
  a.keep_bits = attention_keep_buffer(*this, op, p.saved, p.dropout, p.tokens, p.num_sequences,
                                      p.heads, p.max_seqlen);
  a.keep_bits_kernel = options_.attention_dropout_bits == AttentionDropoutBits::kernel_keeps;
  a.kernels = options_.attention_kernels;
  cuda::attention_forward(type_, a, stream_);
}

void CudaOps::attention_backward(const bert::AttentionBackwardParams& p) {
  const char* op = "attention_backward";
  const DType ct = options_.compute_dtype;
  if (p.tokens == 0) return;
  AttentionBwdParams a;
  static_cast<AttentionParams&>(a) =
      attention_common(op, ct, p.q, p.k, p.v, p.cu_seqlens, p.softmax_lse, p.tokens,
                       p.num_sequences, p.heads, p.head_dim, p.max_seqlen, p.scale,
                       attention_mask(op, p.dropout), error_flags_, p.qkv_row_stride);
  const size_t elems = static_cast<size_t>(p.tokens * p.heads * p.head_dim);
  const size_t strided =
      static_cast<size_t>((p.tokens - 1) * a.q_row_stride + p.heads * p.head_dim);
  require_tensor(p.out, ct, elems, op, "out");
  require_tensor(p.d_out, ct, elems, op, "d_out");
  require_tensor(p.d_q, ct, strided, op, "d_q");
  require_tensor(p.d_k, ct, strided, op, "d_k");
  require_tensor(p.d_v, ct, strided, op, "d_v");
  a.out = p.out.data;
  a.dout = p.d_out.data;
  a.dout_row_stride = a.out_row_stride;
  a.dq = p.d_q.data;
  a.dk = p.d_k.data;
  a.dv = p.d_v.data;
  a.dq_row_stride = a.dk_row_stride = a.dv_row_stride = a.q_row_stride;
  a.keep_bits = attention_keep_buffer(*this, op, p.saved, p.dropout, p.tokens, p.num_sequences,
                                      p.heads, p.max_seqlen);
  a.kernels = options_.attention_kernels;
  a.deterministic_dq = options_.attention_deterministic_dq;
  // Deterministic dQ keeps a partial per 128-key block: more than the workspace's
  // attention_backward_scratch_bytes, grown at the first such call.
  const size_t dq_bytes = align_up(
      attention_dq_accum_floats(a.kernels, a.deterministic_dq, p.tokens, p.heads, p.max_seqlen) *
      sizeof(float));
  const size_t d_bytes = align_up(static_cast<size_t>(p.tokens * p.heads) * sizeof(float));
  char* base = static_cast<char*>(
      scratch(std::max(attention_backward_scratch_bytes(p.tokens, p.heads), dq_bytes + d_bytes)));
  a.dq_accum = reinterpret_cast<float*>(base);
  a.softmax_d = reinterpret_cast<float*>(base + dq_bytes);
  cuda::attention_backward(type_, a, stream_);
}

// ---- rows and losses
// ------------------------------------------------------------------------------

void CudaOps::gather_rows(const bert::GatherRowsParams& p) {
  const char* op = "gather_rows";
  require(p.count >= 0 && p.width > 0, op, "count must be non-negative and width positive");
  require_tensor(p.indices, DType::i32, p.count, op, "indices");
  require_tensor(p.out, p.src.dtype, p.count * p.width, op, "out");
  require(p.src.defined(), op, "src is not set");
  cuda::gather_rows(p.src.data, static_cast<int64_t>(p.src.numel) / p.width,
                    p.indices.as<const int32_t>(), p.out.data, p.count, p.width,
                    bert::dtype_size(p.src.dtype), error_flags_, kErrorGatherIndex, stream_);
}

void CudaOps::scatter_add_rows(const bert::ScatterAddRowsParams& p) {
  const char* op = "scatter_add_rows";
  const DType ct = options_.compute_dtype;
  require(p.count >= 0 && p.width > 0, op, "count must be non-negative and width positive");
  require_tensor(p.indices, DType::i32, p.count, op, "indices");
  require_tensor(p.d_out, ct, p.count * p.width, op, "d_out");
  require_tensor(p.d_src, ct, p.width, op, "d_src");
  cuda::scatter_add_rows(type_, p.d_out.data, p.indices.as<const int32_t>(), p.d_src.data,
                         static_cast<int64_t>(p.d_src.numel) / p.width, p.count, p.width,
                         error_flags_, kErrorScatterIndex, stream_);
}

void CudaOps::cross_entropy(const bert::CrossEntropyParams& p) {
  const char* op = "cross_entropy";
  const DType ct = options_.compute_dtype;
  require(p.rows >= 0 && p.classes > 0 && p.row_stride >= p.classes, op,
          "need rows >= 0 and 0 < classes <= row_stride");
  require_tensor(p.logits, ct, p.rows * p.row_stride, op, "logits");
  require_tensor(p.labels, DType::i32, p.rows, op, "labels");
  require_tensor(p.d_logits, ct, p.rows * p.row_stride, op, "d_logits");
  require_tensor(p.stats, DType::f32, 2, op, "stats");
  CrossEntropyArgs a;
  a.type = type_;
  a.logits = p.logits.data;
  a.labels = p.labels.as<const int32_t>();
  a.d_logits = p.d_logits.data;
  a.stats = p.stats.as<float>();
  a.rows = p.rows;
  a.classes = p.classes;
  a.row_stride = p.row_stride;
  a.grad_scale = p.grad_scale;
  a.error_flags = error_flags_;
  a.error_bit = kErrorLabel;
  const size_t bytes = cross_entropy_workspace_bytes(std::max<int64_t>(p.rows, 1));
  cuda::cross_entropy(a, static_cast<float*>(scratch(bytes)), bytes, stream_);
}

// ---- optimizer
// ------------------------------------------------------------------------------------

const DeviceChunkTable& CudaOps::chunk_table(std::span<const bert::TensorSegment> segments,
                                             size_t buffer_elements) {
  for (const CachedTable& t : tables_) {
    if (t.buffer_elements == buffer_elements && same_segments(t.segments, segments)) return t.table;
  }
  const ChunkTable host = build_chunk_table(segments, buffer_elements);
  CachedTable cached;
  cached.segments.assign(segments.begin(), segments.end());
  cached.buffer_elements = buffer_elements;
  const size_t chunk_bytes = align_up(host.chunks.size() * sizeof(TensorChunk));
  const size_t first_bytes = host.segment_first_chunk.size() * sizeof(uint32_t);
  cached.device = device_malloc(chunk_bytes + first_bytes);
  char* base = static_cast<char*>(cached.device);
  // On stream_, ahead of the kernels that read the table. A plain cudaMemcpy runs on the legacy
  // default stream, which stream_ (non-blocking) is not ordered after, and from pageable memory it
  // returns once the bytes are staged, before they land: the first kernel could read the table
  // half-written. From pageable memory the async call also returns only after staging `host`.
  if (!host.chunks.empty())
    CUDA_CHECK(cudaMemcpyAsync(base, host.chunks.data(), host.chunks.size() * sizeof(TensorChunk),
                               cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemcpyAsync(base + chunk_bytes, host.segment_first_chunk.data(), first_bytes,
                             cudaMemcpyHostToDevice, stream_));
  cached.table.chunks = reinterpret_cast<const TensorChunk*>(base);
  cached.table.segment_first_chunk = reinterpret_cast<const uint32_t*>(base + chunk_bytes);
  cached.table.num_chunks = static_cast<uint32_t>(host.chunks.size());
  cached.table.num_segments = static_cast<uint32_t>(segments.size());
  tables_.push_back(std::move(cached));
  return tables_.back().table;
}

void CudaOps::l2_norm(const bert::L2NormParams& p) {
  const char* op = "l2_norm";
  require_tensor(p.buffer, DType::f32, 0, op, "buffer");
  require_tensor(p.total, DType::f32, 2, op, "total");
  if (p.segment_norms.defined())
    require_tensor(p.segment_norms, DType::f32, p.segments.size(), op, "segment_norms");
  const DeviceChunkTable& table = chunk_table(p.segments, p.buffer.numel);
  L2NormArgs a;
  a.buffer = p.buffer.as<const float>();
  a.table = table;
  a.segment_norms = p.segment_norms.defined() ? p.segment_norms.as<float>() : nullptr;
  a.total = p.total.as<float>();
  const size_t bytes = l2_norm_workspace_bytes(table.num_chunks);
  cuda::l2_norm(a, scratch(std::max<size_t>(bytes, 1)), std::max<size_t>(bytes, 1), stream_);
}

void CudaOps::scale(Tensor x, float factor) {
  require_tensor(x, DType::f32, 0, "scale", "x");
  scale_f32(x.as<float>(), factor, static_cast<int64_t>(x.numel), stream_);
}

void CudaOps::bucket_clip(const bert::BucketClipParams& p) {
  require_tensor(p.x, DType::f32, 0, "bucket_clip", "x");
  require_tensor(p.total, DType::f32, 2, "bucket_clip", "total");
  require(p.num_buckets >= 1 && p.world >= 1 && p.loss_scale > 0, "bucket_clip",
          "needs num_buckets >= 1, world >= 1 and a positive loss scale");
  bucket_clip_f32(p.x.as<float>(), static_cast<int64_t>(p.x.numel), p.total.as<const float>(),
                  p.loss_scale, static_cast<int64_t>(p.num_buckets), p.world, stream_);
}

namespace {
template <typename Params>
void fill_moments(MomentArgs& a, const Params& p, const char* op, const DeviceChunkTable& table) {
  const size_t n = p.master.numel;
  require_tensor(p.master, DType::f32, n, op, "master");
  require_tensor(p.grad, DType::f32, n, op, "grad");
  require_tensor(p.exp_avg, DType::f32, n, op, "exp_avg");
  require_tensor(p.exp_avg_sq, DType::f32, n, op, "exp_avg_sq");
  require(p.step >= 1, op, "step counts from 1");
  a.master = p.master.template as<float>();
  a.grad = p.grad.template as<float>();
  a.exp_avg = p.exp_avg.template as<float>();
  a.exp_avg_sq = p.exp_avg_sq.template as<float>();
  if (p.compute.defined() && p.compute.data != p.master.data) {
    require(p.compute.numel >= n, op, "compute holds fewer elements than master");
    if (p.compute.dtype == DType::f16)
      a.compute_copy = ComputeCopy::f16;
    else if (p.compute.dtype == DType::bf16)
      a.compute_copy = ComputeCopy::bf16;
    else
      throw std::invalid_argument(std::string(op) + ": compute must be f16 or bf16");
    a.compute = p.compute.data;
  }
  a.table = table;
  a.lr = p.lr;
  a.beta1 = p.beta1;
  a.beta2 = p.beta2;
  a.eps = p.eps;
  a.weight_decay = p.weight_decay;
  a.grad_scale = p.grad_scale;
  if (p.bias_correction) {
    a.bias_correction1 = static_cast<float>(
        1.0 / (1.0 - std::pow(static_cast<double>(p.beta1), static_cast<double>(p.step))));
    a.bias_correction2 = static_cast<float>(
        1.0 / (1.0 - std::pow(static_cast<double>(p.beta2), static_cast<double>(p.step))));
  }
}
}  // namespace

void CudaOps::adam_update(const bert::AdamParams& p) {
  const char* op = "adam_update";
  AdamArgs a;
  fill_moments(a, p, op, chunk_table(p.segments, p.master.numel));
  a.decoupled_weight_decay = p.mode == bert::AdamMode::adamw;
  a.loss_scale = loss_scale_;
  cuda::adam_update(a, stream_);
}

void CudaOps::lamb_update(const bert::LambParams& p) {
  const char* op = "lamb_update";
  LambArgs a;
  const DeviceChunkTable& table = chunk_table(p.segments, p.master.numel);
  fill_moments(a, p, op, table);
  a.trust_ratio_without_decay = p.trust_ratio_without_decay;
  a.loss_scale = loss_scale_;
  const size_t bytes = lamb_workspace_bytes(table.num_chunks, table.num_segments);
  cuda::lamb_update(a, scratch(std::max<size_t>(bytes, 1)), std::max<size_t>(bytes, 1), stream_);
}

void CudaOps::enable_device_loss_scaling(const LossScaleConfig& config) {
  if (loss_scale_ == nullptr)
    loss_scale_ = static_cast<LossScaleState*>(device_malloc(sizeof(LossScaleState)));
  loss_scale_config_ = config;
  const LossScaleState initial = initial_loss_scale_state(config);
  // On stream_, after the kernels already queued that may read the state and before the next
  // update_loss_scale (see chunk_table for why not a plain cudaMemcpy).
  CUDA_CHECK(
      cudaMemcpyAsync(loss_scale_, &initial, sizeof(initial), cudaMemcpyHostToDevice, stream_));
}

void CudaOps::disable_device_loss_scaling() {
  if (loss_scale_ == nullptr) return;
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  CUDA_CHECK(cudaFree(loss_scale_));
  loss_scale_ = nullptr;
}

void CudaOps::update_loss_scale(Tensor total) {
  require(loss_scale_ != nullptr, "update_loss_scale", "device loss scaling is not enabled");
  require_tensor(total, DType::f32, 2, "update_loss_scale", "total");
  cuda::update_loss_scale(total.as<const float>(), loss_scale_, loss_scale_config_, stream_);
}

LossScaleState CudaOps::loss_scale_state() {
  require(loss_scale_ != nullptr, "loss_scale_state", "device loss scaling is not enabled");
  LossScaleState state;
  CUDA_CHECK(cudaMemcpyAsync(&state, loss_scale_, sizeof(state), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  return state;
}

}  // namespace mlbert::cuda
