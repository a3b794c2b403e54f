// Seeds against the implementation folder the logs come from (see seed_source.h). A logged path
// names the file where it ran (e.g. /workspace/bert/run_pretraining.py); a package holds it under
// its own folders, so files are matched by their trailing path components, the file name at least.
#include "mlperf_logging/advise/seed_source.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <system_error>

#include "common/input_file.h"
#include "mlperf_logging/package/layout.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxFilesPerImplementation = 50'000;  // a bound on what one folder lists
constexpr std::int64_t kSeedLineSlack = 2;  // a call spread over lines: lineno may be any of them

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> parts;
  for (const auto& part : fs::path(path)) {
    const std::string text = part.string();
    if (!text.empty() && text != "/" && text != ".") parts.push_back(text);
  }
  return parts;
}

// How many trailing components two paths share.
std::size_t shared_suffix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[a.size() - 1 - n] == b[b.size() - 1 - n]) ++n;
  return n;
}

struct Implementation {
  fs::path dir;
  std::vector<std::vector<std::string>> files;  // relative paths, as components
};

std::vector<Implementation> list_implementations(const fs::path& org) {
  std::vector<Implementation> out;
  const fs::path root = org / "benchmarks" / kBertBenchmark / "implementations";
  for (const fs::path& dir : sorted_subdirectories(root)) {
    Implementation impl{dir, {}};
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         !ec && it != fs::recursive_directory_iterator() &&
         impl.files.size() < kMaxFilesPerImplementation;
         it.increment(ec)) {
      if (it->is_regular_file(ec))
        impl.files.push_back(components(fs::relative(it->path(), dir, ec).generic_string()));
    }
    out.push_back(std::move(impl));
  }
  return out;
}

// The file of `impl` that best matches a logged path, or nullptr.
const std::vector<std::string>* best_file(const Implementation& impl,
                                          const std::vector<std::string>& logged) {
  const std::vector<std::string>* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& file : impl.files) {
    const std::size_t n = shared_suffix(file, logged);
    if (n > best_len) best = &file, best_len = n;
  }
  return best;
}

// The implementation holding the most of the logs' source files; nullptr when none holds any.
const Implementation* implementation_of(const std::vector<Implementation>& impls,
                                        const std::vector<LogFacts>& runs) {
  std::set<std::string> sources;
  for (const LogFacts& run : runs) sources.insert(run.source_files.begin(), run.source_files.end());
  const Implementation* best = nullptr;
  std::size_t best_count = 0;
  for (const Implementation& impl : impls) {
    std::size_t count = 0;
    for (const std::string& source : sources) count += best_file(impl, components(source)) ? 1 : 0;
    if (count > best_count) best = &impl, best_count = count;
  }
  return best;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

// Whether lines lineno +- kSeedLineSlack of `file` mention "seed" (any case); the file's line count
// goes to `lines`.
bool mentions_seed_near(const fs::path& file, std::int64_t lineno, std::int64_t& lines) {
  std::ifstream in(file, std::ios::binary);
  std::string text;
  bool found = false;
  lines = 0;
  while (std::getline(in, text)) {
    ++lines;
    if (lines < lineno - kSeedLineSlack || lines > lineno + kSeedLineSlack) continue;
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    found = found || text.find("seed") != std::string::npos;
  }
  return found;
}

}  // namespace

void advise_seed_sources(const fs::path& org, const std::vector<LogFacts>& runs,
                         AdviceReport& report) {
  const std::vector<Implementation> impls = list_implementations(org);
  if (impls.empty()) {
    report.notes.push_back(org.string() +
                           ": no benchmarks/bert/implementations/ folder: seed sources not checked");
    return;
  }
  const Implementation* impl = implementation_of(impls, runs);
  std::set<std::pair<std::string, std::int64_t>> reported;  // one advisory per source line
  for (const LogFacts& run : runs) {
    for (const LoggedSeed& seed : run.seeds) {
      if (seed.source_file.empty() || !reported.insert({seed.source_file, seed.source_line}).second)
        continue;
      const std::string where = seed.source_file + ":" + std::to_string(seed.source_line);
      const auto* file = impl ? best_file(*impl, components(seed.source_file)) : nullptr;
      if (!file) {
        report.add(advice::kSeedSource, run.file, seed.line,
                   "the seed is logged from " + where + ", which " +
                       (impl ? "the implementation folder these logs come from (" +
                                   impl->dir.filename().string() + ") does not hold"
                             : std::string("no implementation folder holds")));
        continue;
      }
      std::int64_t lines = 0;
      const fs::path path = impl->dir / joined(*file);
      const std::string shown = impl->dir.filename().string() + "/" + joined(*file);
      if (const std::string why = files::unreadable_reason(path); !why.empty()) {
        report.add(advice::kSeedSource, run.file, seed.line,
                   "the seed is logged from " + where + ", but " + shown + " cannot be read (" +
                       why + ")");
        continue;
      }
      if (mentions_seed_near(path, seed.source_line, lines)) continue;
      report.add(advice::kSeedSource, run.file, seed.line,
                 seed.source_line > lines
                     ? "the seed is logged from " + where + ", but " + shown + " has only " +
                           std::to_string(lines) + " lines"
                     : "the seed is logged from " + where + ", but lines " +
                           std::to_string(std::max<std::int64_t>(1, seed.source_line - kSeedLineSlack)) +
                           "-" + std::to_string(seed.source_line + kSeedLineSlack) + " of " + shown +
                           " do not mention a seed: the package's code is not the code that ran");
    }
  }
}

}  // namespace mlbert::logging
