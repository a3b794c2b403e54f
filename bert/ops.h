// Ops: the contract every backend (bert/cpu fp32 reference, bert/cuda fp16/bf16) implements; the
// model (bert/model.cc) is written once against it.
//
// Design choice: every op takes one plain params struct of non-owning Tensor handles whose memory
// the backend allocated (host memory for the CPU, device memory for CUDA). Parameter gradients are
// always ACCUMULATED (+=) so micro-batches can add into one flat gradient buffer; activations and
// activation gradients are WRITTEN (=) unless a params field says `accumulate`. The model allocates
// every activation once (an arena sized from the largest step); no op allocates per call except
// where a backend keeps its own workspace.
//
// Conventions shared by all ops:
// - Row-major. Activations are [tokens, features] over unpadded tokens; sequences are delimited by
//   cu_seqlens (int32, [num_sequences + 1], cu_seqlens[0] == 0).
// - Weights use TensorFlow's layout: a dense kernel is [in, out] so y[M,N] = x[M,K] . W[K,N] +
// b[N].
//   `weight_transposed` means W is stored [out, in] = [N,K] (the tied decoder reads the word
//   embeddings [vocab, hidden] this way, and cls/seq_relationship/output_weights is [2, hidden]).
// - Activations, weights and activation gradients are in the backend's compute dtype (f32 on the
//   CPU; f16/bf16 on CUDA). Parameter gradients, the master weights, optimizer state, LayerNorm
//   statistics, attention log-sum-exp and loss statistics are always f32. Index tensors are i32.
// - Dropout masks come from bert/philox.h (DropoutMask): forward and backward of one op use the
//   same mask, drawn from the element's row-major index in the tensor named in each op.
// - Nothing here synchronizes implicitly except copy_to_host and synchronize(): on CUDA all ops are
//   issued in order on the backend's stream.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "bert/philox.h"

namespace mlbert::bert {

enum class DType : uint8_t { f32, f16, bf16, i32 };
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

// A non-owning view of backend memory. `numel` elements of `dtype` starting at `data`.
struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  size_t numel = 0;

