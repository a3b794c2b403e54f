// Package check for BERT submissions. The order of checks and what counts as an error follow the
// official package_checker (system descriptions, result count, compliance with one tolerated
// failure, power layout, then seeds and RCP in the closed division); where the official tool would
// stop with a Python exception (missing systems/<system>.json, unreadable logs) this one records an
// error naming the file and goes on, so one run reports everything wrong with the package.
#include "mlperf_logging/package/package.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <system_error>
#include <tuple>

#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/rules/rulesets.h"
#include "mlperf_logging/package/system_desc.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kLayoutTag = "[layout] ";

// Source-file extensions the official seed checker calls source code.
constexpr std::string_view kSourceExtensions[] = {
    ".py", ".cc", ".cpp", ".cxx", ".c", ".h", ".hh", ".hpp", ".hxx", ".sh", ".sub", ".cu", ".cuh"};

std::vector<fs::path> sorted_subdirectories(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec)) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> sorted_entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

class Report {
 public:
  Report(PackageResult& result, fs::path root) : result_(result), root_(std::move(root)) {}
  void error(const fs::path& where, std::string text) {
    add(PackageFinding::Level::error, where, std::move(text));
  }
  void warning(const fs::path& where, std::string text) {
    add(PackageFinding::Level::warning, where, std::move(text));
  }
  void info(const fs::path& where, std::string text) {
    add(PackageFinding::Level::info, where, std::move(text));
  }
  fs::path relative(const fs::path& where) const {
    std::error_code ec;
    fs::path rel = fs::relative(where, root_, ec);
    return ec || rel.empty() ? where : rel;
  }

 private:
  void add(PackageFinding::Level level, const fs::path& where, std::string text) {
    result_.findings.push_back({level, relative(where), std::move(text)});
  }
  PackageResult& result_;
  fs::path root_;
};

// The flags a package_checker_params file sets. Like the official checker, a line counts only
// when it equals the flag exactly, newline included, i.e. only an unterminated last line.
struct BypassFlags {
  bool rcp = false;
  bool seed = false;
};

BypassFlags read_params(const fs::path& file, Report& report) {
  BypassFlags flags;
  // A folder of that name opens, and then fails in the read (EISDIR), which libstdc++'s filebuf
  // throws from inside the iterator below: a fuzzer's tree ended the checker so.
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    report.error(file, "package_checker_params is not a file");
    return flags;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    report.error(file, "cannot read package_checker_params");
    return flags;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    ++line_number;
    // Universal newlines, as Python reads the file: \n, \r\n and \r all end a line.
    const auto end = text.find_first_of("\r\n", start);
    const bool terminated = end != std::string::npos;
    const std::string line = text.substr(start, terminated ? end - start : std::string::npos);
    start = !terminated                                                             ? text.size()
            : (text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n') ? end + 2
                                                                                    : end + 1;
    const bool known = line == "rcp-bypass" || line == "seed-checker-bypass";
    if (!known) continue;
    if (terminated) {
      // The official checker compares whole lines, newline included, so only an unterminated
      // last line takes effect; mlbert follows it and says so.
      report.warning(file, "line " + std::to_string(line_number) + " '" + line +
                               "' ends with a newline and is ignored (as officially); make it the "
                               "last line without a newline to take effect");
      continue;
    }
    if (line == "rcp-bypass") flags.rcp = true;
    if (line == "seed-checker-bypass") flags.seed = true;
  }
  return flags;
}

// ---- seeds --------------------------------------------------------------------------------------

