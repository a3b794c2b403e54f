// Package check for BERT submissions. The order of checks and what counts as an error follow the
// official package_checker (system descriptions, result count, compliance with one tolerated
// failure, power layout, then seeds and RCP in the closed division); where the official tool would
// stop with a Python exception (missing systems/<system>.json, unreadable logs) this one records an
// error naming the file and goes on, so one run reports everything wrong with the package.
#include "mlperf_logging/package/package.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/package/findings.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/package/power.h"
#include "mlperf_logging/package/seeds.h"
#include "mlperf_logging/package/system_desc.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kLayoutTag = "[layout] ";

// Source-file extensions the official seed checker calls source code.
constexpr std::string_view kSourceExtensions[] = {
    ".py", ".cc", ".cpp", ".cxx", ".c", ".h", ".hh", ".hpp", ".hxx", ".sh", ".sub", ".cu", ".cuh"};

// The flags a package_checker_params file sets. Like the official checker, a line counts only
// when it equals the flag exactly, newline included, i.e. only an unterminated last line.
struct BypassFlags {
  bool rcp = false;
  bool seed = false;
};

BypassFlags read_params(const fs::path& file, PackageFindings& findings) {
  BypassFlags flags;
  // A folder of that name opens, and then fails in the read (EISDIR), which libstdc++'s filebuf
  // throws from inside the iterator below: a fuzzer's tree ended the checker so.
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    findings.error(file, "package_checker_params is not a file");
    findings.official_stop(file, "package_checker_params cannot be read as a file");
    return flags;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    findings.error(file, "cannot read package_checker_params");
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
      findings.warning(file,
                       "line " + std::to_string(line_number) + " '" + line +
                           "' ends with a newline and is ignored (as officially); make it the "
                           "last line without a newline to take effect");
      continue;
    }
    if (line == "rcp-bypass") flags.rcp = true;
    if (line == "seed-checker-bypass") flags.seed = true;
  }
  return flags;
}

// ---- one results/<system>/bert folder -----------------------------------------------------------

