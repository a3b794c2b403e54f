// The mlbert command line's log-audit subcommands (check, score, rcp, system-check, package,
// report, audit, and the official tools' command lines of official_cli.h), which the front end
// `mlbert` runs itself.
#pragma once
#include <CLI/CLI.hpp>

#include "common/cli.h"

#include <string>
#include <vector>

namespace mlbert::logging {
// `exit_code` receives the status the chosen subcommand wants `main` to return.
void register_cli(CLI::App& app, int& exit_code);

// For `mlbert --version`: the rulesets with BERT rules (checker.h's supported_rulesets()) oldest
// first, and the newest ruleset with BERT (rulesets.h), which `mlbert check` uses when neither
// --ruleset nor a round in the path names one.
std::vector<std::string> rulesets_by_version();
std::string newest_bert_ruleset();

}  // namespace mlbert::logging
