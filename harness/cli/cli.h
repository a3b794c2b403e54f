// Registers train, launch, bind and demo on the mlbert CLI.
#pragma once
#include <CLI/CLI.hpp>

namespace mlbert::harness {
// `exit_code` receives the status the chosen subcommand wants `main` to return.
void register_cli(CLI::App& app, int& exit_code);
}  // namespace mlbert::harness
