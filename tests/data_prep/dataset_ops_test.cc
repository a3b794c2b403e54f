// Eval-set picking, length stratification and packing over real HDF5 shards.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "data_prep/eval_set.h"
#include "data_prep/packing.h"
#include "data_prep/shard_groups.h"
#include "data_prep/stratify.h"
#include "test_util.h"

using namespace mlbert::data;
using mlbert::test::TempDir;

namespace {
// Sample i has length lengths[i] and carries i in input_ids[1] so it can be traced.
std::vector<Sample> traced_samples(const std::vector<int32_t>& lengths) {
  std::vector<Sample> v;
  for (size_t i = 0; i < lengths.size(); ++i) {
    Sample s;
    const int32_t len = lengths[i];
    s.input_ids.assign(static_cast<size_t>(len), 2000);
    s.input_ids[0] = 101;
    if (len > 2) s.input_ids[1] = static_cast<int32_t>(i % 30000);
    s.input_ids[static_cast<size_t>(len) - 1] = 102;
    s.segment_ids.assign(static_cast<size_t>(len), 0);
    if (len > 3) {
      s.masked_lm_positions = {len - 2};
      s.masked_lm_ids = {1999};
    }
    s.next_sentence_label = static_cast<int8_t>(i % 2);
    v.push_back(s);
  }
  return v;
}
std::vector<int32_t> spread_lengths(int n) {
  std::vector<int32_t> l;
  for (int i = 0; i < n; ++i) l.push_back(3 + (i * 7919) % 510);
  return l;
}
}  // namespace

TEST_CASE("eval indexes follow int(i * N / count)") {
  CHECK(eval_indexes(10, 4) == std::vector<int64_t>{0, 2, 5, 7});
  const auto idx = eval_indexes(313'287, 10000);
  CHECK(idx.size() == 10000);
  CHECK(idx[1] == 31);         // int(313287 / 10000)
  CHECK(idx[9999] == 313255);  // int(9999 * 313287 / 10000) = int(313255.6713)
  CHECK(std::is_sorted(idx.begin(), idx.end()));
  CHECK_THROWS(eval_indexes(0, 10));
}

TEST_CASE("eval-set keeps exactly the picked records, across several input shards") {
  TempDir dir;
  const auto samples = traced_samples(std::vector<int32_t>(250, 20));
  write_shard(dir / "a.hdf5", Layout::kFixed, std::span<const Sample>(samples.data(), 100));
  write_shard(dir / "b.hdf5", Layout::kVarlen, std::span<const Sample>(samples.data() + 100, 150));
  const auto r =
      make_eval_set({dir / "a.hdf5", dir / "b.hdf5"}, dir / "eval.hdf5", Layout::kVarlen, 40, {});
  CHECK(r.source_samples == 250);
  const auto eval = read_shard(dir / "eval.hdf5", {});
  REQUIRE(eval.size() == 40);
  const auto idx = eval_indexes(250, 40);
  for (size_t i = 0; i < 40; ++i) CHECK(eval[i] == samples[static_cast<size_t>(idx[i])]);
}

TEST_CASE("stratify puts every sample in its length bin, shards balanced within one sample") {
  TempDir dir;
  const auto lengths = spread_lengths(1000);
  const auto samples = traced_samples(lengths);
  write_shard(dir / "in.hdf5", Layout::kVarlen, samples);
  StratifyOptions o;
  o.shards_per_bin = 3;
  const auto r = stratify({dir / "in.hdf5"}, dir / "out", o);
  REQUIRE(r.outputs.size() == 12);
  int64_t total = 0;
  std::multiset<int32_t> seen;
  for (size_t b = 0; b < 4; ++b) {
    const auto& shards = r.samples_per_shard[b];
    CHECK(*std::max_element(shards.begin(), shards.end()) -
              *std::min_element(shards.begin(), shards.end()) <=
          1);
    for (int32_t s = 0; s < 3; ++s) {
      const int32_t lo = b == 0 ? 1 : o.upper_bounds[b - 1] + 1, hi = o.upper_bounds[b];
      const auto part = read_shard(stratified_shard_path(dir / "out", lo, hi, s, 3), {});
      CHECK(static_cast<int64_t>(part.size()) == shards[static_cast<size_t>(s)]);
      for (const Sample& x : part) {
        CHECK(x.length() >= lo);
        CHECK(x.length() <= hi);
        seen.insert(x.input_ids[1]);
      }
      total += static_cast<int64_t>(part.size());
    }
  }
  CHECK(total == 1000);
  CHECK(seen.size() == 1000);
  CHECK(bin_of(128, o.upper_bounds) == 0);
  CHECK(bin_of(129, o.upper_bounds) == 1);
  CHECK(bin_of(512, o.upper_bounds) == 3);
  CHECK(bin_of(513, o.upper_bounds) == -1);
}

TEST_CASE("output shards are grouped in order within the memory budget, an oversized one alone") {
  using Groups = std::vector<std::pair<size_t, size_t>>;
  CHECK(shard_groups({}, 100).empty());
  CHECK(shard_groups({30, 30, 40, 10}, 100) == Groups{{0, 3}, {3, 4}});
  CHECK(shard_groups({30, 30, 40, 10}, 1000) == Groups{{0, 4}});
  CHECK(shard_groups({150, 20, 20, 150}, 100) == Groups{{0, 1}, {1, 3}, {3, 4}});
  CHECK(shard_groups({5, 5}, 1) == Groups{{0, 1}, {1, 2}});
  CHECK(held_bytes(0) == 256);
  CHECK(held_bytes(512) == 256 + 8 * 512);
}

TEST_CASE("stratify under a tiny memory budget writes the same shards, one group at a time") {
  TempDir dir;
  const auto samples = traced_samples(spread_lengths(400));
  write_shard(dir / "a.hdf5", Layout::kVarlen, std::span<const Sample>(samples.data(), 150));
  write_shard(dir / "b.hdf5", Layout::kFixed, std::span<const Sample>(samples.data() + 150, 250));
  StratifyOptions roomy;
  roomy.shards_per_bin = 2;
  StratifyOptions tight = roomy;
  tight.memory_budget_bytes = 1;  // every output shard is its own group
  const auto a = stratify({dir / "a.hdf5", dir / "b.hdf5"}, dir / "roomy", roomy);
  const auto b = stratify({dir / "a.hdf5", dir / "b.hdf5"}, dir / "tight", tight);
  REQUIRE(a.outputs.size() == b.outputs.size());
  REQUIRE(a.outputs.size() == 8);  // 4 bins x 2 shards, none empty
  CHECK(a.groups == 1);            // everything fits: every input read once
  CHECK(b.groups == 8);            // one output shard at a time
  CHECK(a.samples_per_shard == b.samples_per_shard);
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    CHECK(read_shard(a.outputs[i], {}) == read_shard(b.outputs[i], {}));
  }
}