// The result files' count and names, and what else the folder holds.
void check_result_layout(const fs::path& folder, const std::vector<fs::path>& results,
                         std::size_t params_files, PackageFindings& findings) {
  if (static_cast<int>(results.size()) != kBertResultFileCount) {
    findings.error(folder,
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
    findings.warning(folder, "files not named result_*.txt: " + unknown);
  }
  for (const auto& result : results) {
    const std::string name = result.filename().string();
    bool standard = false;
    for (int i = 0; i < kBertResultFileCount; ++i)
      standard |= name == "result_" + std::to_string(i) + ".txt";
    if (!standard) {
      findings.warning(result, std::string(kLayoutTag) +
                                   "result files are named result_0.txt .. result_" +
                                   std::to_string(kBertResultFileCount - 1) + ".txt");
    }
  }
}

// "rule at line N: text"
std::string rule_and_text(const mllog::CheckMessage& message) {
  return message.rule + (message.line ? " at line " + std::to_string(message.line) : "") + ": " +
         message.text;
}

// A failed compliance check in one line: its first three errors.
std::string failure_text(const mllog::CheckResult& check) {
  std::string text = "compliance check FAILED";
  std::size_t shown = 0;
  for (const auto& message : check.messages) {
    if (message.level != mllog::CheckMessage::Level::error) continue;
    if (++shown > 3) {
      text += "; ... (" + std::to_string(check.error_count()) + " errors in all; run mlbert check)";
      break;
    }
    text += "; " + rule_and_text(message);
  }
  return text;
}

// The runs of a folder that fail (by result name: compliance, then power) and why.
struct FailedRuns {
  std::set<std::string> names;
  std::vector<std::pair<fs::path, std::string>> compliance;  // (file, why) per failing log
};

// Compliance of each run; a log's warnings and a division other than its system's are findings.
FailedRuns check_compliance(const std::vector<fs::path>& results, const std::string& division,
                            const PackageOptions& options, PackageFindings& findings) {
  FailedRuns failed;
  mllog::CheckOptions check_options;
  check_options.usage = "training";
  check_options.ruleset = options.ruleset;
  check_options.quiet = options.quiet;
  check_options.werror = options.werror;
  for (const auto& result : results) {
    try {
      const mllog::CheckResult check = mllog::check_log(result, check_options);
      if (check.division && !division.empty() && *check.division != division) {
        findings.warning(result, "logs submission_division '" + *check.division +
                                     "' but the system description says '" + division + "'");
      }
      if (!check.success) {
        failed.names.insert(result.stem().string());
        failed.compliance.emplace_back(result, failure_text(check));
      }
      if (options.quiet) continue;
      for (const auto& message : check.messages) {
        if (message.level == mllog::CheckMessage::Level::warning)
          findings.warning(result, "compliance warning: " + rule_and_text(message));
      }
    } catch (const std::exception& e) {
      failed.names.insert(result.stem().string());
      failed.compliance.emplace_back(result, std::string("cannot check: ") + e.what());
      findings.official_stop(result, std::string("cannot be read: ") + e.what());
    }
  }
  return failed;
}

// One failing run is tolerated (olympic scoring drops it); more fail the folder.
void report_failed_runs(const fs::path& folder, const FailedRuns& failed,
                        PackageFindings& findings) {
  for (const auto& [file, text] : failed.compliance) {
    if (failed.names.size() == 1)
      findings.warning(file, text);
    else
      findings.error(file, text);
  }
  if (failed.names.size() == 1) {
    findings.warning(folder, "1 file does not comply (" + *failed.names.begin() +
                                 "): accepted under olympic scoring");
  } else if (failed.names.size() > 1) {
    findings.error(folder, std::to_string(failed.names.size()) +
                               " files do not comply: the directory cannot "
                               "be accepted");
  }
}

// The RCP test of a closed-division folder, as the package checker runs it.
void check_folder_rcp(const fs::path& folder, const BypassFlags& flags,
                      const PackageOptions& options, PackageFindings& findings,
                      BenchmarkSummary& summary) {
  RcpOptions rcp_options;
  rcp_options.ruleset = options.ruleset;
  rcp_options.bert_train_samples = options.rcp_bert_train_samples;
  rcp_options.bypass = options.rcp_bypass || flags.rcp;
  rcp_options.write_scaling = options.write_scaling;
  try {
    const RcpResult rcp = check_rcp_directory(folder, rcp_options);
    if (stops_official_rcp_checker(rcp))
      findings.official_stop(folder,
                             "the RCP checker cannot read the logs: " + rcp.problems.front());
    summary.rcp_ok = rcp.passed;
    summary.rcp_message = rcp.message;
    summary.rcp_scaling_factor = rcp.scaling_factor;
    for (const auto& problem : rcp.problems) findings.error(folder, "RCP check: " + problem);
    std::string detail = rcp.message;
    if (rcp.reference && rcp.submission_mean) {
      char buffer[200];
      std::snprintf(buffer, sizeof buffer, " (%s: submission mean %.1f samples, minimum %.1f)",
                    rcp.reference->name.c_str(), *rcp.submission_mean,
                    rcp.reference->mean / rcp.reference->max_speedup);
      detail += buffer;
    }
    if (!rcp.passed) {
      findings.error(folder, "RCP test failed: " + detail);
      return;
    }
    if (rcp.bypassed)
      findings.warning(folder, "RCP test " + detail + ": needs committee review");
    else
      findings.info(folder, "RCP test passed: " + detail);
    if (rcp.scaling_factor > 1.0) {
      findings.info(folder, "converges faster than the RCP mean: score scaling factor " +
                                mllog::python_float_repr(rcp.scaling_factor) +
                                (options.write_scaling ? " (written to scaling.json)" : ""));
    }
  } catch (const std::exception& e) {
    summary.rcp_ok = false;
    findings.error(folder, std::string("RCP check: ") + e.what());
  }
}

// Seeds and RCP, which the package checker runs on closed-division folders only.
void check_closed_division(const fs::path& folder, const std::vector<fs::path>& results,
                           const BypassFlags& flags, const PackageOptions& options,
                           PackageFindings& findings, BenchmarkSummary& summary) {
  if (!mllog::training_ruleset(options.ruleset).package_audits) {
    findings.info(folder, "no seed or RCP check for ruleset " + options.ruleset +
                              ": the official package checker runs them from 1.0.0 on");
    return;
  }
  if (options.seed_checker_bypass || flags.seed) {
    findings.info(folder, "seed check bypassed");
    summary.seeds_ok = true;
  } else {
    const auto seed_errors = check_seeds(results);
    summary.seeds_ok = seed_errors.empty();
    for (const auto& [file, text] : seed_errors) findings.error(file, "seed check: " + text);
  }
  check_folder_rcp(folder, flags, options, findings, summary);
}

void check_benchmark(const fs::path& folder, const std::string& division,
                     const BypassFlags& system_flags, const PackageOptions& options,
                     PackageFindings& findings, BenchmarkSummary& summary) {
  const auto results = find_result_files(folder);
  summary.result_files = static_cast<int>(results.size());
  BypassFlags flags = system_flags;
  std::size_t params_files = 0;
  const fs::path params = folder / "package_checker_params";
  if (fs::exists(params)) {
    ++params_files;
    const BypassFlags local = read_params(params, findings);
    flags.rcp = flags.rcp || local.rcp;
    flags.seed = flags.seed || local.seed;
  }
  check_result_layout(folder, results, params_files, findings);
  FailedRuns failed = check_compliance(results, division, options, findings);
  if (fs::exists(folder / "power")) {
    const auto power_bad = check_power(folder / "power", results, findings);
    failed.names.insert(power_bad.begin(), power_bad.end());
  }
  summary.failed_compliance = static_cast<int>(failed.names.size());
  report_failed_runs(folder, failed, findings);
  if (division == "closed")
    check_closed_division(folder, results, flags, options, findings, summary);
}

// ---- the package --------------------------------------------------------------------------------

// The division of each system, from systems/<system>.json.
struct SystemDivisions {
  std::map<std::string, std::string> of;  // system -> division ("" when not a string)
  std::set<std::string> unreadable;       // descriptions the official checker cannot read it from
};

// Every systems/*.json. Before 1.0.0 (`audit_systems` false) the official checker judges no system
// description; it only reads the division, so findings are warnings.
SystemDivisions check_system_descriptions(const fs::path& systems, const PackageOptions& options,
                                          bool audit_systems, PackageFindings& findings) {
  SystemDivisions divisions;
  if (!fs::is_directory(systems)) {
    findings.error(systems,
                   std::string(kLayoutTag) + "no systems/ folder with the system descriptions");
    return divisions;
  }
  const std::string label = audit_systems ? "system description: "
                                          : "system description (not judged in ruleset " +
                                                options.ruleset + " packages): ";
  for (const fs::path& entry : sorted_entries(systems)) {
    // As the official glob systems/*.json: hidden files are not descriptions.
    if (entry.extension() != ".json" || entry.filename().string().front() == '.' ||
        !fs::is_regular_file(entry)) {
      continue;
    }
    const SystemDescResult desc = check_system_desc_file(entry, options.ruleset, options.werror);
    if (audit_systems && !desc.official_stop.empty())
      findings.official_stop(entry, desc.official_stop);
    for (const auto& finding : desc.findings) {
      const std::string text =
          (finding.field.empty() ? "" : "field '" + finding.field + "': ") + finding.text;
      if (finding.level == SystemDescFinding::Level::error && audit_systems)
        findings.error(entry, label + text);
      else
        findings.warning(entry, label + text);
    }
    divisions.of[entry.stem().string()] = desc.division.value_or("");
    if (!desc.has_division) divisions.unreadable.insert(entry.stem().string());
  }
  return divisions;
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

// benchmarks/bert/implementations/<implementation>/, with source code in each: warnings, because
// the official checker has no such rule (package.h).
void check_implementations(const fs::path& org_dir, PackageFindings& findings) {
  const fs::path implementations = org_dir / "benchmarks" / kBertBenchmark / "implementations";
  const auto impls = fs::is_directory(implementations) ? sorted_subdirectories(implementations)
                                                       : std::vector<fs::path>{};
  if (impls.empty()) {
    findings.warning(
        implementations,
        std::string(kLayoutTag) +
            "no implementation folder "
            "benchmarks/bert/implementations/<implementation>/ with the code of the submission");
  }
  for (const fs::path& impl : impls) {
    if (!has_source_file(impl)) {
      findings.warning(impl,
                       std::string(kLayoutTag) + "implementation folder holds no source files");
    }
  }
}

// What every results/<system>/<benchmark> folder of one package is checked with.
struct ResultsContext {
  const PackageOptions& options;
  bool audit_systems;
  std::string bert_absence;  // why BERT cannot be judged under the ruleset, or ""
  SystemDivisions divisions;
};

// The benchmark folders of results/<system>; a BERT one is checked into `result.benchmarks`.
void check_system_results(const fs::path& system_folder, const ResultsContext& context,
                          PackageFindings& findings, PackageResult& result) {
  const std::string system = system_folder.filename().string();
  BypassFlags system_flags;
  if (fs::exists(system_folder / "package_checker_params"))
    system_flags = read_params(system_folder / "package_checker_params", findings);
  for (const fs::path& benchmark_folder : sorted_subdirectories(system_folder)) {
    const std::string benchmark = benchmark_folder.filename().string();
    const auto division = context.divisions.of.find(system);
    if (division == context.divisions.of.end()) {
      findings.error(benchmark_folder,
                     "no system description systems/" + system + ".json for these results");
      findings.official_stop(benchmark_folder,
                             "no systems/" + system + ".json to read the division from");
    } else if (context.divisions.unreadable.count(system)) {
      // The official checker reads contents['division'] for every results folder.
      findings.official_stop(benchmark_folder,
                             "systems/" + system + ".json has no division field to read");
      if (!context.audit_systems) {
        findings.error(benchmark_folder, "systems/" + system +
                                             ".json has no readable division field, which the "
                                             "official checker reads for these results");
      }
    }
    if (benchmark != kBertBenchmark) {
      findings.warning(benchmark_folder,
                       "skipping benchmark '" + benchmark + "': mlbert checks BERT only");
      continue;
    }
    if (!context.bert_absence.empty()) {
      findings.warning(benchmark_folder,
                       "skipping benchmark 'bert', as officially: " + context.bert_absence);
      continue;
    }
    BenchmarkSummary summary;
    summary.system = system;
    summary.folder = findings.relative(benchmark_folder);
    summary.division = division == context.divisions.of.end() ? "" : division->second;
    check_benchmark(benchmark_folder, summary.division, system_flags, context.options, findings,
                    summary);
    result.benchmarks.push_back(std::move(summary));
  }
}

void check_results(const fs::path& results, const ResultsContext& context,
                   PackageFindings& findings, PackageResult& result) {
  if (!fs::is_directory(results)) {
    findings.error(results, std::string(kLayoutTag) + "no results/ folder");
    findings.official_stop(results, "no such folder to list");
    return;
  }
  for (const fs::path& system_folder : sorted_subdirectories(results))
    check_system_results(system_folder, context, findings, result);
  if (result.benchmarks.empty() && !context.bert_absence.empty()) {
    findings.error(results, std::string(kLayoutTag) + context.bert_absence +
                                ": no BERT results can be checked under this ruleset");
  } else if (result.benchmarks.empty()) {
    findings.error(results, std::string(kLayoutTag) +
                                "no BERT results: expected results/<system>/bert/result_*.txt");
  }
}

}  // namespace

std::size_t PackageResult::error_count() const {
  return static_cast<std::size_t>(
      std::count_if(findings.begin(), findings.end(),
                    [](const auto& f) { return f.level == PackageFinding::Level::error; }));
}

bool PackageResult::official_passed() const {
  return std::none_of(findings.begin(), findings.end(), [](const PackageFinding& f) {
    return f.level == PackageFinding::Level::error && !f.layout;
  });
}

std::size_t PackageResult::warning_count() const {
  return static_cast<std::size_t>(
      std::count_if(findings.begin(), findings.end(),
                    [](const auto& f) { return f.level == PackageFinding::Level::warning; }));
}

PackageResult check_package(const fs::path& org_dir, const PackageOptions& options) {
  require_ruleset_with_bert_rules(options.ruleset);
  const bool audit_systems = mllog::training_ruleset(options.ruleset).package_audits;
  std::error_code ec;
  if (!fs::is_directory(org_dir, ec)) throw AuditError(org_dir.string() + ": not a directory");

  PackageResult result;
  result.root = org_dir;
  PackageFindings findings(result, org_dir);
  ResultsContext context{
      options, audit_systems, mllog::bert_absence(options.ruleset),
      check_system_descriptions(org_dir / "systems", options, audit_systems, findings)};
  check_implementations(org_dir, findings);
  check_results(org_dir / "results", context, findings, result);
  result.passed = result.error_count() == 0;
  return result;
}

}  // namespace mlbert::logging
