// The length index: what it records, the atomic write, a reader that refuses any damaged or
// malformed file with the file named, the sampled content hash, and the writers (prep, stratify,
// pack) that leave an index of their output behind.
#include <xxhash.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <random>

#include "data_prep/hdf5_io.h"
#include "data_prep/length_index.h"
#include "data_prep/packing.h"
#include "data_prep/prep_pipeline.h"
#include "data_prep/stratify.h"
#include "test_util.h"

using namespace mlbert::data;
using mlbert::test::error_of;
using mlbert::test::TempDir;
namespace fs = std::filesystem;

namespace {

Sample sample_of_length(int id, int length) {
  Sample s;
  for (int i = 0; i < length; ++i) {
    s.input_ids.push_back(i == 0 ? 101 : i == length - 1 ? 102 : 1000 + (id * 7 + i) % 5000);
    s.segment_ids.push_back(i < length / 2 ? 0 : 1);
  }
  if (length > 2) {
    s.masked_lm_positions.push_back(1);
    s.masked_lm_ids.push_back(2000 + id % 100);
  }
  s.next_sentence_label = static_cast<int8_t>(id % 2);
  return s;
}

std::vector<Sample> samples_of_lengths(const std::vector<int>& lengths, int first_id = 0) {
  std::vector<Sample> samples;
  for (std::size_t i = 0; i < lengths.size(); ++i)
    samples.push_back(sample_of_length(first_id + static_cast<int>(i), lengths[i]));
  return samples;
}

std::vector<std::byte> file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(raw.size());
  std::memcpy(bytes.data(), raw.data(), raw.size());
  return bytes;
}

// Recomputes the trailing checksum, so a test can hand the reader a file whose only fault is
// the one it planted.
void reseal(std::vector<std::byte>& bytes) {
  const uint64_t sum = XXH3_64bits(bytes.data(), bytes.size() - 8);
  for (int i = 0; i < 8; ++i)
    bytes[bytes.size() - 8 + i] = static_cast<std::byte>((sum >> (8 * i)) & 0xff);
}

// A two-shard data set (one in a subdirectory) with its index built in memory.
struct SmallSet {
  TempDir dir;
  std::vector<int> a_lengths = {5, 17, 9, 30}, b_lengths = {12, 3, 40};
  SmallSet() {
    fs::create_directories(dir / "sub");
    write_shard(dir / "a.hdf5", Layout::kVarlen, samples_of_lengths(a_lengths));
    write_shard(dir / "sub" / "b.hdf5", Layout::kFixed, samples_of_lengths(b_lengths, 100),
                ShardFormat{64, 8, 3});
  }
};

}  // namespace

TEST_CASE("the length index records every shard's path, size, rows and row lengths") {
  SmallSet set;
  const LengthIndex index = build_length_index(set.dir.path());
  REQUIRE(index.shards.size() == 2);
  CHECK(index.shards[0].path == "a.hdf5");
  CHECK(index.shards[1].path == "sub/b.hdf5");
  CHECK(index.shards[0].layout == Layout::kVarlen);
  CHECK(index.shards[1].layout == Layout::kFixed);
  CHECK(index.shards[0].rows == 4);
  CHECK(index.shards[1].rows == 3);
  CHECK(index.shards[1].first_row == 4);
  CHECK(index.shards[0].file_bytes == fs::file_size(set.dir / "a.hdf5"));
  CHECK(index.shards[1].content_hash == shard_content_hash(set.dir / "sub" / "b.hdf5"));
  CHECK(index.shards[0].content_hash != index.shards[1].content_hash);
  const auto a = index.lengths_of(0), b = index.lengths_of(1);
  CHECK(std::vector<int>(a.begin(), a.end()) == set.a_lengths);
  CHECK(std::vector<int>(b.begin(), b.end()) == set.b_lengths);

  const fs::path file = index_shards(set.dir.path());
  CHECK(file == set.dir / "lengths.index");
  const LengthIndex back = read_length_index(file);
  REQUIRE(back.shards.size() == 2);
  for (std::size_t s = 0; s < 2; ++s) {
    CHECK(back.shards[s].path == index.shards[s].path);
    CHECK(back.shards[s].layout == index.shards[s].layout);
    CHECK(back.shards[s].file_bytes == index.shards[s].file_bytes);
    CHECK(back.shards[s].rows == index.shards[s].rows);
    CHECK(back.shards[s].content_hash == index.shards[s].content_hash);
    CHECK(back.shards[s].first_row == index.shards[s].first_row);
  }
  CHECK(back.lengths == index.lengths);
  CHECK(length_index_path(set.dir / "a.hdf5") == set.dir / "a.hdf5.lengths.index");
}

