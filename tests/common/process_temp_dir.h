// A folder of one test process under the system's temp folder, `<prefix><pid>`, removed with all it
// holds when the owner is destroyed (at exit for a static one), so a test that fails before its
// own clean-up, or a job a test kills, leaves nothing behind.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace mlbert::test {

struct ProcessTempDir {
  std::filesystem::path path;
  explicit ProcessTempDir(const std::string& prefix)
      : path(std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()))) {}
  ProcessTempDir(const ProcessTempDir&) = delete;
  ProcessTempDir& operator=(const ProcessTempDir&) = delete;
  ~ProcessTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace mlbert::test
