// Samples as bytes, for moving them between processes: the load-balancing exchange of the trainer
// and the shard reader process (shard_reader.h). Native byte order, length-prefixed; decoding
// checks every size against the bytes present and names `origin` when a block is corrupt.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "data_prep/sample.h"

namespace mlbert::data {

class ByteWriter {
 public:
  template <typename T>
  void put(const T& value) {
    const auto* bytes = reinterpret_cast<const std::byte*>(&value);
    bytes_.insert(bytes_.end(), bytes, bytes + sizeof(T));
  }
  template <typename T>
  void put_array(const std::vector<T>& values) {
    const auto* bytes = reinterpret_cast<const std::byte*>(values.data());
    bytes_.insert(bytes_.end(), bytes, bytes + values.size() * sizeof(T));
  }
  void put_string(const std::string& text) {
    put<std::uint32_t>(static_cast<std::uint32_t>(text.size()));
    const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
    bytes_.insert(bytes_.end(), bytes, bytes + text.size());
  }
  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

class ByteReader {
 public:
  ByteReader(std::span<const std::byte> bytes, std::string origin)
      : bytes_(bytes), origin_(std::move(origin)) {}
  template <typename T>
  T get() {
    T value;
    take(&value, sizeof(T));
    return value;
  }
  template <typename T>
  std::vector<T> get_array(std::size_t count) {
    if (count > remaining() / sizeof(T)) truncated();
    std::vector<T> values(count);
    take(values.data(), count * sizeof(T));
    return values;
  }
  std::string get_string() {
    const auto size = get<std::uint32_t>();
    if (size > remaining()) truncated();
    std::string text(size, '\0');
    take(text.data(), size);
    return text;
  }
  std::size_t remaining() const { return bytes_.size() - offset_; }
  bool done() const { return offset_ == bytes_.size(); }
  const std::string& origin() const { return origin_; }

 private:
  void take(void* dst, std::size_t n) {
    if (n > remaining()) truncated();
    if (n == 0) return;  // an empty array's data() may be null, and memcpy(null, ..., 0) is UB
    std::memcpy(dst, bytes_.data() + offset_, n);
    offset_ += n;
  }
  [[noreturn]] void truncated() const {
    throw std::runtime_error(origin_ + ": truncated sample block (" +
                             std::to_string(bytes_.size()) + " bytes)");
  }
  std::span<const std::byte> bytes_;
  std::string origin_;
  std::size_t offset_ = 0;
};

void put_samples(ByteWriter& out, std::span<const Sample> samples);
std::vector<Sample> get_samples(ByteReader& in);

// One block holding exactly `samples`; decoding refuses trailing bytes.
std::vector<std::byte> serialize_samples(std::span<const Sample> samples);
std::vector<Sample> deserialize_samples(std::span<const std::byte> bytes,
                                        const std::string& origin);

}  // namespace mlbert::data
