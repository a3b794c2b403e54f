// The shard readers' decoding of a shard's columns (shard_rows.h), without HDF5: what a corrupt
// shard's columns come out as, each error naming the file, dataset and row.
#include <catch2/catch.hpp>

#include <array>
#include <limits>

#include "data_prep/shard_rows.h"
#include "test_util.h"

using namespace mlbert::data;
using mlbert::test::error_of;

namespace {
const std::filesystem::path kShard = "shard.hdf5";

VlenColumn column(const std::vector<std::vector<int32_t>>& rows) {
  VlenColumn c;
  c.offsets.push_back(0);
  for (const auto& row : rows) {
    c.values.insert(c.values.end(), row.begin(), row.end());
    c.offsets.push_back(c.values.size());
  }
  return c;
}
}  // namespace

TEST_CASE("fixed columns of width 0 decode to an error naming the row", "[shard_rows]") {
  // Found by fuzz_data_rows: the reader took the address of the first mask value of a row that has
  // none (UBSan: reference binding to null); a shard can hold an [N, 0] dataset.
  FixedColumns c;
  c.rows = 2;
  c.width = 0;
  c.predictions = 0;
  c.labels = {0, 1};
  CHECK(error_of([&] { decode_fixed_rows(c, kShard, 40, ReadOptions{}); }) ==
        "shard.hdf5: dataset 'input_ids' row 40: empty sequence");
  CHECK(mask_lengths(c.mask, c.rows, c.width) == std::vector<int32_t>{0, 0});
}

TEST_CASE("fixed columns: the mask gives the length, padding must be zero", "[shard_rows]") {
  FixedColumns c;
  c.rows = 1;
  c.width = 4;
  c.predictions = 2;
  c.ids = {5, 6, 7, 0};
  c.mask = {1, 1, 1, 0};
  c.segments = {0, 0, 1, 0};
  c.positions = {2, 0};
  c.masked_ids = {9, 0};
  c.labels = {1};
  const auto samples = decode_fixed_rows(c, kShard, 3, ReadOptions{});
  REQUIRE(samples.size() == 1);
  CHECK(samples[0].input_ids == std::vector<int32_t>{5, 6, 7});
  CHECK(samples[0].masked_lm_positions == std::vector<int32_t>{2});
  CHECK(samples[0].next_sentence_label == 1);
  CHECK(mask_lengths(c.mask, 1, 4) == std::vector<int32_t>{3});
  c.ids[3] = 8;
  CHECK(error_of([&] { decode_fixed_rows(c, kShard, 3, ReadOptions{}); }) ==
        "shard.hdf5: dataset 'input_ids' row 3: non-zero id in padding at column 3");
  ReadOptions narrow;
  narrow.format.max_seq_length = 3;
  CHECK(error_of([&] { decode_fixed_rows(c, kShard, 3, narrow); }) ==
        "shard.hdf5: dataset 'input_ids': width 4 > max_seq_length 3");
}

TEST_CASE("varlen columns: each row checked, errors name their row", "[shard_rows]") {
  std::array<VlenColumn, 4> c = {column({{5, 6, 7}, {8, 9}}), column({{0, 0, 1}, {0, 2}}),
                                 column({{1}, {}}), column({{11}, {}})};
  CHECK(error_of([&] {
          decode_varlen_rows(c, {0, 1}, kShard, 10, ReadOptions{});
        }) == "shard.hdf5: dataset 'segment_ids' row 11: segment id 2");
  c[1] = column({{0, 0, 1}, {0, 1}});
  const auto samples = decode_varlen_rows(c, {0, 1}, kShard, 10, ReadOptions{});
  REQUIRE(samples.size() == 2);
  CHECK(samples[1].input_ids == std::vector<int32_t>{8, 9});
  CHECK(vlen_lengths(c[0], false, kShard, 10) == std::vector<int32_t>{3, 2});
  // Columns that disagree with their own shapes are the caller's bug, not the file's.
  c[2].offsets.pop_back();
  CHECK_THROWS_AS(decode_varlen_rows(c, {0, 1}, kShard, 10, ReadOptions{}), std::logic_error);
}

TEST_CASE("packed columns: row-relative positions, lengths summed without overflow",
          "[shard_rows]") {
  const std::array<VlenColumn, 7> c = {column({{5, 6, 7, 8, 9, 10}}),
                                       column({{0, 1, 1, 0, 1, 1}}),
                                       column({{1, 4}}),
                                       column({{20, 21}}),
                                       column({{0, 1}}),
                                       column({{3, 3}}),
                                       column({{1, 1}})};
  const auto rows = decode_packed_rows(c, kShard, 0, ReadOptions{});
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].samples.size() == 2);
  CHECK(rows[0].samples[1].masked_lm_positions == std::vector<int32_t>{1});
  CHECK(vlen_lengths(c[5], true, kShard, 0) == std::vector<int32_t>{6});
  // A sum past int32 was signed overflow in std::accumulate; now an error naming the row.
  const VlenColumn huge = column({{1}, {std::numeric_limits<int32_t>::max(), 1}});
  CHECK(error_of([&] { vlen_lengths(huge, true, kShard, 5); }) ==
        "shard.hdf5: dataset 'packed_input_len' row 6: sequence length 1 does not add up to a "
        "row length");
  CHECK(error_of([&] {
          vlen_lengths(column({{4, -2}}), true, kShard, 0);
        }).find("row 0: sequence length -2") != std::string::npos);
}
