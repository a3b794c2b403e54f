// HDF5 layouts: round trips, partial reads, and readers that name file, dataset and row of a
// problem.
#include <hdf5.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "data_prep/hdf5_io.h"
#include "test_util.h"

using namespace mlbert::data;
using mlbert::test::error_of;
using mlbert::test::make_sample;
using mlbert::test::TempDir;

namespace {
std::vector<Sample> make_samples(int n) {
  std::vector<Sample> v;
  for (int i = 0; i < n; ++i) v.push_back(make_sample(i, 3 + (i * 37) % 500));
  return v;
}

// Writes a raw dataset with the given HDF5 file type and int32 data.
void raw_dataset(hid_t file, const char* name, hid_t type, std::vector<int32_t> data,
                 std::vector<hsize_t> dims) {
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t d = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
  H5Dclose(d);
  H5Sclose(space);
}

// A small fixed-layout file written directly with the HDF5 API (so tests can corrupt any part).
void write_raw_fixed(const std::filesystem::path& path, std::vector<int32_t> ids,
                     hid_t ids_type = H5T_STD_I16LE, std::vector<int32_t> mask = {1, 1, 1, 0}) {
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  raw_dataset(f, "input_ids", ids_type, ids, {1, 4});
  raw_dataset(f, "input_mask", H5T_STD_I8LE, mask, {1, 4});
  raw_dataset(f, "segment_ids", H5T_STD_I8LE, {0, 0, 1, 0}, {1, 4});
  raw_dataset(f, "masked_lm_positions", H5T_STD_I16LE, {1, 0}, {1, 2});
  raw_dataset(f, "masked_lm_ids", H5T_STD_I16LE, {7, 0}, {1, 2});
  raw_dataset(f, "next_sentence_labels", H5T_STD_I8LE, {1}, {1});
  H5Fclose(f);
}

}  // namespace

TEST_CASE("fixed and varlen shards round-trip every field") {
  TempDir dir;
  const auto samples = make_samples(50);
  for (Layout layout : {Layout::kFixed, Layout::kVarlen}) {
    const auto path = dir / (std::string(layout_name(layout)) + ".hdf5");
    write_shard(path, layout, samples);
    CHECK(inspect_shard(path).layout == layout);
    CHECK(inspect_shard(path).rows == 50);
    ReadOptions o;
    o.vocab_size = 30522;
    CHECK(read_shard(path, o) == samples);
    const auto lengths = read_lengths(path);
    REQUIRE(lengths.size() == 50);
    for (size_t i = 0; i < 50; ++i) CHECK(lengths[i] == samples[i].length());
    const auto part = read_row_range(path, 10, 5, o);
    CHECK(part == std::vector<Sample>(samples.begin() + 10, samples.begin() + 15));
    const std::vector<int64_t> rows = {3, 4, 5, 40, 2, 4, 49};
    const auto picked = read_rows(path, rows, o);
    REQUIRE(picked.size() == rows.size());
    for (size_t k = 0; k < rows.size(); ++k)
      CHECK(picked[k] == samples[static_cast<size_t>(rows[k])]);
    const std::vector<int64_t> beyond = {1, 50};
    CHECK_THROWS_WITH(read_rows(path, beyond, o), Catch::Contains("beyond the 50 rows"));
  }
}

TEST_CASE("packed rows keep per-sequence lengths and row-relative masked positions") {
  TempDir dir;
  const auto samples = make_samples(9);
  std::vector<PackedRow> rows;
  for (size_t i = 0; i < samples.size();) {
    PackedRow r;
    while (i < samples.size() && r.samples.size() < 3 && r.length() + samples[i].length() <= 512) {
      r.samples.push_back(samples[i++]);
    }
    rows.push_back(r);
  }
  const auto path = dir / "packed.hdf5";
  ShardWriter w(path, Layout::kPacked);
  for (const auto& r : rows) w.add(r);
  w.commit();
  const auto back = read_packed_shard(path, {});
  REQUIRE(back.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) CHECK(back[i].samples == rows[i].samples);
  CHECK(read_shard(path, {}) == samples);
  const auto lengths = read_lengths(path);
  CHECK(lengths[0] == rows[0].length());
  // The positions on disk, offset by the preceding sequences' lengths, are checked with h5py, an
  // independent reader, by tests/parity/data_packed_parity.py; here only their HDF5 type.
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "masked_lm_positions", H5P_DEFAULT);
  hid_t t = H5Dget_type(d);
  CHECK(H5Tget_class(t) == H5T_VLEN);
  H5Tclose(t);
  H5Dclose(d);
  H5Fclose(f);
}

