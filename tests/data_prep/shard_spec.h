// A byte format describing an HDF5 shard by its datasets, for the fuzz target that builds valid
// HDF5 files of any content (fuzz_shard_built.cc) and for its seeds, which describe real shards
// (make_fuzz_seeds). Every byte string describes some file: missing bytes read as zeros, counts
// and sizes are taken modulo their bounds, a dataset HDF5 refuses to create is left out.
//
//   u8 datasets; per dataset:
//     u8 name (kSpecNames), u8 type (kSpecTypes), u8 flags (bit 0: variable-length elements of
//     the type; bits 1-2: 0 contiguous, 1 chunked, 2 chunked + deflate), u8 rank (0-3),
//     rank x u32 dims; vlen only: u16 count, then count x u16 element lengths (cycled);
//     i64 bias, u16 runs, then runs x (i16 value, u8 repeat - 1): the values are bias + value,
//     cycled over the elements (values are two bytes each, so that one mutated byte is one
//     changed value; the bias reaches the extremes).
//   then the read options: u8 (bit 0: a vocabulary of 30,522 ids), u8 max_seq_length choice,
//   u8 max_predictions_per_seq choice, u8 max_sequences_per_row choice.
#pragma once

#include <hdf5.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "data_prep/hdf5_io.h"

// The spec's own code is the fuzz target's harness, not what it fuzzes: no coverage feedback from
// it (it would also cost a traced comparison per value written).
#if defined(__clang__)
#define MLBERT_SPEC_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define MLBERT_SPEC_NO_COVERAGE
#endif

namespace mlbert::fuzz {

inline constexpr std::array<const char*, 10> kSpecNames = {
    "input_ids",        "input_mask",
    "segment_ids",      "masked_lm_positions",
    "masked_lm_ids",    "next_sentence_labels",
    "packed_input_len", "packed_masked_lm_len",
    "input_ids_",       "lengths"};

// File types a shard's dataset may have; the last is a fixed-size string.
inline hid_t spec_type(uint8_t index) {
  const hid_t types[] = {H5T_STD_I8LE,  H5T_STD_U8LE,  H5T_STD_I16LE,  H5T_STD_U16LE,
                         H5T_STD_I32LE, H5T_STD_U32LE, H5T_STD_I64LE,  H5T_STD_U64LE,
                         H5T_STD_I16BE, H5T_STD_I32BE, H5T_IEEE_F32LE, H5T_IEEE_F64LE,
                         H5T_STD_I64BE, H5T_STD_U32BE, H5T_IEEE_F32BE, H5T_C_S1};
  return types[index % std::size(types)];
}
inline constexpr int kSpecTypeCount = 16;
inline constexpr uint64_t kSpecMaxElements = 1 << 16;  // per dataset, values of vlen elements too

struct DatasetSpec {
  uint8_t name = 0, type = 0, flags = 0;
  std::vector<uint64_t> dims;
  std::vector<uint16_t> lengths;  // vlen element lengths, cycled
  int64_t bias = 0;
  std::vector<std::pair<int16_t, uint8_t>> runs;  // (value - bias, repeat - 1), cycled
};

// The read options a spec chooses from (its last four bytes).
inline constexpr std::array<int32_t, 4> kSpecSeqLengths = {512, 128, 64, 1};
inline constexpr std::array<int32_t, 4> kSpecPredictions = {76, 20, 10, 0};
inline constexpr std::array<int32_t, 4> kSpecRowSequences = {3, 1, 2, 4};

struct ShardSpec {
  std::vector<DatasetSpec> datasets;
  uint8_t vocab = 1, seq_choice = 0, pred_choice = 0, rows_choice = 0;

