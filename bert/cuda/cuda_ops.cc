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
#include "bert/cuda/cuda_ops_checks.h"
#include "bert/cuda/elementwise.h"
#include "bert/cuda/embedding.h"
#include "bert/cuda/gemm_plan.h"
#include "bert/cuda/layer_norm.h"
#include "bert/cuda/layer_norm_layout.h"
#include "bert/cuda/step_recorder.h"

namespace mlbert::cuda {

using namespace ops_checks;

namespace {

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

}  // namespace mlbert::cuda
