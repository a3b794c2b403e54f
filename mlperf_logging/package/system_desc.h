// The system description check (`<org>/systems/<system>.json`), with the official
// system_desc_checker's verdict: every required field present and, from ruleset 4.0.0 on, `status`
// one of the four availability categories. A missing field whose name a key of the file misspells
// is named with that key. Beyond the official verdict it warns (errors with
// --werror) about what would break the result summarizer later: non-string values, node and
// accelerator counts that are not integers, a division other than closed/open.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlbert::logging {

struct SystemDescFinding {
  enum class Level { error, warning };
  Level level = Level::error;
  std::string field;  // the field concerned, "" for the whole file
  std::string text;
};

struct SystemDescResult {
  std::filesystem::path file;
  bool valid = false;  // the official verdict (warnings do not count unless werror)
  std::string system_name;
  std::optional<std::string> division;  // as written, when a string
  bool has_division = false;  // the file is a JSON object with a division field (of any type)
  std::optional<std::string> status;
  std::vector<SystemDescFinding> findings;
  // Keys that are no field of a description but one edit or so from a missing required field:
  // (key in the file, the field it was probably meant to be).
  std::vector<std::pair<std::string, std::string>> misspelled_keys;

  // The official checker's own account, for `mlbert system_desc_checker`: its list of invalid
  // reasons ("Missing field cooling", ...), and why it would stop with a Python exception instead
  // of a verdict (malformed JSON, a non-string value it joins), "" when it runs to its verdict.
  std::vector<std::string> official_reasons;
  std::string official_stop;

  std::size_t error_count() const;
  std::size_t warning_count() const;
};

// The 33 fields every training system description must have.
std::span<const std::string_view> system_desc_required_fields();
// Allowed `status` values from ruleset 4.0.0 on.
std::span<const std::string_view> system_availability_statuses();
// Training rulesets the official tools know (0.6.0 .. 6.1.0: the rows of training_rulesets()).
bool is_known_training_ruleset(std::string_view ruleset);

// Checks a parsed description; `file` names it in messages. `werror` turns warnings into errors.
SystemDescResult check_system_desc(const nlohmann::json& description, std::string_view ruleset,
                                   const std::filesystem::path& file, bool werror = false);
// Reads and checks a file. Malformed JSON is an invalid result with the parse position; a missing
// or unreadable file, or an unknown ruleset, throws AuditError.
SystemDescResult check_system_desc_file(const std::filesystem::path& file, std::string_view ruleset,
                                        bool werror = false);

}  // namespace mlbert::logging
