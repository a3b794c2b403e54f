// ParameterStore: the TF-named parameter layout in backward-finish order, flat buffers, init.
#include "bert/parameters.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "bert/philox.h"

namespace mlbert::bert {

namespace {

using Init = ParameterInfo::Init;

size_t align_up(size_t n) {
  return (n + kParameterAlignment - 1) / kParameterAlignment * kParameterAlignment;
}

class LayoutBuilder {
 public:
  size_t add(std::string name, std::vector<int64_t> shape, Init init, bool weight_decay) {
    ParameterInfo info;
    info.name = std::move(name);
    info.shape = std::move(shape);
    info.numel = 1;
    for (int64_t d : info.shape) info.numel *= static_cast<size_t>(d);
    info.offset = next_;
    info.init = init;
    info.weight_decay = weight_decay;
    next_ = align_up(next_ + info.numel);
    infos_.push_back(std::move(info));
    return infos_.size() - 1;
  }
  // Three tensors back to back, with no alignment gap between them (after the last one as usual).
  size_t packed3(const std::array<std::string, 3>& names, std::vector<int64_t> shape, Init init,
                 bool weight_decay, bool transposed) {
    const size_t first = infos_.size();
    for (const std::string& name : names) {
      const size_t start = next_;
      const size_t i = add(name, shape, init, weight_decay);
      infos_[i].stored_transposed = transposed;
      next_ = start + infos_[i].numel;
    }
    next_ = align_up(next_);
    return first;
  }
  size_t kernel(const std::string& name, int64_t in, int64_t out) {
    return add(name, {in, out}, Init::truncated_normal, true);
  }
  size_t bias(const std::string& name, int64_t n) { return add(name, {n}, Init::zeros, false); }
  size_t gamma(const std::string& name, int64_t n) { return add(name, {n}, Init::ones, false); }
  size_t beta(const std::string& name, int64_t n) { return add(name, {n}, Init::zeros, false); }

