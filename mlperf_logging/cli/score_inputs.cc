// `mlbert score`'s words read into result folders (score_inputs.h).
#include "mlperf_logging/cli/score_inputs.h"

#include <filesystem>
#include <regex>
#include <system_error>

#include "common/input_file.h"
#include "mlperf_logging/package/layout.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// `DIR... USAGE RULESET`, the summarizer's order, when the last two words are not paths.
bool ends_with_usage_and_ruleset(const std::vector<std::string>& words) {
  static const std::regex kRuleset(R"(\d+\.\d+\.\d+)");
  const std::size_t n = words.size();
  if (n < 3) return false;
  const std::string& usage = words[n - 2];
  return (usage == "training" || usage == "hpc") && std::regex_match(words[n - 1], kRuleset) &&
         !exists(usage) && !exists(words[n - 1]);
}

bool holds_results(const fs::path& dir) {
  return !find_result_files(dir).empty() || fs::is_directory(dir / kBertBenchmark);
}

// results/<system> of an organization folder, each holding bert/.
std::vector<std::string> system_folders(const fs::path& org) {
  std::vector<std::string> systems;
  for (const fs::path& system : sorted_subdirectories(org / "results")) {
    if (fs::is_directory(system / kBertBenchmark)) systems.push_back(system.string());
  }
  if (systems.empty()) {
    throw AuditError(org.string() +
                     ": an organization folder without results/<system>/bert/ folders");
  }
  return systems;
}

}  // namespace

ScoreInputs read_score_inputs(const std::vector<std::string>& words, const std::string& ruleset) {
  ScoreInputs inputs;
  inputs.ruleset = ruleset;
  std::vector<std::string> paths = words;
  if (ends_with_usage_and_ruleset(words)) {
    const std::string usage = words[words.size() - 2];
    const std::string word_ruleset = words.back();
    if (usage != "training") {
      throw AuditError("usage '" + usage + "': mlbert scores MLPerf Training BERT results only");
    }
    if (!ruleset.empty() && ruleset != word_ruleset) {
      throw AuditError("--ruleset " + ruleset + " and the RULESET word " + word_ruleset +
                       " disagree");
    }
    inputs.ruleset = word_ruleset;
    inputs.notes.push_back("read '" + usage + " " + word_ruleset +
                           "' as the result summarizer's USAGE RULESET");
    paths.resize(paths.size() - 2);
  }
  for (const std::string& path : paths) {
    std::error_code ec;
    if (const std::string why = files::directory_reason(path); !why.empty())
      throw AuditError(path + ": " + why);
    if (!holds_results(path) && fs::is_directory(fs::path(path) / "results", ec)) {
      const auto systems = system_folders(path);
      inputs.notes.push_back(path + ": an organization folder, scoring " +
                             std::to_string(systems.size()) + " results/<system>/bert folder" +
                             (systems.size() == 1 ? "" : "s"));
      inputs.dirs.insert(inputs.dirs.end(), systems.begin(), systems.end());
    } else {
      inputs.dirs.push_back(path);
    }
  }
  return inputs;
}

}  // namespace mlbert::logging
