#include "mlperf_logging/cli.h"

namespace mlbert::logging {
void register_cli(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace mlbert::logging
