// The MLPerf eval set: from the N samples created from eval.txt keep record int(i * N / count) for
// i in [0, count) (count = 10,000), in that order.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "data_prep/hdf5_io.h"

namespace mlbert::data {

// The picked record indexes; Python's float true division then truncation, computed the same way.
std::vector<int64_t> eval_indexes(int64_t total, int64_t count = 10000);

struct EvalSetResult {
  int64_t source_samples = 0, picked = 0;
};
// Reads the samples of `inputs` in order (any layout; packed rows count their sequences), picks the
// eval records and writes them to `output` in `layout`.
EvalSetResult make_eval_set(const std::vector<std::filesystem::path>& inputs,
                            const std::filesystem::path& output, Layout layout, int64_t count,
                            const ReadOptions& read_options);

}  // namespace mlbert::data
