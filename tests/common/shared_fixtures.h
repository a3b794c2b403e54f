// Where tests find the steering repo's shared/ data (real MLPerf logs, rules, RCPs).
// Tests that need it are registered NEEDS_SHARED, so ctest skips them visibly when it is absent.
#pragma once
#include <cstdlib>
#include <filesystem>

namespace mlbert::test {
inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("MLBERT_SHARED_DIR"); env && *env) return env;
  return MLBERT_SHARED_DIR;
}
inline std::filesystem::path fixtures_dir() { return shared_dir() / "fixtures"; }
inline std::filesystem::path source_dir() { return MLBERT_SOURCE_DIR; }
inline std::filesystem::path binary_dir() { return MLBERT_BINARY_DIR; }
}  // namespace mlbert::test
