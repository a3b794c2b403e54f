// Comparing two system descriptions field by field (see system_fields.h).
#include "harness/reproduce/system_fields.h"

#include <set>
#include <stdexcept>
#include <string_view>

#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/package/system_desc.h"

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

// A field whose value is an object (other_software_stack) as one field per entry, named
// "field.entry", so that a changed CUDA version reads as that and not as two JSON texts.
nlohmann::json flattened(const nlohmann::json& system) {
  if (!system.is_object()) return system;
  nlohmann::json flat = nlohmann::json::object();
  for (const auto& [key, value] : system.items()) {
    if (!value.is_object()) {
      flat[key] = value;
      continue;
    }
    for (const auto& [entry, v] : value.items()) flat[key + "." + entry] = v;
  }
  return flat;
}

std::vector<std::string> entries_of(const nlohmann::json& a, const nlohmann::json& b,
                                    const std::string& field) {
  std::set<std::string> names;
  for (const nlohmann::json* system : {&a, &b})
    if (system->is_object() && system->contains(field) && (*system)[field].is_object())
      for (const auto& [entry, v] : (*system)[field].items()) names.insert(field + "." + entry);
  if (names.empty()) return {field};
  return {names.begin(), names.end()};
}

}  // namespace

const std::vector<std::string>& compared_system_fields() {
  static const std::vector<std::string> fields = [] {
    // Who submitted it, under which name and status, and the free-text notes: not the machine.
    const std::set<std::string_view> not_the_machine = {"submitter",   "division", "status",
                                                        "system_name", "hw_notes", "sw_notes"};
    std::vector<std::string> machine;
    for (const std::string_view field : logging::system_desc_required_fields())
      if (!not_the_machine.contains(field)) machine.emplace_back(field);
    return machine;
  }();
  return fields;
}

std::vector<SystemFieldDifference> differing_system_fields(const nlohmann::json& reproduced,
                                                           const nlohmann::json& published) {
  std::vector<SystemFieldDifference> differing;
  const nlohmann::json flat_reproduced = flattened(reproduced),
                       flat_published = flattened(published);
  for (const std::string& compared : compared_system_fields())
    for (const std::string& field : entries_of(reproduced, published, compared)) {
      const std::string r = described(flat_reproduced, field), p = described(flat_published, field);
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
