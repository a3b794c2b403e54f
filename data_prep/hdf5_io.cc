// HDF5 C API plumbing for the three layouts. Writers buffer rows and write each dataset in one
// call; readers (hdf5_direct.h: they run in the shard reader process) convert any integer file
// type to int32 in memory and check every row before returning.
#include "data_prep/hdf5_io.h"

#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <system_error>
#include <type_traits>

#include "common/atomic_file.h"
#include "common/input_file.h"
#include "data_prep/hdf5_direct.h"
#include "data_prep/shard_rows.h"

namespace mlbert::data {
namespace {

// Owns an HDF5 identifier.
class H5Id {
 public:
  H5Id() = default;
  H5Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  H5Id(H5Id&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  H5Id& operator=(H5Id&& o) noexcept {
    reset();
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = -1;
    return *this;
  }
  ~H5Id() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  herr_t release() {  // closes now and reports the status (file close is where writes fail)
    herr_t status = 0;
    if (id_ >= 0 && close_) status = close_(id_);
    id_ = -1;
    return status;
  }

 private:
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

void quiet_hdf5() {
  // HDF5 prints its error stack to stderr by default; errors are reported by exceptions instead.
  static const bool once = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)once;
}

// ------------------------------------------------------------------------------------------------
// Writing

// The native memory type with the same size and sign as the on-disk type. Writing and reading
// through it avoids HDF5's per-element type conversion, which dominates vlen I/O time otherwise.
template <typename T>
hid_t native_type() {
  if constexpr (sizeof(T) == 1) return H5T_NATIVE_SCHAR;
  if constexpr (sizeof(T) == 2) return H5T_NATIVE_SHORT;
  return H5T_NATIVE_INT32;
}

template <typename T>
std::vector<T> narrow(const std::vector<int32_t>& data) {
  // Values were range-checked when rows were added (ids fit int16, segments and labels are 0/1).
  return std::vector<T>(data.begin(), data.end());
}

template <typename T>
void write_2d(hid_t file, const std::filesystem::path& path, const char* name, hid_t file_type,
              const std::vector<int32_t>& wide, hsize_t rows, hsize_t cols) {
  const std::vector<T> data = narrow<T>(wide);
  const hsize_t dims[2] = {rows, cols};
  H5Id space(H5Screate_simple(cols ? 2 : 1, dims, nullptr), H5Sclose);
  H5Id dset(H5Dcreate2(file, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
            H5Dclose);
  if (!dset.valid())
    throw std::runtime_error(dataset_where(path, name) + ": cannot create dataset");
  if (rows > 0 &&
      H5Dwrite(dset.get(), native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0) {
    throw std::runtime_error(dataset_where(path, name) + ": write failed");
  }
}

template <typename T>
void write_vlen(hid_t file, const std::filesystem::path& path, const char* name, hid_t base_type,
                const std::vector<int32_t>& wide, const std::vector<size_t>& offsets) {
  const std::vector<T> flat = narrow<T>(wide);
  const hsize_t rows = offsets.size() - 1;
  std::vector<hvl_t> vl(rows);
  for (hsize_t r = 0; r < rows; ++r) {
    vl[r].len = offsets[r + 1] - offsets[r];
    vl[r].p = const_cast<T*>(flat.data() + offsets[r]);
  }
  H5Id file_type(H5Tvlen_create(base_type), H5Tclose);
  H5Id mem_type(H5Tvlen_create(native_type<T>()), H5Tclose);
  const hsize_t dims[1] = {rows};
  H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  H5Id dset(
      H5Dcreate2(file, name, file_type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  if (!dset.valid())
    throw std::runtime_error(dataset_where(path, name) + ": cannot create dataset");
  if (rows > 0 &&
      H5Dwrite(dset.get(), mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, vl.data()) < 0) {
    throw std::runtime_error(dataset_where(path, name) + ": write failed");
  }
}

// Flattened columns of a set of rows, in the vlen layout.
struct VlenColumns {
  std::vector<int32_t> input_ids, segment_ids, positions, masked_ids, nsp, input_len, masked_len;
  std::vector<size_t> ids_off{0}, pos_off{0}, seq_off{0};
};

// ------------------------------------------------------------------------------------------------
// Reading

struct Dataset {
  H5Id dset, space, type;
  int rank = 0;
  hsize_t dims[2] = {0, 0};
  bool vlen = false;
  hsize_t stored_bytes = 0;  // what the file holds for it (compressed chunks count compressed)
};

// HDF5 reads storage that was never written as fill values, so a corrupt or truncated header can
// claim any number of rows at no cost in file size. Before a read allocates for `rows` rows, the
// rows must fit what the file stores for the dataset at the best ratio deflate (the compression
// real shards use) can reach, 1032:1.
constexpr unsigned __int128 kMaxCompressionRatio = 1032;

void check_stored(const Dataset& d, const std::filesystem::path& path, const char* name,
                  hsize_t rows) {
  const hsize_t cols = d.rank == 2 ? d.dims[1] : 1;
  // A vlen element is stored as a 16-byte global heap reference.
  const size_t element_bytes = d.vlen ? 16 : H5Tget_size(d.type.get());
  const unsigned __int128 claimed =
      static_cast<unsigned __int128>(rows) * cols * std::max<size_t>(element_bytes, 1);
  if (claimed > kMaxCompressionRatio * d.stored_bytes) {
    throw std::runtime_error(dataset_where(path, name) + ": claims " + std::to_string(d.dims[0]) +
                             " rows but the file stores only " + std::to_string(d.stored_bytes) +
                             " bytes for it (truncated or corrupt file?)");
  }
}

Dataset open_dataset(hid_t file, const std::filesystem::path& path, const char* name) {
  Dataset d;
  if (H5Lexists(file, name, H5P_DEFAULT) <= 0) {
    throw std::runtime_error(dataset_where(path, name) + ": missing");
  }
  d.dset = H5Id(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  if (!d.dset.valid())
    throw std::runtime_error(dataset_where(path, name) + ": cannot open (corrupt file?)");
  d.space = H5Id(H5Dget_space(d.dset.get()), H5Sclose);
  d.type = H5Id(H5Dget_type(d.dset.get()), H5Tclose);
  d.rank = H5Sget_simple_extent_ndims(d.space.get());
  if (d.rank < 1 || d.rank > 2) {
    throw std::runtime_error(dataset_where(path, name) + ": expected 1 or 2 dimensions, found " +
                             std::to_string(d.rank));
  }
  H5Sget_simple_extent_dims(d.space.get(), d.dims, nullptr);
  d.stored_bytes = H5Dget_storage_size(d.dset.get());
  const H5T_class_t cls = H5Tget_class(d.type.get());
  if (cls == H5T_VLEN) {
    H5Id super(H5Tget_super(d.type.get()), H5Tclose);
    if (H5Tget_class(super.get()) != H5T_INTEGER) {
      throw std::runtime_error(dataset_where(path, name) +
                               ": expected variable-length integers, found another element type");
    }
    d.vlen = true;
  } else if (cls != H5T_INTEGER) {
    throw std::runtime_error(
        dataset_where(path, name) + ": expected an integer dtype, found class " +
        std::to_string(static_cast<int>(cls)) + (cls == H5T_FLOAT ? " (float)" : ""));
  }
  return d;
}

// Element size of an integer type when it is a signed 1/2/4-byte integer (read without conversion),
// 0 otherwise (read through HDF5's conversion to int32).
size_t direct_size(hid_t type) {
  if (H5Tget_class(type) != H5T_INTEGER || H5Tget_sign(type) != H5T_SGN_2) return 0;
  const size_t size = H5Tget_size(type);
  return size == 1 || size == 2 || size == 4 ? size : 0;
}

template <typename T>
void widen_into(const std::vector<T>& in, std::vector<int32_t>& out) {
  out.assign(in.begin(), in.end());
}

// Reads rows [begin, begin+count) of a 1-D or 2-D integer dataset as int32 (row-major).
std::vector<int32_t> read_fixed(Dataset& d, const std::filesystem::path& path, const char* name,
                                hsize_t begin, hsize_t count) {
  const hsize_t cols = d.rank == 2 ? d.dims[1] : 1;
  if (count == 0) return {};
  check_stored(d, path, name, count);
  std::vector<int32_t> out(count * cols);
  const hsize_t start[2] = {begin, 0}, extent[2] = {count, cols};
  H5Id file_space(H5Scopy(d.space.get()), H5Sclose);
  H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, extent, nullptr);
  H5Id mem_space(H5Screate_simple(d.rank, extent, nullptr), H5Sclose);
  auto read_as = [&](hid_t mem_type, void* buf) {
    if (H5Dread(d.dset.get(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buf) < 0) {
      throw std::runtime_error(dataset_where(path, name) +
                               ": read failed (truncated or corrupt file?)");
    }
  };
  switch (direct_size(d.type.get())) {
    case 1: {
      std::vector<int8_t> raw(out.size());
      read_as(H5T_NATIVE_SCHAR, raw.data());
      widen_into(raw, out);
      break;
    }
    case 2: {
      std::vector<int16_t> raw(out.size());
      read_as(H5T_NATIVE_SHORT, raw.data());
      widen_into(raw, out);
      break;
    }
    default:
      read_as(H5T_NATIVE_INT32, out.data());
  }
  return out;
}

template <typename T>
void read_vlen_as(Dataset& d, const std::filesystem::path& path, const char* name, hid_t native,
                  hsize_t begin, hsize_t count, std::vector<int32_t>& flat,
                  std::vector<size_t>& offsets) {
  std::vector<hvl_t> vl(count);
  const hsize_t start[1] = {begin}, extent[1] = {count};
  H5Id file_space(H5Scopy(d.space.get()), H5Sclose);
  H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, extent, nullptr);
  H5Id mem_space(H5Screate_simple(1, extent, nullptr), H5Sclose);
  H5Id mem_type(H5Tvlen_create(native), H5Tclose);
  if (H5Dread(d.dset.get(), mem_type.get(), mem_space.get(), file_space.get(), H5P_DEFAULT,
              vl.data()) < 0) {
    throw std::runtime_error(dataset_where(path, name) +
                             ": read failed (truncated or corrupt file?)");
  }
  size_t total = 0;
  for (const hvl_t& v : vl) total += v.len;
  flat.reserve(total);
  for (const hvl_t& v : vl) {
    const auto* p = static_cast<const T*>(v.p);
    flat.insert(flat.end(), p, p + v.len);
    offsets.push_back(flat.size());
  }
  H5Dvlen_reclaim(mem_type.get(), mem_space.get(), H5P_DEFAULT, vl.data());
}

// Reads rows of a 1-D vlen dataset into flat storage + offsets.
void read_vlen(Dataset& d, const std::filesystem::path& path, const char* name, hsize_t begin,
               hsize_t count, std::vector<int32_t>& flat, std::vector<size_t>& offsets) {
  flat.clear();
  offsets.assign(1, 0);
  if (count == 0) return;
  check_stored(d, path, name, count);
  H5Id super(H5Tget_super(d.type.get()), H5Tclose);
  switch (direct_size(super.get())) {
    case 1:
      read_vlen_as<int8_t>(d, path, name, H5T_NATIVE_SCHAR, begin, count, flat, offsets);
      break;
    case 2:
      read_vlen_as<int16_t>(d, path, name, H5T_NATIVE_SHORT, begin, count, flat, offsets);
      break;
    default:
      read_vlen_as<int32_t>(d, path, name, H5T_NATIVE_INT32, begin, count, flat, offsets);
  }
}

class File {
 public:
  explicit File(const std::filesystem::path& path) : path_(path) {
    quiet_hdf5();
    if (const std::string why = files::unreadable_reason(path); !why.empty())
      throw std::runtime_error(path.string() + ": cannot open shard: " + why);
    if (H5Fis_hdf5(path.c_str()) <= 0) {
      throw std::runtime_error(path.string() + ": not an HDF5 file (truncated or corrupt?)");
    }
    id_ = H5Id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!id_.valid()) {
      throw std::runtime_error(path.string() + ": cannot open HDF5 file (truncated or corrupt?)");
    }
  }
  hid_t get() const { return id_.get(); }
  bool has(const char* name) const { return H5Lexists(id_.get(), name, H5P_DEFAULT) > 0; }

 private:
  std::filesystem::path path_;
  H5Id id_;
};

Layout detect(const File& f, const std::filesystem::path& path) {
  if (!f.has("input_ids")) {
    throw std::runtime_error(path.string() +
                             ": no 'input_ids' dataset; not a BERT pretraining shard");
  }
  if (f.has("packed_input_len")) return Layout::kPacked;
  Dataset d = open_dataset(f.get(), path, "input_ids");
  if (d.vlen) return Layout::kVarlen;
  if (d.rank != 2) {
    throw std::runtime_error(dataset_where(path, "input_ids") +
                             ": fixed layout needs shape [N, max_seq_length], found 1-D");
  }
  return Layout::kFixed;
}

void expect_rows(const Dataset& d, const std::filesystem::path& path, const char* name,
                 hsize_t rows) {
  if (d.dims[0] != rows) {
    throw std::runtime_error(dataset_where(path, name) + ": " + std::to_string(d.dims[0]) +
                             " rows, but input_ids has " + std::to_string(rows));
  }
}

// The datasets of one shard, opened and shape-checked once for any number of reads. `d` holds
// them in the order of the layout's dataset names below.
const char* const kFixedNames[] = {"input_ids",           "input_mask",    "segment_ids",
                                   "masked_lm_positions", "masked_lm_ids", "next_sentence_labels"};
const char* const kVarlenNames[] = {"input_ids", "segment_ids", "masked_lm_positions",
                                    "masked_lm_ids", "next_sentence_labels"};
const char* const kPackedNames[] = {
    "input_ids",           "segment_ids",          "masked_lm_positions",
    "masked_lm_ids",       "next_sentence_labels", "packed_input_len",
    "packed_masked_lm_len"};

struct ShardDatasets {
  Layout layout = Layout::kVarlen;
  std::vector<Dataset> d;
  hsize_t rows = 0;
  hsize_t width = 0, predictions = 0;  // fixed layout: S of [N,S], P of [N,P]
};

// The fixed layout's input_ids: [N, S] with S >= 1. Rows of no tokens store no bytes, so no check
// of the stored size would bound their count.
void check_fixed_ids(const Dataset& ids, const std::filesystem::path& path) {
  if (ids.dims[1] == 0) {
    throw std::runtime_error(dataset_where(path, "input_ids") +
                             ": fixed layout needs [N, max_seq_length >= 1], found [N, 0]");
  }
}

// input_mask and segment_ids: 2-D integers as wide as input_ids.
void check_like_ids(const Dataset& d, const Dataset& ids, const std::filesystem::path& path) {
  if (d.vlen || d.rank != 2 || d.dims[1] != ids.dims[1]) {
    throw std::runtime_error(path.string() + ": input_mask/segment_ids must be [N, " +
                             std::to_string(ids.dims[1]) + "] like input_ids");
  }
}

ShardDatasets open_fixed(const File& f, const std::filesystem::path& path) {
  ShardDatasets s;
  s.layout = Layout::kFixed;
  for (const char* name : kFixedNames) s.d.push_back(open_dataset(f.get(), path, name));
  Dataset &ids = s.d[0], &mask = s.d[1], &seg = s.d[2], &pos = s.d[3], &mids = s.d[4],
          &nsp = s.d[5];
  check_fixed_ids(ids, path);
  s.rows = ids.dims[0];
  s.width = ids.dims[1];
  for (const Dataset* d : {&mask, &seg}) check_like_ids(*d, ids, path);
  if (pos.vlen || mids.vlen || pos.rank != 2 || mids.rank != 2 || pos.dims[1] != mids.dims[1]) {
    throw std::runtime_error(path.string() +
                             ": masked_lm_positions/masked_lm_ids must both be [N, P]");
  }
  if (nsp.vlen || !(nsp.rank == 1 || (nsp.rank == 2 && nsp.dims[1] == 1))) {
    throw std::runtime_error(dataset_where(path, "next_sentence_labels") +
                             ": must be [N] or [N, 1]");
  }
  for (size_t k = 1; k < s.d.size(); ++k) expect_rows(s.d[k], path, kFixedNames[k], s.rows);
  s.predictions = pos.dims[1];
  return s;
}

ShardDatasets open_varlen(const File& f, const std::filesystem::path& path) {
  ShardDatasets s;
  s.layout = Layout::kVarlen;
  for (const char* name : kVarlenNames) s.d.push_back(open_dataset(f.get(), path, name));
  s.rows = s.d[0].dims[0];
  for (size_t k = 0; k < 4; ++k) {
    if (!s.d[k].vlen || s.d[k].rank != 1) {
      throw std::runtime_error(dataset_where(path, kVarlenNames[k]) +
                               ": varlen layout needs a 1-D vlen dataset");
    }
    expect_rows(s.d[k], path, kVarlenNames[k], s.rows);
  }
  if (s.d[4].vlen || s.d[4].rank != 1) {
    throw std::runtime_error(dataset_where(path, "next_sentence_labels") +
                             ": must be a 1-D integer [N]");
  }
  expect_rows(s.d[4], path, "next_sentence_labels", s.rows);
  return s;
}

ShardDatasets open_packed(const File& f, const std::filesystem::path& path) {
  ShardDatasets s;
  s.layout = Layout::kPacked;
  for (const char* name : kPackedNames) s.d.push_back(open_dataset(f.get(), path, name));
  s.rows = s.d[0].dims[0];
  for (size_t k = 0; k < s.d.size(); ++k) {
    if (!s.d[k].vlen || s.d[k].rank != 1) {
      throw std::runtime_error(dataset_where(path, kPackedNames[k]) +
                               ": packed layout needs a 1-D vlen dataset");
    }
    expect_rows(s.d[k], path, kPackedNames[k], s.rows);
  }
  return s;
}

ShardDatasets open_datasets(const File& f, const std::filesystem::path& path) {
  switch (detect(f, path)) {
    case Layout::kFixed:
      return open_fixed(f, path);
    case Layout::kVarlen:
      return open_varlen(f, path);
    case Layout::kPacked:
      return open_packed(f, path);
  }
  throw std::logic_error("unknown layout");
}

void check_range(const ShardDatasets& s, const std::filesystem::path& path, hsize_t begin,
                 hsize_t count) {
  if (begin + count > s.rows) {
    throw std::runtime_error(path.string() + ": rows [" + std::to_string(begin) + ", " +
                             std::to_string(begin + count) + ") beyond the " +
                             std::to_string(s.rows) + " rows of the shard");
  }
}

std::vector<Sample> read_fixed_rows(ShardDatasets& sd, const std::filesystem::path& path,
                                    hsize_t begin, hsize_t count, const ReadOptions& o) {
  check_fixed_width(sd.width, path, o);
  check_range(sd, path, begin, count);
  FixedColumns c;
  c.rows = count;
  c.width = sd.width;
  c.predictions = sd.predictions;
  c.ids = read_fixed(sd.d[0], path, "input_ids", begin, count);
  c.mask = read_fixed(sd.d[1], path, "input_mask", begin, count);
  c.segments = read_fixed(sd.d[2], path, "segment_ids", begin, count);
  c.positions = read_fixed(sd.d[3], path, "masked_lm_positions", begin, count);
  c.masked_ids = read_fixed(sd.d[4], path, "masked_lm_ids", begin, count);
  c.labels = read_fixed(sd.d[5], path, "next_sentence_labels", begin, count);
  return decode_fixed_rows(c, path, static_cast<int64_t>(begin), o);
}

std::vector<Sample> read_varlen_rows(ShardDatasets& sd, const std::filesystem::path& path,
                                     hsize_t begin, hsize_t count, const ReadOptions& o) {
  check_range(sd, path, begin, count);
  std::array<VlenColumn, 4> c;
  for (size_t k = 0; k < c.size(); ++k)
    read_vlen(sd.d[k], path, kVarlenNames[k], begin, count, c[k].values, c[k].offsets);
  const auto labels = read_fixed(sd.d[4], path, "next_sentence_labels", begin, count);
  return decode_varlen_rows(c, labels, path, static_cast<int64_t>(begin), o);
}

std::vector<PackedRow> read_packed_rows(ShardDatasets& sd, const std::filesystem::path& path,
                                        hsize_t begin, hsize_t count, const ReadOptions& o) {
  check_range(sd, path, begin, count);
  std::array<VlenColumn, 7> c;
  for (size_t k = 0; k < c.size(); ++k)
    read_vlen(sd.d[k], path, kPackedNames[k], begin, count, c[k].values, c[k].offsets);
  return decode_packed_rows(c, path, static_cast<int64_t>(begin), o);
}

std::vector<Sample> read_range_in(ShardDatasets& sd, const std::filesystem::path& path,
                                  int64_t begin, int64_t count, const ReadOptions& o) {
  if (begin < 0 || count < 0) throw std::invalid_argument(path.string() + ": negative row range");
  const auto b = static_cast<hsize_t>(begin), n = static_cast<hsize_t>(count);
  switch (sd.layout) {
    case Layout::kFixed:
      return read_fixed_rows(sd, path, b, n, o);
    case Layout::kVarlen:
      return read_varlen_rows(sd, path, b, n, o);
    case Layout::kPacked: {
      std::vector<Sample> out;
      for (PackedRow& row : read_packed_rows(sd, path, b, n, o)) {
        for (Sample& s : row.samples) out.push_back(std::move(s));
      }
      return out;
    }
  }
  return {};
}

}  // namespace

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kFixed:
      return "fixed";
    case Layout::kVarlen:
      return "varlen";
    case Layout::kPacked:
      return "packed";
  }
  return "?";
}

Layout parse_layout(const std::string& name) {
  if (name == "fixed") return Layout::kFixed;
  if (name == "varlen") return Layout::kVarlen;
  if (name == "packed") return Layout::kPacked;
  throw std::invalid_argument("unknown HDF5 layout '" + name + "' (fixed, varlen or packed)");
}

namespace direct {

void initialize_hdf5() {
  H5open();
  quiet_hdf5();
}

ShardInfo inspect_shard(const std::filesystem::path& path) {
  File f(path);
  ShardInfo info;
  info.layout = detect(f, path);
  Dataset ids = open_dataset(f.get(), path, "input_ids");
  info.rows = static_cast<int64_t>(ids.dims[0]);
  if (info.layout == Layout::kFixed) info.row_width = static_cast<int32_t>(ids.dims[1]);
  return info;
}

// ------------------------------------------------------------------------------------------------
// ShardReader

struct ShardReader::Impl {
  std::filesystem::path path;
  File file;
  ShardDatasets datasets;
  explicit Impl(const std::filesystem::path& p)
      : path(p), file(p), datasets(open_datasets(file, p)) {}
};

ShardReader::ShardReader(const std::filesystem::path& path) : impl_(std::make_unique<Impl>(path)) {}
ShardReader::~ShardReader() = default;
ShardReader::ShardReader(ShardReader&&) noexcept = default;
ShardReader& ShardReader::operator=(ShardReader&&) noexcept = default;

const std::filesystem::path& ShardReader::path() const {
  return impl_->path;
}
Layout ShardReader::layout() const {
  return impl_->datasets.layout;
}
int64_t ShardReader::rows() const {
  return static_cast<int64_t>(impl_->datasets.rows);
}

std::vector<Sample> ShardReader::read_range(int64_t begin, int64_t count, const ReadOptions& o) {
  return read_range_in(impl_->datasets, impl_->path, begin, count, o);
}

std::vector<Sample> ShardReader::read_rows(std::span<const int64_t> rows, const ReadOptions& o) {
  // Rows are read in ascending runs (a sampler's random rows of one shard cost one hyperslab
  // read per run) and returned in the order asked for.
  std::vector<Sample> out;
  if (layout() == Layout::kPacked) {  // a packed row yields several sequences: keep the order
    for (size_t i = 0; i < rows.size();) {
      size_t j = i + 1;
      while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;
      for (Sample& s : read_range(rows[i], static_cast<int64_t>(j - i), o)) {
        out.push_back(std::move(s));
      }
      i = j;
    }
    return out;
  }
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rows[a] < rows[b]; });
  out.resize(rows.size());
  for (size_t i = 0; i < order.size();) {
    // A run of ascending distinct rows [first, last]; repeated rows share the sample read.
    const int64_t first = rows[order[i]];
    int64_t last = first;
    size_t j = i + 1;
    while (j < order.size() && rows[order[j]] <= last + 1) last = rows[order[j++]];
    std::vector<Sample> part = read_range(first, last - first + 1, o);
    for (size_t k = i; k < j; ++k)
      out[order[k]] = part[static_cast<size_t>(rows[order[k]] - first)];
    i = j;
  }
  return out;
}

std::vector<PackedRow> ShardReader::read_packed(const ReadOptions& o) {
  if (layout() != Layout::kPacked) {
    throw std::runtime_error(impl_->path.string() +
                             ": not a packed shard (no packed_input_len dataset)");
  }
  return read_packed_rows(impl_->datasets, impl_->path, 0, impl_->datasets.rows, o);
}

std::vector<Sample> read_shard(const std::filesystem::path& path, const ReadOptions& o) {
  ShardReader reader(path);
  return reader.read_range(0, reader.rows(), o);
}

std::vector<Sample> read_row_range(const std::filesystem::path& path, int64_t begin, int64_t count,
                                   const ReadOptions& o) {
  return ShardReader(path).read_range(begin, count, o);
}

std::vector<Sample> read_rows(const std::filesystem::path& path, std::span<const int64_t> rows,
                              const ReadOptions& o) {
  return ShardReader(path).read_rows(rows, o);
}

std::vector<PackedRow> read_packed_shard(const std::filesystem::path& path, const ReadOptions& o) {
  return ShardReader(path).read_packed(o);
}

std::vector<int32_t> read_lengths(const std::filesystem::path& path) {
  File f(path);
  const Layout layout = detect(f, path);
  if (layout == Layout::kFixed) {
    // The mask's shape as the full reader checks it: a mask of width 0 claims any row count.
    const Dataset ids = open_dataset(f.get(), path, "input_ids");
    Dataset mask = open_dataset(f.get(), path, "input_mask");
    check_fixed_ids(ids, path);
    check_like_ids(mask, ids, path);
    expect_rows(mask, path, "input_mask", ids.dims[0]);
    return mask_lengths(read_fixed(mask, path, "input_mask", 0, ids.dims[0]), ids.dims[0],
                        ids.dims[1]);
  }
  const char* name = layout == Layout::kVarlen ? "input_ids" : "packed_input_len";
  Dataset d = open_dataset(f.get(), path, name);
  if (!d.vlen || d.rank != 1)
    throw std::runtime_error(dataset_where(path, name) + ": must be 1-D vlen");
  VlenColumn c;
  read_vlen(d, path, name, 0, d.dims[0], c.values, c.offsets);
  return vlen_lengths(c, layout == Layout::kPacked, path, 0);
}

}  // namespace direct

// ------------------------------------------------------------------------------------------------
// ShardWriter

ShardWriter::ShardWriter(std::filesystem::path path, Layout layout, ShardFormat format)
    : path_(std::move(path)), layout_(layout), format_(format) {}

ShardWriter::~ShardWriter() = default;

void ShardWriter::check(const Sample& s, const char* what) const {
  auto fail = [&](const std::string& m) {
    throw std::invalid_argument(path_.string() + ": " + what + " " + std::to_string(rows()) + ": " +
                                m);
  };
  if (s.input_ids.empty() || s.length() > format_.max_seq_length) {
    fail("length " + std::to_string(s.length()) + " outside [1, " +
         std::to_string(format_.max_seq_length) + "]");
  }
  if (s.segment_ids.size() != s.input_ids.size()) fail("segment_ids length differs from input_ids");
  if (s.masked_lm_ids.size() != s.masked_lm_positions.size()) {
    fail("masked_lm_ids length differs from masked_lm_positions");
  }
  if (static_cast<int32_t>(s.masked_lm_positions.size()) > format_.max_predictions_per_seq) {
    fail(std::to_string(s.masked_lm_positions.size()) + " predictions > max_predictions_per_seq " +
         std::to_string(format_.max_predictions_per_seq));
  }
  for (int32_t id : s.input_ids) {
    if (id < 0 || id > 32767) fail("token id " + std::to_string(id) + " does not fit int16");
  }
  for (int32_t id : s.masked_lm_ids) {
    if (id < 0 || id > 32767) fail("masked_lm_id " + std::to_string(id) + " does not fit int16");
  }
  for (int32_t p : s.masked_lm_positions) {
    if (p <= 0 || p >= s.length()) fail("masked position " + std::to_string(p) + " out of range");
  }
}

void ShardWriter::add(Sample sample) {
  if (layout_ == Layout::kPacked) {
    throw std::logic_error(path_.string() + ": add a PackedRow to a packed shard");
  }
  check(sample, "sample");
  samples_.push_back(std::move(sample));
  row_sizes_.push_back(1);
}

void ShardWriter::add(const PackedRow& row) {
  if (layout_ != Layout::kPacked) {
    throw std::logic_error(path_.string() + ": packed rows need the packed layout");
  }
  if (row.samples.empty() ||
      static_cast<int32_t>(row.samples.size()) > format_.max_sequences_per_row ||
      row.length() > format_.max_seq_length) {
    throw std::invalid_argument(path_.string() + ": packed row " + std::to_string(rows()) +
                                " has " + std::to_string(row.samples.size()) + " sequences / " +
                                std::to_string(row.length()) + " tokens");
  }
  for (const Sample& s : row.samples) check(s, "packed row");
  for (const Sample& s : row.samples) samples_.push_back(s);
  row_sizes_.push_back(static_cast<uint8_t>(row.samples.size()));
}

static_assert(std::is_same_v<hid_t, int64_t>, "ShardWriter::write_datasets takes hid_t as int64_t");

void ShardWriter::write_datasets(int64_t file) const {
  const hsize_t n = row_sizes_.size();
  if (layout_ == Layout::kFixed) {
    const hsize_t S = static_cast<hsize_t>(format_.max_seq_length);
    const hsize_t P = static_cast<hsize_t>(format_.max_predictions_per_seq);
    std::vector<int32_t> ids(n * S, 0), mask(n * S, 0), seg(n * S, 0), pos(n * P, 0),
        mids(n * P, 0), nsp(n, 0);
    for (hsize_t r = 0; r < n; ++r) {
      const Sample& s = samples_[r];
      for (size_t k = 0; k < s.input_ids.size(); ++k) {
        ids[r * S + k] = s.input_ids[k];
        mask[r * S + k] = 1;
        seg[r * S + k] = s.segment_ids[k];
      }
      for (size_t k = 0; k < s.masked_lm_positions.size(); ++k) {
        pos[r * P + k] = s.masked_lm_positions[k];
        mids[r * P + k] = s.masked_lm_ids[k];
      }
      nsp[r] = s.next_sentence_label;
    }
    write_2d<int32_t>(file, path_, "input_ids", H5T_STD_I32LE, ids, n, S);
    write_2d<int8_t>(file, path_, "input_mask", H5T_STD_I8LE, mask, n, S);
    write_2d<int8_t>(file, path_, "segment_ids", H5T_STD_I8LE, seg, n, S);
    write_2d<int32_t>(file, path_, "masked_lm_positions", H5T_STD_I32LE, pos, n, P);
    write_2d<int32_t>(file, path_, "masked_lm_ids", H5T_STD_I32LE, mids, n, P);
    write_2d<int8_t>(file, path_, "next_sentence_labels", H5T_STD_I8LE, nsp, n, 0);
  } else {
    VlenColumns c;
    size_t next = 0;
    for (hsize_t r = 0; r < n; ++r) {
      int32_t row_tokens = 0;
      for (uint8_t q = 0; q < row_sizes_[r]; ++q) {
        const Sample& s = samples_[next++];
        c.input_ids.insert(c.input_ids.end(), s.input_ids.begin(), s.input_ids.end());
        c.segment_ids.insert(c.segment_ids.end(), s.segment_ids.begin(), s.segment_ids.end());
        for (int32_t p : s.masked_lm_positions) c.positions.push_back(p + row_tokens);
        c.masked_ids.insert(c.masked_ids.end(), s.masked_lm_ids.begin(), s.masked_lm_ids.end());
        c.nsp.push_back(s.next_sentence_label);
        c.input_len.push_back(s.length());
        c.masked_len.push_back(static_cast<int32_t>(s.masked_lm_positions.size()));
        row_tokens += s.length();
      }
      c.ids_off.push_back(c.input_ids.size());
      c.pos_off.push_back(c.positions.size());
      c.seq_off.push_back(c.nsp.size());
    }
    write_vlen<int16_t>(file, path_, "input_ids", H5T_STD_I16LE, c.input_ids, c.ids_off);
    write_vlen<int8_t>(file, path_, "segment_ids", H5T_STD_I8LE, c.segment_ids, c.ids_off);
    write_vlen<int16_t>(file, path_, "masked_lm_positions", H5T_STD_I16LE, c.positions, c.pos_off);
    write_vlen<int16_t>(file, path_, "masked_lm_ids", H5T_STD_I16LE, c.masked_ids, c.pos_off);
    if (layout_ == Layout::kVarlen) {
      write_2d<int8_t>(file, path_, "next_sentence_labels", H5T_STD_I8LE, c.nsp, n, 0);
    } else {
      write_vlen<int8_t>(file, path_, "next_sentence_labels", H5T_STD_I8LE, c.nsp, c.seq_off);
      write_vlen<int16_t>(file, path_, "packed_input_len", H5T_STD_I16LE, c.input_len, c.seq_off);
      write_vlen<int16_t>(file, path_, "packed_masked_lm_len", H5T_STD_I16LE, c.masked_len,
                          c.seq_off);
    }
  }
}

void ShardWriter::commit() {
  if (committed_) throw std::logic_error(path_.string() + ": shard committed twice");
  quiet_hdf5();
  // HDF5 builds the whole file image in memory (core driver, no backing store); the image is then
  // written with checked POSIX I/O. A failing disk therefore never leaves HDF5 holding a
  // half-closed file, and every write error is reported here with errno.
  std::vector<unsigned char> image;
  {
    H5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    // Grow the in-memory image in large steps: the fixed layout is ~6 bytes per token slot.
    const size_t estimate =
        layout_ == Layout::kFixed
            ? row_sizes_.size() * (static_cast<size_t>(format_.max_seq_length) * 6 +
                                   static_cast<size_t>(format_.max_predictions_per_seq) * 8)
            : samples_.size() * 64 + 1;
    size_t token_bytes = 0;
    for (const Sample& smp : samples_)
      token_bytes += smp.input_ids.size() * 3 + smp.masked_lm_ids.size() * 4;
    H5Pset_fapl_core(fapl.get(), std::max<size_t>(1 << 20, estimate + token_bytes + (1 << 16)), 0);
    const std::string name = path_.string() + ".in-memory";
    H5Id file(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
    if (!file.valid()) throw std::runtime_error(path_.string() + ": cannot create HDF5 image");
    write_datasets(file.get());
    if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) {
      throw std::runtime_error(path_.string() + ": HDF5 flush failed");
    }
    const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
    if (size <= 0) throw std::runtime_error(path_.string() + ": cannot get the HDF5 file image");
    image.resize(static_cast<size_t>(size));
    if (H5Fget_file_image(file.get(), image.data(), image.size()) != size) {
      throw std::runtime_error(path_.string() + ": cannot get the HDF5 file image");
    }
  }
  // The image reaches the disk under a temporary name and is renamed into place when complete.
  files::AtomicFile out(path_);
  out.write(image.data(), image.size());
  out.commit();
  committed_ = true;
}

void write_shard(const std::filesystem::path& path, Layout layout, std::span<const Sample> samples,
                 ShardFormat format) {
  ShardWriter w(path, layout, format);
  for (const Sample& s : samples) w.add(s);
  w.commit();
}

}  // namespace mlbert::data
