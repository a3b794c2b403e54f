// Straggler overhead of one training step at 1,024 ranks x 16 and 4,096 ranks x 4 sequences: how
// much longer the slowest rank works than the average one (max / mean over ranks), the bytes each
// method moves between ranks, and what planning a step costs one rank, per load-balancing method.
//
// Design choice: the steps come from the harness's own Sampler drawing from a synthetic data set
// of the MLPerf training set's size (156,726,829 rows; 2,048 mixed shards for `random`, 4 length
// bins of 512 shards, as `mlbert data stratify` writes, for `stratified`), whose row lengths play
// the length index; the plans come from the harness's load balancers (plan_exchange,
// global_deal). The work of a rank is its real token count (what unpadded training costs), with a
// FLOP-weighted variant that adds attention's s^2 term (docs/reference.md, "Compute"). Lengths
// follow the MLPerf training set's bin mix (docs/reference.md, "The length mix": 37.5% 1-128,
// 18.75% 129-256, 12.5% 257-384, 31.25% 385-512); inside a bin the shape is an assumption stated
// in the output: uniform in the first three bins, and in the last 80% full 512-token sequences
// (the reference fills most sequences to the maximum) and 20% uniform in 385-511.
// Baseline: `none` (each rank trains what it sampled). The step-time gain of a method is the
// ratio of straggler overheads, since a synchronous step lasts as long as its slowest rank.
// Bytes exchanged: what the sample exchange all-gathers (serialize_samples), received per rank.
// Planning (CPU time of one thread, median and fastest step): one rank's work to know its samples:
// its sampled batch plus its group's plan (the exchange methods, after the all-gather), or the
// whole global deal (the world's batch from the sampler, the lengths, the sort and its column of
// the snake) by a GlobalDeal kept from step to step, as the trainer's loader keeps it, timed
// first in each step so that no read of this program's has brought the step's lengths into the
// cache. A last block times each building block of that deal beside the baseline it replaced.
// Usage: harness_bench_straggler [--rows N] [--steps N]
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "data_prep/sample_codec.h"
#include "harness/data/length_distribution.h"
#include "harness/data/load_balance.h"
#include "harness/data/sampler.h"
#include "harness/data/training_data.h"

using namespace mlbert::harness;
using Clock = std::chrono::steady_clock;

