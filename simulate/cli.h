// `mlbert simulate` and `mlbert simulate calibrate` on the mlbert CLI.
#pragma once
#include <CLI/CLI.hpp>

namespace mlbert::simulate {
// `exit_code` receives the status the subcommand wants `main` to return.
void register_cli(CLI::App& app, int& exit_code);
}  // namespace mlbert::simulate
