// SHA-256 (FIPS 180-4) of byte streams and files: the fingerprint an auditor records for each
// result log, and the digest that tells two logs' contents apart.
//
// Design choice: written here rather than taken from OpenSSL or Nettle. Both are in Debian, but
// `mlbert`, the binary that audits, links nothing beyond the C++ runtime so that it starts in about
// a millisecond; loading libcrypto.so adds several milliseconds to every `mlbert check` (measured
// on the project VM), and a static copy of either library would tie the binary to its licence
// terms. The tests pin the FIPS 180-4 example vectors and a million-byte message.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace mlbert::logging {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t bytes);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest of everything updated so far; the object must not be updated afterwards.
  std::array<std::uint8_t, 32> finish();
  // finish() as 64 lower-case hex digits.
  std::string hex();

 private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

// Hex SHA-256 of `text`, and of a whole file (read in 1 MiB pieces; std::runtime_error naming the
// file when it cannot be read).
std::string sha256_hex(std::string_view text);
std::string sha256_file_hex(const std::filesystem::path& file);

}  // namespace mlbert::logging
