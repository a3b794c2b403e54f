// `mlbert reproduce plan|compare`: registered by mlbert-core, which links the simulator that
// gives a plan its expected time to train (the harness library itself does not).
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

#include "mlperf_logging/report/report.h"

namespace mlbert::harness::reproduce {

void register_cli(CLI::App& app, int& exit_code);

// `mlbert report REPRODUCED --compare PUBLISHED`'s section: `reproduce compare` as a report shows
// it (logging::ReportComparison).
logging::ComparisonSection report_comparison(const std::filesystem::path& reproduced,
                                             const std::filesystem::path& published,
                                             const std::string& ruleset,
                                             const std::string& tolerance);

}  // namespace mlbert::harness::reproduce
