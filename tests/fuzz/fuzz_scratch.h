// Scratch files for fuzz targets whose parser reads from disk (HDF5 shards, vocab.txt, config
// files, result trees): one private directory per process under the system temp dir, removed at
// normal exit; scripts/fuzz.sh removes those of workers that were stopped or crashed (libFuzzer
// writes a crash's input to the artifacts folder).
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace mlbert::fuzz {

inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("mlbert_fuzz_" + std::to_string(::getpid()));
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
  }();
  // Registered after `dir` is built, so it runs before `dir` is destroyed.
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) std::abort();  // the scratch disk failing is no finding of the target
}

inline void write_file(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
}

}  // namespace mlbert::fuzz
