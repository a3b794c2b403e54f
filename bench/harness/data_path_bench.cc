// The trainer's data path under global-deal: one rank of a 1,024-rank x 16 job reading its dealt
// samples (random rows spread over a 2,048-shard set) through the real BatchLoader, against
// reading the same rows sequentially.
//
// Design choice: every mode reads the same rows, from a cold page cache (each shard's pages are
// dropped with posix_fadvise before a mode starts), and is measured by the kernel's own counters
// (/proc/<pid>/io of the process and its shard reader child: rchar, the bytes the process's reads
// asked for; read_bytes, what the block layer fetched from the disk). "Bytes used" is what the rows
// hold on disk: 3 bytes a token (input_ids int16, segment_ids int8), 4 a prediction (positions and
// ids int16), 1 for the label. Modes:
//   loader-new  the trainer's path (BatchLoader with dealt_batches: plan on the prefetch thread,
//               rows grouped per shard, shards kept open) from its start: each shard is opened
//               on first use;
//   loader      the same, once the shards it needs are open (as in a run under way; the first
//               depth-4 read-ahead of the timed steps happens before the cache drop);
//   reopen      the same rows per step, each shard opened for its read (data::read_rows), as the
//               loader did before it kept shards open;
//   sorted      baseline: the same rows sorted by (shard, row), each shard opened once and read
//               in ascending order (a sequential pass that skips unused rows);
//   contiguous  baseline: as many rows, as contiguous row ranges of the shards (pure sequential
//               reads: the best the disk can do).
// Usage: harness_bench_data_path [--dir D] [--rows-per-shard N] [--steps N] [--modes a,b,...]
// The data set is generated into D once (default /tmp/mlbert_data_path_bench) and reused.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "data_prep/hdf5_io.h"
#include "data_prep/length_index.h"
#include "harness/data/length_distribution.h"
#include "harness/data/sampler.h"
#include "harness/data/training_data.h"
#include "tests/common/processes.h"

using namespace mlbert;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kShards = 2048, kWorld = 1024, kBatch = 16, kVocab = 30522;

std::int64_t flag(int argc, char** argv, const std::string& name, std::int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return std::atoll(argv[i + 1]);
  return fallback;
}
std::string text_flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

// A varlen sample of `length` tokens with the reference's prediction count.
data::Sample synthetic_sample(int length, std::mt19937_64& rng) {
  data::Sample s;
  s.input_ids.resize(length);
  s.segment_ids.resize(length);
  for (int i = 0; i < length; ++i) {
    s.input_ids[i] = static_cast<std::int32_t>(1000 + rng() % (kVocab - 1000));
    s.segment_ids[i] = i < length / 2 ? 0 : 1;
  }
  const int masked = std::min({76, length - 2, std::max(1, static_cast<int>(0.15 * length + 0.5))});
  for (int m = 0; m < masked; ++m) {
    s.masked_lm_positions.push_back(1 + m * (length - 2) / masked);
    s.masked_lm_ids.push_back(s.input_ids[s.masked_lm_positions.back()]);
  }
  s.next_sentence_label = static_cast<std::int8_t>(rng() % 2);
  return s;
}

void make_data_set(const fs::path& dir, int rows_per_shard) {
  const fs::path stamp = dir / "READY";
  const std::string expected = std::to_string(kShards) + " x " + std::to_string(rows_per_shard);
  {
    std::ifstream in(stamp);
    std::string have;
    if (std::getline(in, have) && have == expected) return;
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::mt19937_64 rng(2048);
  const auto start = Clock::now();
  for (int s = 0; s < kShards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "part_%05d-of-%05d.hdf5", s, kShards);
    data::ShardWriter writer(dir / name, data::Layout::kVarlen);
    for (int r = 0; r < rows_per_shard; ++r)
      writer.add(synthetic_sample(harness::mlperf_random_length(rng), rng));
    writer.commit();
  }
  data::index_shards(dir);
  std::ofstream(stamp) << expected << "\n";
  std::printf("wrote %d shards of %d rows and their length index to %s in %.0f s\n", kShards,
              rows_per_shard, dir.c_str(),
              std::chrono::duration<double>(Clock::now() - start).count());
}

struct IoCounters {
  long long rchar = 0, read_bytes = 0, syscr = 0;
};
void add_io(const std::string& file, IoCounters& c) {
  std::ifstream in(file);
  std::string key;
  long long value = 0;
  while (in >> key >> value) {
    if (key == "rchar:") c.rchar += value;
    if (key == "read_bytes:") c.read_bytes += value;
    if (key == "syscr:") c.syscr += value;
  }
}

