// The shard readers' own decoding: the integer columns HDF5 read out of a shard's datasets turned
// into samples, every row checked (hdf5_io.cc reads the columns, then calls these). Nothing here
// touches HDF5, so the project's part of reading a shard can be tested and fuzzed on columns of
// any content without a file (tests/data_prep/fuzz_rows.cc). Every error is a std::runtime_error
// naming the file, the dataset and the row.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data_prep/hdf5_io.h"
#include "data_prep/sample.h"

namespace mlbert::data {

// "<path>: dataset '<name>'", how every reader error starts.
std::string dataset_where(const std::filesystem::path& path, const char* dataset);

// A fixed-layout shard's rows wider than max_seq_length are refused before anything is read.
void check_fixed_width(size_t width, const std::filesystem::path& path, const ReadOptions& o);

// One variable-length dataset's rows: row r holds values[offsets[r] .. offsets[r + 1]).
struct VlenColumn {
  std::vector<int32_t> values;
  std::vector<size_t> offsets;  // rows + 1 entries, ascending, the last <= values.size()
};

// The fixed layout's rows [first_row, first_row + rows): input_ids, input_mask and segment_ids of
// rows x width values, masked_lm_positions and masked_lm_ids of rows x predictions,
// next_sentence_labels of rows.
struct FixedColumns {
  size_t rows = 0, width = 0, predictions = 0;
  std::vector<int32_t> ids, mask, segments, positions, masked_ids, labels;
};

// Each decoder checks that the columns have the sizes their shapes say (a logic error otherwise:
// the HDF5 side read them), then decodes and checks every row. `first_row` is the HDF5 row of the
// first one, for the errors.
std::vector<Sample> decode_fixed_rows(const FixedColumns& c, const std::filesystem::path& path,
                                      int64_t first_row, const ReadOptions& o);
// input_ids, segment_ids, masked_lm_positions, masked_lm_ids, then next_sentence_labels (one per
// row).
std::vector<Sample> decode_varlen_rows(const std::array<VlenColumn, 4>& c,
                                       const std::vector<int32_t>& labels,
                                       const std::filesystem::path& path, int64_t first_row,
                                       const ReadOptions& o);
// The packed layout's seven vlen datasets in the order input_ids, segment_ids,
// masked_lm_positions, masked_lm_ids, next_sentence_labels, packed_input_len,
// packed_masked_lm_len.
std::vector<PackedRow> decode_packed_rows(const std::array<VlenColumn, 7>& c,
                                          const std::filesystem::path& path, int64_t first_row,
                                          const ReadOptions& o);

// Sequence lengths without decoding the rows: the ones of each fixed row's input_mask; a varlen
// row's input_ids length; a packed row's packed_input_len summed (an error naming the row when a
// sum is not a length: negative, or past int32).
std::vector<int32_t> mask_lengths(const std::vector<int32_t>& mask, size_t rows, size_t width);
std::vector<int32_t> vlen_lengths(const VlenColumn& c, bool packed,
                                  const std::filesystem::path& path, int64_t first_row);

}  // namespace mlbert::data
