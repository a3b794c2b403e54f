#include "mlperf_logging/cli.h"

namespace mlbert::logging {
void register_check_cli(CLI::App& app, int& exit_code);  // cli_check.cc: check
void register_audit_cli(CLI::App& app, int& exit_code);  // cli_audit.cc: score, rcp, system-check, package

void register_cli(CLI::App& app, int& exit_code) {
  register_check_cli(app, exit_code);
  register_audit_cli(app, exit_code);
}
}  // namespace mlbert::logging
