// Registers the log-audit subcommands (check, score, rcp, system-check, package, report) on the
// mlbert CLI.
#pragma once
#include <CLI/CLI.hpp>

namespace mlbert::logging {
// `exit_code` receives the status the chosen subcommand wants `main` to return.
void register_cli(CLI::App& app, int& exit_code);

// What both mlbert binaries' main does with their registered subcommands: parse and run; a parse
// error prints CLI11's message, any other exception one line "mlbert: error: ..." and status 2.
// Otherwise returns `exit_code` as the subcommand set it.
int run_cli(CLI::App& app, int argc, char** argv, const int& exit_code);
}  // namespace mlbert::logging
