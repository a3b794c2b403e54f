// Batch: building unpadded micro-batches, converting padded arrays, and validating them.
#include "bert/batch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace mlbert::bert {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("batch: " + what);
}

std::string at(const char* field, size_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

}  // namespace

void Batch::append_sequence(std::span<const int32_t> ids, std::span<const int32_t> segments,
                            std::span<const int32_t> masked_positions,
                            std::span<const int32_t> masked_labels, int32_t next_sentence_label) {
  const size_t seq = num_sequences();
  if (ids.empty()) fail("sequence " + std::to_string(seq) + " is empty");
  if (segments.size() != ids.size()) {
    fail("sequence " + std::to_string(seq) + ": segment_ids has " +
         std::to_string(segments.size()) + " entries for " + std::to_string(ids.size()) +
         " input_ids");
  }
  if (masked_positions.size() != masked_labels.size()) {
    fail("sequence " + std::to_string(seq) + ": " + std::to_string(masked_positions.size()) +
         " masked_lm_positions but " + std::to_string(masked_labels.size()) + " masked_lm_ids");
  }
  const int32_t start = cu_seqlens.back();
  const int32_t len = static_cast<int32_t>(ids.size());
  // Check everything before appending anything, so a failed call leaves the batch unchanged.
  for (size_t i = 0; i < masked_positions.size(); ++i) {
    if (masked_labels[i] == 0) continue;  // padding entry
    if (masked_positions[i] < 0 || masked_positions[i] >= len) {
      fail("sequence " + std::to_string(seq) + ": " + at("masked_lm_positions", i) + " = " +
           std::to_string(masked_positions[i]) + " is outside the sequence of length " +
           std::to_string(len));
    }
  }
  for (size_t i = 0; i < masked_positions.size(); ++i) {
    if (masked_labels[i] == 0) continue;
    masked_lm_positions.push_back(start + masked_positions[i]);
    masked_lm_labels.push_back(masked_labels[i]);
  }
  input_ids.insert(input_ids.end(), ids.begin(), ids.end());
  segment_ids.insert(segment_ids.end(), segments.begin(), segments.end());
  for (int32_t p = 0; p < len; ++p) position_ids.push_back(p);
  cu_seqlens.push_back(start + len);
  max_seqlen = std::max(max_seqlen, len);
  next_sentence_labels.push_back(next_sentence_label);
}

void Batch::validate(const BertConfig& config) const {
  if (cu_seqlens.empty() || cu_seqlens[0] != 0) fail("cu_seqlens must start with 0");
  const size_t tokens = input_ids.size();
  if (segment_ids.size() != tokens) fail("segment_ids and input_ids differ in length");
  if (position_ids.size() != tokens) fail("position_ids and input_ids differ in length");
  if (static_cast<size_t>(cu_seqlens.back()) != tokens) {
    fail("cu_seqlens ends at " + std::to_string(cu_seqlens.back()) + " but there are " +
         std::to_string(tokens) + " tokens");
  }
  if (next_sentence_labels.size() != num_sequences()) {
    fail("next_sentence_labels has " + std::to_string(next_sentence_labels.size()) +
         " entries for " + std::to_string(num_sequences()) + " sequences");
  }
  if (masked_lm_labels.size() != masked_lm_positions.size()) {
    fail("masked_lm_labels and masked_lm_positions differ in length");
  }
  int32_t longest = 0;
  for (size_t s = 0; s < num_sequences(); ++s) {
    const int32_t len = cu_seqlens[s + 1] - cu_seqlens[s];
    if (len <= 0) fail("sequence " + std::to_string(s) + " is empty (cu_seqlens not increasing)");
    if (len > config.max_position_embeddings) {
      fail("sequence " + std::to_string(s) + " has " + std::to_string(len) +
           " tokens, more than max_position_embeddings " +
           std::to_string(config.max_position_embeddings));
    }
    longest = std::max(longest, len);
    for (int32_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t) {
      if (position_ids[t] < 0 || position_ids[t] >= config.max_position_embeddings) {
        fail(at("position_ids", t) + " = " + std::to_string(position_ids[t]) + " is out of range");
      }
    }
    if (next_sentence_labels[s] != 0 && next_sentence_labels[s] != 1) {
      fail(at("next_sentence_labels", s) + " = " + std::to_string(next_sentence_labels[s]) +
           " is not 0 or 1");
    }
  }
  if (longest != max_seqlen) {
    fail("max_seqlen is " + std::to_string(max_seqlen) + " but the longest sequence has " +
         std::to_string(longest) + " tokens");
  }
  for (size_t t = 0; t < tokens; ++t) {
    if (input_ids[t] < 0 || input_ids[t] >= config.vocab_size) {
      fail(at("input_ids", t) + " = " + std::to_string(input_ids[t]) + " is outside [0, " +
           std::to_string(config.vocab_size) + ")");
    }
    if (segment_ids[t] < 0 || segment_ids[t] >= config.type_vocab_size) {
      fail(at("segment_ids", t) + " = " + std::to_string(segment_ids[t]) + " is outside [0, " +
           std::to_string(config.type_vocab_size) + ")");
    }
  }
  for (size_t i = 0; i < masked_lm_positions.size(); ++i) {
    if (masked_lm_positions[i] < 0 || static_cast<size_t>(masked_lm_positions[i]) >= tokens) {
      fail(at("masked_lm_positions", i) + " = " + std::to_string(masked_lm_positions[i]) +
           " is outside the batch's " + std::to_string(tokens) + " tokens");
    }
    if (masked_lm_labels[i] <= 0 || masked_lm_labels[i] >= config.vocab_size) {
      fail(at("masked_lm_labels", i) + " = " + std::to_string(masked_lm_labels[i]) +
           " is outside [1, " + std::to_string(config.vocab_size) + ")");
    }
  }
}

