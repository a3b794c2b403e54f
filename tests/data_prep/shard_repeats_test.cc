// Shard repeats (data_prep/shard_repeats.h) on real HDF5 shards: a byte copy, the same samples'
// lengths written again with other tokens, and the chance agreements that must not count.
#include <catch2/catch.hpp>

#include <filesystem>

#include "data_prep/hdf5_io.h"
#include "data_prep/length_index.h"
#include "data_prep/shard_repeats.h"
#include "test_util.h"

using namespace mlbert::data;
using mlbert::test::TempDir;
namespace fs = std::filesystem;

namespace {

// `rows` samples of lengths 20..59 in turn; `salt` changes every token but not the lengths.
std::vector<Sample> samples(int rows, int salt, int first_length = 20) {
  std::vector<Sample> out;
  for (int r = 0; r < rows; ++r) {
    Sample s;
    const int length = first_length + r % 40;
    for (int i = 0; i < length; ++i) {
      s.input_ids.push_back(i == 0 ? 101 : i == length - 1 ? 102 : 1000 + (salt * 31 + r + i) % 900);
      s.segment_ids.push_back(i < length / 2 ? 0 : 1);
    }
    s.masked_lm_positions.push_back(1);
    s.masked_lm_ids.push_back(2000 + salt);
    s.next_sentence_label = static_cast<int8_t>(r % 2);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

TEST_CASE("a byte copy of a shard and the same lengths rewritten are repeats, other shards not",
          "[data][repeats]") {
  TempDir dir;
  write_shard(dir / "part_0.hdf5", Layout::kVarlen, samples(80, 0));
  fs::copy_file(dir / "part_0.hdf5", dir / "part_1.hdf5");                // the v2.1#10 bug
  write_shard(dir / "part_2.hdf5", Layout::kVarlen, samples(80, 7));      // same lengths
  write_shard(dir / "part_3.hdf5", Layout::kVarlen, samples(80, 0, 21));  // other lengths
  const auto repeats = find_shard_repeats(build_length_index(dir.path()));
  REQUIRE(repeats.size() == 2);
  CHECK(repeats[0].shards == std::vector<std::string>{"part_0.hdf5", "part_1.hdf5"});
  CHECK(repeats[0].same_bytes);
  CHECK(repeats[0].rows == 80);
  CHECK(repeats[1].shards == std::vector<std::string>{"part_0.hdf5", "part_2.hdf5"});
  CHECK_FALSE(repeats[1].same_bytes);
}

TEST_CASE("shards of different data, few rows or one length agree by chance and are no repeat",
          "[data][repeats]") {
  TempDir dir;
  write_shard(dir / "a.hdf5", Layout::kVarlen, samples(80, 1));
  write_shard(dir / "b.hdf5", Layout::kVarlen, samples(80, 2, 25));
  write_shard(dir / "c.hdf5", Layout::kVarlen, samples(10, 3));  // 10 rows: below the minimum
  write_shard(dir / "d.hdf5", Layout::kVarlen, samples(10, 4));
  std::vector<Sample> full_a = samples(80, 5), full_b = samples(80, 6);
  for (auto* set : {&full_a, &full_b})  // every row 60 tokens long: one distinct length
    for (Sample& s : *set) {
      s.input_ids.resize(60, 1500);
      s.segment_ids.resize(60, 1);
    }
  write_shard(dir / "e.hdf5", Layout::kVarlen, full_a);
  write_shard(dir / "f.hdf5", Layout::kVarlen, full_b);
  CHECK(find_shard_repeats(build_length_index(dir.path())).empty());
}
