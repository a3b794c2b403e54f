// BertConfig: bert_config.json parsing, validation and the named presets.
#include "bert/config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "common/input_file.h"

namespace mlbert::bert {

namespace {

[[noreturn]] void fail(std::string_view source, const std::string& field, const std::string& what) {
  throw std::invalid_argument(std::string(source) + ": field \"" + field + "\" " + what);
}

template <typename T>
void read_field(const nlohmann::json& json, std::string_view source, const char* field, T& value,
                bool required) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) {
    if (required) fail(source, field, "is missing");
    return;
  }
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) fail(source, field, "must be a string");
    value = it->template get<std::string>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) fail(source, field, "must be an integer");
    value = it->template get<T>();
  } else {
    if (!it->is_number()) fail(source, field, "must be a number");
    value = it->template get<T>();
  }
}

}  // namespace

void BertConfig::validate() const {
  const std::string_view src = "BertConfig";
  auto positive = [&](const char* field, int64_t value) {
    if (value <= 0) fail(src, field, "must be positive, got " + std::to_string(value));
  };
  positive("vocab_size", vocab_size);
  positive("hidden_size", hidden_size);
  positive("num_hidden_layers", num_hidden_layers);
  positive("num_attention_heads", num_attention_heads);
  positive("intermediate_size", intermediate_size);
  positive("max_position_embeddings", max_position_embeddings);
  positive("type_vocab_size", type_vocab_size);
  positive("vocab_pad_multiple", vocab_pad_multiple);
  if (hidden_size % num_attention_heads != 0) {
    fail(src, "hidden_size",
         "(" + std::to_string(hidden_size) + ") is not divisible by num_attention_heads (" +
             std::to_string(num_attention_heads) + ")");
  }
  if (hidden_act != "gelu" && hidden_act != "gelu_new" && hidden_act != "gelu_pytorch_tanh" &&
      hidden_act != "gelu_erf") {
    fail(src, "hidden_act",
         "is \"" + hidden_act +
             "\"; supported: gelu, gelu_new, gelu_pytorch_tanh (tanh "
             "approximation) and gelu_erf");
  }
  auto probability = [&](const char* field, double p) {
    if (!(p >= 0.0 && p < 1.0)) fail(src, field, "must be in [0, 1), got " + std::to_string(p));
  };
  probability("hidden_dropout_prob", hidden_dropout_prob);
  probability("attention_probs_dropout_prob", attention_probs_dropout_prob);
  if (!(initializer_range > 0.0)) fail(src, "initializer_range", "must be positive");
  if (!(layer_norm_eps > 0.0)) fail(src, "layer_norm_eps", "must be positive");
  // Upper bounds, far above any published BERT, that keep every size derived from the config (the
  // padded vocabulary, parameter offsets, per-layer tables) clear of int64 overflow.
  auto at_most = [&](const char* field, int64_t value, int64_t limit) {
    if (value > limit) {
      fail(src, field,
           "is implausibly large (" + std::to_string(value) + " > " + std::to_string(limit) + ")");
    }
  };
  at_most("vocab_size", vocab_size, int64_t{1} << 30);
  at_most("hidden_size", hidden_size, int64_t{1} << 20);
  at_most("num_hidden_layers", num_hidden_layers, int64_t{1} << 12);
  at_most("intermediate_size", intermediate_size, int64_t{1} << 22);
  at_most("max_position_embeddings", max_position_embeddings, int64_t{1} << 20);
  at_most("type_vocab_size", type_vocab_size, int64_t{1} << 16);
  at_most("vocab_pad_multiple", vocab_pad_multiple, int64_t{1} << 16);
  // Every rank holds the whole model (data parallelism only), so the parameter count is bounded by
  // what one rank can allocate; with the bounds above this sum cannot overflow.
  const int64_t h = hidden_size;
  const int64_t embeddings = (padded_vocab_size() + max_position_embeddings + type_vocab_size) * h;
  const int64_t per_layer = 4 * h * h + 2 * h * intermediate_size + 9 * h + intermediate_size;
  constexpr int64_t kMaxParameters = int64_t{1} << 36;
  if (embeddings + num_hidden_layers * per_layer > kMaxParameters) {
    fail(src, "num_hidden_layers",
         "with these sizes gives about " +
             std::to_string(embeddings + num_hidden_layers * per_layer) +
             " parameters, more than one rank can hold (2^36)");
  }
}

BertConfig BertConfig::from_json(const nlohmann::json& json, std::string_view source) {
  if (!json.is_object()) throw std::invalid_argument(std::string(source) + ": not a JSON object");
  BertConfig c;
  read_field(json, source, "vocab_size", c.vocab_size, true);
  read_field(json, source, "hidden_size", c.hidden_size, true);
  read_field(json, source, "num_hidden_layers", c.num_hidden_layers, true);
  read_field(json, source, "num_attention_heads", c.num_attention_heads, true);
  read_field(json, source, "intermediate_size", c.intermediate_size, true);
  read_field(json, source, "hidden_act", c.hidden_act, false);
  read_field(json, source, "hidden_dropout_prob", c.hidden_dropout_prob, false);
  read_field(json, source, "attention_probs_dropout_prob", c.attention_probs_dropout_prob, false);
  read_field(json, source, "max_position_embeddings", c.max_position_embeddings, true);
  read_field(json, source, "type_vocab_size", c.type_vocab_size, false);
  read_field(json, source, "initializer_range", c.initializer_range, false);
  read_field(json, source, "layer_norm_eps", c.layer_norm_eps, false);
  read_field(json, source, "vocab_pad_multiple", c.vocab_pad_multiple, false);
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    const std::string prefix = "BertConfig: ";
    if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
    throw std::invalid_argument(std::string(source) + ": " + what);
  }
  return c;
}

BertConfig BertConfig::from_file(const std::filesystem::path& path) {
  std::ifstream in = files::open_input(path, "bert config");
  nlohmann::json json;
  try {
    in >> json;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path.string() + ": not valid JSON: " + e.what());
  }
  return from_json(json, path.string());
}

nlohmann::json BertConfig::to_json() const {
  return nlohmann::json{{"vocab_size", vocab_size},
                        {"hidden_size", hidden_size},
                        {"num_hidden_layers", num_hidden_layers},
                        {"num_attention_heads", num_attention_heads},
                        {"intermediate_size", intermediate_size},
                        {"hidden_act", hidden_act},
                        {"hidden_dropout_prob", hidden_dropout_prob},
                        {"attention_probs_dropout_prob", attention_probs_dropout_prob},
                        {"max_position_embeddings", max_position_embeddings},
                        {"type_vocab_size", type_vocab_size},
                        {"initializer_range", initializer_range},
                        {"layer_norm_eps", layer_norm_eps},
                        {"vocab_pad_multiple", vocab_pad_multiple}};
}

BertConfig BertConfig::preset(std::string_view name) {
  BertConfig c;  // the defaults are bert-large as MLPerf trains it
  if (name == "bert-large") return c;
  if (name == "tiny") {
    c.hidden_size = 128;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 2;
    c.intermediate_size = 512;
    return c;
  }
  throw std::invalid_argument("unknown model preset \"" + std::string(name) +
                              "\" (known: bert-large, tiny; or give a bert_config.json path)");
}

BertConfig BertConfig::from_preset_or_file(std::string_view name_or_path) {
  if (name_or_path == "bert-large" || name_or_path == "tiny") return preset(name_or_path);
  return from_file(std::filesystem::path(name_or_path));
}

bool operator==(const BertConfig& a, const BertConfig& b) {
  return a.to_json() == b.to_json();
}

}  // namespace mlbert::bert
