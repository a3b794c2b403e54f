// Submission layout helpers shared by score, rcp, system-check and package. MLLOG lines are read
// one at a time (a 1 GB log never sits in memory) and handed over as Latin-1 bytes, as the official
// tools see them, so a stray non-UTF-8 byte never becomes an error the official tools would not
// raise.
#include "mlperf_logging/package/layout.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <regex>
#include <system_error>

#include "common/input_file.h"
#include "common/utf8.h"
#include "mlperf_logging/log/python_json.h"
#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

constexpr std::string_view kMllogToken = ":::MLLOG ";

// Run number of "result_<n>.txt", for sorting result_10 after result_9.
long run_number(const std::filesystem::path& file) {
  const std::string stem = file.stem().string();
  const auto underscore = stem.rfind('_');
  if (underscore == std::string::npos) return -1;
  long n = -1;
  const char* first = stem.data() + underscore + 1;
  const char* last = stem.data() + stem.size();
  auto [ptr, ec] = std::from_chars(first, last, n);
  return (ec == std::errc() && ptr == last) ? n : -1;
}

}  // namespace

bool is_result_file_name(std::string_view name) {
  return name.size() >= 11 && name.starts_with("result_") && name.ends_with(".txt");
}

std::vector<std::filesystem::path> find_result_files(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec))  // a symlink loop or a permission denied is no absence
    throw AuditError(dir.string() + ": " + (ec ? ec.message() : std::string("no such directory")));
  if (!std::filesystem::is_directory(dir, ec)) throw AuditError(dir.string() + ": not a directory");
  std::vector<std::filesystem::path> files;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) throw AuditError(dir.string() + ": cannot list directory: " + ec.message());
  for (const auto& entry : it) {
    if (is_result_file_name(entry.path().filename().string())) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    const long ra = run_number(a);
    const long rb = run_number(b);
    return ra != rb ? ra < rb : a.filename() < b.filename();
  });
  return files;
}

std::vector<std::filesystem::path> sorted_entries(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::filesystem::path> sorted_subdirectories(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec)) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string os_path_join(const std::string& a, const std::string& b) {
  return a.empty() || a.back() == '/' ? a + b : a + "/" + b;
}

void require_ruleset_format(std::string_view ruleset) {
  static const std::regex kPattern(R"(\d+\.\d+\.\d+)");
  if (!std::regex_match(ruleset.begin(), ruleset.end(), kPattern)) {
    throw AuditError("ruleset '" + std::string(ruleset) + "' is not of the form M.m.p, e.g. 4.1.0");
  }
}

void require_ruleset_with_bert_rules(std::string_view ruleset) {
  require_ruleset_format(ruleset);
  if (!mllog::is_supported_ruleset(ruleset)) {
    throw AuditError("ruleset " + std::string(ruleset) + " has no BERT compliance rules (known: " +
                     mllog::ruleset_names(&mllog::TrainingRuleset::bert_rules) + ")");
  }
}

std::optional<std::string> ruleset_from_path(const std::filesystem::path& path) {
  static const std::regex kRound(R"((?:training_results_)?v(\d+)\.(\d+))");
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) absolute = path;
  std::optional<std::string> found;
  for (const auto& component : absolute) {  // the innermost matching component wins
    std::smatch m;
    const std::string name = component.string();
    if (std::regex_match(name, m, kRound)) found = m[1].str() + "." + m[2].str() + ".0";
  }
  return found;
}

std::optional<std::string> logged_division(const std::vector<std::filesystem::path>& files) {
  std::optional<std::string> common;
  for (const auto& file : files) {
    std::optional<std::string> division;
    try {
      for_each_mllog_payload(file, [&](std::string_view payload, int) {
        if (division || payload.find("submission_division") == std::string_view::npos) return;
        try {
          const nlohmann::json record = mllog::pyjson::loads(payload);
          if (!record.is_object() || record.value("key", nlohmann::json()) != "submission_division")
            return;
          const auto value = record.find("value");
          if (value != record.end() && value->is_string()) division = value->get<std::string>();
        } catch (const mllog::pyjson::DecodeError&) {
          // A malformed line says nothing about the division; the checks report it.
        }
      });
    } catch (const AuditError&) {
      return std::nullopt;
    }
    if (!division || (common && *common != *division)) return std::nullopt;
    common = division;
  }
  return common;
}

namespace {

// "<file>: cannot open file: <why>", the why naming a FIFO or device that would block a read.
std::ifstream open_audited_file(const std::filesystem::path& file) {
  try {
    return files::open_input(file, "file");
  } catch (const std::runtime_error& e) {
    throw AuditError(e.what());
  }
}

}  // namespace

nlohmann::json read_json_file(const std::filesystem::path& file) {
  std::ifstream in = open_audited_file(file);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    // A syntax error ("parse error at line L, column C: ...") or a number past double ("number
    // overflow parsing '1e999'"), as nlohmann words it.
    std::string what = e.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    throw AuditError(file.string() + ": malformed JSON: " + what);
  }
}

void for_each_mllog_payload(
    const std::filesystem::path& file,
    const std::function<void(std::string_view payload, int line)>& on_line) {
  std::ifstream in = open_audited_file(file);
  std::string raw;
  int line_number = 0;
  auto handle = [&](std::string_view line) {
    ++line_number;
    const auto token = line.rfind(kMllogToken);
    if (token == std::string_view::npos) return;
    std::string_view payload = line.substr(token + kMllogToken.size());
    while (!payload.empty() && is_python_space(static_cast<unsigned char>(payload.back()))) {
      payload.remove_suffix(1);
    }
    on_line(payload, line_number);
  };
  while (std::getline(in, raw)) {
    // Universal newlines: a lone '\r' also ends a line.
    std::string_view rest = raw;
    if (!rest.empty() && rest.back() == '\r') rest.remove_suffix(1);
    for (auto cr = rest.find('\r'); cr != std::string_view::npos; cr = rest.find('\r')) {
      handle(rest.substr(0, cr));
      rest.remove_prefix(cr + 1);
    }
    handle(rest);
  }
  if (in.bad()) throw AuditError(file.string() + ": read error");
}

std::filesystem::path find_system_description(const std::filesystem::path& results_dir) {
  std::vector<std::filesystem::path> candidates = {results_dir / "system.json"};
  std::filesystem::path up = std::filesystem::absolute(results_dir).lexically_normal();
  if (up.filename().empty()) up = up.parent_path();
  if (up.filename() == kBertBenchmark) {
    up = up.parent_path();
    candidates.push_back(up / "system.json");
  }
  // The package layout: <org>/results/<system>/bert -> <org>/systems/<system>.json.
  if (up.parent_path().filename() == "results")
    candidates.push_back(up.parent_path().parent_path() / "systems" /
                         (up.filename().string() + ".json"));
  std::error_code ec;
  for (const auto& candidate : candidates)
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  return {};
}

}  // namespace mlbert::logging