TEST_CASE("the index is replaced atomically: no temporary file, a failed write keeps the old one") {
  SmallSet set;
  const fs::path file = index_shards(set.dir.path());
  const auto before = file_bytes(file);
  index_shards(set.dir.path());  // replaces it
  CHECK(set.dir.files() == std::vector<std::string>{"a.hdf5", "lengths.index", "sub/b.hdf5"});
  CHECK(file_bytes(file) == before);

  LengthIndex unstorable = build_length_index(set.dir.path());
  unstorable.shards[0].path = "../elsewhere.hdf5";
  CHECK_THAT(error_of([&] { write_length_index(unstorable, file); }),
             Catch::Contains("cannot be stored"));
  CHECK(file_bytes(file) == before);
  CHECK_THAT(error_of([&] {
               write_length_index(build_length_index(set.dir.path()),
                                  set.dir / "no_such_dir" / "lengths.index");
             }),
             Catch::Contains("no_such_dir/lengths.index: cannot create"));
  CHECK(set.dir.files() == std::vector<std::string>{"a.hdf5", "lengths.index", "sub/b.hdf5"});
}

TEST_CASE("the index reader refuses every truncation and every flipped byte, naming the file") {
  SmallSet set;
  const auto bytes = serialize_length_index(build_length_index(set.dir.path()));
  CHECK(parse_length_index(bytes, "ok.index").lengths.size() == 7);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    const std::string message = error_of(
        [&] { parse_length_index(std::span<const std::byte>(bytes.data(), n), "cut.index"); });
    CHECK_THAT(message, Catch::StartsWith("cut.index: "));
  }
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    INFO("byte " << i << " flipped");
    auto damaged = bytes;
    damaged[i] ^= std::byte{0x40};
    CHECK_THAT(error_of([&] { parse_length_index(damaged, "flip.index"); }),
               Catch::StartsWith("flip.index: "));
  }
  auto longer = bytes;
  longer.push_back(std::byte{0});
  CHECK_THAT(error_of([&] { parse_length_index(longer, "long.index"); }),
             Catch::Contains("bytes after the shard entries"));
}

TEST_CASE("the index reader names each malformed field even under a valid checksum") {
  SmallSet set;
  const auto good = serialize_length_index(build_length_index(set.dir.path()));
  // Header: magic 8, version 4, shard count 4, rows 8, hash block bytes 4, blocks 4 = 32 bytes;
  // the first entry's path ("a.hdf5", 6 bytes) starts at 34, its layout byte is at 40.
  auto planted = [&](auto edit) {
    auto bytes = good;
    edit(bytes);
    reseal(bytes);
    return error_of([&] { parse_length_index(bytes, "x.index"); });
  };
  CHECK_THAT(planted([](auto& b) { b[0] = std::byte{'X'}; }), Catch::Contains("bad magic"));
  CHECK_THAT(planted([](auto& b) { b[8] = std::byte{2}; }),
             Catch::Contains("length index version 2"));
  CHECK_THAT(planted([](auto& b) { b[25] = std::byte{0}; }),
             Catch::Contains("content hash over 32 blocks of"));
  CHECK_THAT(planted([](auto& b) { b[12] = std::byte{0}; }), Catch::Contains("lists no shards"));
  CHECK_THAT(planted([](auto& b) { b[13] = std::byte{0x7f}; }), Catch::Contains("cannot fit"));
  CHECK_THAT(planted([](auto& b) { std::memcpy(&b[34], "../a.h", 6); }),
             Catch::Contains("shard entry 0: path \"../a.h\" has a '..' component"));
  CHECK_THAT(planted([](auto& b) { b[34] = std::byte{'/'}; }), Catch::Contains("is absolute"));
  CHECK_THAT(planted([](auto& b) { std::memcpy(&b[34], "a//b.h", 6); }),
             Catch::Contains("has an empty component"));
  CHECK_THAT(planted([](auto& b) { b[36] = std::byte{0}; }), Catch::Contains("NUL byte"));
  CHECK_THAT(planted([](auto& b) { b[40] = std::byte{7}; }),
             Catch::Contains("shard entry 0 (a.hdf5): layout code 7"));
  CHECK_THAT(planted([](auto& b) { b[16] = std::byte{8}; }),
             Catch::Contains("the shards hold 7 rows, the header says 8"));
  // The first row length follows the two entries; a zero length is impossible.
  const std::size_t first_length = good.size() - 8 - 7 * 2;
  CHECK_THAT(planted([&](auto& b) { b[first_length] = b[first_length + 1] = std::byte{0}; }),
             Catch::Contains("shard a.hdf5 row 0: length 0"));
  CHECK_THAT(error_of([&] { read_length_index(set.dir / "none.index"); }),
             Catch::Contains("none.index: missing"));
}

