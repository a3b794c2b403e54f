// Cost of running HDF5 in the shard reader process: the readers of hdf5_io.h (one request to
// mlbert-shard-reader, samples sent back over a socket) against the same readers in-process
// (hdf5_direct.h, the baseline), on the same shards in the same run. Calls: inspect_shard (what the
// trainer does per shard at init), read_rows of a few random rows (the trainer's loader, per shard
// per micro-step) and read_shard of a whole shard (eval set, pack, stratify). Also the one-off
// cost of starting the reader.
//
// Usage: shard_read_bench [--rows 20000] [--reps 300] [--batch 4]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "data_prep/hdf5_direct.h"
#include "data_prep/hdf5_io.h"

namespace fs = std::filesystem;
using namespace mlbert::data;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median seconds of `reps` calls of f.
double median_seconds(int reps, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double start = now();
    f();
    t.push_back(now() - start);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<Sample> make_samples(int n, std::mt19937& rng) {
  std::uniform_int_distribution<int> length(20, 512), token(1000, 30000);
  std::vector<Sample> out(n);
  for (Sample& s : out) {
    const int len = length(rng);
    for (int i = 0; i < len; ++i) {
      s.input_ids.push_back(i == 0 ? 101 : token(rng));
      s.segment_ids.push_back(i < len / 2 ? 0 : 1);
    }
    for (int p = 1; p < len && s.masked_lm_positions.size() < 76; p += 7) {
      s.masked_lm_positions.push_back(p);
      s.masked_lm_ids.push_back(token(rng));
    }
    s.next_sentence_label = static_cast<int8_t>(len % 2);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int rows = 20000, reps = 300, batch = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rows")) rows = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
  }
  const fs::path dir =
      fs::temp_directory_path() / ("mlbert-shard-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::mt19937 rng(7);
  const auto samples = make_samples(rows, rng);
  const fs::path varlen = dir / "varlen.hdf5";
  write_shard(varlen, Layout::kVarlen, samples);
  std::printf("shard: varlen, %d rows, %.1f MB\n", rows, fs::file_size(varlen) / 1e6);

  const double start = now();
  (void)inspect_shard(varlen);
  std::printf("first call (starts mlbert-shard-reader): %.2f ms\n", (now() - start) * 1e3);

  ReadOptions o;
  o.vocab_size = 30522;
  std::uniform_int_distribution<int64_t> row(0, rows - 1);
  std::vector<int64_t> picks(static_cast<size_t>(batch));
  auto pick = [&] {
    for (auto& r : picks) r = row(rng);
  };
  struct Case {
    const char* name;
    int reps;
    std::function<void()> direct, contained;
  };
  const Case cases[] = {
      {"inspect_shard", reps, [&] { direct::inspect_shard(varlen); },
       [&] { inspect_shard(varlen); }},
      {"read_rows (random)", reps,
       [&] {
         pick();
         direct::read_rows(varlen, picks, o);
       },
       [&] {
         pick();
         read_rows(varlen, picks, o);
       }},
      {"read_shard (whole)", std::max(3, reps / 50), [&] { direct::read_shard(varlen, o); },
       [&] { read_shard(varlen, o); }},
  };
  std::printf("\n| call | in-process (baseline) | reader process | ratio |\n|---|---|---|---|\n");
  for (const Case& c : cases) {
    const double d = median_seconds(c.reps, c.direct);
    const double p = median_seconds(c.reps, c.contained);
    std::printf("| %s | %.3f ms | %.3f ms | %.2fx |\n", c.name, d * 1e3, p * 1e3, p / d);
  }
  std::printf("(read_rows: %d rows per call; medians of %d calls, read_shard of %d)\n", batch, reps,
              std::max(3, reps / 50));
  fs::remove_all(dir);
  return 0;
}
