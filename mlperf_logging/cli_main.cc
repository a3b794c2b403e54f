// mlbert-audit: the log toolkit's subcommands (check, score, rcp, system-check, package) without
// the rest of mlbert. It links nothing but nlohmann/json and CLI11, so it starts in about a
// millisecond (mlbert itself loads CUDA, NCCL, MPI, HDF5 and OpenBLAS first: ~100 ms) and runs on
// an auditor's machine that has none of them. Same code, same output, same exit statuses as `mlbert
// <command>`.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "mlperf_logging/cli.h"

int main(int argc, char** argv) {
  CLI::App app{
      "mlbert-audit: check, score and package MLPerf Training BERT results (the mlbert log "
      "toolkit)"};
  app.require_subcommand(1);
  int exit_code = 0;
  mlbert::logging::register_cli(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbert-audit: error: %s\n", e.what());
    return 2;
  }
  return exit_code;
}