  std::vector<ParameterInfo> infos_;
  size_t next_ = 0;
};

// The Q, K and V tensors of one layer (prefix "bert/encoder/layer_<l>/").
void add_qkv(LayoutBuilder& b, const std::string& p, int64_t h, QkvLayout qkv,
             LayerParameters& lp) {
  const std::string self = p + "attention/self/";
  const std::array<std::string, 3> kernels{self + "query/kernel", self + "key/kernel",
                                           self + "value/kernel"};
  const std::array<std::string, 3> biases{self + "query/bias", self + "key/bias",
                                          self + "value/bias"};
  if (qkv == QkvLayout::fused) {
    lp.qkv_kernel = b.packed3(kernels, {h, h}, Init::truncated_normal, true, true);
    lp.qkv_bias = b.packed3(biases, {h}, Init::zeros, false, false);
    return;
  }
  // Q, K, V kernels adjacent, then their biases: one batched projection reads them.
  lp.qkv_kernel = b.kernel(kernels[0], h, h);
  b.kernel(kernels[1], h, h);
  b.kernel(kernels[2], h, h);
  lp.qkv_bias = b.bias(biases[0], h);
  b.bias(biases[1], h);
  b.bias(biases[2], h);
}

// Builds the layout and, optionally, the index of every tensor.
std::vector<ParameterInfo> build_layout(const BertConfig& c, QkvLayout qkv, ParameterIndex* index) {
  c.validate();
  const int64_t h = c.hidden_size, ffn = c.intermediate_size;
  LayoutBuilder b;
  ParameterIndex ix;
  // Heads: backward runs the MLM head first, then NSP and the pooler.
  ix.mlm_output_bias = b.bias("cls/predictions/output_bias", c.padded_vocab_size());
  ix.mlm_layer_norm_gamma = b.gamma("cls/predictions/transform/LayerNorm/gamma", h);
  ix.mlm_layer_norm_beta = b.beta("cls/predictions/transform/LayerNorm/beta", h);
  ix.mlm_transform_kernel = b.kernel("cls/predictions/transform/dense/kernel", h, h);
  ix.mlm_transform_bias = b.bias("cls/predictions/transform/dense/bias", h);
  ix.nsp_output_weights =
      b.add("cls/seq_relationship/output_weights", {2, h}, Init::truncated_normal, true);
  ix.nsp_output_bias = b.bias("cls/seq_relationship/output_bias", 2);
  ix.pooler_kernel = b.kernel("bert/pooler/dense/kernel", h, h);
  ix.pooler_bias = b.bias("bert/pooler/dense/bias", h);
  // Encoder layers, last first; inside a layer in the order its backward finishes them.
  ix.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  for (int64_t l = c.num_hidden_layers - 1; l >= 0; --l) {
    const std::string p = "bert/encoder/layer_" + std::to_string(l) + "/";
    LayerParameters& lp = ix.layers[static_cast<size_t>(l)];
    lp.output_layer_norm_gamma = b.gamma(p + "output/LayerNorm/gamma", h);
    lp.output_layer_norm_beta = b.beta(p + "output/LayerNorm/beta", h);
    lp.output_bias = b.bias(p + "output/dense/bias", h);
    lp.output_kernel = b.kernel(p + "output/dense/kernel", ffn, h);
    lp.intermediate_kernel = b.kernel(p + "intermediate/dense/kernel", h, ffn);
    lp.intermediate_bias = b.bias(p + "intermediate/dense/bias", ffn);
    lp.attention_layer_norm_gamma = b.gamma(p + "attention/output/LayerNorm/gamma", h);
    lp.attention_layer_norm_beta = b.beta(p + "attention/output/LayerNorm/beta", h);
    lp.attention_output_bias = b.bias(p + "attention/output/dense/bias", h);
    lp.attention_output_kernel = b.kernel(p + "attention/output/dense/kernel", h, h);
    add_qkv(b, p, h, qkv, lp);
  }
  // Embeddings last: the tied word embedding is final only after the embedding backward.
  ix.embedding_layer_norm_gamma = b.gamma("bert/embeddings/LayerNorm/gamma", h);
  ix.embedding_layer_norm_beta = b.beta("bert/embeddings/LayerNorm/beta", h);
  ix.position_embeddings = b.add("bert/embeddings/position_embeddings",
                                 {c.max_position_embeddings, h}, Init::truncated_normal, true);
  ix.token_type_embeddings = b.add("bert/embeddings/token_type_embeddings", {c.type_vocab_size, h},
                                   Init::truncated_normal, true);
  ix.word_embeddings = b.add("bert/embeddings/word_embeddings", {c.padded_vocab_size(), h},
                             Init::truncated_normal, true);
  if (index) *index = std::move(ix);
  return std::move(b.infos_);
}

// Truncated normal N(0, 1) restricted to [-2, 2], redrawn outside: Box-Muller on a Philox block
// keyed by (seed) with counter (element, attempt, tensor, tag).
double truncated_standard_normal(uint64_t seed, uint32_t tensor, uint64_t element) {
  constexpr uint32_t kInitTag = 0x1A17u;
  constexpr double kTwoPi = 6.283185307179586;
  for (uint32_t attempt = 0;; ++attempt) {
    const Philox4x32 r = philox4x32_10(
        static_cast<uint32_t>(element), static_cast<uint32_t>(element >> 32) ^ (attempt << 16),
        tensor, kInitTag, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    for (int pair = 0; pair < 2; ++pair) {
      const double u1 = (static_cast<double>(r.v[2 * pair]) + 0.5) / 4294967296.0;
      const double u2 = static_cast<double>(r.v[2 * pair + 1]) / 4294967296.0;
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
      if (std::fabs(z) <= 2.0) return z;
    }
  }
}

}  // namespace

std::vector<ParameterInfo> bert_parameter_layout(const BertConfig& config, QkvLayout qkv) {
  return build_layout(config, qkv, nullptr);
}

namespace {
// out[j * rows + i] = in[i * cols + j] for a row-major [rows, cols] `in`.
std::vector<float> transposed(std::span<const float> in, size_t rows, size_t cols) {
  std::vector<float> out(in.size());
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < cols; ++j) out[j * rows + i] = in[i * cols + j];
  return out;
}

void require_size(const ParameterInfo& info, size_t size) {
  if (size != info.numel)
    throw std::invalid_argument(info.name + " holds " + std::to_string(info.numel) + " values, " +
                                std::to_string(size) + " given");
}
}  // namespace

std::vector<float> to_tf_layout(const ParameterInfo& info, std::span<const float> stored) {
  require_size(info, stored.size());
  if (!info.stored_transposed) return {stored.begin(), stored.end()};
  // Stored [cols, rows]: its transpose is the TF [rows, cols].
  return transposed(stored, static_cast<size_t>(info.shape[1]), static_cast<size_t>(info.shape[0]));
}

std::vector<float> to_stored_layout(const ParameterInfo& info, std::span<const float> tf) {
  require_size(info, tf.size());
  if (!info.stored_transposed) return {tf.begin(), tf.end()};
  return transposed(tf, static_cast<size_t>(info.shape[0]), static_cast<size_t>(info.shape[1]));
}

size_t flat_size_of(std::span<const ParameterInfo> layout) {
  return layout.empty() ? 0 : align_up(layout.back().offset + layout.back().numel);
}

ParameterStore::ParameterStore(const BertConfig& config, Ops& ops)
    : ParameterStore(config, ops, ops.preferences().qkv_layout) {}

ParameterStore::ParameterStore(const BertConfig& config, Ops& ops, QkvLayout qkv)
    : config_(config), ops_(&ops), qkv_layout_(qkv) {
  infos_ = build_layout(config_, qkv_layout_, &index_);
  for (size_t i = 0; i < infos_.size(); ++i) {
    by_name_.emplace(infos_[i].name, i);
    segments_.push_back(TensorSegment{infos_[i].offset, infos_[i].numel, infos_[i].weight_decay});
  }
  flat_size_ = flat_size_of(infos_);
  master_ = Buffer(ops, DType::f32, flat_size_);
  grad_ = Buffer(ops, DType::f32, flat_size_);
  if (ops.compute_dtype() != DType::f32) compute_ = Buffer(ops, ops.compute_dtype(), flat_size_);
}

const ParameterInfo& ParameterStore::info(std::string_view name) const {
  const size_t i = find(name);
  if (i == infos_.size())
    throw std::out_of_range("no parameter named \"" + std::string(name) + "\"");
  return infos_[i];
}

size_t ParameterStore::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? infos_.size() : it->second;
}

