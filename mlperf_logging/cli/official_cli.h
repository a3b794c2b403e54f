// The official mlperf_logging command lines, answered by mlbert: `mlbert compliance_checker ...`,
// `package_checker`, `result_summarizer`, `rcp_checker`, `system_desc_checker` and `repo_checker`
// with the official arguments, output lines, --log_output files and exit statuses, over the engines
// of `mlbert check`, `package`, `score`, `rcp` and `system-check`. A link named after a tool
// (`ln -s mlbert compliance_checker`) runs it too, so a script switches by changing one command.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace mlbert::logging {

// Registers the six commands (group "official").
void register_official_cli(CLI::App& app, int& exit_code);

// The official tool names, in the order `mlbert --help` lists them.
const std::vector<std::string_view>& official_tool_names();

// The command line as words, with a program named after an official tool (the basename of
// argv[0], e.g. a link `compliance_checker`) turned into `mlbert compliance_checker ...`.
std::vector<std::string> command_line_by_program_name(int argc, char** argv);

// For an official command only: the Python argparse forms CLI11 does not take, rewritten in place:
// a one-dash long option (`-csv FILE` -> `--csv FILE`) and a unique prefix of a long option
// (`--rule 4.1.0` -> `--ruleset 4.1.0`), as argparse expands abbreviations.
void adapt_official_arguments(const CLI::App& app, std::vector<std::string>& words);

}  // namespace mlbert::logging
