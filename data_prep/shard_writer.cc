// ShardWriter (see hdf5_io.h): rows are buffered and checked as they are added; commit() writes
// each dataset in one call into an HDF5 image in memory, then the image to disk atomically.
#include "data_prep/hdf5_io.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/atomic_file.h"
#include "data_prep/hdf5_handle.h"
#include "data_prep/shard_rows.h"

namespace mlbert::data {
namespace {

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

}  // namespace

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
