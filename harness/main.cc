// mlbert: one CLI whose subcommands are registered by each library.
// Errors from any command reach here as exceptions and become one line on stderr and exit status 2.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "bert/cli.h"
#include "data_prep/cli.h"
#include "harness/cli.h"
#include "mlperf_logging/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"mlbert: prepare, run and audit MLPerf Training BERT submissions"};
  app.require_subcommand(1);
  int exit_code = 0;
  mlbert::logging::register_cli(app, exit_code);
  mlbert::data::register_cli(app, exit_code);
  mlbert::bert::register_cli(app, exit_code);
  mlbert::harness::register_cli(app, exit_code);
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
