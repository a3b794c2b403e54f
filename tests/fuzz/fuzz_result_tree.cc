// libFuzzer target: the result-directory walkers of `mlbert score` and `mlbert package` on a small
// file tree decoded from the input. Byte 0 picks the ruleset and the package flags, byte 1 the
// scaling options; the rest is a list of entries, each starting on a line "@@ <path>" followed by
// the file's bytes up to the next such line ("@@ <path>/" makes a directory, "@@ <path> ->
// <target>" a relative symlink). Paths are kept inside the tree (components of [A-Za-z0-9._-], no
// ".."). Both walkers must report through findings or AuditError, never crash, and their verdicts
// must agree with their findings.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/package/package.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/package/score.h"
#include "tests/fuzz/fuzz_scratch.h"

namespace fs = std::filesystem;
namespace logging = mlbert::logging;

namespace {

constexpr size_t kMaxEntries = 64;
constexpr size_t kMaxDepth = 8;

// "a/b/c" as a relative path when every component is a plain name; nullopt otherwise.
std::optional<fs::path> plain_relative(std::string_view text, bool allow_parent) {
  fs::path out;
  size_t depth = 0;
  while (!text.empty()) {
    const size_t slash = text.find('/');
    const std::string_view part = text.substr(0, slash);
    text = slash == std::string_view::npos ? std::string_view() : text.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!allow_parent) return std::nullopt;
    } else {
      for (char c : part)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
          return std::nullopt;
    }
    if (++depth > kMaxDepth) return std::nullopt;
    out /= std::string(part);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// True when `link`'s target, resolved lexically from the link's folder, stays inside the tree.
bool target_inside(const fs::path& link, const fs::path& target) {
  int depth = static_cast<int>(std::distance(link.begin(), link.end())) - 1;
  for (const auto& part : target) {
    depth += part == ".." ? -1 : 1;
    if (depth < 0) return false;
  }
  return true;
}

void build_tree(const fs::path& root, std::string_view spec) {
  size_t entries = 0;
  size_t at = spec.starts_with("@@ ") ? 0 : spec.find("\n@@ ");
  while (at != std::string_view::npos && entries++ < kMaxEntries) {
    const size_t header = at + (spec[at] == '\n' ? 4 : 3);
    const size_t next = spec.find("\n@@ ", header);
    const std::string_view body = spec.substr(
        header, next == std::string_view::npos ? std::string_view::npos : next - header);
    at = next;
    const size_t eol = body.find('\n');
    const std::string_view name = body.substr(0, eol);
    const std::string_view content =
        eol == std::string_view::npos ? std::string_view() : body.substr(eol + 1);
    std::error_code ec;
    if (const size_t arrow = name.find(" -> "); arrow != std::string_view::npos) {
      const auto link = plain_relative(name.substr(0, arrow), false);
      const auto target = plain_relative(name.substr(arrow + 4), true);
      if (!link || !target || !target_inside(*link, *target)) continue;
      fs::create_directories((root / *link).parent_path(), ec);
      fs::create_symlink(*target, root / *link, ec);
    } else if (const auto path = plain_relative(name, false)) {
      if (name.ends_with("/")) {
        fs::create_directories(root / *path, ec);
      } else {
        fs::create_directories((root / *path).parent_path(), ec);
        // A name already taken by a folder, or under a file, is skipped like any bad entry.
        std::ofstream out(root / *path, std::ios::binary | std::ios::trunc);
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
      }
    }
  }
}

void check_score(const fs::path& dir, const std::string& ruleset, bool apply_scaling) {
  logging::ScoreOptions options;
  options.ruleset = ruleset;
  options.apply_scaling = apply_scaling;
  logging::SystemScore score;
  try {
    score = logging::score_system(dir, options);
  } catch (const logging::AuditError&) {
    return;
  }
  if (score.runs.empty()) std::abort();  // no result files is an AuditError
  int dropped = 0;
  for (const auto& run : score.runs) {
    if (run.counted != run.minutes.has_value()) std::abort();
    if (!run.counted) ++dropped;
  }
  if (dropped != score.dropped) std::abort();
  if (score.score && score.dropped > logging::kBertMaxDroppedRuns) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto& rulesets = mlbert::mllog::supported_rulesets();
  const std::string ruleset = rulesets[data[0] % rulesets.size()];
  const fs::path root = mlbert::fuzz::scratch_dir() / "package";
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root);
  build_tree(root, std::string_view(reinterpret_cast<const char*>(data + 2), size - 2));

  logging::PackageOptions options;
  options.ruleset = ruleset;
  options.quiet = data[0] & 0x08;
  options.werror = data[0] & 0x10;
  options.rcp_bypass = data[0] & 0x20;
  options.seed_checker_bypass = data[0] & 0x40;
  options.rcp_bert_train_samples = data[0] & 0x80;
  options.write_scaling = data[1] & 0x01;
  const logging::PackageResult result = logging::check_package(root, options);
  if (result.passed != (result.error_count() == 0)) std::abort();
  if (result.passed && result.benchmarks.empty()) std::abort();
  for (const auto& benchmark : result.benchmarks)
    if (benchmark.result_files == logging::kBertResultFileCount && result.passed &&
        benchmark.failed_compliance > logging::kBertMaxDroppedRuns)
      std::abort();

  // The summarizer's view of every results/<system> folder (score descends into bert/ itself).
  const bool apply_scaling = data[1] & 0x02;
  size_t scored = 0;
  for (fs::directory_iterator it(root / "results", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (++scored > 4) break;
    check_score(it->path(), ruleset, apply_scaling);
  }
  check_score(root, ruleset, apply_scaling);
  return 0;
}