namespace {

// CPU seconds of the calling thread: planning is timed on one core, whatever else runs.
double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

constexpr int kRanksPerNode = 8;
// The MLPerf training set's row count (docs/reference.md, "Data").
constexpr std::int64_t kMlperfRows = 156726829;
constexpr int kRandomShards = 2048, kShardsPerBin = 512;

// FLOPs of a sequence of length s, without the masked-LM head (docs/reference.md, "Compute").
double flops(int s) {
  return 6.0 * 302e6 * s + 12.0 * 24 * 1024 * double(s) * s;
}

// The synthetic data set: row lengths (the length index, held as the trainer holds it) and the
// sampler streams over them.
struct DataSet {
  std::vector<std::int64_t> first_row{0};
  LengthTable lengths;
  std::vector<SampleStream> streams;
  explicit DataSet(std::int64_t rows) : lengths(static_cast<std::size_t>(rows)) {}
  RowLengths row_lengths() const { return RowLengths{first_row, lengths.span()}; }
};

void add_shard(DataSet& d, std::int64_t rows, SampleStream& stream, int bin, std::mt19937_64& rng) {
  const auto shard = static_cast<std::int32_t>(d.first_row.size() - 1);
  for (std::int64_t r = d.first_row.back(); r < d.first_row.back() + rows; ++r)
    d.lengths[static_cast<std::size_t>(r)] = static_cast<std::uint16_t>(
        bin < 0 ? mlperf_random_length(rng) : mlperf_length_in_bin(bin, rng));
  d.first_row.push_back(d.first_row.back() + rows);
  stream.add(shard, 0, rows);
}

// `random`: kRandomShards shards of mixed lengths, one stream.
DataSet mixed_data(std::int64_t rows, std::mt19937_64& rng) {
  DataSet d(rows);
  d.streams.resize(1);
  for (int s = 0; s < kRandomShards; ++s)
    add_shard(d, rows * (s + 1) / kRandomShards - rows * s / kRandomShards, d.streams[0], -1, rng);
  return d;
}

// `stratified`: each bin its share of the rows, in kShardsPerBin shards, one stream per bin.
DataSet binned_data(std::int64_t rows, std::mt19937_64& rng) {
  std::int64_t bin_rows[4], total = 0;
  for (int b = 0; b < 4; ++b) total += bin_rows[b] = std::llround(rows * kMlperfBinMix[b]);
  DataSet d(total);
  d.streams.resize(4);
  for (int b = 0; b < 4; ++b)
    for (int s = 0; s < kShardsPerBin; ++s)
      add_shard(d, bin_rows[b] * (s + 1) / kShardsPerBin - bin_rows[b] * s / kShardsPerBin,
                d.streams[b], b, rng);
  return d;
}

// The per-rank quotas closest to the bin mix (largest remainders): 6/3/2/5 for 16.
std::vector<int> stratified_quotas(int batch) {
  std::vector<int> quotas(4);
  std::vector<std::pair<double, int>> remainders;
  int given = 0;
  for (int b = 0; b < 4; ++b) {
    quotas[b] = static_cast<int>(batch * kMlperfBinMix[b]);
    given += quotas[b];
    remainders.push_back({batch * kMlperfBinMix[b] - quotas[b], b});
  }
  std::sort(remainders.begin(), remainders.end(), [](auto a, auto b) { return a.first > b.first; });
  for (int k = 0; given < batch; ++k, ++given) ++quotas[remainders[k].second];
  return quotas;
}

// Bytes of one sample in the exchange's all-gather, by length: serialize_samples of a sample with
// the reference's prediction count, min(76, max(1, round(0.15 * length))).
std::vector<std::int64_t> exchange_bytes_by_length() {
  std::vector<std::int64_t> bytes(513, 0);
  const auto empty = static_cast<std::int64_t>(mlbert::data::serialize_samples({}).size());
  for (int length = 1; length <= 512; ++length) {
    mlbert::data::Sample s;
    s.input_ids.assign(length, 1000);
    s.segment_ids.assign(length, 0);
    const int masked = std::min(76, std::max(1, static_cast<int>(std::lround(0.15 * length))));
    s.masked_lm_positions.assign(masked, 1);
    s.masked_lm_ids.assign(masked, 1000);
    bytes[length] =
        static_cast<std::int64_t>(mlbert::data::serialize_samples({&s, 1}).size()) - empty;
  }
  return bytes;
}

struct Method {
  std::string name;
  bool stratified;
  LoadBalancing balancing;
};

struct Outcome {
  double mean_tokens_ratio = 0, worst_tokens_ratio = 0, mean_flops_ratio = 0;
  double plan_us = 0, plan_min_us = 0;  // median and fastest step
  double bytes_per_rank = 0;            // received in the exchange per step, mean over ranks
  bool same_as_global_exchange = true;
};

Outcome measure(const Method& method, const DataSet& data, const std::vector<int>& quotas,
                int world, int steps, const std::vector<std::int64_t>& sample_bytes) {
  const Sampler sampler(data.streams, quotas, world, 12345);
  const RowLengths row_lengths = data.row_lengths();
  Outcome out;
  std::vector<double> plan_seconds;
  GlobalDeal deal(sampler, row_lengths);  // kept from step to step, as the trainer's loader does
  for (int step = 0; step < steps; ++step) {
    // One rank's planning, timed: a different rank every step.
    const int rank = static_cast<int>((static_cast<std::int64_t>(step) * 131) % world);
    std::vector<SampleRef> dealt;
    if (method.balancing == LoadBalancing::global_deal) {
      // First in the step, before this program reads any of the step's lengths itself: the
      // deal's reads of the length table find them no nearer than the loader thread does.
      const double start = thread_seconds();
      dealt = deal(rank, step);
      plan_seconds.push_back(thread_seconds() - start);
    }
    std::vector<std::vector<int>> lengths(world);
    std::vector<std::vector<SampleRef>> sampled(world);
    for (int r = 0; r < world; ++r) {
      sampled[r] = sampler.batch(r, step);
      for (const auto& ref : sampled[r]) lengths[r].push_back(row_lengths.of(ref));
    }
    const auto plan = plan_exchange(lengths, method.balancing, kRanksPerNode);
    if (method.balancing == LoadBalancing::global_deal) {
      std::vector<SampleRef> exchanged;
      for (const auto& s : plan[rank]) exchanged.push_back(sampled[s.rank][s.index]);
      out.same_as_global_exchange &= dealt == exchanged;
    } else {
      const double start = thread_seconds();
      const auto own = sampler.batch(rank, step);
      if (method.balancing != LoadBalancing::none) {
        const int group =
            method.balancing == LoadBalancing::global_exchange ? world : kRanksPerNode;
        const int first = rank / group * group;
        const std::vector<std::vector<int>> members(lengths.begin() + first,
                                                    lengths.begin() + first + group);
        const auto local = plan_group_exchange(members);
        if (local.empty() || own.empty()) std::abort();  // keep the work observable
      }
      plan_seconds.push_back(thread_seconds() - start);
    }
    std::vector<std::int64_t> tokens(world);
    std::vector<double> work(world);
    for (int r = 0; r < world; ++r)
      for (const auto& s : plan[r]) {
        tokens[r] += lengths[s.rank][s.index];
        work[r] += flops(lengths[s.rank][s.index]);
      }
    if (method.balancing == LoadBalancing::node_exchange ||
        method.balancing == LoadBalancing::global_exchange) {
      const int group = method.balancing == LoadBalancing::global_exchange ? world : kRanksPerNode;
      for (int first = 0; first < world; first += group) {
        std::int64_t group_bytes = 0;
        for (int r = first; r < first + group; ++r)
          for (int l : lengths[r]) group_bytes += sample_bytes[l];
        // Every member receives the blocks of the others.
        for (int r = first; r < first + group; ++r) {
          std::int64_t own_bytes = 0;
          for (int l : lengths[r]) own_bytes += sample_bytes[l];
          out.bytes_per_rank += static_cast<double>(group_bytes - own_bytes) / world / steps;
        }
      }
    }
    const double ratio = straggler_ratio(tokens);
    out.mean_tokens_ratio += ratio / steps;
    out.worst_tokens_ratio = std::max(out.worst_tokens_ratio, ratio);
    const double mean_work = std::accumulate(work.begin(), work.end(), 0.0) / world;
    out.mean_flops_ratio += *std::max_element(work.begin(), work.end()) / mean_work / steps;
  }
  std::sort(plan_seconds.begin(), plan_seconds.end());
  out.plan_us = plan_seconds[plan_seconds.size() / 2] * 1e6;
  out.plan_min_us = plan_seconds.front() * 1e6;
  return out;
}

std::string bytes_text(double bytes) {
  char text[32];
  if (bytes == 0) return "0";
  if (bytes >= 1e6)
    std::snprintf(text, sizeof text, "%.2f MB", bytes / 1e6);
  else
    std::snprintf(text, sizeof text, "%.1f kB", bytes / 1e3);
  return text;
}

// Median and fastest of timed seconds, in microseconds.
struct Timing {
  double median_us = 0, min_us = 0;
};
Timing timing(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  return {seconds[seconds.size() / 2] * 1e6, seconds.front() * 1e6};
}

// Thread CPU seconds of `n` lengths read from a list of places, prefetched a few reads ahead (as
// GlobalDeal does).
double read_lengths(const std::uint16_t* table, const std::vector<std::uint64_t>& at,
                    std::vector<int>& out, std::size_t n) {
  constexpr std::size_t kAhead = 32;
  const double t0 = thread_seconds();
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(table + at[i + kAhead]);
    out[i] = table[at[i]];
  }
  return thread_seconds() - t0;
}

