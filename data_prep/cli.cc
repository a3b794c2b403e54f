#include "data_prep/cli.h"

namespace mlbert::data {
void register_cli(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace mlbert::data
