// What `mlbert --version` prints: the release, the commit built, the CUDA backend and the rulesets
// the log toolkit knows. build_info() is generated at build time (cmake/BuildInfo.cmake).
#pragma once
#include <string>
#include <string_view>

namespace mlbert {
struct BuildInfo {
  std::string_view version;             // the project's release, e.g. 0.1.0
  std::string_view commit;              // git commit, or how it is unknown
  bool cuda = false;                    // the CUDA backend is compiled into mlbert-core
  std::string_view cuda_architectures;  // e.g. "80,90"
  std::string_view cuda_compiler;       // nvcc's version
};
const BuildInfo& build_info();

// Several lines; the first is "mlbert <version> (commit <hash>)".
std::string version_text();
}  // namespace mlbert