TEST_CASE("packing plans use every sequence once, at most 3 per row, never over 512 tokens") {
  const auto lengths = spread_lengths(3000);
  const auto rows = plan_packing(lengths, 512, 3);
  std::vector<int> used(lengths.size(), 0);
  int64_t tokens = 0;
  for (const auto& row : rows) {
    CHECK(row.size() <= 3);
    int32_t len = 0;
    for (int64_t i : row) {
      ++used[static_cast<size_t>(i)];
      len += lengths[static_cast<size_t>(i)];
    }
    CHECK(len <= 512);
    tokens += len;
  }
  CHECK(std::all_of(used.begin(), used.end(), [](int u) { return u == 1; }));
  // Uniform lengths 3..512 average ~258: two per row at best, so rows ~ half the sequences.
  CHECK(static_cast<double>(rows.size()) < 0.6 * static_cast<double>(lengths.size()));
  CHECK(static_cast<double>(tokens) / (static_cast<double>(rows.size()) * 512) > 0.85);
}

TEST_CASE("pack writes packed shards that read back as the same sequences, with a report") {
  TempDir dir;
  std::vector<int32_t> lengths;
  for (int i = 0; i < 600; ++i) lengths.push_back(i % 3 == 0 ? 400 + i % 100 : 20 + i % 90);
  const auto samples = traced_samples(lengths);
  write_shard(dir / "in.hdf5", Layout::kVarlen, samples);
  PackingOptions o;
  o.shards = 2;
  const auto report = pack({dir / "in.hdf5"}, dir / "packed", o);
  CHECK(report.sequences == 600);
  CHECK(report.efficiency() > 0.8);  // each 400+ sequence needs its own row
  CHECK(report.padded_efficiency() < 0.5);
  CHECK_THAT(report.to_text(), Catch::Contains("efficiency"));
  std::map<int32_t, Sample> by_trace;
  int64_t rows = 0;
  for (const auto& path : report.outputs) {
    for (const PackedRow& row : read_packed_shard(path, {})) {
      ++rows;
      CHECK(row.samples.size() <= 3);
      CHECK(row.length() <= 512);
      for (const Sample& s : row.samples) by_trace[s.input_ids[1]] = s;
    }
  }
  CHECK(rows == report.rows);
  REQUIRE(by_trace.size() == 600);
  for (size_t i = 0; i < samples.size(); ++i) {
    CHECK(by_trace[samples[i].input_ids[1]] == samples[i]);
  }
}

TEST_CASE("pack under a tiny memory budget writes the same shards, one group at a time") {
  TempDir dir;
  const auto samples = traced_samples(spread_lengths(500));
  write_shard(dir / "a.hdf5", Layout::kVarlen, std::span<const Sample>(samples.data(), 200));
  write_shard(dir / "b.hdf5", Layout::kFixed, std::span<const Sample>(samples.data() + 200, 300));
  PackingOptions roomy;
  roomy.shards = 3;
  PackingOptions tight = roomy;
  tight.memory_budget_bytes = 1;  // every output shard is its own group
  const auto a = pack({dir / "a.hdf5", dir / "b.hdf5"}, dir / "roomy", roomy);
  const auto b = pack({dir / "a.hdf5", dir / "b.hdf5"}, dir / "tight", tight);
  REQUIRE(a.outputs.size() == 3);
  REQUIRE(b.outputs.size() == 3);
  CHECK(a.groups == 1);  // everything fits: every input read once
  CHECK(b.groups == 3);  // one output shard at a time
  CHECK(a.rows == b.rows);
  int64_t sequences = 0;
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const auto rows_a = read_packed_shard(a.outputs[i], {});
    const auto rows_b = read_packed_shard(b.outputs[i], {});
    REQUIRE(rows_a.size() == rows_b.size());
    for (size_t r = 0; r < rows_a.size(); ++r) {
      CHECK(rows_a[r].samples == rows_b[r].samples);
      sequences += static_cast<int64_t>(rows_a[r].samples.size());
    }
  }
  CHECK(sequences == 500);
}
