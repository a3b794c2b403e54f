// `mlbert reproduce plan|compare`: registered by mlbert-core, which links the simulator that
// gives a plan its expected time to train (the harness library itself does not).
#pragma once

#include <CLI/CLI.hpp>

namespace mlbert::harness::reproduce {

void register_cli(CLI::App& app, int& exit_code);

}  // namespace mlbert::harness::reproduce
