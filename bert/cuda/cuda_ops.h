// CudaOps: the CUDA backend of the Ops contract (bert/ops.h) for A100 (sm_80) and H100/H200
// (sm_90): activations and weights in fp16 or bf16, fp32 master weights, gradients, optimizer
// state and every accumulation; GEMMs through cuBLASLt with epilogues, everything else through
// the fused kernels of bert/cuda.
//
// Design choice: all work is issued in order on one stream that CudaOps owns; no op allocates.
// Tensors come from allocate() (cudaMalloc, at model construction), the ops' temporaries from one
// workspace reserved up front for the largest step (workspace.h), chunk tables are uploaded once
// per parameter layout. Index errors found on the device (ids, labels, gather indices) are raised
// as exceptions at the next synchronizing call, never silently used.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bert/config.h"
#include "bert/cuda/attention.h"
#include "bert/cuda/gemm.h"
#include "bert/cuda/loss_scale.h"
#include "bert/cuda/multi_tensor.h"
#include "bert/cuda/optimizer.h"
#include "bert/cuda/types.h"
#include "bert/cuda/workspace.h"
#include "bert/model.h"
#include "bert/ops.h"

namespace mlbert::cuda {

enum class AttentionDropoutBits {
  drawn_twice,    // the forward draws the Philox blocks, the backward draws them again
  forward_keeps,  // the forward draws and stores them, the backward reads them
  kernel_keeps,   // a kernel of their own draws them before the forward; both read them
};
// "drawn-twice", "forward-keeps", "kernel-keeps"; parse throws std::invalid_argument naming them.
const char* attention_dropout_bits_name(AttentionDropoutBits mode);
AttentionDropoutBits parse_attention_dropout_bits(const std::string& name);
// The keep-bit buffer a layer's attention needs under `mode` at these sizes (0 for drawn_twice or
// an empty shape); throws std::invalid_argument past the kernels' 4 GiB of byte offsets.
size_t attention_saved_bytes(AttentionDropoutBits mode, int64_t tokens, int64_t num_sequences,
                             int64_t heads, int max_seqlen);
// "classic", "fa2", "auto" (AttentionKernels); parse throws std::invalid_argument naming them.
const char* attention_kernels_name(AttentionKernels kernels);
AttentionKernels parse_attention_kernels(const std::string& name);

struct CudaOpsOptions {
  bert::DType compute_dtype = bert::DType::bf16;  // f16 or bf16
  int device = 0;
  size_t gemm_workspace_bytes = kGemmWorkspaceBytes;
  // Reserve the op workspace for these limits at construction (see workspace.h). Left at zero,
  // the workspace is sized by the first ops that need it (allocations then happen during the
  // first step, never after it for the same shapes).
  WorkspaceLimits workspace_limits;
  // cuBLASLt epilogues; each can be switched off (then a separate kernel does the same work).
  bool gelu_epilogue = true;       // GELU_AUX_BIAS: the FFN input layer's forward
  bool bias_grad_epilogue = true;  // BGRADA/BGRADB: weight gradients with their bias gradients
  // DGELU_BGRAD: the FFN output layer's data gradient with the GELU gradient and the FFN input
  // bias gradient. Off by default: on the H200 that product ran at 277 TFLOP/s fused against 476
  // as the plain GEMM, the GELU-gradient kernel and a column sum (a 5 ms slower BERT-large step,
  // BENCHMARKS.md "CUDA backend", 2026-12-04). On where a GPU measures it faster.
  bool dgelu_bgrad_epilogue = false;
  // Where the attention's dropout keep bits come from; the same bits, so the same results, in
  // every mode. The two that keep them use bert::Ops::attention_saved_bytes (~8.6 MB a layer for
  // 16 x 512 tokens). On the H200 (2026-12-04) the Philox draws were ~1.8 ms of the forward and
  // ~2.2 ms of the backward in a 49-ms BERT-large step; the modes that keep them were written
  // after that and have not run on a GPU yet (BENCHMARKS.md, "CUDA backend").
  AttentionDropoutBits attention_dropout_bits = AttentionDropoutBits::kernel_keeps;
  // Which attention kernels run (attention.h): the 64-row ones by default until a GPU has timed
  // the FlashAttention-2-class ones (written 2026-12, not yet run on a GPU).
  AttentionKernels attention_kernels = AttentionKernels::classic;
  // dQ summed in key-block order instead of by atomics, the same bits on every run; needs
  // attention_kernels fa2 (the constructor refuses it otherwise).
  bool attention_deterministic_dq = false;

