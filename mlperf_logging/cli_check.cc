#include <CLI/CLI.hpp>

namespace mlbert::logging {
void register_check_cli(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace mlbert::logging
