// Samplers: an epoch is a random permutation (each sample once), global batches are contiguous
// slices of it, and stratified batches hold their per-bin quotas.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "harness/data/sampler.h"

using namespace mlbert::harness;

namespace {

// One stream over `shards` shards of `rows` rows each.
SampleStream uniform_stream(int first_shard, int shards, std::int64_t rows) {
  SampleStream stream;
  for (int s = 0; s < shards; ++s) stream.add(first_shard + s, 0, rows);
  return stream;
}

}  // namespace

TEST_CASE("the keyed permutation is a bijection of 0..n-1 for any n", "[sampler]") {
  for (std::uint64_t n : {1ULL, 2ULL, 3ULL, 17ULL, 1000ULL, 4097ULL, 65536ULL}) {
    for (std::uint64_t key : {0ULL, 1ULL, 0xdeadbeefULL}) {
      const RandomPermutation p(n, key);
      std::vector<bool> seen(n, false);
      for (std::uint64_t i = 0; i < n; ++i) {
        const auto v = p(i);
        REQUIRE(v < n);
        REQUIRE_FALSE(seen[v]);
        seen[v] = true;
      }
    }
  }
}

TEST_CASE("different keys give different orders, not the identity", "[sampler]") {
  const RandomPermutation a(10000, 1), b(10000, 2);
  int same = 0, fixed = 0;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    same += a(i) == b(i);
    fixed += a(i) == i;
  }
  CHECK(same < 50);
  CHECK(fixed < 50);
}

TEST_CASE("a stream maps indices to shard rows across merged ranges", "[sampler]") {
  SampleStream stream;
  stream.add(0, 0, 3);
  stream.add(0, 3, 2);  // merges with the previous range
  stream.add(2, 10, 4);
  CHECK(stream.size() == 9);
  CHECK(stream.at(0) == SampleRef{0, 0});
  CHECK(stream.at(4) == SampleRef{0, 4});
  CHECK(stream.at(5) == SampleRef{2, 10});
  CHECK(stream.at(8) == SampleRef{2, 13});
  CHECK_THROWS_AS(stream.at(9), std::out_of_range);
}

TEST_CASE("random sampler: every sample exactly once per epoch over all ranks", "[sampler]") {
  const int world = 4, batch = 8;
  const Sampler sampler({uniform_stream(0, 5, 64)}, {batch}, world, 42);  // 320 samples
  REQUIRE(sampler.micro_steps_per_epoch() == 10);                         // 320 / 32
  std::set<SampleRef> seen;
  for (std::int64_t m = 0; m < sampler.micro_steps_per_epoch(); ++m)
    for (int r = 0; r < world; ++r)
      for (const auto& s : sampler.batch(r, m)) CHECK(seen.insert(s).second);
  CHECK(seen.size() == 320);
  // The next epoch is a different order of the same samples.
  std::set<SampleRef> next;
  int same_position = 0;
  for (std::int64_t m = 0; m < 10; ++m)
    for (int r = 0; r < world; ++r) {
      const auto first = sampler.batch(r, m);
      const auto second = sampler.batch(r, m + 10);
      for (int i = 0; i < batch; ++i) {
        next.insert(second[i]);
        same_position += first[i] == second[i];
      }
    }
  CHECK(next == seen);
  CHECK(same_position < 10);
}

TEST_CASE("random sampler: a world's micro-step is the single rank's consecutive micro-steps",
          "[sampler]") {
  // So a run on W ranks sees the same global batches as one rank accumulating W micro-batches.
  const int batch = 4;
  for (int world : {2, 4}) {
    const Sampler many({uniform_stream(0, 3, 32)}, {batch}, world, 7);
    const Sampler one({uniform_stream(0, 3, 32)}, {batch}, 1, 7);
    for (std::int64_t m = 0; m < 2 * many.micro_steps_per_epoch(); ++m)
      for (int r = 0; r < world; ++r) CHECK(many.batch(r, m) == one.batch(0, m * world + r));
  }
}

TEST_CASE("the seed changes the order", "[sampler]") {
  const Sampler a({uniform_stream(0, 2, 100)}, {10}, 2, 1);
  const Sampler b({uniform_stream(0, 2, 100)}, {10}, 2, 2);
  CHECK(a.batch(0, 0) != b.batch(0, 0));
  CHECK(a.batch(1, 3) == Sampler({uniform_stream(0, 2, 100)}, {10}, 2, 1).batch(1, 3));
}