TEST_CASE("the content hash sees the size, every sampled block, and all of a small file") {
  TempDir dir;
  std::mt19937_64 rng(5);
  std::vector<char> data(1 << 20);
  for (char& c : data) c = static_cast<char>(rng());
  auto write = [&](const std::vector<char>& bytes) {
    std::ofstream(dir / "f.bin", std::ios::binary).write(bytes.data(), bytes.size());
    return shard_content_hash(dir / "f.bin");
  };
  const uint64_t base = write(data);
  CHECK(write(data) == base);
  // Block k of 32 starts at k * (size - 4096) / 31; bytes at the start of a few blocks.
  for (uint64_t k : {0, 1, 17, 31}) {
    auto changed = data;
    changed[k * (data.size() - 4096) / 31 + 100] ^= 1;
    CHECK(write(changed) != base);
  }
  auto longer = data;
  longer.push_back(0);
  CHECK(write(longer) != base);
  // Between two sampled blocks a change goes unseen: the trainer's per-row length check covers
  // what the index is used for.
  auto between = data;
  between[(data.size() - 4096) / 31 + 4096 + 10] ^= 1;
  CHECK(write(between) == base);
  // A file of at most 32 x 4 KiB is hashed whole.
  std::vector<char> small(100000);
  for (char& c : small) c = static_cast<char>(rng());
  const uint64_t small_base = write(small);
  small[50000] ^= 1;
  CHECK(write(small) != small_base);
}

TEST_CASE("prep, stratify and pack leave the length index of their output") {
  TempDir dir;
  mlbert::test::write_file(dir / "corpus.txt",
                           "the cat sat on the mat .\nthe dog ran far away .\n\n"
                           "a big red ball .\nthe cat ran .\nthe dog sat on a mat .\n\n"
                           "the red dog ran far .\na cat sat .\n");
  PrepOptions prep;
  prep.inputs = {dir / "corpus.txt"};
  prep.output = dir / "prep";
  prep.pretraining.max_seq_length = 16;
  prep.pretraining.max_predictions_per_seq = 3;
  prep.pretraining.dupe_factor = 3;
  prep.progress = 0;
  run_prep(prep, mlbert::test::tiny_vocab());
  auto check_index_of = [](const fs::path& out) {
    INFO(out);
    const LengthIndex index = read_length_index(out / "lengths.index");
    const auto shards = find_shards(out);
    REQUIRE(index.shards.size() == shards.size());
    for (std::size_t s = 0; s < shards.size(); ++s) {
      CHECK(index.shards[s].path == indexed_path(out, shards[s]));
      CHECK(index.shards[s].content_hash == shard_content_hash(shards[s]));
      const auto lengths = index.lengths_of(s);
      const auto on_disk = read_lengths(shards[s]);
      CHECK(std::vector<int32_t>(lengths.begin(), lengths.end()) == on_disk);
    }
    return index.lengths.size();
  };
  const std::size_t rows = check_index_of(dir / "prep");
  CHECK(rows > 0);

  std::vector<Sample> mixed;
  for (int i = 0; i < 60; ++i) mixed.push_back(sample_of_length(i, 3 + (i * 53) % 500));
  write_shard(dir / "mixed.hdf5", Layout::kVarlen, mixed);
  StratifyOptions stratify_options;
  stratify_options.shards_per_bin = 2;
  stratify({dir / "mixed.hdf5"}, dir / "bins", stratify_options);
  CHECK(check_index_of(dir / "bins") == 60);

  PackingOptions pack_options;
  pack_options.shards = 3;
  const auto report = pack({dir / "mixed.hdf5"}, dir / "packed", pack_options);
  CHECK(check_index_of(dir / "packed") == static_cast<std::size_t>(report.rows));
}

TEST_CASE("a shard outside the index's directory or listed twice cannot be indexed") {
  SmallSet set;
  CHECK_THAT(error_of([&] {
               build_length_index(set.dir / "sub", std::vector<fs::path>{set.dir / "a.hdf5"});
             }),
             Catch::Contains("has a '..' component"));
  CHECK_THAT(error_of([&] {
               build_length_index(set.dir.path(),
                                  std::vector<fs::path>{set.dir / "a.hdf5", set.dir / "a.hdf5"});
             }),
             Catch::Contains("a.hdf5: given twice"));
  CHECK_THAT(error_of([&] { build_length_index(set.dir / "sub" / "none"); }),
             Catch::Contains("none: no such file or directory"));
}
