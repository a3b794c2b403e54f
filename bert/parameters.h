// ParameterStore: every BERT pretraining tensor under its TensorFlow name, in one flat f32 master
// buffer, one flat compute-dtype buffer and one flat f32 gradient buffer with the same layout.
//
// Design choice: tensors are laid out in the order backward FINISHES their gradients (heads first,
// then layers from last to first, the embeddings last: the tied word embedding gets gradient from
// the MLM decoder early but is only final after the embedding backward), so "gradients ready so
// far" is always a prefix [0, n) of the flat gradient buffer and allreduce buckets are slices of
// it. Each tensor starts at a multiple of kParameterAlignment elements (the gap is zero and stays
// zero), so every tensor can be read with 16-byte vector loads in any dtype. The one exception is
// the fused QKV layout (QkvLayout::fused): each layer's query, key and value kernels are stored
// back to back, each transposed to [out, in], as one [3 * hidden, hidden] weight, and their biases
// as one [3 * hidden] vector; the tensors keep their TF names, shapes and segments (the optimizer's
// per-tensor norms), and every host read or write of one tensor by index (download_master(i),
// upload_master(i), download_grad(i)) speaks TF layout.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bert/config.h"
#include "bert/ops.h"

namespace mlbert::bert {

inline constexpr size_t kParameterAlignment = 64;  // elements (256 bytes of f32)

struct ParameterInfo {
  std::string name;            // TF name, e.g. "bert/encoder/layer_0/attention/self/query/kernel"
  std::vector<int64_t> shape;  // TF layout: kernels [in, out], embeddings [rows, hidden]
  size_t offset = 0;           // element offset in the flat buffers
  size_t numel = 0;
  bool weight_decay = true;  // false for biases and LayerNorm gamma/beta
  enum class Init : uint8_t { truncated_normal, zeros, ones } init = Init::truncated_normal;
  // The flat buffers hold the transpose of `shape` ([out, in]): the blocks of the fused QKV weight.
  // TF element (i, j) of a [rows, cols] tensor is then stored at offset + j * rows + i.
  bool stored_transposed = false;
};

// The TF names and shapes in flat (backward-finish) order, without allocating anything.
// For bert-large: 398 tensors, 336,232,258 elements (vocab padded to 30528), in either layout.
std::vector<ParameterInfo> bert_parameter_layout(const BertConfig& config,
                                                 QkvLayout qkv = QkvLayout::separate);
// One tensor's values between TF layout and the flat buffers' (a copy; the same values unless
// info.stored_transposed).
std::vector<float> to_tf_layout(const ParameterInfo& info, std::span<const float> stored);
std::vector<float> to_stored_layout(const ParameterInfo& info, std::span<const float> tf);
// Elements of the flat buffers that hold `layout` (its last tensor's end, aligned).
size_t flat_size_of(std::span<const ParameterInfo> layout);

// Per-layer index of the tensors, for the model's own use.
struct LayerParameters {
  size_t qkv_kernel, qkv_bias;  // first of the three adjacent q, k, v tensors (either layout)
  size_t attention_output_kernel, attention_output_bias;
  size_t attention_layer_norm_gamma, attention_layer_norm_beta;
  size_t intermediate_kernel, intermediate_bias;
  size_t output_kernel, output_bias;
  size_t output_layer_norm_gamma, output_layer_norm_beta;
};
struct ParameterIndex {
  size_t word_embeddings, position_embeddings, token_type_embeddings;
  size_t embedding_layer_norm_gamma, embedding_layer_norm_beta;
  std::vector<LayerParameters> layers;
  size_t pooler_kernel, pooler_bias;
  size_t mlm_transform_kernel, mlm_transform_bias;
  size_t mlm_layer_norm_gamma, mlm_layer_norm_beta, mlm_output_bias;
  size_t nsp_output_weights, nsp_output_bias;
};

class ParameterStore {
 public:
  // Allocates the three flat buffers on `ops` (zero-filled; call init_truncated_normal or load),
  // with Q, K and V laid out as the backend prefers (Ops::preferences()) or as `qkv` says.
  ParameterStore(const BertConfig& config, Ops& ops);
  ParameterStore(const BertConfig& config, Ops& ops, QkvLayout qkv);

  const BertConfig& config() const { return config_; }
  QkvLayout qkv_layout() const { return qkv_layout_; }
  const std::vector<ParameterInfo>& infos() const { return infos_; }
  const ParameterIndex& index() const { return index_; }
  // Throws std::out_of_range naming the tensor when absent.
  const ParameterInfo& info(std::string_view name) const;
  size_t find(std::string_view name) const;  // index into infos(), or infos().size()

  size_t flat_size() const { return flat_size_; }  // elements including alignment gaps
  size_t parameter_count() const;                  // elements of all tensors (no gaps)

  // The flat buffers (backend memory). compute() is master() itself when the backend computes in
  // f32 (nothing to cast), else a separate buffer refreshed by sync_compute().
  Tensor master() const { return master_.tensor(); }
  Tensor compute() const;
  Tensor grad() const { return grad_.tensor(); }
  // Views of one tensor in each buffer.
  Tensor master(size_t i) const { return master_.slice(infos_[i].offset, infos_[i].numel); }
  Tensor compute(size_t i) const { return compute().slice(infos_[i].offset, infos_[i].numel); }
  Tensor grad(size_t i) const { return grad_.slice(infos_[i].offset, infos_[i].numel); }
  // One view over the adjacent tensors first..last (inclusive) with the gaps between them: several
  // tensors read as one batched operand.
  Tensor compute_span(size_t first, size_t last) const;
  Tensor grad_span(size_t first, size_t last) const;
  // Elements from tensor i's start to the next tensor's (its size plus its alignment gap).
  size_t stride(size_t i) const { return infos_.at(i + 1).offset - infos_[i].offset; }

  // One segment per tensor (offset, numel, weight_decay) for the multi-tensor optimizer ops.
  std::span<const TensorSegment> segments() const { return segments_; }

  // TF BERT initialization: kernels and embeddings ~ normal(0, initializer_range) truncated at
  // two standard deviations (re-drawn), biases 0, LayerNorm gamma 1 / beta 0. Deterministic in
  // `seed` (Philox per element, independent of thread count), then sync_compute().
  void init_truncated_normal(uint64_t seed);
  // master -> compute (a no-op when compute() is master()).
  void sync_compute();
  void zero_grad();

  // Host round trips of the whole flat master / gradient buffer (flat_size() floats, in the
  // buffers' layout).
  std::vector<float> download_master() const;
  std::vector<float> download_grad() const;
  void upload_master(std::span<const float> flat);  // then sync_compute()
  // One tensor (numel floats, TF layout) by index.
  std::vector<float> download_master(size_t i) const;
  std::vector<float> download_grad(size_t i) const;
  void upload_master(size_t i, std::span<const float> values);  // does not sync_compute()

  Ops& ops() const { return *ops_; }

 private:
  BertConfig config_;
  Ops* ops_;
  QkvLayout qkv_layout_;
  std::vector<ParameterInfo> infos_;
  std::unordered_map<std::string, size_t> by_name_;
  std::vector<TensorSegment> segments_;
  ParameterIndex index_;
  size_t flat_size_ = 0;
  Buffer master_, compute_, grad_;
};

}  // namespace mlbert::bert
