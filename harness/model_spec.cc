// run.model -> BertConfig (see model_spec.h).
#include "harness/model_spec.h"

#include <nlohmann/json.hpp>

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

}  // namespace mlbert::harness
