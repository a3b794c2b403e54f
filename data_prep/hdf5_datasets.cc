// HDF5 dataset reads (see hdf5_datasets.h): integer file types of 1, 2 or 4 signed bytes are read
// in their own width and widened in memory; any other integer type goes through HDF5's conversion.
#include "data_prep/hdf5_datasets.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/input_file.h"
#include "data_prep/shard_rows.h"

namespace mlbert::data {
namespace {

// Before a read allocates for `rows` rows, the rows must fit what the file stores for the dataset
// at the best ratio deflate (the compression real shards use) can reach, 1032:1.
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

}  // namespace

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

File::File(const std::filesystem::path& path) : path_(path) {
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

}  // namespace mlbert::data
