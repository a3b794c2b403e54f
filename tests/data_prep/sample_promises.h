// What every sample a shard reader returns must be (the fuzz targets' promise; a broken one
// aborts so libFuzzer reports it): a length in [1, max_seq_length], a 0/1 segment per token, ids
// inside the vocabulary when one is set, masked positions strictly increasing inside the sequence
// with one id each and at most `max_predictions` of them, a 0/1 next-sentence label.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "data_prep/hdf5_io.h"
#include "data_prep/sample.h"

namespace mlbert::fuzz {

inline void check_sample_promises(const data::Sample& s, const data::ReadOptions& o,
                                  int32_t max_predictions) {
  const auto id_ok = [&](int32_t id) {
    return id >= 0 && (o.vocab_size <= 0 || id < o.vocab_size);
  };
  const int32_t len = s.length();
  if (len < 1 || len > o.format.max_seq_length) std::abort();
  if (s.segment_ids.size() != s.input_ids.size()) std::abort();
  for (int8_t seg : s.segment_ids)
    if (seg != 0 && seg != 1) std::abort();
  for (int32_t id : s.input_ids)
    if (!id_ok(id)) std::abort();
  if (s.masked_lm_ids.size() != s.masked_lm_positions.size()) std::abort();
  if (static_cast<int32_t>(s.masked_lm_positions.size()) > max_predictions) std::abort();
  int32_t previous = 0;
  for (int32_t p : s.masked_lm_positions) {
    if (p <= previous || p >= len) std::abort();
    previous = p;
  }
  for (int32_t id : s.masked_lm_ids)
    if (!id_ok(id)) std::abort();
  if (s.next_sentence_label != 0 && s.next_sentence_label != 1) std::abort();
}

}  // namespace mlbert::fuzz
