// mlbert-core: every mlbert subcommand, registered by each library (`mlbert`, front_main.cc, hands
// it everything but the log toolkit's). Errors from any command reach run_cli as exceptions and
// become one line on stderr and exit status 2.
#include <CLI/CLI.hpp>

#include "bert/cli.h"
#include "data_prep/cli.h"
#include "harness/cli/cli.h"
#include "harness/cli/version.h"
#include "harness/reproduce/cli.h"
#include "common/cli.h"
#include "mlperf_logging/cli/cli.h"
#include "simulate/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"mlbert: prepare, run and audit MLPerf Training BERT submissions", "mlbert"};
  app.require_subcommand(1);
  int exit_code = 0;
  mlbert::logging::register_cli(app, exit_code, mlbert::harness::reproduce::report_comparison);
  mlbert::data::register_cli(app, exit_code);
  mlbert::bert::register_cli(app, exit_code);
  mlbert::harness::register_cli(app, exit_code);
  mlbert::simulate::register_cli(app, exit_code);
  mlbert::harness::reproduce::register_cli(app, exit_code);
  return mlbert::cli::run_cli(app, argc, argv, exit_code, mlbert::version_text);
}