// The buffers of one step of deal_phases, and the seconds of each block, one entry a step.
struct PhaseSteps {
  explicit PhaseSteps(std::size_t samples)
      : n(samples),
        computed(n),
        indices(n),
        by_refs(n),
        rows(n),
        other_rows(n),
        lengths(n),
        other_lengths(n) {}
  std::size_t n;
  std::vector<std::uint64_t> computed, indices, by_refs, rows, other_rows;
  std::vector<int> lengths, other_lengths, sorted, counts;
  std::vector<double> t_computed, t_tabulated, t_refs, t_places, t_run, t_small, t_huge, t_sort;
  bool same = true;
};

// The draw of `n` indices from `first`: computed index by index, then tabulated.
void time_draw(PhaseSteps& p, const RandomPermutation& order, TabulatedPermutation& tabulated,
               std::uint64_t first) {
  double start = thread_seconds();
  order.map(first, p.n, p.computed.data());
  p.t_computed.push_back(thread_seconds() - start);
  start = thread_seconds();
  tabulated.map(first, p.n, p.indices.data());
  p.t_tabulated.push_back(thread_seconds() - start);
  p.same &= p.computed == p.indices;
}

// The drawn indices' places in the length table: through the refs, through the stream over the
// concatenated shards, and as an offset from the start of that stream's one run.
void time_places(PhaseSteps& p, const RowLengths& row_lengths, const SampleStream& stream,
                 const SampleStream& places, std::uint64_t run_start) {
  const std::size_t n = p.n;
  double start = thread_seconds();
  for (std::size_t i = 0; i < n; ++i)
    p.by_refs[i] = row_lengths.place(stream.at(static_cast<std::int64_t>(p.indices[i])));
  p.t_refs.push_back(thread_seconds() - start);
  start = thread_seconds();
  for (std::size_t i = 0; i < n; ++i)
    p.rows[i] = static_cast<std::uint64_t>(places.at(static_cast<std::int64_t>(p.indices[i])).row);
  p.t_places.push_back(thread_seconds() - start);
  p.same &= p.by_refs == p.rows;
  start = thread_seconds();
  for (std::size_t i = 0; i < n; ++i) p.rows[i] = run_start + p.indices[i];
  p.t_run.push_back(thread_seconds() - start);
  p.same &= p.by_refs == p.rows;
}

