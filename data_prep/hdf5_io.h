// The three HDF5 layouts of MLPerf BERT training data, with writers that never leave a half-written
// shard (temporary name + rename) and readers that validate everything they hand out.
//
// Datasets per file (names and on-disk dtypes as in NVIDIA's MLPerf BERT scripts):
//   fixed  : input_ids i32 [N,S], input_mask i8 [N,S], segment_ids i8 [N,S],
//            masked_lm_positions i32 [N,P], masked_lm_ids i32 [N,P], next_sentence_labels i8 [N];
//            zero padded (S = max_seq_length, P = max_predictions_per_seq).
//   varlen : input_ids vlen<i16> [N], segment_ids vlen<i8> [N], masked_lm_positions vlen<i16> [N],
//            masked_lm_ids vlen<i16> [N] (only positions != 0), next_sentence_labels i8 [N].
//   packed : input_ids vlen<i16>, segment_ids vlen<i8>, masked_lm_positions vlen<i16> (offset to
//   the
//            row), masked_lm_ids vlen<i16>, next_sentence_labels vlen<i8> (one per sequence),
//            packed_input_len vlen<i16>, packed_masked_lm_len vlen<i16>; all [N].
// Readers accept any integer dtype (the eval picker of the reference writes int16 fixed files) and
// convert to int32; the layout is detected from the datasets present.
//
// The readers hand the file to the HDF5 library in a separate process (shard_reader.h), because
// the library can crash or loop forever on a corrupt file: such a file then gives an error naming
// it, like any other bad shard, instead of taking the calling process (a training rank) down.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data_prep/sample.h"

namespace mlbert::data {

enum class Layout { kFixed, kVarlen, kPacked };
const char* layout_name(Layout layout);
Layout parse_layout(const std::string& name);  // "fixed", "varlen", "packed"

struct ShardFormat {
  int32_t max_seq_length = 512;
  int32_t max_predictions_per_seq = 76;  // per sequence (a packed row allows 3x this)
  int32_t max_sequences_per_row = 3;     // packed layout only
};

struct ReadOptions {
  int32_t vocab_size = 0;  // > 0: every id must be in [0, vocab_size)
  ShardFormat format;
};

struct ShardInfo {
  Layout layout;
  int64_t rows = 0;       // HDF5 rows (packed: rows of up to 3 sequences)
  int32_t row_width = 0;  // fixed: S of [N,S]; 0 otherwise
};

// Readers (in the shard reader process; errors name the file, dataset and row).
ShardInfo inspect_shard(const std::filesystem::path& path);

// One shard opened for many reads: the shard reader process keeps the file and its datasets open
// (shapes checked once) until this object goes, so a reader that visits rows all over many shards
// (the trainer) pays each HDF5 open once, and one request per read. Should the reader process die
// (a corrupt shard elsewhere), the next read reopens the shard in the new one.
class ShardReader {
 public:
  explicit ShardReader(const std::filesystem::path& path);  // opens it: the shapes are checked
  ~ShardReader();
  ShardReader(ShardReader&&) noexcept;
  ShardReader& operator=(ShardReader&&) noexcept;

  const std::filesystem::path& path() const { return path_; }
  Layout layout() const { return layout_; }
  int64_t rows() const { return rows_; }  // HDF5 rows
  // Rows [begin, begin + count) (for packed, the sequences of those rows).
  std::vector<Sample> read_range(int64_t begin, int64_t count, const ReadOptions& options);
  // Arbitrary rows (repeats allowed), returned in the order given, read in ascending runs.
  std::vector<Sample> read_rows(std::span<const int64_t> rows, const ReadOptions& options);
  std::vector<PackedRow> read_packed(const ReadOptions& options);  // every row of a packed shard

 private:
  void close() noexcept;
  std::filesystem::path path_;
  Layout layout_ = Layout::kFixed;
  int64_t rows_ = 0;
  uint64_t handle_ = 0;  // its name in the reader process; 0: moved from
};

// Every sequence of the shard; packed rows are split back into their sequences.
std::vector<Sample> read_shard(const std::filesystem::path& path, const ReadOptions& options);
// Rows [begin, begin + count) (fixed / varlen; for packed, the sequences of those rows).
std::vector<Sample> read_row_range(const std::filesystem::path& path, int64_t begin, int64_t count,
                                   const ReadOptions& options);
// Arbitrary rows (repeats allowed), returned in the order given; the file is opened once and rows
// are read in ascending runs.
std::vector<Sample> read_rows(const std::filesystem::path& path, std::span<const int64_t> rows,
                              const ReadOptions& options);
// Packed rows as rows.
std::vector<PackedRow> read_packed_shard(const std::filesystem::path& path,
                                         const ReadOptions& options);
// Real token count of every row, reading only what that needs (fixed: input_mask; varlen:
// input_ids; packed: packed_input_len, summed per row).
std::vector<int32_t> read_lengths(const std::filesystem::path& path);

// Collects rows; commit() builds the HDF5 image in memory, writes it to `<path>.tmp-<pid>-<id>`,
// fsyncs and renames it to `path`. Destroyed without commit(), or failing in commit(), it leaves
// nothing behind.
class ShardWriter {
 public:
  ShardWriter(std::filesystem::path path, Layout layout, ShardFormat format = {});
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  void add(Sample sample);         // fixed, varlen
  void add(const PackedRow& row);  // packed
  void commit();
  int64_t rows() const { return static_cast<int64_t>(row_sizes_.size()); }
  const std::filesystem::path& path() const { return path_; }

 private:
  void check(const Sample& sample, const char* what) const;
  void write_datasets(int64_t file) const;  // file: an HDF5 hid_t
  std::filesystem::path path_;
  Layout layout_;
  ShardFormat format_;
  std::vector<Sample> samples_;
  std::vector<uint8_t> row_sizes_;  // sequences per row (1 except for the packed layout)
  bool committed_ = false;
};

// Writes `samples` as one shard (convenience over ShardWriter).
void write_shard(const std::filesystem::path& path, Layout layout, std::span<const Sample> samples,
                 ShardFormat format = {});

}  // namespace mlbert::data