// Python's int() of a logged seed value, as text; empty with `why` set when int() would raise.
std::optional<std::string> python_int_text(const nlohmann::json& value, std::string& why) {
  if (value.is_boolean()) return value.get<bool>() ? "1" : "0";
  if (value.is_number_integer()) return value.dump();
  if (value.is_number_float()) {
    const double x = value.get<double>();
    if (!std::isfinite(x)) {
      why = "cannot convert float " + value.dump() + " to integer";
      return std::nullopt;
    }
    char buffer[400];
    std::snprintf(buffer, sizeof buffer, "%.0f", std::trunc(x));
    return std::string(buffer) == "-0" ? "0" : buffer;
  }
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    const auto first = text.find_first_not_of(" \t\n\r\f\v");
    const auto last = text.find_last_not_of(" \t\n\r\f\v");
    if (first != std::string::npos) {
      text = text.substr(first, last - first + 1);
      std::string digits = text;
      bool negative = false;
      if (digits.front() == '+' || digits.front() == '-') {
        negative = digits.front() == '-';
        digits.erase(0, 1);
      }
      if (!digits.empty() &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
        return (negative && digits != "0" ? "-" : "") + digits;
      }
    }
    why = "invalid literal for int() with base 10: " + value.dump();
    return std::nullopt;
  }
  why = "int() argument must be a string or a number, not " + std::string(value.type_name());
  return std::nullopt;
}

