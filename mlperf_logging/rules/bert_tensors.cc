// The 398 BERT-large tensor names of closed-division weights_initialization records, generated in
// the official rule file's order (tests hold the list against that file).
#include "mlperf_logging/rules/bert_tensors.h"

#include <unordered_map>

namespace mlbert::mllog {
namespace {

constexpr int kLayers = 24;

std::vector<std::string> make_names() {
  std::vector<std::string> names = {
      "bert/embeddings/word_embeddings",       "bert/embeddings/position_embeddings",
      "bert/embeddings/token_type_embeddings", "bert/embeddings/LayerNorm/gamma",
      "bert/embeddings/LayerNorm/beta",
  };
  const char* per_layer[] = {
      "attention/self/query/kernel",
      "attention/self/query/bias",
      "attention/self/key/kernel",
      "attention/self/key/bias",
      "attention/self/value/kernel",
      "attention/self/value/bias",
      "attention/output/dense/kernel",
      "attention/output/dense/bias",
      "attention/output/LayerNorm/gamma",
      "attention/output/LayerNorm/beta",
      "intermediate/dense/kernel",
      "intermediate/dense/bias",
      "output/dense/kernel",
      "output/dense/bias",
      "output/LayerNorm/gamma",
      "output/LayerNorm/beta",
  };
  for (int layer = 0; layer < kLayers; ++layer)
    for (const char* tensor : per_layer)
      names.push_back("bert/encoder/layer_" + std::to_string(layer) + "/" + tensor);
  for (const char* tail :
       {"bert/pooler/dense/kernel", "bert/pooler/dense/bias", "cls/predictions/output_bias",
        "cls/predictions/transform/dense/kernel", "cls/predictions/transform/dense/bias",
        "cls/predictions/transform/LayerNorm/gamma", "cls/predictions/transform/LayerNorm/beta",
        "cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"})
    names.push_back(tail);
  return names;
}

}  // namespace

const std::vector<std::string>& bert_weight_tensor_names() {
  static const std::vector<std::string> names = make_names();
  return names;
}

std::optional<std::size_t> bert_weight_tensor_index(std::string_view name) {
  static const std::unordered_map<std::string_view, std::size_t> index = [] {
    std::unordered_map<std::string_view, std::size_t> out;
    const auto& names = bert_weight_tensor_names();  // static: the views stay valid
    for (std::size_t i = 0; i < names.size(); ++i) out.emplace(names[i], i);
    return out;
  }();
  if (const auto it = index.find(name); it != index.end()) return it->second;
  return std::nullopt;
}

}  // namespace mlbert::mllog
