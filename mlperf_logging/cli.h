// Registers the log-audit subcommands (check, score, rcp, system-check, package) on the mlbert CLI.
#pragma once
#include <CLI/CLI.hpp>

namespace mlbert::logging {
// `exit_code` receives the status the chosen subcommand wants `main` to return.
void register_cli(CLI::App& app, int& exit_code);
}  // namespace mlbert::logging
