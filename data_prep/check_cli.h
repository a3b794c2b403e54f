// `mlbert data check DIR`: the data folder's training shards checked for repeats
// (shard_repeats.h), from a length index built in memory (nothing is written).
#pragma once
#include <CLI/CLI.hpp>

namespace mlbert::data {
void add_check(CLI::App& data, int& exit_code);
}  // namespace mlbert::data
