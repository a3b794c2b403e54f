// The shard spec of fuzz_data_shard_built (tests/data_prep/shard_spec.h): a spec describing a real
// shard builds a file the readers read exactly as the shard, and any bytes build a well-formed
// file, so the target fuzzes the readers on contents, never on a broken spec.
#include <hdf5.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "data_prep/hdf5_io.h"
#include "test_util.h"
#include "tests/data_prep/shard_spec.h"

using namespace mlbert::data;
using mlbert::test::make_sample;
using mlbert::test::TempDir;
namespace fuzz = mlbert::fuzz;

namespace {

fuzz::ShardSpec round_trip(const fuzz::ShardSpec& spec) {
  const auto bytes = fuzz::encode_spec(spec);
  return fuzz::parse_spec(bytes.data(), bytes.size());
}

}  // namespace

TEST_CASE("a shard spec describes a real shard: the file built from it reads as the shard") {
  TempDir dir;
  std::vector<Sample> samples;
  for (int i = 0; i < 12; ++i) samples.push_back(make_sample(i, 3 + (i * 37) % 500));
  ReadOptions o;
  o.vocab_size = 30522;
  for (Layout layout : {Layout::kFixed, Layout::kVarlen, Layout::kPacked}) {
    const auto shard = dir / (std::string(layout_name(layout)) + ".hdf5");
    std::vector<PackedRow> rows;
    if (layout == Layout::kPacked) {
      for (size_t i = 0; i < samples.size();) {
        PackedRow r;
        while (i < samples.size() && r.samples.size() < 3 &&
               r.length() + samples[i].length() <= 512)
          r.samples.push_back(samples[i++]);
        rows.push_back(r);
      }
      ShardWriter w(shard, layout);
      for (const auto& r : rows) w.add(r);
      w.commit();
    } else {
      write_shard(shard, layout, samples);
    }
    const fuzz::ShardSpec spec = round_trip(fuzz::describe_shard(shard, o));
    CHECK(spec.read_options().vocab_size == 30522);
    CHECK(spec.read_options().format.max_seq_length == o.format.max_seq_length);
    const auto built = dir / (std::string(layout_name(layout)) + "-built.hdf5");
    fuzz::build_shard(spec, built);
    CHECK(inspect_shard(built).layout == layout);
    CHECK(read_shard(built, o) == samples);
    CHECK(read_lengths(built) == read_lengths(shard));
    if (layout == Layout::kPacked) {
      const auto back = read_packed_shard(built, o);
      REQUIRE(back.size() == rows.size());
      for (size_t i = 0; i < rows.size(); ++i) CHECK(back[i].samples == rows[i].samples);
    }
  }
}

TEST_CASE("a shard spec of any bytes builds a well-formed HDF5 file") {
  TempDir dir;
  std::mt19937 rng(20261204);
  const auto path = dir / "any.hdf5";
  int with_datasets = 0;
  for (int round = 0; round < 200; ++round) {
    std::vector<uint8_t> bytes(rng() % 400);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    // Small counts and dims, so that most datasets are within the spec's size bound.
    if (!bytes.empty()) bytes[0] = static_cast<uint8_t>(1 + round % 9);
    const fuzz::ShardSpec spec = fuzz::parse_spec(bytes.data(), bytes.size());
    REQUIRE_NOTHROW(fuzz::build_shard(spec, path));
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(f >= 0);
    H5G_info_t info{};
    REQUIRE(H5Gget_info(f, &info) >= 0);
    if (info.nlinks > 0) ++with_datasets;
    H5Fclose(f);
    // A spec encodes back to bytes that parse to the same datasets.
    const auto again = round_trip(spec);
    REQUIRE(again.datasets.size() == spec.datasets.size());
    for (size_t i = 0; i < spec.datasets.size(); ++i) {
      CHECK(again.datasets[i].dims == spec.datasets[i].dims);
      CHECK(again.datasets[i].runs == spec.datasets[i].runs);
    }
  }
  CHECK(with_datasets > 20);  // random bytes do describe datasets, not only empty files
}

TEST_CASE("the spec mutator's changes stay specs: they encode, parse back alike and build") {
  TempDir dir;
  std::vector<Sample> samples;
  for (int i = 0; i < 4; ++i) samples.push_back(make_sample(i, 5 + 40 * i));
  const auto shard = dir / "varlen.hdf5";
  write_shard(shard, Layout::kVarlen, samples);
  ReadOptions o;
  o.vocab_size = 30522;
  const fuzz::ShardSpec seed = fuzz::describe_shard(shard, o);
  std::minstd_rand rng(7);
  int changed = 0;
  for (int round = 0; round < 300; ++round) {
    fuzz::ShardSpec spec = seed;
    for (int k = 0; k < 1 + round % 4; ++k) fuzz::mutate_spec(spec, rng);
    const auto bytes = fuzz::encode_spec(spec);
    if (bytes != fuzz::encode_spec(seed)) ++changed;
    const auto again = round_trip(spec);
    REQUIRE(fuzz::encode_spec(again) == bytes);
    REQUIRE_NOTHROW(fuzz::build_shard(spec, dir / "mutated.hdf5"));
  }
  CHECK(changed > 250);  // nearly every round changes the spec
}