TEST_CASE("a writer that is not committed leaves nothing, commit renames a complete file") {
  TempDir dir;
  {
    ShardWriter w(dir / "never.hdf5", Layout::kVarlen);
    w.add(make_sample(1, 10));
  }
  CHECK(dir.files().empty());
  CHECK_THROWS_WITH(write_shard(dir / "no/such/dir/x.hdf5", Layout::kVarlen, make_samples(2)),
                    Catch::Contains("no/such/dir/x.hdf5"));
  CHECK(dir.files().empty());
  write_shard(dir / "ok.hdf5", Layout::kVarlen, make_samples(2));
  CHECK(dir.files() == std::vector<std::string>{"ok.hdf5"});
}

TEST_CASE("writers refuse samples that the layouts cannot hold") {
  TempDir dir;
  ShardWriter w(dir / "x.hdf5", Layout::kFixed);
  Sample s = make_sample(1, 600);
  CHECK_THROWS_WITH(w.add(s), Catch::Contains("length 600"));
  s = make_sample(1, 10);
  s.input_ids[3] = 40000;
  CHECK_THROWS_WITH(w.add(s), Catch::Contains("int16"));
  s = make_sample(1, 10);
  s.masked_lm_positions.push_back(10);
  s.masked_lm_ids.push_back(5);
  CHECK_THROWS_WITH(w.add(s), Catch::Contains("masked position 10"));
}

TEST_CASE("readers name file, dataset and row for ids out of range") {
  TempDir dir;
  const auto path = dir / "shard.hdf5";
  write_raw_fixed(path, {101, 5000, 102, 0});
  ReadOptions o;
  o.vocab_size = 30522;
  CHECK(read_shard(path, o).size() == 1);
  o.vocab_size = 4000;
  const std::string big = error_of([&] { read_shard(path, o); });
  CHECK_THAT(big, Catch::Contains("shard.hdf5") && Catch::Contains("'input_ids'") &&
                      Catch::Contains("row 0") && Catch::Contains("5000 >= vocab size 4000"));
  write_raw_fixed(path, {101, -3, 102, 0});
  CHECK_THAT(error_of([&] { read_shard(path, {}); }),
             Catch::Contains("'input_ids' row 0") && Catch::Contains("negative token id -3"));
  write_raw_fixed(path, {101, 5, 102, 9});
  CHECK_THAT(error_of([&] { read_shard(path, {}); }), Catch::Contains("non-zero id in padding"));
  write_raw_fixed(path, {101, 5, 102, 0}, H5T_STD_I16LE, {1, 0, 1, 0});
  CHECK_THAT(error_of([&] { read_shard(path, {}); }), Catch::Contains("'input_mask' row 0"));
}

TEST_CASE("readers reject wrong dtypes, wrong shapes, missing datasets and truncated files") {
  TempDir dir;
  const auto path = dir / "shard.hdf5";
  write_raw_fixed(path, {101, 5, 102, 0}, H5T_IEEE_F32LE);
  CHECK_THAT(error_of([&] { read_shard(path, {}); }),
             Catch::Contains("'input_ids'") && Catch::Contains("integer"));

  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  raw_dataset(f, "input_ids", H5T_STD_I32LE, {101, 5, 102, 0, 101, 6, 102, 0}, {2, 4});
  raw_dataset(f, "input_mask", H5T_STD_I8LE, {1, 1, 1, 0}, {1, 4});
  H5Fclose(f);
  CHECK_THAT(error_of([&] { read_shard(path, {}); }), Catch::Contains("missing"));

  write_shard(path, Layout::kVarlen, make_samples(200));
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size / 2);
  CHECK_THAT(error_of([&] { read_shard(path, {}); }), Catch::Contains("shard.hdf5"));
  mlbert::test::write_file(path, "this is not HDF5");
  CHECK_THAT(error_of([&] { read_shard(path, {}); }), Catch::Contains("not an HDF5 file"));
  CHECK_THAT(error_of([&] { read_shard(dir / "absent.hdf5", {}); }),
             Catch::Contains("absent.hdf5") && Catch::Contains("no such"));
}

