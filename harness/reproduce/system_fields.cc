// Comparing two system descriptions field by field (see system_fields.h).
#include "harness/reproduce/system_fields.h"

#include <stdexcept>

#include "mlperf_logging/package/layout.h"

namespace mlbert::harness::reproduce {
namespace {

std::string described(const nlohmann::json& system, const std::string& field) {
  if (!system.is_object() || !system.contains(field)) return "";
  const nlohmann::json& v = system[field];
  std::string text = v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump();
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace

const std::vector<std::string>& compared_system_fields() {
  static const std::vector<std::string> fields = {
      "number_of_nodes",
      "accelerators_per_node",
      "accelerator_model_name",
      "accelerator_memory_capacity",
      "accelerator_interconnect",
      "accelerator_interconnect_topology",
      "host_processors_per_node",
      "host_processor_model_name",
      "host_processor_core_count",
      "host_memory_capacity",
      "host_networking",
      "host_networking_topology",
      "framework",
      "operating_system",
  };
  return fields;
}

std::vector<SystemFieldDifference> differing_system_fields(const nlohmann::json& reproduced,
                                                           const nlohmann::json& published) {
  std::vector<SystemFieldDifference> differing;
  for (const std::string& field : compared_system_fields()) {
    const std::string r = described(reproduced, field), p = described(published, field);
    if (r == p) continue;
    differing.push_back({field, r.empty() ? "(not stated)" : r, p.empty() ? "(not stated)" : p,
                         field == "number_of_nodes" || field == "accelerators_per_node"});
  }
  return differing;
}

nlohmann::json read_system_description(const std::filesystem::path& results_dir,
                                       const std::filesystem::path& given,
                                       std::filesystem::path& file) {
  file = given.empty() ? logging::find_system_description(results_dir) : given;
  if (file.empty()) return nullptr;
  nlohmann::json system = logging::read_json_file(file);
  if (!system.is_object())
    throw std::runtime_error(file.string() + ": a system description must be a JSON object");
  return system;
}

}  // namespace mlbert::harness::reproduce
