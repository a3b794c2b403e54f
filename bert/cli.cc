#include "bert/cli.h"

namespace mlbert::bert {
void register_cli(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace mlbert::bert
