// BertConfig: the architecture of a BERT pretraining model, read from a standard bert_config.json.
//
// Design choice: `vocab_size` is the tokenizer's vocabulary (30522 for MLPerf); the model allocates
// `padded_vocab_size()` rows (a multiple of `vocab_pad_multiple`, 8 by default as NVIDIA's code
// does, which is what makes bert-large 336,232,258 parameters). Padded rows never enter the loss:
// the masked-LM softmax runs over the first `vocab_size` logits only, so padding changes no math.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace mlbert::bert {

struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 1024;
  int64_t num_hidden_layers = 24;
  int64_t num_attention_heads = 16;
  int64_t intermediate_size = 4096;
  std::string hidden_act = "gelu";  // "gelu" is TF BERT's tanh approximation (see below)
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  int64_t vocab_pad_multiple = 8;

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  int64_t padded_vocab_size() const {
    return (vocab_size + vocab_pad_multiple - 1) / vocab_pad_multiple * vocab_pad_multiple;
  }

  // Throws std::invalid_argument naming the field when a value is out of range or inconsistent
  // (hidden_size not divisible by heads, dropout outside [0, 1), unknown hidden_act, ...).
  void validate() const;

  // Accepted hidden_act values: "gelu", "gelu_new", "gelu_pytorch_tanh" run as the tanh
  // approximation (TF BERT's "gelu", which MLPerf specifies); "gelu_erf" is the exact erf form
  // (what Hugging Face calls "gelu": its importer translates the name).
  bool uses_erf_gelu() const { return hidden_act == "gelu_erf"; }
  static BertConfig from_json(const nlohmann::json& json, std::string_view source = "<json>");
  // Reads a bert_config.json; errors name the file and the field.
  static BertConfig from_file(const std::filesystem::path& path);
  nlohmann::json to_json() const;

  // Named presets: "bert-large" (MLPerf: 24 x 1024, 16 heads, FFN 4096, vocab 30522 padded to
  // 30528) and "tiny" (tests and the CPU demo: 2 x 128, 2 heads, FFN 512, vocab 30522 -> 30528).
  static BertConfig preset(std::string_view name);
  // A preset name or a path to a bert_config.json.
  static BertConfig from_preset_or_file(std::string_view name_or_path);
};

bool operator==(const BertConfig& a, const BertConfig& b);

}  // namespace mlbert::bert