// A copy of the length table in 4 KiB pages (the baseline for the page size); munmap it.
std::uint16_t* small_page_copy(const LengthTable& lengths, std::size_t bytes) {
  void* small_pages =
      ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (small_pages == MAP_FAILED) std::abort();
  ::madvise(small_pages, bytes, MADV_NOHUGEPAGE);
  std::memcpy(small_pages, lengths.data(), bytes);
  return static_cast<std::uint16_t*>(small_pages);
}

// The block timings of deal_phases, each beside its baseline.
void print_phases(const PhaseSteps& p, int world, int batch, double table_us) {
  std::printf(
      "\nglobal-deal planning by phase at %d ranks x %d (random; %zu samples a step): thread CPU "
      "us per step, median (fastest), each block alone beside its baseline\n",
      world, batch, p.n);
  const auto line = [](const char* what, Timing t, const Timing* baseline) {
    std::printf("  %-66s %8.1f (%6.1f)", what, t.median_us, t.min_us);
    if (baseline) std::printf("  %5.2fx", baseline->median_us / t.median_us);
    std::printf("\n");
  };
  const Timing computed_t = timing(p.t_computed), refs_t = timing(p.t_refs),
               small_t = timing(p.t_small);
  line("draw: the permutation computed index by index (baseline)", computed_t, nullptr);
  char tabulated_what[96];
  std::snprintf(tabulated_what, sizeof tabulated_what,
                "draw: the permutation tabulated (tables built once an epoch: %.0f us)", table_us);
  line(tabulated_what, timing(p.t_tabulated), &computed_t);
  line("places: through the refs (stream ranges, then the shard's first row)", refs_t, nullptr);
  line("places: through the stream over the concatenated shards", timing(p.t_places), &refs_t);
  line("places: that stream is one run of the table: its start + the index", timing(p.t_run),
       &refs_t);
  line("lengths: random reads of the table in 4 KiB pages (baseline)", small_t, nullptr);
  line("lengths: random reads of the table in 2 MiB pages", timing(p.t_huge), &small_t);
  line("sort: longest first (counting sort)", timing(p.t_sort), nullptr);
  std::printf("  blocks agree with their baselines: %s\n", p.same ? "yes" : "NO");
}

// Where global-deal's planning time goes at `world` x `batch` on the mixed set: each building
// block of GlobalDeal timed alone (thread CPU time per step), beside the baseline it replaced,
// on the same steps. Returns false if a block disagrees with its baseline.
bool deal_phases(const DataSet& data, int world, int batch, int steps) {
  const RowLengths row_lengths = data.row_lengths();
  SampleStream stream = data.streams[0];
  stream.build_lookup();  // as the sampler does
  const SampleStream places = stream.in_concatenation(data.first_row);
  const auto run_start = static_cast<std::uint64_t>(places.at(0).row);
  const auto n = static_cast<std::size_t>(world) * static_cast<std::size_t>(batch);
  const RandomPermutation order(static_cast<std::uint64_t>(stream.size()), 12345);
  const std::uint64_t steps_in_order = order.size() / n;
  if (steps_in_order < 2) return true;  // a data set too small to time this on
  double start = thread_seconds();
  TabulatedPermutation tabulated(order);
  const double table_us = (thread_seconds() - start) * 1e6;
  const std::size_t bytes = data.lengths.size() * sizeof(std::uint16_t);
  std::uint16_t* small_table = small_page_copy(data.lengths, bytes);

  PhaseSteps p(n);
  for (int step = 0; step < steps; ++step) {
    const std::uint64_t first = static_cast<std::uint64_t>(step) % steps_in_order * n;
    time_draw(p, order, tabulated, first);
    time_places(p, row_lengths, stream, places, run_start);
    // Each page size reads rows no timed read has touched yet: another step's draw.
    tabulated.map((first + steps_in_order / 2 * n) % (steps_in_order * n), n, p.indices.data());
    for (std::size_t i = 0; i < n; ++i)
      p.other_rows[i] =
          static_cast<std::uint64_t>(places.at(static_cast<std::int64_t>(p.indices[i])).row);
    p.t_huge.push_back(read_lengths(data.lengths.data(), p.rows, p.lengths, n));
    p.t_small.push_back(read_lengths(small_table, p.other_rows, p.other_lengths, n));
    start = thread_seconds();
    longest_first(p.lengths, p.sorted, p.counts);
    p.t_sort.push_back(thread_seconds() - start);
  }
  ::munmap(small_table, bytes);
  print_phases(p, world, batch, table_us);
  return p.same;
}

