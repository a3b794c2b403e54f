#include "harness/cli.h"

namespace mlbert::harness {
void register_cli(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace mlbert::harness
