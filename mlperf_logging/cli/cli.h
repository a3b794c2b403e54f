// The mlbert command line's log-audit subcommands (check, score, rcp, system-check, package,
// report, audit, and the official tools' command lines of official_cli.h), which the front end
// `mlbert` runs itself.
#pragma once
#include <CLI/CLI.hpp>

#include "common/cli.h"
#include "mlperf_logging/report/report.h"

#include <functional>
#include <string>
#include <vector>

namespace mlbert::logging {
// `mlbert report REPRODUCED --compare PUBLISHED`: the comparison section, computed above the
// toolkit (mlbert-core passes `mlbert reproduce compare`'s). Throws naming the folder and file
// when either side cannot be compared.
using ReportComparison = std::function<ComparisonSection(
    const std::filesystem::path& reproduced, const std::filesystem::path& published,
    const std::string& ruleset, const std::string& tolerance)>;

// `exit_code` receives the status the chosen subcommand wants `main` to return. Without
// `comparison` (the toolkit-only front end) `report --compare` is refused; the front end hands
// such a command to mlbert-core.
void register_cli(CLI::App& app, int& exit_code, ReportComparison comparison = {});
// Whether the words after the program name are a `report --compare`, which needs mlbert-core.
bool is_report_comparison(int argc, char** argv);

// For `mlbert --version`: the rulesets with BERT rules (checker.h's supported_rulesets()) oldest
// first, and the newest ruleset with BERT (rulesets.h), which `mlbert check` uses when neither
// --ruleset nor a round in the path names one.
std::vector<std::string> rulesets_by_version();
std::string newest_bert_ruleset();

}  // namespace mlbert::logging