  // ---- Step variants, each off until a GPU measures it faster (bert_cuda_bench sets each one).
  // Q, K and V as one [3 * hidden, hidden] weight (bert::QkvLayout::fused, which a ParameterStore
  // built on this backend takes): one N = 3 * hidden forward GEMM, one K = 3 * hidden data
  // gradient and one weight gradient with its bias gradient, instead of batch-3 loops of three.
  bool fused_qkv = false;
  // The FFN output layer's data gradient through cuBLASLt's DGELU epilogue (the GELU gradient in
  // the GEMM), and FFN1's bias gradient taken by FFN1's own weight-gradient product (its BGRADA
  // epilogue) instead of a column sum over the GELU gradient (bert::OpsPreferences::
  // ffn1_bias_grad_with_weight_grad). For the tanh GELU; the erf GELU keeps the unfused path.
  bool dgelu_epilogue = false;
  // cuBLASLt algorithm choice (gemm_tuning.h): the heuristic's first candidate (1, deterministic:
  // what the checks run), or the fastest of its first `gemm_candidates`, timed once per problem
  // and token-count bucket, kept in `gemm_plans_file` when one is named.
  int gemm_candidates = 1;
  std::string gemm_plans_file;
  // A perf run: a GEMM plan cuBLASLt refuses throws instead of falling back to a slower path.
  bool gemm_strict = false;
  // LayerNorm: keep the forward's dropout keep bits (one bit an element; bert::Ops::
  // layer_norm_saved_bytes) for the backward, which then reads them instead of drawing the mask
  // again; and run the streaming backward (layer_norm.h) instead of the two-pass one and its
  // separate column-sum kernel.
  bool layer_norm_keep_bits = false;
  bool layer_norm_streaming = false;
  // Record each training step's ops as a CUDA graph the second time its shape comes, and replay
  // it from then on (step_recorder.h; the kernels read the dropout seed and step from device
  // memory, so the masks are the same). Steps that report gradients on the way (on_grad_ready)
  // run op by op. Needs attention dropout 0 until the attention kernels read the key there too.
  bool cuda_graphs = false;
};

// Options for a model: the workspace sized for `limits`.
CudaOpsOptions cuda_ops_options_for(const bert::BertConfig& config, const bert::ModelLimits& limits,
                                    bert::DType compute_dtype);

// Number of CUDA devices visible (0 when there is no driver or no device).
int cuda_device_count();
// Makes `device` this thread's current device; false (the error cleared) when it cannot.
bool set_cuda_device(int device);

class CudaOps;
class StepRecorder;
// The backend for `mlbert train --backend cuda`: device `device`, compute precision "bf16" or
// "fp16" (std::invalid_argument otherwise), workspace reserved for the model's limits. Throws
// std::runtime_error when the device is missing or older than sm_80.
std::unique_ptr<CudaOps> make_cuda_ops(const bert::BertConfig& config,
                                       const bert::ModelLimits& limits,
                                       const std::string& precision, int device = 0);

class CudaOps final : public bert::Ops {
 public:
  explicit CudaOps(const CudaOpsOptions& options = {});
  ~CudaOps() override;
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  std::string name() const override;
  bert::DType compute_dtype() const override { return options_.compute_dtype; }
  bert::OpsPreferences preferences() const override;
  const CudaOpsOptions& options() const { return options_; }

  bert::Tensor allocate(bert::DType dtype, size_t numel) override;
  void release(bert::Tensor tensor) override;
  void copy_from_host(bert::Tensor dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, bert::Tensor src, size_t bytes) override;
  void copy(bert::Tensor dst, bert::Tensor src) override;
  void fill_zero(bert::Tensor tensor) override;
  void cast(bert::Tensor dst, bert::Tensor src) override;
  void synchronize() override;

  void linear_forward(const bert::LinearForwardParams& p) override;
  void linear_backward(const bert::LinearBackwardParams& p) override;
  void layer_norm_forward(const bert::LayerNormForwardParams& p) override;
  void layer_norm_backward(const bert::LayerNormBackwardParams& p) override;
  void embedding_forward(const bert::EmbeddingForwardParams& p) override;
  void embedding_backward(const bert::EmbeddingBackwardParams& p) override;
  size_t layer_norm_saved_bytes(int64_t rows, int64_t width) const override;
  size_t attention_saved_bytes(int64_t tokens, int64_t num_sequences, int64_t heads,
                               int max_seqlen) const override;
  void attention_forward(const bert::AttentionForwardParams& p) override;
  void attention_backward(const bert::AttentionBackwardParams& p) override;
  void gather_rows(const bert::GatherRowsParams& p) override;
  void scatter_add_rows(const bert::ScatterAddRowsParams& p) override;
  void cross_entropy(const bert::CrossEntropyParams& p) override;

