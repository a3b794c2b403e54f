// `mlbert --version`, from the generated build info and the log toolkit's ruleset list.
#include "harness/cli/version.h"

#include "mlperf_logging/cli/cli.h"

namespace mlbert {

std::string version_text() {
  const BuildInfo& info = build_info();
  std::string text =
      "mlbert " + std::string(info.version) + " (commit " + std::string(info.commit) + ")\n";
  if (info.cuda) {
    std::string archs;
    std::string_view rest = info.cuda_architectures;
    while (!rest.empty()) {
      const auto end = rest.find(',');
      archs += (archs.empty() ? "sm_" : ", sm_") + std::string(rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
    text += "CUDA backend: built in, for " + archs + " (nvcc " + std::string(info.cuda_compiler) +
            ")\n";
  } else {
    text += "CUDA backend: not built in (CPU backend only; configure with nvcc to add it)\n";
  }
  std::string rulesets;
  for (const auto& r : logging::rulesets_by_version())
    rulesets += (rulesets.empty() ? "" : ", ") + r;
  text += "rulesets: " + rulesets + " (newest with BERT: " + logging::newest_bert_ruleset() + ")";
  return text;
}

}  // namespace mlbert