std::string number_key(const nlohmann::json& value) {
  if (value.is_number_float()) {
    const double x = value.get<double>();
    if (std::isfinite(x) && x == std::trunc(x) && std::fabs(x) < 1e18) {
      return std::to_string(static_cast<long long>(x));
    }
  }
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

// Every record is validated (a parse error anywhere fails the seed check, as officially) but only
// seed records are decoded.
mllog::ParseOptions seed_records_only() {
  mllog::ParseOptions options;
  options.wanted = [](std::string_view key, bool key_is_string) {
    return key_is_string && key == "seed" ? mllog::ParseOptions::Want::all
                                          : mllog::ParseOptions::Want::skip;
  };
  return options;
}

// The official seed rule: every run logs a seed; no two runs log the same seed from the same
// source line. Returns the errors found.
std::vector<std::pair<fs::path, std::string>> check_seeds(const std::vector<fs::path>& files) {
  std::vector<std::pair<fs::path, std::string>> errors;
  std::map<std::tuple<std::string, std::string, std::string>, fs::path> seen;
  for (const fs::path& file : files) {
    struct Seed {
      std::string file, lineno, value;
      std::size_t line;
    };
    std::vector<Seed> seeds;
    std::vector<std::string> problems;
    try {
      mllog::for_each_record(
          file,
          [&](const mllog::LogRecord& record) {
            if (record.key != "seed") return;
            const std::string at = "line " + std::to_string(record.line);
            const auto& meta = record.metadata;
            if (!meta.is_object() || !meta.contains("file") || !meta.contains("lineno")) {
              problems.push_back(at + ": seed record lacks metadata.file or metadata.lineno");
              return;
            }
            std::string why;
            const auto value = python_int_text(record.value, why);
            if (!value) {
              problems.push_back(at + ": seed value: " + why);
              return;
            }
            seeds.push_back(
                {number_key(meta["file"]), number_key(meta["lineno"]), *value, record.line});
          },
          [&](const mllog::ParseError& error) {
            problems.push_back("line " + std::to_string(error.line) + ": " + error.message);
          },
          seed_records_only());
    } catch (const std::exception& e) {
      problems.push_back(e.what());
    }
    if (!problems.empty()) {
      // As officially: a file with unreadable seed records is an error and contributes no seeds.
      std::string text = "cannot read seeds: " + problems.front();
      if (problems.size() > 1) text += " (and " + std::to_string(problems.size() - 1) + " more)";
      errors.emplace_back(file, text);
      continue;
    }
    if (seeds.empty()) errors.emplace_back(file, "logs no seed");
    for (const Seed& seed : seeds) {
      const auto key = std::make_tuple(seed.file, seed.lineno, seed.value);
      const auto [it, inserted] = seen.emplace(key, file);
      if (!inserted) {
        errors.emplace_back(file, "logs seed " + seed.value + " from " + seed.file + ":" +
                                      seed.lineno + " (line " + std::to_string(seed.line) +
                                      "), the same seed from "
                                      "the same source line as " +
                                      it->second.filename().string());
      }
    }
  }
  return errors;
}

// ---- power --------------------------------------------------------------------------------------

// The official power layout rule: power/<result_N>/node_<i>.txt and sw_<i>.txt with i in range and
// the same node and switch counts in every run. Returns the result names with problems.
std::set<std::string> check_power(const fs::path& power_folder,
                                  const std::vector<fs::path>& results, Report& report) {
  std::set<std::string> bad;
  std::vector<std::pair<std::string, std::size_t>> node_counts, sw_counts;
  for (const fs::path& result : results) {
    const std::string name = result.stem().string();
    const fs::path folder = power_folder / name;
    if (!fs::is_directory(folder)) {
      report.warning(folder, "package does not contain the power result for " + name);
      bad.insert(name);
      continue;
    }
    std::vector<long> node_index, sw_index;
    std::size_t total = 0;
    bool names_ok = true;
    for (const fs::path& entry : sorted_entries(folder)) {
      ++total;
      const std::string file = entry.filename().string();
      const bool node = file.starts_with("node");
      const bool sw = file.starts_with("sw");
      if (!node && !sw) continue;
      const std::string stem = entry.stem().string();
      const std::string suffix =
          stem.substr(stem.rfind('_') == std::string::npos ? 0 : stem.rfind('_') + 1);
      long index = -1;
      const auto [ptr, ec] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), index);
      if (ec != std::errc() || ptr != suffix.data() + suffix.size()) {
        report.error(entry, "power file name does not end in _<index>");
        names_ok = false;
        continue;
      }
      (node ? node_index : sw_index).push_back(index);
    }
    if (total > node_index.size() + sw_index.size()) {
      report.warning(folder, std::to_string(total) + " files, some not named node_<i> or sw_<i>");
    }
    auto in_range = [](const std::vector<long>& indices) {
      return std::all_of(indices.begin(), indices.end(),
                         [&](long i) { return i >= 0 && i < static_cast<long>(indices.size()); });
    };
    if (!names_ok || !in_range(node_index)) {
      report.warning(folder, "node power files must be node_<i> with i in [0, " +
                                 std::to_string(node_index.size()) + ")");
      bad.insert(name);
    }
    if (!in_range(sw_index)) {
      report.warning(folder, "switch power files must be sw_<i> with i in [0, " +
                                 std::to_string(sw_index.size()) + ")");
      bad.insert(name);
    }
    node_counts.emplace_back(name, node_index.size());
    sw_counts.emplace_back(name, sw_index.size());
  }
  // Runs whose node (switch) count differs from the most common one.
  auto flag_outliers = [&](const std::vector<std::pair<std::string, std::size_t>>& counts,
                           const char* what) {
    std::map<std::size_t, int> tally;
    std::vector<std::size_t> order;
    for (const auto& [name, count] : counts) {
      if (tally[count]++ == 0) order.push_back(count);
    }
    std::size_t mode = 0;
    int best = -1;
    for (std::size_t count : order) {
      if (tally[count] > best) {
        best = tally[count];
        mode = count;
      }
    }
    for (const auto& [name, count] : counts) {
      if (count != mode) {
        report.warning(power_folder / name, std::string("inconsistent number of ") + what + " (" +
                                                std::to_string(count) + ", most runs have " +
                                                std::to_string(mode) + ")");
        bad.insert(name);
      }
    }
  };
  flag_outliers(node_counts, "node power files");
  flag_outliers(sw_counts, "switch power files");
  return bad;
}

// ---- one results/<system>/bert folder -----------------------------------------------------------

