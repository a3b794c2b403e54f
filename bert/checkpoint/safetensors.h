// safetensors: the file format mlbert writes its checkpoints in (and Hugging Face ships weights
// in).
//
// Layout: 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape,
// data_offsets: [begin, end]}, "__metadata__": {string: string}}, then the data section the
// offsets index. Design choice: the reader validates the whole header up front (offsets inside the
// file, no overlap, size == numel * dtype size) so later reads cannot go out of bounds.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace mlbert::bert {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", "F64", "I32", "I64", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
  size_t numel() const;
};

class SafetensorsReader {
 public:
  // Reads and validates the header; throws std::runtime_error naming the file and tensor.
  explicit SafetensorsReader(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsEntry* find(const std::string& name) const;
  // The tensor converted to f32 (from F32, F16, BF16 or F64).
  std::vector<float> read_f32(const SafetensorsEntry& entry) const;

 private:
  std::filesystem::path path_;
  uint64_t data_start_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

struct SafetensorsTensorF32 {
  std::string name;
  std::vector<int64_t> shape;
  std::span<const float> values;
};

// Writes F32 tensors (in the given order) atomically: a temporary file renamed into place, so a
// failure never leaves a truncated checkpoint under `path`.
void write_safetensors(const std::filesystem::path& path,
                       std::span<const SafetensorsTensorF32> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace mlbert::bert