  bool defined() const { return data != nullptr; }
  size_t bytes() const { return numel * dtype_size(dtype); }
  // Elements [offset, offset + count); throws std::out_of_range past the end.
  Tensor slice(size_t offset, size_t count) const;
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// One contiguous run of a flat f32 buffer the multi-tensor ops visit (a parameter tensor, usually).
struct TensorSegment {
  size_t offset = 0;
  size_t numel = 0;
  bool weight_decay = true;  // false for biases and LayerNorm gamma/beta
};

// gelu is the tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) that MLPerf and the
// original TF BERT use; gelu_erf is the exact 0.5x(1 + erf(x/sqrt(2))) some Hugging Face models
// were trained with (appended later; backends must support both).
enum class Activation : uint8_t { none, gelu, tanh, gelu_erf };

// ---- GEMM with epilogues ----------------------------------------------------------------------

// out[b] = act(input . W[b] + bias[b]) for b in [0, batch). The `batch` GEMMs share `input` and
// read weight b at weight + b*weight_stride, bias b at bias + b*bias_stride and write out b at
// out + b*out_stride (the Q, K and V projections are one call with batch 3, their kernels and
// biases adjacent in the parameter buffer and q, k, v adjacent in one [3, M, N] activation).
struct LinearForwardParams {
  Tensor input;   // [M, K]
  Tensor weight;  // [K, N] per batch entry, or [N, K] when weight_transposed
  Tensor bias;    // [N] per batch entry, optional
  Tensor out;     // [M, N] per batch entry, written
  // With an activation, pre_activation receives input . W + bias (written) and out the activation
  // of it; backward needs pre_activation (gelu) or out (tanh). Without one, leave it undefined.
  Tensor pre_activation;
  Activation activation = Activation::none;
  int64_t m = 0, n = 0, k = 0;
  int batch = 1;
  size_t weight_stride = 0, bias_stride = 0, out_stride = 0;  // elements; used when batch > 1
  bool weight_transposed = false;
};

// Backward of linear_forward. First, when activation != none, d_out is replaced IN PLACE by the
// gradient of the pre-activation (gelu, gelu_erf: d_out * gelu'(pre_activation); tanh:
// d_out * (1 - out^2)).
// Then, per batch entry b:
//   d_input  (=, or += when accumulate_d_input; the batch entries always sum) = d_pre[b] . W[b]^T
//   d_weight[b] += input^T . d_pre[b]   (shape as stored: [K,N], or [N,K] when weight_transposed)
//   d_bias[b]   += column sums of d_pre[b]
// Optionally the layer that produced `input` is folded in (the FFN: input =
// gelu(intermediate_pre)): with input_activation != none, d_input receives d(input_pre_activation)
// = (d_pre . W^T) * act'(input_pre_activation), and d_input_bias (f32, [K], accumulated, optional)
// its column sums: the gradient of the previous layer's bias, which that layer's backward then
// leaves out. Needs batch 1, a d_input and no accumulate_d_input; gelu and gelu_erf only. (CUDA:
// one cuBLASLt GEMM with the DGELU_BGRAD epilogue when the activation is the tanh GELU.)
struct LinearBackwardParams {
  Tensor d_out;           // [M, N] per batch entry (stride out_stride); overwritten when activation
  Tensor pre_activation;  // gelu, gelu_erf: the forward's pre_activation
  Tensor out;             // tanh: the forward's out
  Activation activation = Activation::none;
  Tensor input;     // [M, K] forward input
  Tensor weight;    // as in forward
  Tensor d_input;   // [M, K], optional (the first layer's input needs none)
  Tensor d_weight;  // f32, accumulated
  Tensor d_bias;    // f32, optional, accumulated
  int64_t m = 0, n = 0, k = 0;
  int batch = 1;
  size_t weight_stride = 0, bias_stride = 0, out_stride = 0;
  bool weight_transposed = false;
  bool accumulate_d_input = false;
  Activation input_activation = Activation::none;
  Tensor input_pre_activation;  // [M, K], with input_activation
  Tensor d_input_bias;          // [K] f32, optional, with input_activation
};

// Throws std::invalid_argument unless p's input_activation fusion meets the conditions above.
void require_input_activation_fusable(const char* op, const LinearBackwardParams& p);

// ---- LayerNorm ----------------------------------------------------------------------------------

// The post-LN residual block:  h = dropout(x + bias); s = h + residual; out = LN(s) * gamma + beta.
// bias and residual are optional; dropout is over the [rows, width] tensor h (element = r*width+c).
// ln_input receives s, mean and rstd the row statistics (f32, [rows]); backward reads all three.
// LN uses the biased variance and rstd = 1/sqrt(var + eps).
struct LayerNormForwardParams {
  Tensor x;         // [rows, width]
  Tensor bias;      // [width], optional
  Tensor residual;  // [rows, width], optional
  Tensor gamma, beta;
  Tensor out;         // [rows, width], written
  Tensor ln_input;    // [rows, width], written (s)
  Tensor mean, rstd;  // f32 [rows], written
  DropoutMask dropout;
  int64_t rows = 0, width = 0;
  float eps = 1e-12f;
  // Optional (empty, or i32 of at least layer_norm_saved_bytes / 4 elements): what this backend
  // keeps from the forward for the backward (the CUDA backend: the dropout keep bits), read by the
  // backward given the same tensor after this forward.
  Tensor saved;
};

// Backward: d_s = LN'(d_out); d_residual = d_s (=, or += when accumulate_d_residual);
// d_x = d_s * mask * scale (=); d_bias += colsum(d_x); d_gamma += colsum(d_out * xhat);
// d_beta += colsum(d_out). d_residual / d_bias optional (when the forward had none).
struct LayerNormBackwardParams {
  Tensor d_out;  // [rows, width]
  Tensor ln_input, mean, rstd, gamma;
  Tensor d_x;              // [rows, width], written
  Tensor d_residual;       // optional
  Tensor d_gamma, d_beta;  // f32, accumulated
  Tensor d_bias;           // f32, optional, accumulated
  DropoutMask dropout;     // the forward's mask
  int64_t rows = 0, width = 0;
  bool accumulate_d_residual = false;
  Tensor saved;  // the forward's, or empty (the backward then recomputes what it would hold)
};

// ---- Embeddings -------------------------------------------------------------------------------

// s[t] = word[input_ids[t]] + position[position_ids[t]] + token_type[segment_ids[t]];
// out = dropout(LN(s) * gamma + beta) with dropout over [tokens, hidden] (element = t*hidden + c).
struct EmbeddingForwardParams {
  Tensor input_ids, position_ids, segment_ids;  // i32 [tokens]
  Tensor word, position, token_type;            // [rows, hidden] tables
  Tensor gamma, beta;
  Tensor out;         // [tokens, hidden], written
  Tensor ln_input;    // [tokens, hidden], written (s)
  Tensor mean, rstd;  // f32 [tokens]
  DropoutMask dropout;
  int64_t tokens = 0, hidden = 0;
  float eps = 1e-12f;
};

// Backward: d_ln = d_out * mask * scale; LN backward -> d_s; d_word[ids[t]] += d_s[t],
// d_position[pos[t]] += d_s[t], d_token_type[seg[t]] += d_s[t]; d_gamma, d_beta += as in LayerNorm.
// d_out may be used as scratch (its contents are undefined afterwards).
struct EmbeddingBackwardParams {
  Tensor d_out;
  Tensor input_ids, position_ids, segment_ids;
  Tensor ln_input, mean, rstd, gamma;
  Tensor d_word, d_position, d_token_type, d_gamma, d_beta;  // f32, accumulated
  DropoutMask dropout;
  int64_t tokens = 0, hidden = 0;
};

// ---- Attention ----------------------------------------------------------------------------------

// Multi-head self-attention per sequence over unpadded q, k, v, each [tokens, hidden] with head h
// at columns [h*head_dim, (h+1)*head_dim) and token rows qkv_row_stride elements apart (hidden when
// 0; 3 * hidden when q, k and v are the column blocks of one [tokens, 3 * hidden] activation, as
// the fused QKV projection writes them). For each sequence s, head h, query i, key j (both in
// [0, len_s)): S_ij = scale * q_i . k_j; P = softmax_j(S); Pd_ij = P_ij * dropout_factor(element =
// attention_dropout_element(cu_seqlens[s] + i, h, heads, attention_dropout_row_stride(max_seqlen),
// j)); out_i = sum_j Pd_ij v_j. No masking inside a sequence. softmax_lse receives, per head and
// query token, log(sum_j exp(S_ij)) (f32 [heads, tokens]), all backward needs to recompute P.
struct AttentionForwardParams {
  Tensor q, k, v;      // [tokens, hidden] each (may be slices of one [3, tokens, hidden] tensor)
  Tensor cu_seqlens;   // i32 [num_sequences + 1]
  Tensor out;          // [tokens, hidden], written
  Tensor softmax_lse;  // f32 [heads, tokens], written
  // Optional (empty, or i32 of at least attention_saved_bytes / 4 elements): what this backend
  // keeps from the forward for the backward beyond softmax_lse, written here and read by the
  // backward given the same tensor (the CUDA backend: the dropout keep bits it drew).
  Tensor saved;
  DropoutMask dropout;
  int64_t tokens = 0, num_sequences = 0, heads = 0, head_dim = 0;
  int max_seqlen = 0;
  float scale = 0.0f;  // 1/sqrt(head_dim)
  int64_t qkv_row_stride = 0;
};

// Backward with recomputation of P from q, k and softmax_lse. d_q, d_k, d_v written (=), their rows
// qkv_row_stride apart as q, k and v's (the rows of other columns untouched). `saved`:
// the forward's, after that forward with the same inputs and mask, or empty (then the backward
// recomputes what it would hold); the gradients are the same either way.
struct AttentionBackwardParams {
  Tensor q, k, v, out, d_out, softmax_lse, cu_seqlens, saved;
  Tensor d_q, d_k, d_v;
  DropoutMask dropout;
  int64_t tokens = 0, num_sequences = 0, heads = 0, head_dim = 0;
  int max_seqlen = 0;
  float scale = 0.0f;
  int64_t qkv_row_stride = 0;  // of q, k, v, d_q, d_k and d_v (0: hidden)
};

// ---- Row gather / scatter (masked positions, the pooler's first tokens) -------------------------

// out[i] = src[indices[i]] for i < count (rows of `width`).
struct GatherRowsParams {
  Tensor src, indices, out;  // indices i32 [count]
  int64_t count = 0, width = 0;
};
// d_src[indices[i]] += d_out[i] (accumulate; indices may repeat).
struct ScatterAddRowsParams {
  Tensor d_out, indices, d_src;
  int64_t count = 0, width = 0;
};

// ---- Losses -------------------------------------------------------------------------------------

// Softmax cross-entropy over the first `classes` of each row of logits [rows, row_stride] (the
// masked-LM decoder output with row_stride = padded vocab, or the NSP logits with classes 2).
// Writes d_logits = (softmax - onehot(label)) * grad_scale over the first `classes` columns and 0
// in the padding columns (d_logits may alias logits). stats (f32, written):
//   stats[0] = sum over rows of -log softmax[label]    stats[1] = rows whose argmax == label
// (argmax ties resolve to the lowest index). Labels must be in [0, classes).
struct CrossEntropyParams {
  Tensor logits, labels, d_logits, stats;
  int64_t rows = 0, classes = 0, row_stride = 0;
  float grad_scale = 1.0f;
};

// ---- Optimizer primitives over flat f32 buffers
// ---------------------------------------------------

// L2 norm of each segment of `buffer` and of all of them together.
// segment_norms (f32 [segments.size()], optional) and total (f32 [2]: [0] = global L2 norm,
// [1] = 1 if any element in the segments is inf or nan, else 0), both written.
struct L2NormParams {
  Tensor buffer;
  std::span<const TensorSegment> segments;
  Tensor segment_norms;
  Tensor total;
};

// Bucket-wise clipping before the allreduce: x *= bucket_clip_scale(total[0], total[1] != 0, ...)
// (bert/bucket_clip.h), with `total` the [norm, inf/nan flag] pair l2_norm wrote for the bucket.
struct BucketClipParams {
  Tensor x;      // f32, the bucket's gradients
  Tensor total;  // f32 [2]: as l2_norm writes it
  double loss_scale = 1;
  size_t num_buckets = 1;
  int world = 1;
};
enum class AdamMode : uint8_t {
  adam_l2,  // weight decay added to the gradient before the moments (torch.optim.Adam)
  adamw,    // decoupled: p -= lr * (update + wd * p) (AdamW, NVIDIA FusedAdam adam_w_mode)
};

// Adam over the segments of the flat master buffer (elements outside the segments untouched):
//   g = grad * grad_scale (+ wd * p in adam_l2 mode for decaying segments)
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   mhat = m / (1 - b1^step), vhat = v / (1 - b2^step) when bias_correction, else m, v
//   u = mhat / (sqrt(vhat) + eps) (+ wd * p in adamw mode for decaying segments);  p -= lr * u
// `step` counts from 1. When `compute` is defined (a different dtype), it receives cast(p).
struct AdamParams {
  Tensor master, grad, exp_avg, exp_avg_sq;
  Tensor compute;  // optional
  std::span<const TensorSegment> segments;
  float lr = 0, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-6f, weight_decay = 0, grad_scale = 1;
  int64_t step = 1;
  bool bias_correction = true;
  AdamMode mode = AdamMode::adamw;
};

// LAMB (MLPerf reference / NVIDIA FusedLAMB semantics) over the segments:
//   g = grad * grad_scale; m, v as Adam; mhat, vhat with optional bias correction
//   u = mhat / (sqrt(vhat) + eps) + wd * p       (wd only for segments with weight_decay)
//   ratio = ||p|| / ||u|| per segment, 1 when either norm is 0, and 1 for segments without weight
//   decay unless trust_ratio_without_decay (NVIDIA's "use_nvlamb")
//   p -= lr * ratio * u
// `grad` is used as scratch for u (its contents are undefined afterwards). When `compute` is
// defined it receives cast(p).
struct LambParams {
  Tensor master, grad, exp_avg, exp_avg_sq;
  Tensor compute;
  std::span<const TensorSegment> segments;
  float lr = 0, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-6f, weight_decay = 0, grad_scale = 1;
  int64_t step = 1;
  bool bias_correction = true;
  bool trust_ratio_without_decay = false;
};

// ---- What a backend asks of the model ----------------------------------------------------------

// How the Q, K and V projections of a layer live in the parameter store and the activations.
enum class QkvLayout : uint8_t {
  // Three [hidden, hidden] kernels in TF layout ([in, out]) and three biases, one batch-3 GEMM
  // writing q, k and v as three [tokens, hidden] blocks.
  separate,
  // One [3 * hidden, hidden] weight (Hugging Face's [out, in] query, key and value weights stacked)
  // and one [3 * hidden] bias, one N = 3 * hidden GEMM writing [tokens, 3 * hidden] rows of q | k |
  // v.
  fused,
};

// Choices a backend makes for the model where either way is correct (the model follows them; the
// results agree within rounding).
struct OpsPreferences {
  QkvLayout qkv_layout = QkvLayout::separate;  // for a ParameterStore that is not told otherwise
  // FFN1's bias gradient: in FFN1's own backward, beside its weight gradient (true), or in FFN2's
  // data gradient as LinearBackwardParams::d_input_bias (false).
  bool ffn1_bias_grad_with_weight_grad = false;
  // Bracket each training step's ops with Ops::begin_step / end_step (the backend records steps).
  bool record_steps = false;
};

// What a recorded step is replayed for: everything the model hands the ops of a forward_backward
// that changes between steps, except the contents of its input buffers and the dropout key.
struct StepShape {
  const void* owner = nullptr;  // the model (its parameters and activations)
  int64_t tokens = 0, sequences = 0, masked = 0;
  int max_seqlen = 0;
  bool dropout = false;
  float loss_scale = 1.0f;
  auto operator<=>(const StepShape&) const = default;
};

// ---- The interface
// --------------------------------------------------------------------------------

class Ops {
 public:
  virtual ~Ops() = default;
  virtual std::string name() const = 0;
  // The dtype activations and the compute copy of the weights use (f32 on the CPU).
  virtual DType compute_dtype() const = 0;
  virtual OpsPreferences preferences() const { return {}; }

