// System description check. The official verdict needs only presence and the 4.x availability
// vocabulary; the extra findings here are warnings so the verdict stays the official one unless the
// user asks for --werror.
#include "mlperf_logging/package/system_desc.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <array>
#include <fstream>
#include <system_error>

#include "common/input_file.h"
#include "common/nearest_name.h"
#include "mlperf_logging/log/pyops.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

constexpr std::array<std::string_view, 33> kRequiredFields = {
    "submitter",
    "division",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processors_per_node",
    "host_processor_model_name",
    "host_processor_core_count",
    "host_processor_vcpu_count",
    "host_processor_frequency",
    "host_processor_caches",
    "host_processor_interconnect",
    "host_memory_capacity",
    "host_storage_type",
    "host_storage_capacity",
    "host_networking",
    "host_networking_topology",
    "host_memory_configuration",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_host_interconnect",
    "accelerator_frequency",
    "accelerator_on-chip_memories",
    "accelerator_memory_configuration",
    "accelerator_memory_capacity",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "cooling",
    "hw_notes",
    "framework",
    "other_software_stack",
    "operating_system",
    "sw_notes",
};

constexpr std::array<std::string_view, 4> kAvailabilityStatuses = {
    "Available on-premise",
    "Available cloud",
    "Research, Development, or Internal (RDI)",
    "Preview",
};

// The official checker joins these into a CSV row with str.join: a present non-string value
// stops it with a TypeError, so such a file never passes officially.
constexpr std::array<std::string_view, 7> kJoinedFields = {"submitter",
                                                           "system_name",
                                                           "host_processor_model_name",
                                                           "host_processor_core_count",
                                                           "accelerator_model_name",
                                                           "accelerators_per_node",
                                                           "framework"};

// The summarizer multiplies these with Python's int(); anything int() rejects crashes it.
constexpr std::array<std::string_view, 3> kIntegerFields = {
    "number_of_nodes", "host_processors_per_node", "accelerators_per_node"};

// Python int(str) for the plain forms a description uses: optional sign, digits, surrounding
// spaces.
bool parses_as_integer(std::string text) {
  const auto first = text.find_first_not_of(" \t");
  const auto last = text.find_last_not_of(" \t");
  if (first == std::string::npos) return false;
  text = text.substr(first, last - first + 1);
  if (text.front() == '+' || text.front() == '-') text.erase(0, 1);
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string json_type_name(const nlohmann::json& value) {
  return value.type_name();
}

}  // namespace

std::size_t SystemDescResult::error_count() const {
  return static_cast<std::size_t>(
      std::count_if(findings.begin(), findings.end(),
                    [](const auto& f) { return f.level == SystemDescFinding::Level::error; }));
}

std::size_t SystemDescResult::warning_count() const {
  return findings.size() - error_count();
}

std::span<const std::string_view> system_desc_required_fields() {
  return kRequiredFields;
}
std::span<const std::string_view> system_availability_statuses() {
  return kAvailabilityStatuses;
}

bool is_known_training_ruleset(std::string_view ruleset) {
  return mllog::find_training_ruleset(ruleset) != nullptr;
}

namespace {

// Records findings into a result; warnings become errors with --werror.
class DescFindings {
 public:
  DescFindings(SystemDescResult& result, bool werror)
      : result_(result),
        warning_level_(werror ? SystemDescFinding::Level::error
                              : SystemDescFinding::Level::warning) {}
  void error(std::string field, std::string text) {
    result_.findings.push_back(
        {SystemDescFinding::Level::error, std::move(field), std::move(text)});
  }
  void warn(std::string field, std::string text) {
    result_.findings.push_back({warning_level_, std::move(field), std::move(text)});
  }
  std::vector<std::string>& official_reasons() { return result_.official_reasons; }
  void official_stop(std::string why) {
    if (result_.official_stop.empty()) result_.official_stop = std::move(why);
  }