Batch batch_from_padded(const PaddedBatchView& padded) {
  const int64_t b = padded.batch, l = padded.seq_len, m = padded.max_predictions;
  if (b < 0 || l <= 0 || m < 0) fail("padded batch dimensions must be batch >= 0, seq_len > 0");
  auto need = [](std::span<const int32_t> s, int64_t n, const char* field) {
    if (static_cast<int64_t>(s.size()) != n) {
      fail(std::string(field) + " has " + std::to_string(s.size()) + " entries, expected " +
           std::to_string(n));
    }
  };
  need(padded.input_ids, b * l, "input_ids");
  need(padded.input_mask, b * l, "input_mask");
  need(padded.segment_ids, b * l, "segment_ids");
  need(padded.masked_lm_positions, b * m, "masked_lm_positions");
  need(padded.masked_lm_ids, b * m, "masked_lm_ids");
  need(padded.next_sentence_labels, b, "next_sentence_labels");
  Batch batch;
  std::vector<int32_t> positions, labels;
  for (int64_t r = 0; r < b; ++r) {
    const int32_t* mask = padded.input_mask.data() + r * l;
    int64_t len = 0;
    while (len < l && mask[len] != 0) ++len;
    for (int64_t c = len; c < l; ++c) {
      if (mask[c] != 0) {
        fail("row " + std::to_string(r) + ": input_mask is not a prefix of ones (column " +
             std::to_string(c) + ")");
      }
    }
    if (len == 0) fail("row " + std::to_string(r) + ": input_mask has no real token");
    positions.clear();
    labels.clear();
    for (int64_t i = 0; i < m; ++i) {
      const int32_t pos = padded.masked_lm_positions[r * m + i];
      const int32_t id = padded.masked_lm_ids[r * m + i];
      if (pos == 0 && id == 0) continue;  // padding
      if (pos < 0 || pos >= len) {
        fail("row " + std::to_string(r) + ": masked_lm_positions[" + std::to_string(i) + "] = " +
             std::to_string(pos) + " is outside the row's " + std::to_string(len) + " real tokens");
      }
      positions.push_back(pos);
      labels.push_back(id);
    }
    batch.append_sequence(padded.input_ids.subspan(r * l, len),
                          padded.segment_ids.subspan(r * l, len), positions, labels,
                          padded.next_sentence_labels[r]);
  }
  return batch;
}

}  // namespace mlbert::bert