  // Memory. allocate returns zero-filled memory aligned to at least 256 bytes.
  virtual Tensor allocate(DType dtype, size_t numel) = 0;
  virtual void release(Tensor tensor) = 0;
  virtual void copy_from_host(Tensor dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, Tensor src, size_t bytes) = 0;  // synchronizes
  virtual void copy(Tensor dst, Tensor src) = 0;                       // same dtype and numel
  virtual void fill_zero(Tensor tensor) = 0;
  // dst = src converted to dst.dtype (f32 -> f32/f16/bf16; numel equal). Master -> compute copy.
  virtual void cast(Tensor dst, Tensor src) = 0;
  virtual void synchronize() = 0;

  virtual void linear_forward(const LinearForwardParams& p) = 0;
  virtual void linear_backward(const LinearBackwardParams& p) = 0;
  virtual void layer_norm_forward(const LayerNormForwardParams& p) = 0;
  virtual void layer_norm_backward(const LayerNormBackwardParams& p) = 0;
  virtual void embedding_forward(const EmbeddingForwardParams& p) = 0;
  virtual void embedding_backward(const EmbeddingBackwardParams& p) = 0;
  // Bytes of AttentionForwardParams::saved this backend uses at these sizes (0: it keeps nothing).
  virtual size_t attention_saved_bytes(int64_t tokens, int64_t num_sequences, int64_t heads,
                                       int max_seqlen) const {
    (void)tokens, (void)num_sequences, (void)heads, (void)max_seqlen;
    return 0;
  }
  // Bytes of LayerNormForwardParams::saved this backend uses for a [rows, width] LayerNorm with
  // dropout (0: it keeps nothing).
  virtual size_t layer_norm_saved_bytes(int64_t rows, int64_t width) const {
    (void)rows, (void)width;
    return 0;
  }
  virtual void attention_forward(const AttentionForwardParams& p) = 0;
  virtual void attention_backward(const AttentionBackwardParams& p) = 0;
  virtual void gather_rows(const GatherRowsParams& p) = 0;
  virtual void scatter_add_rows(const ScatterAddRowsParams& p) = 0;
  virtual void cross_entropy(const CrossEntropyParams& p) = 0;

