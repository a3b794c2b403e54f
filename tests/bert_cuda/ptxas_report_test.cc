// The ptxas resource report the normal build files for every CUDA object (bert/cuda/
// ptxas_capture.sh): no kernel may spill registers or use a stack frame on any architecture the
// build targets, and the attention (64-row and FlashAttention-2-class), LayerNorm (both
// backwards) and embedding kernels must all be in the report.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct KernelReport {
  std::string name;  // mangled
  std::string arch;  // sm_80
  int registers = -1;
  long stack_bytes = -1, spill_stores = -1, spill_loads = -1;
};

std::vector<KernelReport> parse_reports(const std::filesystem::path& dir) {
  std::vector<KernelReport> kernels;
  const std::regex entry(R"(Compiling entry function '([^']+)' for '(sm_[0-9a-z]+)')");
  const std::regex properties(R"(Function properties for (\S+))");
  const std::regex stack(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  const std::regex used(R"(Used (\d+) registers)");
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    if (file.path().extension() != ".txt") continue;
    std::ifstream in(file.path());
    std::string line, properties_of;
    KernelReport* current = nullptr;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, entry)) {
        kernels.push_back({m[1], m[2]});
        current = &kernels.back();
      } else if (std::regex_search(line, m, properties)) {
        properties_of = m[1];
      } else if (current && properties_of == current->name && std::regex_search(line, m, stack)) {
        current->stack_bytes = std::stol(m[1]);
        current->spill_stores = std::stol(m[2]);
        current->spill_loads = std::stol(m[3]);
      } else if (current && std::regex_search(line, m, used)) {
        current->registers = std::stoi(m[1]);
      }
    }
  }
  return kernels;
}

// The configured CUDA architectures as ptxas names them ("80,90" -> sm_80, sm_90).
std::set<std::string> configured_archs() {
  std::set<std::string> archs;
  std::stringstream list(MLBERT_CUDA_ARCHITECTURES);
  std::string item;
  while (std::getline(list, item, ',')) {
    const std::string digits = item.substr(0, item.find_first_not_of("0123456789"));
    if (!digits.empty()) archs.insert("sm_" + digits);
  }
  return archs;
}

}  // namespace

TEST_CASE(
    "ptxas report: no spills and no stack frame in the attention (both families), LayerNorm and "
    "embedding kernels") {
  // The build's report folder, or MLBERT_PTXAS_REPORT_DIR (a prebuilt bundle run elsewhere).
  const char* env = std::getenv("MLBERT_PTXAS_REPORT_DIR");
  const std::filesystem::path dir = env && *env ? env : MLBERT_PTXAS_REPORT_DIR;
  REQUIRE(std::filesystem::is_directory(dir));
  const std::vector<KernelReport> kernels = parse_reports(dir);
  const std::vector<std::string> families = {"attention_fwd_kernel",     "attention_bwd_kernel",
                                             "attention_fa2_fwd_kernel", "attention_fa2_bwd_kernel",
                                             "layer_norm_fwd_kernel",    "layer_norm_bwd_kernel",
                                             "embedding_fwd_kernel",     "embedding_bwd_kernel",
                                             "layer_norm_bwd_stream_kernel"};
  std::map<std::string, std::set<std::string>> seen;  // family -> archs
  REQUIRE_FALSE(kernels.empty());
  for (const KernelReport& k : kernels) {
    INFO(k.name << " for " << k.arch << ": " << k.registers << " registers, " << k.stack_bytes
                << " bytes stack, " << k.spill_stores << "/" << k.spill_loads
                << " bytes spill stores/loads");
    REQUIRE(k.stack_bytes == 0);
    REQUIRE(k.spill_stores == 0);
    REQUIRE(k.spill_loads == 0);
    REQUIRE(k.registers > 0);
    REQUIRE(k.registers <= 255);
    for (const std::string& family : families) {
      if (k.name.find(family) != std::string::npos) seen[family].insert(k.arch);
    }
  }
  // Every family was reported for every configured architecture (a missing report is a failure).
  for (const std::string& family : families) {
    INFO(family);
    for (const std::string& arch : configured_archs()) {
      INFO(arch);
      CHECK(seen[family].count(arch) == 1);
    }
  }
}
