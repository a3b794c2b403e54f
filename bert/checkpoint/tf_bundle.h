// TensorFlow (TF1/TF2) tensor-bundle checkpoints, read natively: `<prefix>.index` is a LevelDB-
// format SSTable whose "" entry is a BundleHeaderProto and whose other entries map tensor names to
// BundleEntryProto records (dtype, shape, shard, offset, size, crc32c) into the
// `<prefix>.data-NNNNN-of-NNNNN` shards.
//
// Design choice: no TensorFlow or protobuf dependency. The SSTable (footer, block handles, restart
// points, prefix-compressed keys, snappy or raw blocks, masked CRC32C trailers) and the few
// protobuf messages are decoded by hand, and every length and offset is bounds-checked so a
// corrupt file yields an error naming the file, the block or the tensor.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mlbert::bert {

// TensorFlow DataType enum values the reader knows (types.proto).
enum class TfDataType : int {
  float32 = 1,
  float64 = 2,
  int32 = 3,
  uint8 = 4,
  int16 = 5,
  int8 = 6,
  string = 7,
  int64 = 9,
  boolean = 10,
  bfloat16 = 14,
  float16 = 19,
};
const char* tf_dtype_name(int dtype);

struct TfBundleEntry {
  std::string name;
  int dtype = 0;
  std::vector<int64_t> shape;
  int32_t shard_id = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  std::optional<uint32_t> crc32c;  // unmasked; absent in some writers
  bool sliced = false;             // partitioned variable (slices); not readable as one tensor
  size_t numel() const;
};

class TfBundleReader {
 public:
  // `prefix` is "dir/model.ckpt-28252" (or the path of its .index file).
  explicit TfBundleReader(const std::filesystem::path& prefix);

  const std::filesystem::path& index_path() const { return index_path_; }
  int32_t num_shards() const { return num_shards_; }
  const std::vector<TfBundleEntry>& entries() const { return entries_; }
  const TfBundleEntry* find(const std::string& name) const;
  std::filesystem::path shard_path(int32_t shard) const;

  // The raw bytes of a tensor, CRC32C-checked when the entry carries one.
  std::vector<char> read_bytes(const TfBundleEntry& entry) const;
  // The tensor as floats (float32, float64, float16, bfloat16; integer types converted too).
  std::vector<float> read_f32(const TfBundleEntry& entry) const;

 private:
  std::filesystem::path prefix_, index_path_;
  int32_t num_shards_ = 1;
  std::vector<TfBundleEntry> entries_;
};

// Snappy raw-format decompression (used by SSTable blocks written with compression type 1).
std::string snappy_uncompress(const char* data, size_t size);

}  // namespace mlbert::bert
