// One pretraining sequence as the training harness consumes it: unpadded, masked, with its NSP
// label. This is the record every HDF5 layout stores (fixed pads it, varlen stores it as is, packed
// puts up to three of them in one row).
#pragma once
#include <cstdint>
#include <vector>

namespace mlbert::data {

struct Sample {
  std::vector<int32_t> input_ids;            // [CLS] A [SEP] B [SEP], real length (<= 512)
  std::vector<int8_t> segment_ids;           // 0 for [CLS] A [SEP], 1 for B [SEP]; same length
  std::vector<int32_t> masked_lm_positions;  // ascending; only real predictions (position != 0)
  std::vector<int32_t> masked_lm_ids;        // original token id at each masked position
  // Reference convention (create_pretraining_data.py): 1 = B is a random segment
  // ("is_random_next"), 0 = B is the actual continuation.
  int8_t next_sentence_label = 0;

  int32_t length() const { return static_cast<int32_t>(input_ids.size()); }
  bool operator==(const Sample&) const = default;
};

// Up to three samples packed into one row of the packed layout (at most max_seq_length tokens).
struct PackedRow {
  std::vector<Sample> samples;
  int32_t length() const {
    int32_t n = 0;
    for (const Sample& s : samples) n += s.length();
    return n;
  }
};

}  // namespace mlbert::data
