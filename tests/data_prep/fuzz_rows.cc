// libFuzzer target: the shard readers' own decoding (data_prep/shard_rows.h) on columns of any
// content, as HDF5 could hand them over from a corrupt or hostile shard, without HDF5 and without
// a file: fuzz_data_shard drives the same code end to end through the library and the reader
// process at tens of inputs a second; this one reaches the project's part at thousands.
//
// Input: byte 0 picks the layout (fixed, varlen, packed) and whether ids are checked against a
// vocabulary; bytes 1-3 the format's limits (small, so the limits are reachable); then the rows'
// shapes and values, read from the rest of the input one byte at a time (values as int8, ids as
// int16, so 0/1 masks and labels come up often and ids reach past a vocabulary; an exhausted
// input reads zeros). Promises: a decoder returns only samples valid for the format (or throws an
// error naming the file, the dataset and the row); the lengths read alone agree with the rows
// decoded.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "data_prep/shard_rows.h"
#include "tests/data_prep/sample_promises.h"

namespace {

namespace data = mlbert::data;
using data::FixedColumns;
using data::ReadOptions;
using data::Sample;
using data::VlenColumn;

const std::filesystem::path kPath = "fuzz.hdf5";

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  int32_t value() { return static_cast<int8_t>(byte()); }
  int32_t id() { return static_cast<int16_t>(static_cast<uint16_t>(byte() | (byte() << 8))); }

 private:
  const uint8_t* data_;
  size_t size_, at_ = 0;
};

VlenColumn vlen(Input& in, size_t rows, size_t max_len, bool ids) {
  VlenColumn c;
  c.offsets.push_back(0);
  for (size_t r = 0; r < rows; ++r) {
    const size_t len = in.byte() % (max_len + 1);
    for (size_t k = 0; k < len; ++k) c.values.push_back(ids ? in.id() : in.value());
    c.offsets.push_back(c.values.size());
  }
  return c;
}

void check_sample(const Sample& s, const ReadOptions& o, int32_t max_predictions) {
  mlbert::fuzz::check_sample_promises(s, o, max_predictions);
}

// Runs `decode`; an error must be a runtime_error naming the file and a dataset. Returns whether
// it succeeded.
template <typename F>
bool named_or_ok(F&& decode) {
  try {
    decode();
    return true;
  } catch (const std::logic_error&) {
    std::abort();  // the columns were consistent: a logic error is the decoder's bug
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind(kPath.string() + ": dataset '", 0) != 0) std::abort();
  }
  return false;
}

void fixed(Input& in, const ReadOptions& o) {
  FixedColumns c;
  c.rows = in.byte() % 6;
  c.width = in.byte() % (o.format.max_seq_length + 3);  // a little past the limit, sometimes
  c.predictions = in.byte() % (o.format.max_predictions_per_seq + 2);
  for (size_t i = 0; i < c.rows * c.width; ++i) {
    c.ids.push_back(in.id());
    c.mask.push_back(in.value());
    c.segments.push_back(in.value());
  }
  for (size_t i = 0; i < c.rows * c.predictions; ++i) {
    c.positions.push_back(in.value());
    c.masked_ids.push_back(in.id());
  }
  for (size_t r = 0; r < c.rows; ++r) c.labels.push_back(in.value());
  std::vector<Sample> samples;
  const bool ok = named_or_ok([&] { samples = data::decode_fixed_rows(c, kPath, 7, o); });
  std::vector<int32_t> lengths;
  named_or_ok([&] { lengths = data::mask_lengths(c.mask, c.rows, c.width); });
  if (!ok) return;
  if (samples.size() != c.rows || lengths.size() != c.rows) std::abort();
  for (size_t r = 0; r < c.rows; ++r) {
    check_sample(samples[r], o, static_cast<int32_t>(c.predictions));
    if (lengths[r] != samples[r].length()) std::abort();
  }
}

void varlen(Input& in, const ReadOptions& o) {
  const size_t rows = in.byte() % 6;
  const auto max_len = static_cast<size_t>(o.format.max_seq_length) + 2;
  std::array<VlenColumn, 4> c = {vlen(in, rows, max_len, true), vlen(in, rows, max_len, false),
                                 vlen(in, rows, max_len, false), vlen(in, rows, max_len, true)};
  std::vector<int32_t> labels;
  for (size_t r = 0; r < rows; ++r) labels.push_back(in.value());
  std::vector<Sample> samples;
  const bool ok = named_or_ok([&] { samples = data::decode_varlen_rows(c, labels, kPath, 7, o); });
  std::vector<int32_t> lengths;
  if (!named_or_ok([&] { lengths = data::vlen_lengths(c[0], false, kPath, 7); })) std::abort();
  if (lengths.size() != rows) std::abort();
  if (!ok) return;
  if (samples.size() != rows) std::abort();
  for (size_t r = 0; r < rows; ++r) {
    check_sample(samples[r], o, o.format.max_predictions_per_seq);
    if (lengths[r] != samples[r].length()) std::abort();
  }
}

void packed(Input& in, const ReadOptions& o) {
  const size_t rows = in.byte() % 5;
  const auto max_len = static_cast<size_t>(o.format.max_seq_length) + 2;
  const auto max_seqs = static_cast<size_t>(o.format.max_sequences_per_row) + 1;
  std::array<VlenColumn, 7> c = {vlen(in, rows, max_len, true),   vlen(in, rows, max_len, false),
                                 vlen(in, rows, max_len, false),  vlen(in, rows, max_len, true),
                                 vlen(in, rows, max_seqs, false), vlen(in, rows, max_seqs, false),
                                 vlen(in, rows, max_seqs, false)};
  std::vector<data::PackedRow> packed;
  const bool ok = named_or_ok([&] { packed = data::decode_packed_rows(c, kPath, 7, o); });
  std::vector<int32_t> lengths;
  const bool lengths_ok = named_or_ok([&] { lengths = data::vlen_lengths(c[5], true, kPath, 7); });
  if (!ok) return;
  if (packed.size() != rows || !lengths_ok || lengths.size() != rows) std::abort();
  for (size_t r = 0; r < rows; ++r) {
    const auto& row = packed[r];
    if (row.samples.empty() ||
        static_cast<int32_t>(row.samples.size()) > o.format.max_sequences_per_row ||
        row.length() > o.format.max_seq_length || lengths[r] != row.length())
      std::abort();
    for (const Sample& s : row.samples) check_sample(s, o, o.format.max_predictions_per_seq);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  Input in(bytes, size);
  const uint8_t mode = in.byte();
  ReadOptions o;
  o.vocab_size = (mode & 0x04) ? 100 : 0;
  o.format.max_seq_length = 1 + in.byte() % 24;
  o.format.max_predictions_per_seq = in.byte() % 6;
  o.format.max_sequences_per_row = 1 + in.byte() % 3;
  switch (mode % 3) {
    case 0:
      fixed(in, o);
      break;
    case 1:
      varlen(in, o);
      break;
    default:
      packed(in, o);
  }
  return 0;
}