size_t ParameterStore::parameter_count() const {
  size_t n = 0;
  for (const auto& info : infos_) n += info.numel;
  return n;
}

Tensor ParameterStore::compute() const {
  return compute_.tensor().defined() ? compute_.tensor() : master_.tensor();
}

namespace {
Tensor span_of(const Tensor& buffer, const std::vector<ParameterInfo>& infos, size_t first,
               size_t last) {
  const size_t begin = infos.at(first).offset;
  return buffer.slice(begin, infos.at(last).offset + infos[last].numel - begin);
}
}  // namespace

Tensor ParameterStore::compute_span(size_t first, size_t last) const {
  return span_of(compute(), infos_, first, last);
}

Tensor ParameterStore::grad_span(size_t first, size_t last) const {
  return span_of(grad_.tensor(), infos_, first, last);
}

void ParameterStore::init_truncated_normal(uint64_t seed) {
  std::vector<float> flat(flat_size_, 0.0f);
  const double stddev = config_.initializer_range;
  for (size_t i = 0; i < infos_.size(); ++i) {
    const ParameterInfo& info = infos_[i];
    float* dst = flat.data() + info.offset;
    const int64_t n = static_cast<int64_t>(info.numel);
    switch (info.init) {
      case Init::zeros:
        break;
      case Init::ones:
        for (int64_t e = 0; e < n; ++e) dst[e] = 1.0f;
        break;
      case Init::truncated_normal: {
        // Element e of the TF layout draws the same value in either QKV layout.
        std::vector<float> values(info.numel);
#pragma omp parallel for schedule(static) if (n > 4096)
        for (int64_t e = 0; e < n; ++e) {
          values[static_cast<size_t>(e)] =
              static_cast<float>(stddev * truncated_standard_normal(seed, static_cast<uint32_t>(i),
                                                                    static_cast<uint64_t>(e)));
        }
        const std::vector<float> stored = to_stored_layout(info, values);
        std::copy(stored.begin(), stored.end(), dst);
        break;
      }
    }
  }
  upload_master(flat);
}

void ParameterStore::sync_compute() {
  if (compute_.tensor().defined()) ops_->cast(compute_.tensor(), master_.tensor());
}

void ParameterStore::zero_grad() {
  ops_->fill_zero(grad_.tensor());
}

std::vector<float> ParameterStore::download_master() const {
  std::vector<float> out(flat_size_);
  ops_->copy_to_host(out.data(), master_.tensor(), out.size() * sizeof(float));
  return out;
}

std::vector<float> ParameterStore::download_grad() const {
  std::vector<float> out(flat_size_);
  ops_->copy_to_host(out.data(), grad_.tensor(), out.size() * sizeof(float));
  return out;
}

void ParameterStore::upload_master(std::span<const float> flat) {
  if (flat.size() != flat_size_) {
    throw std::invalid_argument("upload_master: " + std::to_string(flat.size()) +
                                " floats given for a flat buffer of " + std::to_string(flat_size_));
  }
  ops_->copy_from_host(master_.tensor(), flat.data(), flat.size_bytes());
  sync_compute();
}

std::vector<float> ParameterStore::download_master(size_t i) const {
  std::vector<float> out(infos_.at(i).numel);
  ops_->copy_to_host(out.data(), master(i), out.size() * sizeof(float));
  return to_tf_layout(infos_[i], out);
}

std::vector<float> ParameterStore::download_grad(size_t i) const {
  std::vector<float> out(infos_.at(i).numel);
  ops_->copy_to_host(out.data(), grad(i), out.size() * sizeof(float));
  return to_tf_layout(infos_[i], out);
}

void ParameterStore::upload_master(size_t i, std::span<const float> values) {
  if (values.size() != infos_.at(i).numel) {
    throw std::invalid_argument("upload_master: " + infos_[i].name + " holds " +
                                std::to_string(infos_[i].numel) + " values, " +
                                std::to_string(values.size()) + " given");
  }
  const std::vector<float> stored = to_stored_layout(infos_[i], values);
  ops_->copy_from_host(master(i), stored.data(), stored.size() * sizeof(float));
}

}  // namespace mlbert::bert