void check_benchmark(const fs::path& folder, const std::string& division,
                     const BypassFlags& system_flags, const PackageOptions& options, Report& report,
                     BenchmarkSummary& summary) {
  const auto results = find_result_files(folder);
  summary.result_files = static_cast<int>(results.size());
  BypassFlags flags = system_flags;
  std::size_t params_files = 0;
  const fs::path params = folder / "package_checker_params";
  if (fs::exists(params)) {
    ++params_files;
    const BypassFlags local = read_params(params, report);
    flags.rcp = flags.rcp || local.rcp;
    flags.seed = flags.seed || local.seed;
  }

  if (static_cast<int>(results.size()) != kBertResultFileCount) {
    report.error(folder,
                 "found " + std::to_string(results.size()) + " result_*.txt files, expected " +
                     std::to_string(kBertResultFileCount) + " (wrong count or wrong file names)");
  }
  const auto entries = sorted_entries(folder);
  if (entries.size() > results.size() + params_files) {
    std::string unknown;
    for (const auto& entry : entries) {
      const std::string name = entry.filename().string();
      if (!is_result_file_name(name) && name != "package_checker_params") {
        unknown += (unknown.empty() ? "" : ", ") + name;
      }
    }
    report.warning(folder, "files not named result_*.txt: " + unknown);
  }
  for (const auto& result : results) {
    const std::string name = result.filename().string();
    bool standard = false;
    for (int i = 0; i < kBertResultFileCount; ++i)
      standard |= name == "result_" + std::to_string(i) + ".txt";
    if (!standard) {
      report.warning(result, std::string(kLayoutTag) +
                                 "result files are named result_0.txt .. result_" +
                                 std::to_string(kBertResultFileCount - 1) + ".txt");
    }
  }

  // Compliance of each run.
  std::set<std::string> failed;
  std::vector<std::pair<fs::path, std::string>> compliance_failures;
  mllog::CheckOptions check_options;
  check_options.usage = "training";
  check_options.ruleset = options.ruleset;
  check_options.quiet = options.quiet;
  check_options.werror = options.werror;
  for (const auto& result : results) {
    try {
      const mllog::CheckResult check = mllog::check_log(result, check_options);
      if (check.division && !division.empty() && *check.division != division) {
        report.warning(result, "logs submission_division '" + *check.division +
                                   "' but the system description says '" + division + "'");
      }
      if (!check.success) {
        failed.insert(result.stem().string());
        std::string text = "compliance check FAILED";
        std::size_t shown = 0;
        for (const auto& message : check.messages) {
          if (message.level != mllog::CheckMessage::Level::error) continue;
          if (++shown > 3) {
            text += "; ... (" + std::to_string(check.error_count()) +
                    " errors in all; run mlbert check)";
            break;
          }
          text += "; " + message.rule +
                  (message.line ? " at line " + std::to_string(message.line) : "") + ": " +
                  message.text;
        }
        compliance_failures.emplace_back(result, text);
      }
      if (!options.quiet) {
        for (const auto& message : check.messages) {
          if (message.level == mllog::CheckMessage::Level::warning) {
            report.warning(result,
                           "compliance warning: " + message.rule +
                               (message.line ? " at line " + std::to_string(message.line) : "") +
                               ": " + message.text);
          }
        }
      }
    } catch (const std::exception& e) {
      failed.insert(result.stem().string());
      compliance_failures.emplace_back(result, std::string("cannot check: ") + e.what());
    }
  }
  const fs::path power = folder / "power";
  if (fs::exists(power)) {
    const auto power_bad = check_power(power, results, report);
    failed.insert(power_bad.begin(), power_bad.end());
  }
  summary.failed_compliance = static_cast<int>(failed.size());
  // One failing run is tolerated (olympic scoring drops it); more fail the folder.
  for (const auto& [file, text] : compliance_failures) {
    if (failed.size() == 1)
      report.warning(file, text);
    else
      report.error(file, text);
  }
  if (failed.size() == 1) {
    report.warning(
        folder, "1 file does not comply (" + *failed.begin() + "): accepted under olympic scoring");
  } else if (failed.size() > 1) {
    report.error(folder, std::to_string(failed.size()) +
                             " files do not comply: the directory cannot "
                             "be accepted");
  }

  if (division != "closed") return;
  if (!mllog::find_training_ruleset(options.ruleset)->package_audits) {
    report.info(folder, "no seed or RCP check for ruleset " + options.ruleset +
                            ": the official package checker runs them from 1.0.0 on");
    return;
  }
  // Seeds.
  const bool seed_bypass = options.seed_checker_bypass || flags.seed;
  if (seed_bypass) {
    report.info(folder, "seed check bypassed");
    summary.seeds_ok = true;
  } else {
    const auto seed_errors = check_seeds(results);
    summary.seeds_ok = seed_errors.empty();
    for (const auto& [file, text] : seed_errors) report.error(file, "seed check: " + text);
  }
  // RCP.
  RcpOptions rcp_options;
  rcp_options.ruleset = options.ruleset;
  rcp_options.bert_train_samples = options.rcp_bert_train_samples;
  rcp_options.bypass = options.rcp_bypass || flags.rcp;
  rcp_options.write_scaling = options.write_scaling;
  try {
    const RcpResult rcp = check_rcp_directory(folder, rcp_options);
    summary.rcp_ok = rcp.passed;
    summary.rcp_message = rcp.message;
    summary.rcp_scaling_factor = rcp.scaling_factor;
    for (const auto& problem : rcp.problems) report.error(folder, "RCP check: " + problem);
    std::string detail = rcp.message;
    if (rcp.reference && rcp.submission_mean) {
      char buffer[200];
      std::snprintf(buffer, sizeof buffer, " (%s: submission mean %.1f samples, minimum %.1f)",
                    rcp.reference->name.c_str(), *rcp.submission_mean,
                    rcp.reference->mean / rcp.reference->max_speedup);
      detail += buffer;
    }
    if (!rcp.passed) {
      report.error(folder, "RCP test failed: " + detail);
    } else {
      if (rcp.bypassed)
        report.warning(folder, "RCP test " + detail + ": needs committee review");
      else
        report.info(folder, "RCP test passed: " + detail);
      if (rcp.scaling_factor > 1.0) {
        report.info(folder, "converges faster than the RCP mean: score scaling factor " +
                                mllog::python_float_repr(rcp.scaling_factor) +
                                (options.write_scaling ? " (written to scaling.json)" : ""));
      }
    }
  } catch (const std::exception& e) {
    summary.rcp_ok = false;
    report.error(folder, std::string("RCP check: ") + e.what());
  }
}

