// Batch: one training or eval micro-batch on UNPADDED tokens, as the model consumes it.
//
// Design choice: sequences are concatenated ([total_tokens]) and delimited by cu_seqlens; masked
// positions are flat token indices into that concatenation. Padded inputs (the fixed HDF5 format)
// are converted once, here, at the batch boundary; nothing past it ever sees a pad token.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "bert/config.h"

namespace mlbert::bert {

struct Batch {
  std::vector<int32_t> input_ids;      // [total_tokens]
  std::vector<int32_t> segment_ids;    // [total_tokens], token type 0/1
  std::vector<int32_t> position_ids;   // [total_tokens], index of the token within its sequence
  std::vector<int32_t> cu_seqlens{0};  // [num_sequences + 1], cu_seqlens[0] == 0
  int32_t max_seqlen = 0;
  std::vector<int32_t> masked_lm_positions;   // [num_masked], flat token indices, ascending per seq
  std::vector<int32_t> masked_lm_labels;      // [num_masked], vocab ids (never 0)
  std::vector<int32_t> next_sentence_labels;  // [num_sequences], 0 = is next, 1 = random

  size_t num_tokens() const { return input_ids.size(); }
  size_t num_sequences() const { return cu_seqlens.size() - 1; }
  size_t num_masked() const { return masked_lm_positions.size(); }
  // Indices of each sequence's first token (the pooler's [CLS] rows): cu_seqlens[0..S).
  std::span<const int32_t> first_tokens() const {
    return std::span<const int32_t>(cu_seqlens).first(num_sequences());
  }

  // Appends one sequence. masked_positions are indices within the sequence; entries whose label
  // is 0 are padding and are dropped (the MLPerf eval counts positions with label id != 0).
  void append_sequence(std::span<const int32_t> ids, std::span<const int32_t> segments,
                       std::span<const int32_t> masked_positions,
                       std::span<const int32_t> masked_labels, int32_t next_sentence_label);

  // Throws std::invalid_argument naming the field and index when anything is inconsistent or out
  // of range for `config` (ids >= vocab_size, segments >= type_vocab_size, sequence longer than
  // max_position_embeddings, empty sequence, masked position outside its sequence, NSP label not
  // 0/1, cu_seqlens not increasing, max_seqlen wrong).
  void validate(const BertConfig& config) const;
};

// Padded arrays as in the fixed HDF5 format: row-major [batch, seq_len] and [batch, max_pred].
// input_mask marks real tokens and must be a prefix of ones; masked entries with position 0 and
// label 0 are padding.
struct PaddedBatchView {
  int64_t batch = 0, seq_len = 0, max_predictions = 0;
  std::span<const int32_t> input_ids, input_mask, segment_ids;
  std::span<const int32_t> masked_lm_positions, masked_lm_ids;
  std::span<const int32_t> next_sentence_labels;
};
// Throws std::invalid_argument naming the field, row and column on malformed input.
Batch batch_from_padded(const PaddedBatchView& padded);

}  // namespace mlbert::bert
