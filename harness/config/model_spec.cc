// run.model -> BertConfig (see model_spec.h).
#include "harness/config/model_spec.h"

#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "bert/checkpoint/checkpoint.h"

namespace mlbert::harness {

bert::BertConfig model_from_spec(const ModelSpec& spec, const std::filesystem::path& origin) {
  bert::BertConfig config = spec.preset == "file" ? bert::BertConfig::from_file(spec.config_path)
                                                  : bert::BertConfig::preset(spec.preset);
  if (spec.overrides.is_object() && !spec.overrides.empty()) {
    nlohmann::json merged = config.to_json();
    for (const auto& [k, v] : spec.overrides.items()) merged[k] = v;
    config = bert::BertConfig::from_json(merged, origin.string() + " run.model.overrides");
  }
  return config;
}

namespace {

// The fields of `model` that give its weights another meaning than `stored`'s (the shapes are
// bert::check_checkpoint's): dropout and the init range are training settings, not the model's.
std::string architecture_differences(const bert::BertConfig& stored,
                                     const bert::BertConfig& model) {
  static const std::set<std::string> training_only = {
      "hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range"};
  const nlohmann::json a = stored.to_json(), b = model.to_json();
  std::string out;
  for (const auto& [key, value] : b.items()) {
    if (training_only.count(key) || (a.contains(key) && a[key] == value)) continue;
    out += (out.empty() ? "" : ", ") + key + " " + (a.contains(key) ? a[key].dump() : "absent") +
           " in the checkpoint, " + value.dump() + " in the system";
  }
  return out;
}

}  // namespace

std::filesystem::path init_checkpoint_for(const std::filesystem::path& given,
                                          const bert::BertConfig& model,
                                          const std::string& system_name) {
  const std::filesystem::path file = bert::locate_checkpoint(given).file;
  if (!std::filesystem::exists(file) && !std::filesystem::exists(file.string() + ".index"))
    throw std::runtime_error(given.string() + ": no such checkpoint");
  if (bert::detect_checkpoint_format(file) == bert::CheckpointFormat::mlbert_safetensors)
    if (const auto stored = bert::checkpoint_config(file))
      if (const std::string differences = architecture_differences(*stored, model);
          !differences.empty())
        throw std::runtime_error(file.string() + ": its model differs from system " + system_name +
                                 "'s: " + differences);
  bert::check_checkpoint(file, model);  // every tensor's name and shape, before init_start
  return file;
}

}  // namespace mlbert::harness
