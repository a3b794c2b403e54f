// The log toolkit's subcommands on the mlbert command line (common/cli.h runs them).
#include "mlperf_logging/cli/cli.h"

#include "mlperf_logging/cli/official_cli.h"

#include <string_view>

namespace mlbert::logging {
// check.cc: check; audit.cc: score, rcp, system-check, package; report.cc: report; advise.cc:
// audit; official_*.cc: the official tools' command lines.
void register_check_cli(CLI::App& app, int& exit_code);
void register_audit_cli(CLI::App& app, int& exit_code);
void register_report_cli(CLI::App& app, int& exit_code, ReportComparison comparison);
void register_advise_cli(CLI::App& app, int& exit_code);

void register_cli(CLI::App& app, int& exit_code, ReportComparison comparison) {
  register_check_cli(app, exit_code);
  register_audit_cli(app, exit_code);
  register_report_cli(app, exit_code, std::move(comparison));
  register_advise_cli(app, exit_code);
  register_official_cli(app, exit_code);
}

bool is_report_comparison(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "report") return false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") return false;
    if (word == "--compare" || word.rfind("--compare=", 0) == 0) return true;
  }
  return false;
}

}  // namespace mlbert::logging
