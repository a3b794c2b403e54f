#include <CLI/CLI.hpp>

namespace mlbert::logging {
void register_audit_cli(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace mlbert::logging