  virtual void l2_norm(const L2NormParams& p) = 0;
  // x *= factor over the whole f32 tensor.
  virtual void scale(Tensor x, float factor) = 0;
  // See BucketClipParams. The default reads `total` back (a synchronization); a device backend
  // reads it where it lives, so backward goes on while buckets are clipped and sent.
  virtual void bucket_clip(const BucketClipParams& p);
  virtual void adam_update(const AdamParams& p) = 0;
  virtual void lamb_update(const LambParams& p) = 0;

  // Recorded steps (OpsPreferences::record_steps). Before a step's ops (its inputs uploaded): the
  // step's dropout key, and true when the backend replayed a recording of `shape` (the model then
  // issues none of the step's ops), false when the model must issue them; then end_step, with
  // `completed` false when an op threw (a recording under way is dropped).
  virtual bool begin_step(const StepShape& shape, uint64_t seed, uint32_t step) {
    (void)shape, (void)seed, (void)step;
    return false;
  }
  virtual void end_step(bool completed) { (void)completed; }
};

// Owns one allocation of a backend; move-only, released on destruction.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Ops& ops, DType dtype, size_t numel) : ops_(&ops), tensor_(ops.allocate(dtype, numel)) {}
  Buffer(Buffer&& other) noexcept : ops_(other.ops_), tensor_(other.tensor_) {
    other.tensor_ = Tensor{};
  }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      ops_ = other.ops_;
      tensor_ = other.tensor_;
      other.tensor_ = Tensor{};
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  const Tensor& tensor() const { return tensor_; }
  operator const Tensor&() const { return tensor_; }
  Tensor slice(size_t offset, size_t count) const { return tensor_.slice(offset, count); }
  void reset() {
    if (tensor_.defined() && ops_) ops_->release(tensor_);
    tensor_ = Tensor{};
  }

 private:
  Ops* ops_ = nullptr;
  Tensor tensor_;
};

}  // namespace mlbert::bert
