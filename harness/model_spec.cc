// run.model -> BertConfig (see model_spec.h).
#include "harness/model_spec.h"

#include <nlohmann/json.hpp>
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

std::filesystem::path init_checkpoint_for(const std::filesystem::path& given,
                                          const bert::BertConfig& model,
                                          const std::string& system_name) {
  const std::filesystem::path file = bert::locate_checkpoint(given).file;
  if (!std::filesystem::exists(file) && !std::filesystem::exists(file.string() + ".index"))
    throw std::runtime_error(given.string() + ": no such checkpoint");
  if (bert::detect_checkpoint_format(file) == bert::CheckpointFormat::mlbert_safetensors)
    if (const auto stored = bert::checkpoint_config(file); stored && !(*stored == model))
      throw std::runtime_error(file.string() + ": its model config differs from system " +
                               system_name + "'s model");
  return file;
}

}  // namespace mlbert::harness