TEST_CASE("stratified batches hold their per-bin quotas on every rank and step", "[sampler]") {
  // Bin b lives in shards [10b, 10b + 2): the shard says which bin a sample came from.
  const std::vector<int> quotas = {6, 3, 2, 5};
  std::vector<SampleStream> bins;
  const std::vector<std::int64_t> rows_per_shard = {300, 150, 100, 250};
  for (int b = 0; b < 4; ++b) bins.push_back(uniform_stream(10 * b, 2, rows_per_shard[b]));
  const int world = 8;
  const Sampler sampler(bins, quotas, world, 3);
  CHECK(sampler.per_rank_batch() == 16);
  CHECK(sampler.micro_steps_per_epoch() == 600 / (8 * 6));  // bin 0 runs out first: 12
  std::set<SampleRef> seen;
  for (std::int64_t m = 0; m < sampler.micro_steps_per_epoch(); ++m) {
    for (int r = 0; r < world; ++r) {
      const auto samples = sampler.batch(r, m);
      REQUIRE(samples.size() == 16);
      std::map<int, int> per_bin;
      for (const auto& s : samples) {
        ++per_bin[s.shard / 10];
        CHECK(seen.insert(s).second);
      }
      CHECK(per_bin[0] == 6);
      CHECK(per_bin[1] == 3);
      CHECK(per_bin[2] == 2);
      CHECK(per_bin[3] == 5);
    }
  }
}

TEST_CASE("a stream too small for one micro-step is an error naming it", "[sampler][errors]") {
  std::vector<SampleStream> bins = {uniform_stream(0, 1, 100), uniform_stream(1, 1, 10)};
  CHECK_THROWS_WITH(Sampler(bins, {4, 2}, 8, 0),
                    Catch::Contains("stream 1 has 10 samples but one micro-step needs 16"));
  CHECK_THROWS_WITH(Sampler(bins, {4}, 8, 0), Catch::Contains("1 quotas for 2 sample streams"));
}

TEST_CASE("map evaluates the permutation several indices at a time, exactly as one by one",
          "[sampler]") {
  for (std::uint64_t n : {1ULL, 5ULL, 1000ULL, 65537ULL, 156726829ULL}) {
    const RandomPermutation p(n, 0x5eed + n);
    for (std::uint64_t count : {1ULL, 7ULL, 8ULL, 9ULL, 1000ULL}) {
      if (count > n) continue;
      const std::uint64_t first = n - count - (n - count) / 3;
      std::vector<std::uint64_t> out(count, ~0ULL);
      p.map(first, count, out.data());
      INFO("n " << n << ", [" << first << ", " << first + count << ")");
      for (std::uint64_t i = 0; i < count; ++i) REQUIRE(out[i] == p(first + i));
    }
  }
  const RandomPermutation p(10, 1);
  std::vector<std::uint64_t> out(4);
  CHECK_THROWS_AS(p.map(7, 4, out.data()), std::out_of_range);
}

TEST_CASE("a stream's bucket table finds the same rows as a search over every range", "[sampler]") {
  std::mt19937_64 rng(6);
  SampleStream stream;
  for (int s = 0; s < 500; ++s) {  // ranges of 1 to 3,000 rows, some adjacent (they merge)
    const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % (s % 7 == 0 ? 3000 : 40));
    stream.add(s / 3, (s % 3) * 5000, rows);
  }
  SampleStream indexed = stream;
  indexed.build_lookup();
  for (std::int64_t i = 0; i < stream.size(); ++i) REQUIRE(indexed.at(i) == stream.at(i));
  CHECK_THROWS_AS(indexed.at(stream.size()), std::out_of_range);
  indexed.add(999, 0, 5);  // adding drops the table; lookups stay right
  CHECK(indexed.at(stream.size() + 4) == SampleRef{999, 4});
}