std::int64_t flag(int argc, char** argv, const std::string& name, std::int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return std::atoll(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t rows = flag(argc, argv, "--rows", kMlperfRows);
  const int steps = static_cast<int>(flag(argc, argv, "--steps", 200));
  std::mt19937_64 rng(12345);
  const auto data_start = Clock::now();
  const DataSet mixed = mixed_data(rows, rng), binned = binned_data(rows, rng);
  const auto sample_bytes = exchange_bytes_by_length();
  long huge_kb = 0;  // how much of the length tables the kernel put in 2 MiB pages
  if (FILE* smaps = std::fopen("/proc/self/smaps_rollup", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, smaps))
      if (std::sscanf(line, "AnonHugePages: %ld kB", &huge_kb) == 1) break;
    std::fclose(smaps);
  }
  std::printf(
      "straggler overhead (max/mean work over ranks), %d ranks per node, %d steps; data set of "
      "%lld rows (%d mixed shards; 4 bins x %d shards), built in %.1f s; length tables %.0f MB, "
      "%.0f MB of it in 2 MiB pages\n",
      kRanksPerNode, steps, static_cast<long long>(rows), kRandomShards, kShardsPerBin,
      std::chrono::duration<double>(Clock::now() - data_start).count(),
      (mixed.lengths.size() + binned.lengths.size()) * 2e-6, huge_kb / 1e3);
  std::printf(
      "lengths: MLPerf bin mix 37.5/18.75/12.5/31.25%%; within bins uniform, last bin 80%% "
      "at 512 (assumption)\n");
  const std::vector<Method> methods = {
      {"none", false, LoadBalancing::none},
      {"node-exchange", false, LoadBalancing::node_exchange},
      {"stratified + node-exchange", true, LoadBalancing::node_exchange},
      {"global-exchange", false, LoadBalancing::global_exchange},
      {"global-deal", false, LoadBalancing::global_deal},
      {"stratified + global-deal", true, LoadBalancing::global_deal},
  };
  bool deal_matches = true;
  for (const auto& [world, batch] : {std::pair{1024, 16}, std::pair{4096, 4}}) {
    const std::vector<int> quotas = stratified_quotas(batch);
    std::printf("\n%d ranks x %d sequences (stratified quotas %d/%d/%d/%d)\n", world, batch,
                quotas[0], quotas[1], quotas[2], quotas[3]);
    std::printf("%-28s %11s %11s %11s %10s %12s %12s %18s\n", "method", "tokens mean",
                "tokens worst", "FLOPs mean", "vs none", "bytes/rank", "bytes/job",
                "plan us/rank (min)");
    double base_flops = 0;
    for (const Method& m : methods) {
      const Outcome o =
          measure(m, m.stratified ? binned : mixed, m.stratified ? quotas : std::vector<int>{batch},
                  world, steps, sample_bytes);
      if (m.balancing == LoadBalancing::none) base_flops = o.mean_flops_ratio;
      deal_matches &= o.same_as_global_exchange;
      std::printf("%-28s %11.4f %11.4f %11.4f %9.3fx %12s %12s %10.1f (%5.1f)\n", m.name.c_str(),
                  o.mean_tokens_ratio, o.worst_tokens_ratio, o.mean_flops_ratio,
                  base_flops / o.mean_flops_ratio, bytes_text(o.bytes_per_rank).c_str(),
                  bytes_text(o.bytes_per_rank * world).c_str(), o.plan_us, o.plan_min_us);
    }
  }
  deal_matches &= deal_phases(mixed, 1024, 16, steps);
  std::printf(
      "\n\"vs none\": speed-up of a compute-bound step (slowest rank's FLOPs) over no balancing. "
      "bytes/rank: sample bytes a rank receives per step in the exchange (global-deal: none, and "
      "no lengths either). global-deal's deal equals global-exchange's on every timed rank: "
      "%s\n",
      deal_matches ? "yes" : "NO");
  return deal_matches ? 0 : 1;
}