 private:
  SystemDescResult& result_;
  SystemDescFinding::Level warning_level_;
};

std::optional<std::string> text_of(const nlohmann::json& description, std::string_view field) {
  const auto it = description.find(std::string(field));
  if (it == description.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// From 4.0.0 on (the ruleset list's availability_status), status names an availability category.
void check_status(const nlohmann::json& description, std::string_view ruleset,
                  DescFindings& findings) {
  if (!mllog::training_ruleset(ruleset).availability_status || !description.contains("status"))
    return;
  const nlohmann::json& status = description["status"];
  const bool allowed =
      status.is_string() && std::find(kAvailabilityStatuses.begin(), kAvailabilityStatuses.end(),
                                      status.get<std::string>()) != kAvailabilityStatuses.end();
  if (allowed) return;
  std::string options;
  std::string official_options;
  for (auto s : kAvailabilityStatuses) {
    options += (options.empty() ? "\"" : ", \"") + std::string(s) + "\"";
    official_options += (official_options.empty() ? "'" : ", '") + std::string(s) + "'";
  }
  findings.error("status", "value " + status.dump() +
                               " is not allowed from ruleset 4.0.0 on; use one of " + options);
  // The official checker replaces its list of reasons with this one.
  findings.official_reasons() = {
      "Field status contains a non valid value: " + mllog::py::str(status) + ", must be one of [" +
      official_options + "]"};
}

// What the official verdict ignores but the result summarizer trips over.
void check_summarizer_fields(const nlohmann::json& description, DescFindings& findings) {
  for (const auto& [field, value] : description.items()) {
    const bool required =
        std::find(kRequiredFields.begin(), kRequiredFields.end(), field) != kRequiredFields.end();
    if (!required) continue;
    if (field == "other_software_stack") {
      if (!value.is_object() && !value.is_string()) {
        findings.warn(field, "should be an object (component -> version) or a string, not a " +
                                 json_type_name(value));
      }
    } else if (!value.is_string() && std::find(kJoinedFields.begin(), kJoinedFields.end(), field) !=
                                         kJoinedFields.end()) {
      findings.error(field, "must be a string, not a " + json_type_name(value) + " (" +
                                value.dump() +
                                "): the official checker cannot process the file otherwise");
      findings.official_stop("field '" + field + "' is a " + json_type_name(value) +
                             ", which the official checker cannot join into its CSV row "
                             "(it stops with a TypeError)");
    } else if (!value.is_string()) {
      findings.warn(field, "should be a string, not a " + json_type_name(value) + " (" +
                               value.dump() +
                               "): the result summarizer treats every field as text");
    }
  }
  for (std::string_view field : kIntegerFields) {
    const auto text = text_of(description, field);
    if (text && !parses_as_integer(*text)) {
      findings.warn(std::string(field), "value \"" + *text +
                                            "\" is not an integer: the result summarizer "
                                            "multiplies it as one");
    }
  }
}

// Every required field, in the official order. A missing one is named with the key of the file
// that misspells it, if one does ("coolng" for cooling).
void check_required_fields(const nlohmann::json& description, DescFindings& findings,
                           std::vector<std::pair<std::string, std::string>>& misspelled) {
  const std::vector<std::string> required(kRequiredFields.begin(), kRequiredFields.end());
  for (const auto& [key, value] : description.items()) {
    if (std::find(required.begin(), required.end(), key) != required.end()) continue;
    const std::string field = nearest_name(key, required);
    if (!field.empty() && !description.contains(field)) misspelled.emplace_back(key, field);
  }
  for (const std::string& field : required) {
    if (description.contains(field)) continue;
    findings.official_reasons().push_back("Missing field " + field);
    std::string text = "missing field";
    for (const auto& [key, meant] : misspelled)
      if (meant == field)
        text += "; the file has '" + key + "', which looks like a misspelling of it";
    findings.error(field, text);
  }
}

// Values a later step would misread: a division the package check does not know, empty names.
void check_misreadable_values(const SystemDescResult& result, const nlohmann::json& description,
                              DescFindings& findings) {
  if (result.division && *result.division != "closed" && *result.division != "open") {
    findings.warn("division",
                  "value \"" + *result.division +
                      "\" is neither \"closed\" nor \"open\": the "
                      "package check would skip the closed-division seed and RCP checks");
  }
  if (const auto name = text_of(description, "system_name"); name && name->empty()) {
    findings.warn("system_name", "is empty");
  }
  if (const auto submitter = text_of(description, "submitter"); submitter && submitter->empty()) {
    findings.warn("submitter", "is empty");
  }
}

}  // namespace

SystemDescResult check_system_desc(const nlohmann::json& description, std::string_view ruleset,
                                   const std::filesystem::path& file, bool werror) {
  require_ruleset_format(ruleset);
  if (!is_known_training_ruleset(ruleset)) {
    throw AuditError(
        "ruleset " + std::string(ruleset) + " is not a training ruleset the official tools know (" +
        mllog::ruleset_names([](const mllog::TrainingRuleset&) { return true; }) + ")");
  }
  SystemDescResult result;
  result.file = file;
  DescFindings findings(result, werror);
  if (!description.is_object()) {
    findings.error("", "a system description is a JSON object, this file holds a JSON " +
                           json_type_name(description));
    findings.official_stop("the file holds a JSON " + json_type_name(description) +
                           ", not an object");
    return result;
  }
  check_required_fields(description, findings, result.misspelled_keys);
  result.system_name = text_of(description, "system_name").value_or("");
  result.division = text_of(description, "division");
  result.has_division = description.contains("division");
  result.status = text_of(description, "status");
  check_status(description, ruleset, findings);
  check_summarizer_fields(description, findings);
  check_misreadable_values(result, description, findings);
  result.valid = result.error_count() == 0;
  return result;
}

SystemDescResult check_system_desc_file(const std::filesystem::path& file, std::string_view ruleset,
                                        bool werror) {
  if (const std::string why = files::unreadable_reason(file); !why.empty())
    throw AuditError(file.string() + ": " + why);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw AuditError(file.string() + ": cannot open file: " + std::strerror(errno));
  nlohmann::json description;
  try {
    description = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    // Malformed JSON is a failed check (the official tool stops with a traceback instead). So is
    // a number past double (1e999), which Python reads as inf and nlohmann refuses.
    SystemDescResult result = check_system_desc(nlohmann::json::object(), ruleset, file, werror);
    result.findings.clear();
    std::string what = e.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    result.findings.push_back({SystemDescFinding::Level::error, "", "malformed JSON: " + what});
    result.official_stop =
        "malformed JSON (the official checker stops with a JSONDecodeError): " + what;
    result.valid = false;
    return result;
  }
  return check_system_desc(description, ruleset, file, werror);
}

}  // namespace mlbert::logging