  data::ReadOptions read_options() const {
    data::ReadOptions o;
    o.vocab_size = (vocab & 1) ? 30522 : 0;
    o.format.max_seq_length = kSpecSeqLengths[seq_choice % 4];
    o.format.max_predictions_per_seq = kSpecPredictions[pred_choice % 4];
    o.format.max_sequences_per_row = kSpecRowSequences[rows_choice % 4];
    return o;
  }
};

// Little-endian reads that give zeros past the end.
class SpecReader {
 public:
  SpecReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  T take() {
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i, ++at_)
      if (at_ < size_) v |= static_cast<uint64_t>(data_[at_]) << (8 * i);
    T out;
    std::memcpy(&out, &v, sizeof out);
    return out;
  }
  bool done() const { return at_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_, at_ = 0;
};

class SpecWriter {
 public:
  template <typename T>
  void put(T value) {
    uint64_t v = 0;
    std::memcpy(&v, &value, sizeof value);
    for (size_t i = 0; i < sizeof(T); ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

MLBERT_SPEC_NO_COVERAGE inline ShardSpec parse_spec(const uint8_t* data, size_t size) {
  SpecReader in(data, size);
  ShardSpec spec;
  const int n = in.take<uint8_t>() % 10;
  for (int i = 0; i < n && !in.done(); ++i) {
    DatasetSpec d;
    d.name = in.take<uint8_t>();
    d.type = in.take<uint8_t>();
    d.flags = in.take<uint8_t>();
    const int rank = in.take<uint8_t>() % 4;
    for (int r = 0; r < rank; ++r) d.dims.push_back(in.take<uint32_t>() % 100001);
    if (d.flags & 1) {
      const int count = in.take<uint16_t>() % 4097;
      for (int k = 0; k < count; ++k) d.lengths.push_back(in.take<uint16_t>() % 1025);
    }
    d.bias = in.take<int64_t>();
    const auto runs = in.take<uint16_t>();
    for (uint32_t k = 0; k < runs && !in.done(); ++k) {
      const auto value = in.take<int16_t>();
      d.runs.emplace_back(value, in.take<uint8_t>());
    }
    spec.datasets.push_back(std::move(d));
  }
  spec.vocab = in.take<uint8_t>();
  spec.seq_choice = in.take<uint8_t>();
  spec.pred_choice = in.take<uint8_t>();
  spec.rows_choice = in.take<uint8_t>();
  return spec;
}

inline std::vector<uint8_t> encode_spec(const ShardSpec& spec) {
  SpecWriter out;
  out.put<uint8_t>(static_cast<uint8_t>(spec.datasets.size()));
  for (const DatasetSpec& d : spec.datasets) {
    out.put(d.name);
    out.put(d.type);
    out.put(d.flags);
    out.put<uint8_t>(static_cast<uint8_t>(d.dims.size()));
    for (uint64_t dim : d.dims) out.put<uint32_t>(static_cast<uint32_t>(dim));
    if (d.flags & 1) {
      out.put<uint16_t>(static_cast<uint16_t>(d.lengths.size()));
      for (uint16_t len : d.lengths) out.put(len);
    }
    out.put(d.bias);
    out.put<uint16_t>(static_cast<uint16_t>(d.runs.size()));
    for (const auto& [value, repeat] : d.runs) {
      out.put(value);
      out.put(repeat);
    }
  }
  out.put(spec.vocab);
  out.put(spec.seq_choice);
  out.put(spec.pred_choice);
  out.put(spec.rows_choice);
  return out.bytes();
}

// One structure-aware change to a spec, for the target's custom mutator: a value, a repeat, a
// bias, an element length, a dimension, the rank, the type, the storage, the name or the read
// options, toward the values readers must tell apart (0, 1, 2, -1, the format's limits and the
// vocabulary's, their neighbours, the integer types' extremes), or a dataset added, removed or
// copied under another name. Byte-level mutation alone rarely turns one value of a valid shard
// into a bad one: most of its changes break the spec's framing (measured 2026-12-04: a reader
// accepting segment id 2 went unfound in 56,000 executions from the varlen seed).
template <typename Rng>
MLBERT_SPEC_NO_COVERAGE void mutate_spec(ShardSpec& spec, Rng& rng) {
  static constexpr int64_t kInteresting[] = {
      0,   1,   2,   -1,  3,   10,  11,  63,    64,    65,    75,    76,     77,    127,
      128, 129, 255, 256, 511, 512, 513, 30521, 30522, 30523, 32767, -32768, 65535, 65536};
  static constexpr int64_t kBiases[] = {
      0,        1, -1, 30522, 32768, 2147483647, -2147483648LL, 4294967296LL, INT64_MAX - 40000,
      INT64_MIN};
  const auto pick = [&](auto n) { return static_cast<size_t>(rng() % n); };
  const auto interesting = [&] { return kInteresting[pick(std::size(kInteresting))]; };
  if (spec.datasets.empty() || pick(16) == 0) {
    switch (pick(4)) {
      case 0:
        spec.vocab ^= 1;
        break;
      case 1:
        spec.seq_choice = static_cast<uint8_t>(pick(4));
        break;
      case 2:
        spec.pred_choice = static_cast<uint8_t>(pick(4));
        break;
      default:
        spec.rows_choice = static_cast<uint8_t>(pick(4));
        break;
    }
    if (spec.datasets.empty()) spec.datasets.emplace_back();
    return;
  }
  DatasetSpec& d = spec.datasets[pick(spec.datasets.size())];
  switch (pick(14)) {
    case 0:
    case 1:
    case 2:  // a value
      if (d.runs.empty()) d.runs.emplace_back(0, 0);
      {
        auto& run = d.runs[pick(d.runs.size())];
        const __int128 v = pick(3) == 0 ? run.first + (pick(2) ? 1 : -1)
                                        : static_cast<__int128>(interesting()) - d.bias;
        run.first = static_cast<int16_t>(std::clamp<__int128>(v, INT16_MIN, INT16_MAX));
      }
      break;
    case 3:  // a run split off or merged away
      if (!d.runs.empty() && pick(2)) {
        d.runs.erase(d.runs.begin() + static_cast<std::ptrdiff_t>(pick(d.runs.size())));
      } else if (d.runs.size() < 65535) {
        const size_t at = d.runs.empty() ? 0 : pick(d.runs.size() + 1);
        d.runs.insert(d.runs.begin() + static_cast<std::ptrdiff_t>(at),
                      {static_cast<int16_t>(interesting()), static_cast<uint8_t>(pick(4))});
      }
      break;
    case 4:  // a repeat
      if (!d.runs.empty()) {
        auto& run = d.runs[pick(d.runs.size())];
        run.second = static_cast<uint8_t>(pick(2) ? run.second + (pick(2) ? 1 : -1) : pick(256));
      }
      break;
    case 5:
      d.bias = kBiases[pick(std::size(kBiases))];
      break;
    case 6:  // an element length
      if (!(d.flags & 1)) d.flags |= 1;
      if (d.lengths.empty() || (pick(4) == 0 && d.lengths.size() < 4096))
        d.lengths.insert(
            d.lengths.begin() + static_cast<std::ptrdiff_t>(pick(d.lengths.size() + 1)),
            static_cast<uint16_t>(interesting() & 1023));
      else {
        auto& len = d.lengths[pick(d.lengths.size())];
        len = static_cast<uint16_t>((pick(2) ? len + (pick(2) ? 1 : 1023) : interesting()) & 1023);
      }
      break;
    case 7:
    case 8:  // a dimension
      if (d.dims.empty()) d.dims.push_back(1);
      {
        auto& dim = d.dims[pick(d.dims.size())];
        const int64_t v = pick(2) ? static_cast<int64_t>(dim) + (pick(2) ? 1 : -1) : interesting();
        dim = static_cast<uint64_t>(std::clamp<int64_t>(v, 0, 100000));
      }
      break;
    case 9:  // the rank
      if (!d.dims.empty() && pick(2))
        d.dims.erase(d.dims.begin() + static_cast<std::ptrdiff_t>(pick(d.dims.size())));
      else if (d.dims.size() < 3)
        d.dims.insert(d.dims.begin() + static_cast<std::ptrdiff_t>(pick(d.dims.size() + 1)),
                      pick(2) ? 1 : static_cast<uint64_t>(pick(600)));
      break;
    case 10:
      d.type = static_cast<uint8_t>(pick(kSpecTypeCount));
      break;
    case 11:
      d.flags = static_cast<uint8_t>(d.flags ^ (1u << pick(3)));
      break;
    case 12:
      d.name = static_cast<uint8_t>(pick(kSpecNames.size()));
      break;
    default:  // a dataset removed, or copied under another name
      if (pick(2) && spec.datasets.size() > 1) {
        spec.datasets.erase(spec.datasets.begin() +
                            static_cast<std::ptrdiff_t>(pick(spec.datasets.size())));
      } else if (spec.datasets.size() < 9) {
        DatasetSpec copy = d;
        copy.name = static_cast<uint8_t>(pick(kSpecNames.size()));
        spec.datasets.push_back(std::move(copy));
      }
      break;
  }
}

// The values of a dataset: the runs expanded and cycled (all zeros without runs).
class RunCycle {
 public:
  RunCycle(int64_t bias, const std::vector<std::pair<int16_t, uint8_t>>& runs)
      : bias_(bias), runs_(runs) {}
  MLBERT_SPEC_NO_COVERAGE int64_t next() {
    if (runs_.empty()) return bias_;
    // Wrapping, as the bias may be anything.
    const auto v =
        static_cast<int64_t>(static_cast<uint64_t>(bias_) +
                             static_cast<uint64_t>(static_cast<int64_t>(runs_[run_].first)));
    if (++used_ > runs_[run_].second) {
      used_ = 0;
      run_ = (run_ + 1) % runs_.size();
    }
    return v;
  }

 private:
  int64_t bias_;
  const std::vector<std::pair<int16_t, uint8_t>>& runs_;
  size_t run_ = 0;
  uint32_t used_ = 0;
};

namespace spec_detail {
struct Id {
  hid_t id = -1;
  herr_t (*close)(hid_t) = nullptr;
  Id(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  ~Id() {
    if (id >= 0 && close) close(id);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
};

MLBERT_SPEC_NO_COVERAGE inline uint64_t elements(const std::vector<uint64_t>& dims) {
  uint64_t n = 1;
  for (uint64_t d : dims) {
    if (d != 0 && n > kSpecMaxElements / d) return kSpecMaxElements + 1;
    n *= d;
  }
  return n;
}

// Writes one dataset; false when HDF5 refuses it or it is over the size bound (left out).
MLBERT_SPEC_NO_COVERAGE inline bool write_dataset(hid_t file, const DatasetSpec& d) {
  const uint64_t n = elements(d.dims);
  if (n > kSpecMaxElements) return false;
  const bool vlen = (d.flags & 1) != 0;
  const bool string = d.type % kSpecTypeCount == kSpecTypeCount - 1;
  std::vector<hsize_t> dims(d.dims.begin(), d.dims.end());
  Id space(dims.empty() ? H5Screate(H5S_SCALAR)
                        : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
           H5Sclose);
  Id base(H5Tcopy(spec_type(d.type)), H5Tclose);
  if (string) H5Tset_size(base.id, 8);
  Id file_type(vlen ? H5Tvlen_create(base.id) : H5Tcopy(base.id), H5Tclose);
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  const int storage = (d.flags >> 1) & 3;
  if (storage != 0 && !dims.empty()) {
    std::vector<hsize_t> chunk(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) chunk[i] = std::clamp<hsize_t>(dims[i], 1, 64);
    H5Pset_chunk(dcpl.id, static_cast<int>(chunk.size()), chunk.data());
    if (storage == 2) H5Pset_deflate(dcpl.id, 1);
  }
  Id set(H5Dcreate2(file, kSpecNames[d.name % kSpecNames.size()], file_type.id, space.id,
                    H5P_DEFAULT, dcpl.id, H5P_DEFAULT),
         H5Dclose);
  if (set.id < 0) return false;
  RunCycle values(d.bias, d.runs);
  if (string) {  // 8 bytes of each value
    std::vector<char> buffer(n * 8);
    for (uint64_t i = 0; i < n; ++i) {
      const int64_t v = values.next();
      std::memcpy(&buffer[i * 8], &v, 8);
    }
    Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.id, 8);
    if (vlen) return true;  // a vlen of strings: left empty
    return n == 0 || H5Dwrite(set.id, mem.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) >= 0;
  }
  if (!vlen) {
    std::vector<int64_t> buffer(n);
    for (auto& v : buffer) v = values.next();
    return n == 0 ||
           H5Dwrite(set.id, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) >= 0;
  }
  std::vector<uint64_t> offsets(n + 1, 0);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t len = d.lengths.empty() ? 0 : d.lengths[i % d.lengths.size()];
    offsets[i + 1] = offsets[i] + len;
    if (offsets[i + 1] > kSpecMaxElements) return false;
  }
  std::vector<int64_t> flat(offsets[n]);
  for (auto& v : flat) v = values.next();
  std::vector<hvl_t> vlens(n);
  for (uint64_t i = 0; i < n; ++i)
    vlens[i] = {static_cast<size_t>(offsets[i + 1] - offsets[i]), flat.data() + offsets[i]};
  Id mem(H5Tvlen_create(H5T_NATIVE_INT64), H5Tclose);
  return n == 0 || H5Dwrite(set.id, mem.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, vlens.data()) >= 0;
}
}  // namespace spec_detail

// Writes the file the spec describes at `path` (replacing it). Throws only when the file cannot be
// created or closed; datasets HDF5 refuses are left out.
MLBERT_SPEC_NO_COVERAGE inline void build_shard(const ShardSpec& spec,
                                                const std::filesystem::path& path) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) throw std::runtime_error(path.string() + ": cannot create");
  for (const DatasetSpec& d : spec.datasets) spec_detail::write_dataset(file, d);
  if (H5Fclose(file) < 0) throw std::runtime_error(path.string() + ": cannot close");
}

// The spec of a shard file: its datasets of kSpecNames with their types, shapes and values (as
// runs), for seeds from real shards. Throws on a dataset it cannot describe.
inline ShardSpec describe_shard(const std::filesystem::path& path,
                                const data::ReadOptions& options) {
  using spec_detail::Id;
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (file.id < 0) throw std::runtime_error(path.string() + ": cannot open");
  ShardSpec spec;
  for (size_t name = 0; name < kSpecNames.size(); ++name) {
    if (H5Lexists(file.id, kSpecNames[name], H5P_DEFAULT) <= 0) continue;
    Id set(H5Dopen2(file.id, kSpecNames[name], H5P_DEFAULT), H5Dclose);
    Id type(H5Dget_type(set.id), H5Tclose);
    Id space(H5Dget_space(set.id), H5Sclose);
    DatasetSpec d;
    d.name = static_cast<uint8_t>(name);
    const bool vlen = H5Tget_class(type.id) == H5T_VLEN;
    Id base(vlen ? H5Tget_super(type.id) : H5Tcopy(type.id), H5Tclose);
    d.type = 255;
    for (int t = 0; t + 1 < kSpecTypeCount; ++t)
      if (H5Tequal(base.id, spec_type(static_cast<uint8_t>(t))) > 0)
        d.type = static_cast<uint8_t>(t);
    if (d.type == 255) throw std::runtime_error(path.string() + ": a type the spec has not");
    d.flags = vlen ? 1 : 0;
    const int rank = H5Sget_simple_extent_ndims(space.id);
    std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
    H5Sget_simple_extent_dims(space.id, dims.data(), nullptr);
    d.dims.assign(dims.begin(), dims.end());
    const uint64_t n = spec_detail::elements(d.dims);
    std::vector<int64_t> values;
    if (!vlen) {
      values.resize(n);
      if (n && H5Dread(set.id, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
        throw std::runtime_error(path.string() + ": cannot read " + kSpecNames[name]);
    } else {
      std::vector<hvl_t> elements(n);
      Id mem(H5Tvlen_create(H5T_NATIVE_INT64), H5Tclose);
      if (n && H5Dread(set.id, mem.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, elements.data()) < 0)
        throw std::runtime_error(path.string() + ": cannot read " + kSpecNames[name]);
      for (const hvl_t& e : elements) {
        d.lengths.push_back(static_cast<uint16_t>(e.len));
        const auto* p = static_cast<const int64_t*>(e.p);
        values.insert(values.end(), p, p + e.len);
      }
      if (n) H5Dvlen_reclaim(mem.id, space.id, H5P_DEFAULT, elements.data());
    }
    if (!values.empty()) {
      const auto [low, high] = std::minmax_element(values.begin(), values.end());
      if (*high - *low > 65535) throw std::runtime_error(path.string() + ": values too far apart");
      if (*low < -32768 || *high > 32767) d.bias = *low + 32768;
    }
    if (values.size() / 256 > 65535) throw std::runtime_error(path.string() + ": too many values");
    for (size_t i = 0; i < values.size();) {
      size_t j = i + 1;
      while (j < values.size() && values[j] == values[i] && j - i < 256) ++j;
      d.runs.emplace_back(static_cast<int16_t>(values[i] - d.bias),
                          static_cast<uint8_t>(j - i - 1));
      i = j;
    }
    if (d.runs.size() > 65535) throw std::runtime_error(path.string() + ": too many runs");
    spec.datasets.push_back(std::move(d));
  }
  spec.vocab = options.vocab_size > 0 ? 1 : 0;
  const auto* seq = kSpecSeqLengths.data();
  const auto* pred = kSpecPredictions.data();
  const auto* rows = kSpecRowSequences.data();
  spec.seq_choice =
      static_cast<uint8_t>(std::find(seq, seq + 4, options.format.max_seq_length) - seq);
  spec.pred_choice = static_cast<uint8_t>(
      std::find(pred, pred + 4, options.format.max_predictions_per_seq) - pred);
  spec.rows_choice =
      static_cast<uint8_t>(std::find(rows, rows + 4, options.format.max_sequences_per_row) - rows);
  if (spec.seq_choice > 3 || spec.pred_choice > 3 || spec.rows_choice > 3)
    throw std::runtime_error("read options the spec has not");
  return spec;
}

}  // namespace mlbert::fuzz
