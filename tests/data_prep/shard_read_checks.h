// What the shard fuzz targets check of a shard read through every entry point of the readers
// (inspect_shard, read_lengths, read_shard, read_packed_shard, read_rows, read_row_range): each
// error names the file, each sample keeps its promises (sample_promises.h), read_lengths agrees
// with the rows, rows read alone agree with the whole shard, rows past the end are refused. A
// broken promise aborts, so libFuzzer reports the input. `Api` is the set of readers: hdf5_io.h's
// (through the shard reader process) or hdf5_direct.h's (in the calling process).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "data_prep/hdf5_io.h"
#include "tests/data_prep/sample_promises.h"

namespace mlbert::fuzz {

namespace data = mlbert::data;
using data::Layout;
using data::ReadOptions;
using data::Sample;

struct Reads {
  std::optional<data::ShardInfo> info;
  std::optional<std::vector<int32_t>> lengths;
  std::optional<std::vector<Sample>> samples, picked, past_end;
  std::optional<std::vector<data::PackedRow>> packed;
  bool hdf5_failed = false;  // the reader process crashed or timed out
};

template <typename Api>
Reads read_all(const std::filesystem::path& path, const ReadOptions& o) {
  Reads r;
  auto attempt = [&](auto& slot, auto&& f) {
    if (r.hdf5_failed) return;  // it would fail again, one timeout later
    try {
      slot = f();
    } catch (const std::exception& e) {
      const std::string what = e.what();
      if (what.find(path.string()) == std::string::npos) std::abort();  // errors name the file
      if (what.find("HDF5 crashed") != std::string::npos ||
          what.find("HDF5 did not finish") != std::string::npos)
        r.hdf5_failed = true;
    }
  };
  attempt(r.info, [&] { return Api::inspect(path); });
  attempt(r.lengths, [&] { return Api::lengths(path); });
  attempt(r.samples, [&] { return Api::shard(path, o); });
  attempt(r.packed, [&] { return Api::packed(path, o); });
  if (r.info && r.info->rows > 0) {
    // The last row, the first, and the last again (a repeat), in that order.
    const std::vector<int64_t> rows = {r.info->rows - 1, 0, r.info->rows - 1};
    attempt(r.picked, [&] { return Api::rows(path, rows, o); });
  }
  if (r.info) attempt(r.past_end, [&] { return Api::range(path, r.info->rows, 1, o); });
  return r;
}

inline bool same_info(const std::optional<data::ShardInfo>& a,
                      const std::optional<data::ShardInfo>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || (a->layout == b->layout && a->rows == b->rows && a->row_width == b->row_width);
}

template <typename T>
bool same(const std::optional<std::vector<T>>& a, const std::optional<std::vector<T>>& b) {
  return a.has_value() == b.has_value() && (!a || *a == *b);
}

// A row read alone and the same row of the whole shard agree. A varlen row is compared up to its
// variable-length values: for an element whose stored length exceeds its global-heap object,
// HDF5 1.10 fills the rest from a conversion buffer holding what the same read converted before
// (a campaign found the last row reading the first row's masked ids when the whole shard was read,
// zeros when read alone). Every length, the NSP label and a fixed-layout row must agree exactly.
inline bool same_row(const Sample& a, const Sample& b, Layout layout) {
  if (layout != Layout::kVarlen) return a == b;
  return a.input_ids.size() == b.input_ids.size() && a.segment_ids.size() == b.segment_ids.size() &&
         a.masked_lm_positions.size() == b.masked_lm_positions.size() &&
         a.masked_lm_ids.size() == b.masked_lm_ids.size() &&
         a.next_sentence_label == b.next_sentence_label;
}

inline bool same_packed(const std::optional<std::vector<data::PackedRow>>& a,
                        const std::optional<std::vector<data::PackedRow>>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  if (a->size() != b->size()) return false;
  for (size_t i = 0; i < a->size(); ++i)
    if ((*a)[i].samples != (*b)[i].samples) return false;
  return true;
}

inline void check_sample(const Sample& s, const ReadOptions& o) {
  check_sample_promises(s, o, o.format.max_predictions_per_seq);
}

inline void check_promises(const Reads& r, const ReadOptions& o) {
  if (r.samples) {
    if (!r.info) std::abort();  // read_shard inspects the shard first
    for (const Sample& s : *r.samples) check_sample(s, o);
  }
  if (r.packed) {
    if (!r.info || r.info->layout != Layout::kPacked) std::abort();
    if (static_cast<int64_t>(r.packed->size()) != r.info->rows) std::abort();
    for (const auto& row : *r.packed) {
      if (row.samples.empty() ||
          static_cast<int32_t>(row.samples.size()) > o.format.max_sequences_per_row ||
          row.length() > o.format.max_seq_length)
        std::abort();
      for (const Sample& s : row.samples) check_sample(s, o);
    }
  }
  // Lengths read alone must match the lengths of the rows read whole.
  if (r.lengths && r.samples && r.info->layout != Layout::kPacked) {
    if (r.lengths->size() != r.samples->size()) std::abort();
    for (size_t i = 0; i < r.samples->size(); ++i)
      if ((*r.lengths)[i] != (*r.samples)[i].length()) std::abort();
  }
  if (r.lengths && r.packed) {
    if (r.lengths->size() != r.packed->size()) std::abort();
    for (size_t i = 0; i < r.packed->size(); ++i)
      if ((*r.lengths)[i] != (*r.packed)[i].length()) std::abort();
  }
  if (r.picked) {
    for (const Sample& s : *r.picked) check_sample(s, o);
    if (r.samples && r.info->layout != Layout::kPacked) {
      const auto& all = *r.samples;
      const auto& p = *r.picked;
      const auto agree = [&](const Sample& a, const Sample& b) {
        return same_row(a, b, r.info->layout);
      };
      if (p.size() != 3 || !agree(p[0], all.back()) || !agree(p[1], all.front()) ||
          !agree(p[2], all.back()) || !agree(p[0], p[2]))
        std::abort();
    }
  }
  if (r.past_end) std::abort();  // rows past the end are an error, never a read
}

}  // namespace mlbert::fuzz
