#include "mlperf_logging/cli.h"

#include <cstdio>
#include <exception>

namespace mlbert::logging {
// cli_check.cc: check; cli_audit.cc: score, rcp, system-check, package; cli_report.cc: report.
void register_check_cli(CLI::App& app, int& exit_code);
void register_audit_cli(CLI::App& app, int& exit_code);
void register_report_cli(CLI::App& app, int& exit_code);

void register_cli(CLI::App& app, int& exit_code) {
  register_check_cli(app, exit_code);
  register_audit_cli(app, exit_code);
  register_report_cli(app, exit_code);
}

int run_cli(CLI::App& app, int argc, char** argv, const int& exit_code) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbert: error: %s\n", e.what());
    return 2;
  }
  return exit_code;
}
}  // namespace mlbert::logging
