// The HDF5 reads under the shard readers: one dataset opened with its shape and element type
// checked, rows of it read as int32 whatever the file's integer type, and the shard file itself.
// Internal to data_prep (they run in the shard reader process, see hdf5_direct.h).
//
// Design choice: a read allocates only for rows the file can hold. HDF5 reads storage that was
// never written as fill values, so a corrupt or truncated header can claim any number of rows at
// no cost in file size; every read first checks the rows against the bytes the file stores.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data_prep/hdf5_handle.h"
#include "data_prep/hdf5_io.h"

namespace mlbert::data {

struct Dataset {
  H5Id dset, space, type;
  int rank = 0;
  hsize_t dims[2] = {0, 0};
  bool vlen = false;
  hsize_t stored_bytes = 0;  // what the file holds for it (compressed chunks count compressed)
};

// Opens dataset `name` of `file`: 1-D or 2-D, integers or variable-length integers.
Dataset open_dataset(hid_t file, const std::filesystem::path& path, const char* name);

// Reads rows [begin, begin+count) of a 1-D or 2-D integer dataset as int32 (row-major).
std::vector<int32_t> read_fixed(Dataset& d, const std::filesystem::path& path, const char* name,
                                hsize_t begin, hsize_t count);

// Reads rows of a 1-D vlen dataset into flat storage + offsets.
void read_vlen(Dataset& d, const std::filesystem::path& path, const char* name, hsize_t begin,
               hsize_t count, std::vector<int32_t>& flat, std::vector<size_t>& offsets);

// A shard file opened read-only; errors name the file.
class File {
 public:
  explicit File(const std::filesystem::path& path);
  hid_t get() const { return id_.get(); }
  bool has(const char* name) const { return H5Lexists(id_.get(), name, H5P_DEFAULT) > 0; }

 private:
  std::filesystem::path path_;
  H5Id id_;
};

// The layout, from the datasets present.
Layout detect(const File& f, const std::filesystem::path& path);

// Fails unless `d` has `rows` rows (those of input_ids).
void expect_rows(const Dataset& d, const std::filesystem::path& path, const char* name,
                 hsize_t rows);

}  // namespace mlbert::data