TEST_CASE("the tabulated permutation maps exactly as the computed one, past 2^32 without tables",
          "[sampler]") {
  for (std::uint64_t n : {1ULL, 5ULL, 1000ULL, 65537ULL, 156726829ULL, (1ULL << 32) + 3}) {
    const RandomPermutation p(n, 0xfeed + n);
    TabulatedPermutation tabulated(p);
    CHECK(tabulated.tabulated() == (n <= (1ULL << 32)));
    for (std::uint64_t count : {1ULL, 9ULL, 1000ULL, 16384ULL}) {
      if (count > n) continue;
      // Twice from the same object: its buffers carry nothing from one call to the next.
      for (std::uint64_t first : {n - count, (n - count) / 3}) {
        std::vector<std::uint64_t> out(count, ~0ULL), expected(count);
        p.map(first, count, expected.data());
        tabulated.map(first, count, out.data());
        INFO("n " << n << ", [" << first << ", " << first + count << ")");
        REQUIRE(out == expected);
      }
    }
  }
  TabulatedPermutation small(RandomPermutation(10, 1));
  std::vector<std::uint64_t> out(4);
  CHECK_THROWS_AS(small.map(7, 4, out.data()), std::out_of_range);
}

TEST_CASE("a stream over the concatenated shards finds each row's place, whole shards merged",
          "[sampler]") {
  const std::vector<std::int64_t> first_row = {0, 100, 150, 400};  // shards of 100, 50, 250 rows
  SampleStream whole;  // shards 0, 1, 2 whole: one run of the concatenation
  for (std::int32_t s = 0; s < 3; ++s) whole.add(s, 0, first_row[s + 1] - first_row[s]);
  CHECK(whole.range_count() == 3);
  CHECK(whole.in_concatenation(first_row).range_count() == 1);
  SampleStream mixed;  // rows out of shard order, some adjacent in a shard (those merge)
  mixed.add(2, 10, 5);
  mixed.add(0, 99, 1);
  mixed.add(1, 0, 50);
  mixed.add(2, 0, 3);
  mixed.add(2, 3, 4);
  for (const SampleStream* stream : {&whole, &mixed}) {
    const SampleStream concatenated = stream->in_concatenation(first_row);
    REQUIRE(concatenated.size() == stream->size());
    for (std::int64_t i = 0; i < stream->size(); ++i) {
      const SampleRef ref = stream->at(i);
      REQUIRE(concatenated.at(i) == SampleRef{0, first_row[ref.shard] + ref.row});
    }
  }
  // Shard 0's last row, shard 1 and shard 2's first rows meet: places 160..164, then 99..156.
  CHECK(mixed.range_count() == 4);
  CHECK(mixed.in_concatenation(first_row).range_count() == 2);
  SampleStream outside;
  outside.add(1, 40, 20);  // shard 1 has 50 rows
  CHECK_THROWS_WITH(outside.in_concatenation(first_row),
                    Catch::Contains("rows 40..59 of shard 1 are outside the data set"));
  SampleStream unknown;
  unknown.add(3, 0, 1);
  CHECK_THROWS_WITH(unknown.in_concatenation(first_row),
                    Catch::Contains("of shard 3 are outside the data set"));
}

TEST_CASE("a kept world draw is every rank's batch, step after step and across epochs",
          "[sampler]") {
  std::vector<SampleStream> bins = {uniform_stream(0, 3, 50), uniform_stream(5, 1, 7),
                                    uniform_stream(8, 2, 40)};
  const Sampler sampler(bins, {3, 0, 2}, 4, 11);  // 150 / 12 and 80 / 8: 10 steps per epoch
  REQUIRE(sampler.micro_steps_per_epoch() == 10);
  WorldDraw draw;
  for (std::int64_t m : {0, 1, 9, 10, 11, 25, 3}) {
    INFO("micro-step " << m);
    sampler.draw_world(m, draw);
    CHECK(draw.epoch == m / 10);
    for (int r = 0; r < sampler.world(); ++r) {
      std::vector<SampleRef> drawn;
      std::size_t offset = 0;
      for (std::size_t s = 0; s < bins.size(); ++s) {
        const auto quota = static_cast<std::size_t>(sampler.quotas()[s]);
        REQUIRE(draw.indices[s].size() == quota * 4);
        for (std::size_t j = 0; j < quota; ++j)
          drawn.push_back(sampler.streams()[s].at(
              static_cast<std::int64_t>(draw.indices[s][static_cast<std::size_t>(r) * quota + j])));
        offset += quota;
      }
      CHECK(drawn == sampler.batch(r, m));
    }
  }
}