  void l2_norm(const bert::L2NormParams& p) override;
  void scale(bert::Tensor x, float factor) override;
  void bucket_clip(const bert::BucketClipParams& p) override;  // no host round trip
  void adam_update(const bert::AdamParams& p) override;
  void lamb_update(const bert::LambParams& p) override;
  bool begin_step(const bert::StepShape& shape, uint64_t seed, uint32_t step) override;
  void end_step(bool completed) override;

  // ---- CUDA-specific extensions (the harness may use them; the Ops contract does not need them)
  // The stream every op is issued on (for NCCL overlap: record an event here, wait on it there).
  cudaStream_t stream() const { return stream_; }
  int sm_count() const { return sm_count_; }
  const std::string& device_name() const { return device_name_; }
  // cudaMalloc calls so far (tensors, workspace growth, chunk tables): constant across steady-state
  // steps, which the device check asserts.
  size_t device_allocations() const { return device_allocations_ + gemm_->tuning_allocations(); }
  size_t workspace_bytes() const { return workspace_bytes_; }
  const GemmRunner& gemm() const { return *gemm_; }
  // Writes the GEMM runner's tuned choices to CudaOpsOptions::gemm_plans_file (if named).
  void save_gemm_plans() const { gemm_->save_tuned_plans(); }
  // "CUDA graphs: 1 steps recorded, 12 replayed", or "... off".
  std::string step_report() const;
  // Device-side dynamic loss scaling (fp16): when enabled, update_loss_scale(total) reads the
  // inf/nan flag an l2_norm wrote into `total` and updates the scale on the device; adam_update
  // and lamb_update then skip an overflowed step and multiply gradients by 1 / (the step's scale)
  // on top of their grad_scale, without any host synchronization.
  void enable_device_loss_scaling(const LossScaleConfig& config);
  void disable_device_loss_scaling();
  void update_loss_scale(bert::Tensor total);
  LossScaleState loss_scale_state();  // synchronizes

 private:
  void* scratch(size_t bytes);
  const DeviceChunkTable& chunk_table(std::span<const bert::TensorSegment> segments,
                                      size_t buffer_elements);
  void check_device_errors();
  void* device_malloc(size_t bytes);
  void linear_gemm(const GemmArgs& args);
  // The dropout mask a kernel gets: inside a step that may be recorded, with its seed and step
  // read from device memory (attention_mask refuses a recording the attention would break).
  bert::DropoutMask kernel_mask(const bert::DropoutMask& mask) const;
  bert::DropoutMask attention_mask(const char* op, const bert::DropoutMask& mask) const;
  uint8_t* layer_norm_keep_buffer(const char* op, const bert::Tensor& saved,
                                  const bert::DropoutMask& dropout, int64_t rows,
                                  int64_t width) const;
  // linear_backward's parts: the element strides of its batch entries, and the workspace its bias
  // gradients use (the epilogue's vector, then column-sum partials).
  struct LinearStrides {
    size_t weight = 0, bias = 0, out = 0;
  };
  struct LinearScratch {
    void* bias = nullptr;
    float* columns = nullptr;
    size_t column_bytes = 0;
  };
  LinearStrides check_linear_backward(const bert::LinearBackwardParams& p) const;
  void input_activation_backward(const bert::LinearBackwardParams& p, GemmArgs g,
                                 const LinearScratch& scratch);
  void weight_gradient(const bert::LinearBackwardParams& p, const LinearStrides& z, size_t b,
                       const LinearScratch& scratch);

  CudaOpsOptions options_;
  ComputeType type_;
  cudaStream_t stream_ = nullptr;
  int sm_count_ = 0;
  std::string device_name_;
  std::unique_ptr<GemmRunner> gemm_;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  uint32_t* error_flags_ = nullptr;
  LossScaleState* loss_scale_ = nullptr;
  LossScaleConfig loss_scale_config_;
  size_t device_allocations_ = 0;
  struct CachedTable {
    std::vector<bert::TensorSegment> segments;
    size_t buffer_elements = 0;
    void* device = nullptr;
    DeviceChunkTable table;
  };
  std::vector<CachedTable> tables_;
  std::unique_ptr<StepRecorder> steps_;  // with cuda_graphs
};

}  // namespace mlbert::cuda
