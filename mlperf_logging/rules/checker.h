// MLPerf Training compliance checker for BERT result logs, with the verdicts of the official
// `mlperf_logging.compliance_checker` (4.1.59) for rulesets 0.7.0 to 5.1.0, closed and open (5.1.0,
// the first round without BERT, fails a BERT log as the official checker does, and says why).
// The rules live in C++ tables (bert_rules.cc) mirroring the official YAML configs one to one.
#pragma once
#include <cstddef>
#include <filesystem>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert::mllog {

struct CheckOptions {
  std::string usage = "training";
  std::string ruleset;  // one of supported_rulesets()
  bool werror = false;  // warnings (EXACTLY_ONE keys repeated with equal values) become errors
  bool quiet = false;   // drop warnings (ignored when werror is set)
  std::optional<std::filesystem::path>
      rules_dir;  // reserved: reading the official YAML is not supported yet
};

struct CheckMessage {
  enum class Level { error, warning };
  Level level = Level::error;
  std::string
      rule;  // "<config>:<KEY>", e.g. "closed_bert:eval_accuracy", "common:END", "log:parse"
  std::size_t line = 0;  // 1-based line of the log; 0 for whole-log findings
  std::string record;    // the offending record text (shortened when very long), or ""
  std::string text;      // what failed, e.g. "CHECK failed: 'epoch_num' in v['metadata']"
};

struct CheckResult {
  std::filesystem::path file;
  bool success = false;
  std::vector<CheckMessage> messages;  // errors and warnings, in the official checker's order

  // What the log says about itself (first occurrence, as the checker reads it): empty when absent
  // or not a string.
  std::optional<std::string> benchmark;  // submission_benchmark
  std::optional<std::string> division;   // submission_division
  std::vector<std::string>
      configs;              // configs run, in queue order: "training_4.0.0/common.yaml", ...
  std::size_t records = 0;  // MLLOG records parsed
  bool official_checker_crashes =
      false;  // the official tool would stop with a Python exception (still FAILED)

  std::size_t error_count() const;
  std::size_t warning_count() const;
};

// The rulesets whose BERT rules are encoded (the rows of training_rulesets() with bert_rules set):
// 0.7.0, 1.0.0, 1.1.0, 2.0.0, 2.1.0, 3.0.0, 3.1.0, 4.0.0, 4.1.0, 5.0.0, 5.1.0.
const std::vector<std::string>& supported_rulesets();
bool is_supported_ruleset(std::string_view ruleset);

// Checks one log. Bad log content never throws: it is a FAILED verdict with messages. Throws
// std::invalid_argument for bad options (unknown usage or ruleset) and std::runtime_error when the
// file cannot be read.
CheckResult check_log(const std::filesystem::path& file, const CheckOptions& options);
CheckResult check_log(std::istream& in, const CheckOptions& options,
                      const std::filesystem::path& name = "<stream>");
CheckResult check_log_text(std::string_view text, const CheckOptions& options,
                           const std::filesystem::path& name = "<memory>");

// Human-readable report: "SUCCESS <file>" or "FAILED <file>", then one indented block per message.
std::string format_result(const CheckResult& result, bool show_warnings = true);

}  // namespace mlbert::mllog
