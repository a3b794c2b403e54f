// Registers the `mlbert data ...` subcommands (tokenize, prep, eval-set, stratify, pack,
// demo-corpus).
#pragma once
#include <CLI/CLI.hpp>

namespace mlbert::data {
// `exit_code` receives the status the chosen subcommand wants `main` to return.
void register_cli(CLI::App& app, int& exit_code);
}  // namespace mlbert::data