TEST_CASE("a dataset claiming more rows than the file stores is refused before the read") {
  // HDF5 reads never-written storage as fill values: a header alone can claim 10^12 rows.
  TempDir dir;
  const auto path = dir / "claims.hdf5";
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  for (const char* name :
       {"input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids"}) {
    const hsize_t dims[2] = {1000000000000, 16};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    H5Dclose(H5Dcreate2(f, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Sclose(space);
  }
  const hsize_t n = 1000000000000;
  hid_t space = H5Screate_simple(1, &n, nullptr);
  H5Dclose(H5Dcreate2(f, "next_sentence_labels", H5T_STD_I8LE, space, H5P_DEFAULT, H5P_DEFAULT,
                      H5P_DEFAULT));
  H5Sclose(space);
  H5Fclose(f);
  CHECK(inspect_shard(path).rows == 1000000000000);
  for (const auto& error :
       {error_of([&] { read_lengths(path); }), error_of([&] { read_shard(path, {}); }),
        error_of([&] { read_row_range(path, 5, 100000000, {}); })}) {
    CHECK_THAT(error, Catch::Contains("claims.hdf5: dataset '") &&
                          Catch::Contains("claims 1000000000000 rows but the file stores only 0"));
  }
}

TEST_CASE("rows of no tokens are refused with the file named, whatever row count they claim") {
  // Rows of width 0 store no bytes, so the stored size bounds no count of them: found by
  // fuzz_data_shard, a fixed shard's input_mask of [2^62 + 3, 0] made read_lengths ask for a
  // vector of 2^62 lengths ("cannot create std::vector larger than max_size()", no file named).
  TempDir dir;
  const auto path = dir / "empty_rows.hdf5";
  const hsize_t huge = (hsize_t{1} << 62) + 3;
  const auto zero_width = [&](hid_t f, const char* name) {
    const hsize_t dims[2] = {huge, 0};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    H5Dclose(H5Dcreate2(f, name, H5T_STD_I8LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Sclose(space);
  };
  // The fuzzer's file: a good shard of 1 row but for input_mask.
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  raw_dataset(f, "input_ids", H5T_STD_I16LE, {101, 5, 102, 0}, {1, 4});
  zero_width(f, "input_mask");
  raw_dataset(f, "segment_ids", H5T_STD_I8LE, {0, 0, 1, 0}, {1, 4});
  raw_dataset(f, "masked_lm_positions", H5T_STD_I16LE, {1, 0}, {1, 2});
  raw_dataset(f, "masked_lm_ids", H5T_STD_I16LE, {7, 0}, {1, 2});
  raw_dataset(f, "next_sentence_labels", H5T_STD_I8LE, {1}, {1});
  H5Fclose(f);
  for (const auto& error :
       {error_of([&] { read_lengths(path); }), error_of([&] { read_shard(path, {}); })}) {
    CHECK_THAT(error, Catch::Contains("empty_rows.hdf5") &&
                          Catch::Contains("input_mask/segment_ids must be [N, 4]"));
  }
  // Every 2-D dataset of width 0, all claiming the same rows.
  f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  for (const char* name :
       {"input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids"})
    zero_width(f, name);
  hid_t space = H5Screate_simple(1, &huge, nullptr);
  H5Dclose(H5Dcreate2(f, "next_sentence_labels", H5T_STD_I8LE, space, H5P_DEFAULT, H5P_DEFAULT,
                      H5P_DEFAULT));
  H5Sclose(space);
  H5Fclose(f);
  for (const auto& error :
       {error_of([&] { read_lengths(path); }), error_of([&] { read_shard(path, {}); }),
        error_of([&] { read_rows(path, std::vector<int64_t>{0}, {}); })}) {
    CHECK_THAT(error, Catch::Contains("empty_rows.hdf5: dataset 'input_ids'") &&
                          Catch::Contains("found [N, 0]"));
  }
}

TEST_CASE("readers check segment ids, labels and masked positions row by row") {
  TempDir dir;
  const auto path = dir / "v.hdf5";
  auto samples = make_samples(3);
  samples[2].next_sentence_label = 1;
  write_shard(path, Layout::kVarlen, samples);
  // Corrupt row 2's label in place through the HDF5 API.
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "next_sentence_labels", H5P_DEFAULT);
  const int32_t labels[3] = {0, 1, 7};
  H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels);
  H5Dclose(d);
  H5Fclose(f);
  CHECK_THAT(error_of([&] { read_shard(path, {}); }),
             Catch::Contains("'next_sentence_labels' row 2") && Catch::Contains("7"));
}

TEST_CASE("a fixed shard's rows are held to max_predictions_per_seq, not to the file's width") {
  TempDir dir;
  const auto path = dir / "f.hdf5";
  auto samples = make_samples(3);
  write_shard(path, Layout::kFixed, samples);  // masked columns of the default width, 76
  size_t most = 0;
  for (const auto& s : samples) most = std::max(most, s.masked_lm_positions.size());
  REQUIRE(most >= 2);
  ReadOptions o;
  o.format.max_predictions_per_seq = static_cast<int32_t>(most);
  CHECK(read_shard(path, o) == samples);
  o.format.max_predictions_per_seq = static_cast<int32_t>(most) - 1;
  CHECK_THAT(error_of([&] { read_shard(path, o); }),
             Catch::Contains(path.string()) && Catch::Contains("'masked_lm_positions' row") &&
                 Catch::Contains("predictions > " + std::to_string(most - 1)));
}