bool has_source_file(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string ext = it->path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    for (auto known : kSourceExtensions) {
      if (ext == known) return true;
    }
  }
  return false;
}

}  // namespace

std::size_t PackageResult::error_count() const {
  return static_cast<std::size_t>(
      std::count_if(findings.begin(), findings.end(),
                    [](const auto& f) { return f.level == PackageFinding::Level::error; }));
}

std::size_t PackageResult::warning_count() const {
  return static_cast<std::size_t>(
      std::count_if(findings.begin(), findings.end(),
                    [](const auto& f) { return f.level == PackageFinding::Level::warning; }));
}

PackageResult check_package(const fs::path& org_dir, const PackageOptions& options) {
  require_ruleset_format(options.ruleset);
  if (!mllog::is_supported_ruleset(options.ruleset)) {
    std::string known;
    for (const auto& r : mllog::supported_rulesets()) known += (known.empty() ? "" : ", ") + r;
    throw AuditError("ruleset " + options.ruleset +
                     " has no BERT compliance rules (known: " + known + ")");
  }
  // Before 1.0.0 the official checker judges no system description; it only reads the division.
  const bool audit_systems = mllog::find_training_ruleset(options.ruleset)->package_audits;
  const std::string bert_absence = mllog::bert_absence(options.ruleset);
  std::error_code ec;
  if (!fs::is_directory(org_dir, ec)) throw AuditError(org_dir.string() + ": not a directory");

  PackageResult result;
  result.root = org_dir;
  Report report(result, org_dir);

  // System descriptions: every systems/*.json.
  const fs::path systems = org_dir / "systems";
  std::map<std::string, std::string> division_of;  // system -> division
  std::set<std::string> no_division;  // descriptions the official checker cannot read it from
  if (!fs::is_directory(systems)) {
    report.error(systems,
                 std::string(kLayoutTag) + "no systems/ folder with the system descriptions");
  } else {
    for (const fs::path& entry : sorted_entries(systems)) {
      // As the official glob systems/*.json: hidden files are not descriptions.
      if (entry.extension() != ".json" || entry.filename().string().front() == '.' ||
          !fs::is_regular_file(entry)) {
        continue;
      }
      const SystemDescResult desc = check_system_desc_file(entry, options.ruleset, options.werror);
      const std::string label = audit_systems ? "system description: "
                                              : "system description (not judged in ruleset " +
                                                    options.ruleset + " packages): ";
      for (const auto& finding : desc.findings) {
        const std::string text =
            (finding.field.empty() ? "" : "field '" + finding.field + "': ") + finding.text;
        if (finding.level == SystemDescFinding::Level::error && audit_systems)
          report.error(entry, label + text);
        else
          report.warning(entry, label + text);
      }
      division_of[entry.stem().string()] = desc.division.value_or("");
      if (!desc.has_division) no_division.insert(entry.stem().string());
    }
  }

  // Implementation code.
  const fs::path implementations = org_dir / "benchmarks" / kBertBenchmark / "implementations";
  const auto impls = fs::is_directory(implementations) ? sorted_subdirectories(implementations)
                                                       : std::vector<fs::path>{};
  if (impls.empty()) {
    report.error(
        implementations,
        std::string(kLayoutTag) +
            "no implementation folder "
            "benchmarks/bert/implementations/<implementation>/ with the code of the submission");
  }
  for (const fs::path& impl : impls) {
    if (!has_source_file(impl)) {
      report.warning(impl, std::string(kLayoutTag) + "implementation folder holds no source files");
    }
  }

  // Results.
  const fs::path results = org_dir / "results";
  if (!fs::is_directory(results)) {
    report.error(results, std::string(kLayoutTag) + "no results/ folder");
  } else {
    for (const fs::path& system_folder : sorted_subdirectories(results)) {
      const std::string system = system_folder.filename().string();
      BypassFlags system_flags;
      if (fs::exists(system_folder / "package_checker_params")) {
        system_flags = read_params(system_folder / "package_checker_params", report);
      }
      for (const fs::path& benchmark_folder : sorted_subdirectories(system_folder)) {
        const std::string benchmark = benchmark_folder.filename().string();
        const auto division = division_of.find(system);
        if (division == division_of.end()) {
          report.error(benchmark_folder,
                       "no system description systems/" + system + ".json for these results");
        } else if (!audit_systems && no_division.count(system)) {
          report.error(benchmark_folder, "systems/" + system +
                                             ".json has no readable division field, which the "
                                             "official checker reads for these results");
        }
        if (benchmark != kBertBenchmark) {
          report.warning(benchmark_folder,
                         "skipping benchmark '" + benchmark + "': mlbert checks BERT only");
          continue;
        }
        if (!bert_absence.empty()) {
          report.warning(benchmark_folder,
                         "skipping benchmark 'bert', as officially: " + bert_absence);
          continue;
        }
        BenchmarkSummary summary;
        summary.system = system;
        summary.folder = report.relative(benchmark_folder);
        summary.division = division == division_of.end() ? "" : division->second;
        check_benchmark(benchmark_folder, summary.division, system_flags, options, report, summary);
        result.benchmarks.push_back(std::move(summary));
      }
    }
    if (result.benchmarks.empty() && !bert_absence.empty()) {
      report.error(results, std::string(kLayoutTag) + bert_absence +
                                ": no BERT results can be checked under this ruleset");
    } else if (result.benchmarks.empty()) {
      report.error(results, std::string(kLayoutTag) +
                                "no BERT results: expected results/<system>/bert/result_*.txt");
    }
  }
  result.passed = result.error_count() == 0;
  return result;
}

}  // namespace mlbert::logging
