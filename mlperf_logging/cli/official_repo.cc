// `mlbert repo_checker FOLDER USAGE RULESET [--log_output FILE]`: the official
// `python -m mlperf_logging.repo_checker` command line (repo_rules.h): its log lines (each check
// announced, the paths it refuses, then "INFO - CHECKS FAILED." or "INFO - ALL CHECKS PASSED.") and
// its exit status, 0 either way. Unlike the official tool, which walks a missing folder as an empty
// one and passes it, a folder that does not exist is an error (exit status 2).
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "common/cli.h"
#include "mlperf_logging/cli/official_tool.h"
#include "mlperf_logging/package/repo_rules.h"

namespace mlbert::logging::official {
namespace {

struct RepoArgs {
  std::string folder;
  std::string usage;
  std::string ruleset;
  std::string log_output = "repo_checker.log";
};

std::string lines(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& path : paths) out += (out.empty() ? "" : "\n") + path;
  return out;
}

int check(const RepoFindings& findings, const std::string& folder, OfficialLog& log) {
  log.info("Running repository checks.");
  log.info("Running git-unfriendly file name checks.");
  if (!findings.bad_names.empty()) {
    log.error("Files with git-unfriendly name: " + lines(findings.bad_names) + " ");
    log.error(
        "Please remove spaces from filenamed and make sure they do not start with \".\", or "
        "\"/.\"");
  }
  log.info("Running large file checks.");
  if (!findings.large_files.empty()) {
    log.error("Files > 50MB: " + lines(findings.large_files));
    log.error("Please remove or reduce the size of these files.");
  }
  if (!findings.broken_links.empty())
    log.error(folder + " contains broken symbolic links: " + lines(findings.broken_links));
  log.info(findings.passed() ? "ALL CHECKS PASSED." : "CHECKS FAILED.");
  return 0;
}

}  // namespace

void register_repo_checker(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RepoArgs>();
  CLI::App* cmd =
      app.add_subcommand("repo_checker", "mlperf_logging.repo_checker, same arguments")
          ->group("official");
  cli::set_example(*cmd, "mlbert repo_checker training_results_v4.1/NVIDIA training 4.1.0");
  cmd->add_option("folder", args->folder, "the folder for a submission package.")->required();
  cmd->add_option("usage", args->usage, "the usage: training or hpc (the checks are the same)")
      ->required()
      ->check(CLI::IsMember({"training", "hpc"}));
  cmd->add_option("ruleset", args->ruleset, "the ruleset, 2.0.0 to 6.1.0")
      ->required()
      ->check(CLI::IsMember({"2.0.0", "2.1.0", "3.0.0", "3.1.0", "4.0.0", "4.1.0", "5.0.0", "5.1.0",
                             "6.0.0", "6.1.0"}));
  cmd->add_option("--log_output", args->log_output, "where to store the output log")
      ->capture_default_str();
  cmd->callback([args, &exit_code] {
    // Read first: a missing folder is a usage error, before any log is written.
    const RepoFindings findings = check_repository(args->folder);
    exit_code = run_official("repo_checker", args->log_output,
                             [&](OfficialLog& log) { return check(findings, args->folder, log); });
  });
}

}  // namespace mlbert::logging::official
