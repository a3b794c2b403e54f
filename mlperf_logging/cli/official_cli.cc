// Registration and dispatch of the official command lines (official_cli.h).
#include "mlperf_logging/cli/official_cli.h"

#include <algorithm>
#include <filesystem>

#include "mlperf_logging/cli/official_tool.h"

namespace mlbert::logging {

const std::vector<std::string_view>& official_tool_names() {
  static const std::vector<std::string_view> names = {"compliance_checker",  "package_checker",
                                                      "result_summarizer",   "rcp_checker",
                                                      "system_desc_checker", "repo_checker"};
  return names;
}

void register_official_cli(CLI::App& app, int& exit_code) {
  official::register_compliance_checker(app, exit_code);
  official::register_package_checker(app, exit_code);
  official::register_result_summarizer(app, exit_code);
  official::register_rcp_checker(app, exit_code);
  official::register_system_desc_checker(app, exit_code);
  official::register_repo_checker(app, exit_code);
}

std::vector<std::string> command_line_by_program_name(int argc, char** argv) {
  std::vector<std::string> words(argv, argv + argc);
  if (words.empty()) return {"mlbert"};
  const std::string program = std::filesystem::path(words.front()).filename().string();
  const auto& names = official_tool_names();
  if (std::find(names.begin(), names.end(), program) != names.end()) {
    words.front() = "mlbert";
    words.insert(words.begin() + 1, program);
  }
  return words;
}

namespace {

std::vector<std::string> long_option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options())
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
  return names;
}

// `--rule` -> `--ruleset` when exactly one long option begins so (argparse's allow_abbrev).
std::string expanded(const std::string& word, const std::vector<std::string>& names) {
  const auto equals = word.find('=');
  const std::string name = word.substr(0, equals);
  if (std::find(names.begin(), names.end(), name) != names.end()) return word;
  std::string match;
  for (const auto& candidate : names) {
    if (!candidate.starts_with(name)) continue;
    if (!match.empty()) return word;  // ambiguous: CLI11 reports it as unknown
    match = candidate;
  }
  if (match.empty()) return word;
  return match + (equals == std::string::npos ? "" : word.substr(equals));
}

}  // namespace

void adapt_official_arguments(const CLI::App& app, std::vector<std::string>& words) {
  if (words.size() < 2) return;
  const auto& tools = official_tool_names();
  if (std::find(tools.begin(), tools.end(), words[1]) == tools.end()) return;
  const CLI::App* command = nullptr;
  for (const CLI::App* sub : app.get_subcommands({}))
    if (sub->get_name() == words[1]) command = sub;
  if (command == nullptr) return;
  const auto names = long_option_names(*command);
  for (std::size_t i = 2; i < words.size(); ++i) {
    std::string& word = words[i];
    if (word == "--") break;
    // argparse takes "-csv" (one dash, several letters) as a long option of that name.
    if (word.size() > 2 && word[0] == '-' && word[1] != '-' &&
        !std::isdigit(static_cast<unsigned char>(word[1]))) {
      const std::string as_long = "-" + word;
      const std::string name = as_long.substr(0, as_long.find('='));
      if (std::find(names.begin(), names.end(), name) != names.end()) word = as_long;
    }
    if (word.starts_with("--") && word.size() > 2) word = expanded(word, names);
  }
}

}  // namespace mlbert::logging
