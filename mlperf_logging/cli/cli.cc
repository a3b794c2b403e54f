// The log toolkit's subcommands on the mlbert command line (common/cli.h runs them).
#include "mlperf_logging/cli/cli.h"

#include "mlperf_logging/cli/official_cli.h"

namespace mlbert::logging {
// check.cc: check; audit.cc: score, rcp, system-check, package; report.cc: report; advise.cc:
// audit; official_*.cc: the official tools' command lines.
void register_check_cli(CLI::App& app, int& exit_code);
void register_audit_cli(CLI::App& app, int& exit_code);
void register_report_cli(CLI::App& app, int& exit_code);
void register_advise_cli(CLI::App& app, int& exit_code);

void register_cli(CLI::App& app, int& exit_code) {
  register_check_cli(app, exit_code);
  register_audit_cli(app, exit_code);
  register_report_cli(app, exit_code);
  register_advise_cli(app, exit_code);
  register_official_cli(app, exit_code);
}

}  // namespace mlbert::logging