// This process and its live descendants: the shard readers' HDF5 reads happen in the reader
// process mlbert-shard-reader, in the forks it serves each read from and in the keeper process of
// open shards, its child (the counts of a reaped process are already in its parent's).
IoCounters io_now() {
  IoCounters c;
  add_io("/proc/self/io", c);
  for (const auto& p : test::descendants_of(::getpid()))
    add_io("/proc/" + std::to_string(p.pid) + "/io", c);
  return c;
}

void drop_cache(const std::vector<harness::TrainingShard>& shards) {
  for (const auto& shard : shards) {
    const int fd = ::open(shard.path.c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

long long used_bytes(const data::Sample& s) {
  return 3LL * s.length() + 4LL * static_cast<long long>(s.masked_lm_positions.size()) + 1;
}

struct Result {
  std::string mode;
  long long rows = 0, used = 0;
  IoCounters io;
  double seconds = 0;
};

std::string g_modes = "loader-new,loader,reopen,sorted,contiguous";

// A mode: what runs untimed before the page cache is dropped, then the timed reads.
template <typename Prepare, typename Run>
struct Mode {
  Prepare prepare;
  Run run;
};
template <typename Run>
auto timed(Run run) {
  return Mode{[] {}, run};
}  // --modes: which to run

template <typename Body>
void measure(std::vector<Result>& results, const std::string& mode,
             const harness::TrainingDataset& data, Body body) {
  if (("," + g_modes + ",").find("," + mode + ",") == std::string::npos) return;
  body.prepare();
  drop_cache(data.shards);
  Result r;
  r.mode = mode;
  const IoCounters before = io_now();
  const auto start = Clock::now();
  body.run(r);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const IoCounters after = io_now();
  r.io.rchar = after.rchar - before.rchar;
  r.io.read_bytes = after.read_bytes - before.read_bytes;
  r.io.syscr = after.syscr - before.syscr;
  results.push_back(r);
}

// Counts the rows a mode read and the bytes they hold.
void add_rows(Result& r, const std::vector<data::Sample>& samples) {
  for (const auto& s : samples) {
    ++r.rows;
    r.used += used_bytes(s);
  }
}

struct Options {
  fs::path dir;
  int rows_per_shard = 500;
  int steps = 1000;
};

// The command line; --modes goes to g_modes.
Options parse_options(int argc, char** argv) {
  Options o;
  o.dir = text_flag(argc, argv, "--dir", "/tmp/mlbert_data_path_bench");
  o.rows_per_shard = static_cast<int>(flag(argc, argv, "--rows-per-shard", 500));
  o.steps = static_cast<int>(flag(argc, argv, "--steps", 1000));
  g_modes = text_flag(argc, argv, "--modes", g_modes);
  return o;
}

// The rows of `steps` micro-steps of a rank, as the loader plans them.
struct Rows {
  std::vector<std::vector<harness::SampleRef>> plans;  // one a micro-step
  std::vector<harness::SampleRef> all;
  std::map<std::int32_t, std::vector<std::int64_t>> rows_of_shard;
};

Rows planned_rows(const harness::Sampler& sampler, const harness::TrainingDataset& data, int rank,
                  int steps) {
  Rows rows;
  harness::GlobalDeal deal(sampler, data.lengths());
  // Every mode reads micro-steps [steps, 2 steps); "loader" first runs [0, steps) untimed, so
  // that the shards it needs are open, as they are once a run is under way.
  for (int m = steps; m < 2 * steps; ++m) rows.plans.push_back(deal(rank, m));
  for (const auto& p : rows.plans) rows.all.insert(rows.all.end(), p.begin(), p.end());
  for (const auto& ref : rows.all) rows.rows_of_shard[ref.shard].push_back(ref.row);
  return rows;
}

// The trainer's path: BatchLoader from its start ("loader-new") and with its shards open
// ("loader").
void measure_loaders(std::vector<Result>& results, const harness::TrainingDataset& data,
                     const harness::Sampler& sampler, const data::ReadOptions& options, int rank,
                     int steps) {
  measure(results, "loader-new", data, timed([&](Result& r) {
            harness::BatchLoader loader(data, harness::dealt_batches(sampler, data, rank), options,
                                        steps);
            for (int m = 0; m < steps; ++m) add_rows(r, loader.next());
          }));
  std::unique_ptr<harness::BatchLoader> open_loader;
  measure(results, "loader", data,
          Mode{[&] {
                 open_loader = std::make_unique<harness::BatchLoader>(
                     data, harness::dealt_batches(sampler, data, rank), options, 0);
                 for (int m = 0; m < steps; ++m) open_loader->next();
               },
               [&](Result& r) {
                 for (int m = 0; m < steps; ++m) add_rows(r, open_loader->next());
               }});
  open_loader.reset();
}

// The same rows without the loader: "reopen", "sorted" (sorts `rows.rows_of_shard`) and as many
// rows read contiguously ("contiguous").
void measure_baselines(std::vector<Result>& results, const harness::TrainingDataset& data,
                       const data::ReadOptions& options, Rows& rows) {
  measure(results, "reopen", data, timed([&](Result& r) {
            for (const auto& plan : rows.plans) {
              std::map<std::int32_t, std::vector<std::int64_t>> per_shard;
              for (const auto& ref : plan) per_shard[ref.shard].push_back(ref.row);
              for (const auto& [shard, shard_rows] : per_shard)
                add_rows(r, data::read_rows(data.shards[shard].path, shard_rows, options));
            }
          }));
  measure(results, "sorted", data, timed([&](Result& r) {
            for (auto& [shard, shard_rows] : rows.rows_of_shard) {
              std::sort(shard_rows.begin(), shard_rows.end());
              data::ShardReader reader(data.shards[shard].path);
              add_rows(r, reader.read_rows(shard_rows, options));
            }
          }));
  measure(results, "contiguous", data, timed([&](Result& r) {
            const auto total = static_cast<long long>(rows.all.size());
            for (std::size_t shard = 0; shard < data.shards.size() && r.rows < total; ++shard) {
              data::ShardReader reader(data.shards[shard].path);
              const auto count = std::min<long long>(reader.rows(), total - r.rows);
              add_rows(r, reader.read_range(0, count, options));
            }
          }));
}

// One line a mode, with its rate against "sorted".
void print_table(const std::vector<Result>& results, const Options& o, int rank, const Rows& rows) {
  std::printf(
      "data path: rank %d of %d x %d (global-deal), %d steps = %zu rows over %zu of %d shards "
      "(%d rows each); cold page cache per mode\n",
      rank, kWorld, kBatch, o.steps, rows.all.size(), rows.rows_of_shard.size(), kShards,
      o.rows_per_shard);
  std::printf("%-11s %9s %10s %10s %10s %10s %10s %10s\n", "mode", "rows", "rows/s", "used MB",
              "reads/row", "read/used", "disk/used", "vs sorted");
  double sorted_rate = 0;
  for (const Result& r : results)
    if (r.mode == "sorted") sorted_rate = r.rows / r.seconds;
  for (const Result& r : results) {
    std::printf("%-11s %9lld %10.0f %10.2f %10.1f %9.1fx %9.1fx %9.2fx\n", r.mode.c_str(), r.rows,
                r.rows / r.seconds, r.used / 1e6, static_cast<double>(r.io.syscr) / r.rows,
                static_cast<double>(r.io.rchar) / r.used,
                static_cast<double>(r.io.read_bytes) / r.used, r.rows / r.seconds / sorted_rate);
  }
  std::printf(
      "reads/row: read system calls (syscr) per row; read/used: bytes the reads asked for (rchar) "
      "per byte the rows hold; disk/used: bytes the disk delivered (read_bytes; 0 when the kernel "
      "does not count them here) per byte used.\n");
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  make_data_set(o.dir, o.rows_per_shard);

  harness::RunSpec run;
  run.sampler = harness::SamplerKind::random;
  run.per_rank_batch = kBatch;
  run.load_balancing = harness::LoadBalancing::global_deal;
  const harness::TrainingDataset data = harness::open_training_data(o.dir, run);
  harness::check_length_index(data, 0, 1);
  const harness::Sampler sampler(data.streams, data.quotas, kWorld, 42);
  data::ReadOptions options;
  options.vocab_size = kVocab;
  const int rank = 0;
  Rows rows = planned_rows(sampler, data, rank, o.steps);

  std::vector<Result> results;
  measure_loaders(results, data, sampler, options, rank, o.steps);
  measure_baselines(results, data, options, rows);
  print_table(results, o, rank, rows);
  return 0;
}
