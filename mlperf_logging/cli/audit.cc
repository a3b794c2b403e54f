// The audit subcommands: `mlbert score`, `mlbert rcp`, `mlbert system-check`, `mlbert package`.
// Each prints a verdict per input and sets exit status 0 when everything passes, 1 when something
// does not; unusable input (missing directory, unknown ruleset) is an exception, i.e. exit 2.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mlperf_logging/cli/cli.h"
#include "mlperf_logging/cli/ruleset_choice.h"
#include "mlperf_logging/cli/score_inputs.h"
#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/package/package.h"
#include "mlperf_logging/package/score.h"
#include "mlperf_logging/package/system_desc.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/rcp/table.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

// ---- mlbert score -------------------------------------------------------------------------------

struct ScoreArgs {
  std::vector<std::string> dirs;
  std::string ruleset;
  bool no_scaling = false;
  bool json = false;
  bool verbose = false;
};

// One folder's score as JSON. A run is "counted" when it is in the olympic mean; "compliant" tells
// a run the mean drops as the fastest or slowest (its "reason" says so) from a failed one.
nlohmann::json score_json(const std::string& dir, const SystemScore& score) {
  std::vector<double> minutes;
  std::vector<std::size_t> timed;  // indices into score.runs of the runs with a time
  for (std::size_t i = 0; i < score.runs.size(); ++i)
    if (score.runs[i].counted) minutes.push_back(*score.runs[i].minutes), timed.push_back(i);
  std::vector<bool> in_mean(score.runs.size(), false);
  if (score.score)
    for (std::size_t k : olympic_kept(minutes, score.dropped, kBertMaxDroppedRuns))
      in_mean[timed[k]] = true;
  nlohmann::json runs = nlohmann::json::array();
  for (std::size_t i = 0; i < score.runs.size(); ++i) {
    const RunScore& run = score.runs[i];
    std::string reason = run.reason;
    if (run.counted && !in_mean[i])
      reason = score.score ? "dropped by the olympic mean (fastest or slowest)"
                           : "no score for the folder";
    runs.push_back({{"file", run.file.string()},
                    {"counted", in_mean[i]},
                    {"compliant", run.counted},
                    {"minutes", run.minutes ? nlohmann::json(*run.minutes) : nlohmann::json()},
                    {"reason", reason}});
  }
  return {{"dir", dir},
          {"ruleset", score.ruleset},
          {"score", score.score ? nlohmann::json(*score.score) : nlohmann::json()},
          {"dropped", score.dropped},
          {"scaling_factor", score.scaling_factor},
          {"runs", runs},
          {"notes", score.notes}};
}

int run_score(const ScoreArgs& args) {
  bool all_scored = true;
  nlohmann::json results = nlohmann::json::array();
  const ScoreInputs inputs = read_score_inputs(args.dirs, args.ruleset);
  const RulesetChoice choice = choose_rulesets(inputs.ruleset, inputs.dirs, "folder");
  if (!args.json) {
    for (const auto& note : inputs.notes) std::cerr << "mlbert score: " << note << "\n";
    print_ruleset_note("mlbert score", choice, args.verbose);
  }
  const std::vector<std::string>& rulesets = choice.rulesets;
  for (std::size_t i = 0; i < inputs.dirs.size(); ++i) {
    const std::string& dir = inputs.dirs[i];
    ScoreOptions options;
    options.apply_scaling = !args.no_scaling;
    options.ruleset = rulesets[i];
    const SystemScore score = score_system(dir, options);
    all_scored = all_scored && score.score.has_value();
    if (args.json) {
      results.push_back(score_json(dir, score));
      continue;
    }
    std::cout << dir << "\t" << (score.score ? mllog::python_float_repr(*score.score) : "NONE")
              << "\n";
    if (args.verbose || !score.score) {
      for (const RunScore& run : score.runs) {
        std::cout << "  " << run.file.filename().string() << "\t"
                  << (run.counted ? fixed(*run.minutes, 4) + " min" : "dropped: " + run.reason)
                  << "\n";
      }
      for (const auto& note : score.notes) std::cout << "  note: " << note << "\n";
    }
  }
  if (args.json) std::cout << results.dump(2) << "\n";
  return all_scored ? 0 : 1;
}

void register_score(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ScoreArgs>();
  CLI::App* cmd =
      app.add_subcommand("score", "olympic-mean minutes of result folders (official summarizer)")
          ->group("audit");
  cmd->add_option("dirs", args->dirs,
                  "system folders holding result_*.txt (or bert/), or organization folders "
                  "(results/<system>/bert/); the summarizer's DIR training RULESET also works")
      ->required();
  cmd->add_option("--ruleset", args->ruleset,
                  "training ruleset, e.g. 4.0.0; default: the round in the path (v4.0 -> 4.0.0), "
                  "else the newest with BERT (with a warning)");
  cmd->add_flag("--no-scaling", args->no_scaling, "ignore scaling.json (RCP score normalization)");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->add_flag("-v,--verbose", args->verbose,
                "per-run minutes, the reasons for dropped runs, each folder's inferred ruleset");
  cmd->callback([args, &exit_code] { exit_code = run_score(*args); });
  cli::set_example(*cmd, "mlbert score -v training_results_v4.0/Org/results/*/bert");
}

// ---- mlbert rcp ---------------------------------------------------------------------------------

struct RcpArgs {
  std::vector<std::string> dirs;
  std::string ruleset;
  std::string custom_rcps;
  std::string pass = "pruned";
  std::vector<double> batch_sizes;
  bool table = false;
  bool bert_train_samples = false;
  bool bypass = false;
  bool write_scaling = false;
  bool any_division = false;
  bool json = false;
  bool verbose = false;
};

nlohmann::json point_json(const RcpPoint& point) {
  return {{"name", point.name},
          {"batch_size", point.batch_size},
          {"runs", point.runs},
          {"mean", point.mean},
          {"stdev", point.stdev},
          {"min_mean", point.min_mean},
          {"max_speedup", point.max_speedup},
          {"interpolated", point.interpolated}};
}

std::string point_text(const RcpPoint& point) {
  return point.name + ": mean " + fixed(point.mean, 1) + " samples, stdev " +
         fixed(point.stdev, 1) + ", minimum acceptable mean " + fixed(point.min_mean, 1) +
         ", max speedup " + fixed(point.max_speedup, 4);
}

// What the check would compare a submission at `batch_size` against, by RcpCatalog::Match::Kind:
// beyond the largest point there is nothing, as with no points at all.
std::string_view match_name(RcpCatalog::Match::Kind kind) {
  constexpr std::string_view kNames[] = {"exact", "interpolated", "smallest", "none", "none"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(RcpCatalog::Match::Kind::none) + 1);
  return kNames[static_cast<int>(kind)];
}

// A BERT round before RCPs (0.7.0): nothing to check, and that is the answer, not an error. True
// when the ruleset is such a round (the answer is printed).
bool rcp_not_applicable(const RcpArgs& args) {
  const mllog::TrainingRuleset* row = mllog::find_training_ruleset(args.ruleset);
  if (!args.custom_rcps.empty() || !row || !row->bert_benchmark || row->bert_rcps) return false;
  const std::string why = bert_rcp_absence(args.ruleset);
  if (args.json) {
    std::cout << nlohmann::json{{"ruleset", args.ruleset}, {"rcps", false}, {"message", why}}.dump(
                     2)
              << "\n";
  } else {
    std::cout << "RCP check not applicable: " << why << "\n";
    for (const auto& dir : args.dirs) std::cout << dir << ": RCP not applicable\n";
  }
  return true;
}

// --table: every point with its statistics and whether pruning keeps it.
nlohmann::json print_rcp_table(const RcpCatalog& catalog, bool json) {
  nlohmann::json points = nlohmann::json::array();
  if (!json) {
    std::cout << "BERT RCPs for ruleset " << catalog.ruleset() << " (data of "
              << catalog.data_ruleset() << "); * = kept after pruning\n";
  }
  for (const RcpPoint& point : catalog.points(RcpPass::full)) {
    const bool kept = catalog.find(point.batch_size, RcpPass::pruned).has_value();
    nlohmann::json entry = point_json(point);
    entry["pruned"] = !kept;
    points.push_back(entry);
    if (!json) std::cout << (kept ? "* " : "  ") << point_text(point) << "\n";
  }
  return points;
}

// --batch-size: the reference each batch size would be judged against.
nlohmann::json print_rcp_lookups(const RcpCatalog& catalog, const RcpArgs& args, RcpPass pass) {
  nlohmann::json lookups = nlohmann::json::array();
  for (double bs : args.batch_sizes) {
    const RcpCatalog::Match match = catalog.match(bs, pass);
    const std::string how(match_name(match.kind));
    const std::optional<RcpPoint> point = how == "none" ? std::nullopt : match.point;
    lookups.push_back({{"batch_size", bs},
                       {"how", how},
                       {"point", point ? point_json(*point) : nlohmann::json()}});
    if (!args.json) {
      std::cout << "batch size " << batch_size_text(bs) << ": "
                << (point ? how + " " + point_text(*point)
                          : std::string("no RCP at or around it (submit one)"))
                << "\n";
    }
  }
  return lookups;
}

nlohmann::json rcp_result_json(const std::string& dir, const RcpResult& result) {
  nlohmann::json entry = {{"dir", dir},
                          {"passed", result.passed},
                          {"verdict", to_string(result.verdict)},
                          {"message", result.message},
                          {"scaling_factor", result.scaling_factor},
                          {"problems", result.problems}};
  if (result.batch_size) entry["batch_size"] = *result.batch_size;
  if (result.submission_mean) entry["submission_mean"] = *result.submission_mean;
  if (result.reference) entry["reference"] = point_json(*result.reference);
  nlohmann::json runs = nlohmann::json::array();
  for (const RcpRun& run : result.runs) {
    runs.push_back({{"file", run.file.string()},
                    {"converged", run.converged},
                    {"samples_to_converge", run.samples_to_converge}});
    if (!run.unreadable.empty()) runs.back()["reason"] = run.unreadable;
  }
  entry["runs"] = runs;
  return entry;
}

void print_rcp_result(const std::string& dir, const RcpResult& result, const RcpArgs& args) {
  std::cout << dir << ": RCP " << to_string(result.verdict)
            << (result.bypassed ? " (bypassed)" : "") << ": " << result.message;
  if (result.batch_size) std::cout << "; global batch size " << batch_size_text(*result.batch_size);
  std::cout << "\n";
  if (result.reference && result.submission_mean) {
    const RcpPoint& ref = *result.reference;
    std::cout << "  submission olympic mean " << fixed(*result.submission_mean, 1) << " samples "
              << (result.passed && !result.bypassed ? ">=" : "vs") << " minimum acceptable "
              << fixed(ref.mean / ref.max_speedup, 1) << " (" << point_text(ref) << ")\n";
    if (result.scaling_factor > 1.0) {
      std::cout << "  converges faster than the RCP mean: scores are scaled by "
                << fixed(ref.mean, 1) << " / " << fixed(*result.submission_mean, 1) << " = "
                << mllog::python_float_repr(result.scaling_factor)
                << (args.write_scaling ? " (written to scaling.json)" : "") << "\n";
    }
  }
  for (const auto& problem : result.problems) std::cout << "  error: " << problem << "\n";
  // A run dropped because its log cannot be read is named whatever the verbosity, as by `score`.
  for (const RcpRun& run : result.runs)
    if (!args.verbose && !run.unreadable.empty())
      std::cout << "  " << run.file.filename().string() << "\tdropped: " << run.unreadable << "\n";
  if (!args.verbose) return;
  for (const RcpRun& run : result.runs) {
    std::cout << "  " << run.file.filename().string() << ": "
              << (run.converged ? fixed(run.samples_to_converge, 3) + " samples"
                                : std::string("not converged"))
              << " (" << run.note << ")\n";
  }
}

// The one ruleset of an rcp run (ruleset_choice.h): --ruleset, else the folders' round, else the
// newest with BERT; folders of different rounds are checked one command at a time.
std::string rcp_ruleset(const RcpArgs& args) {
  if (!args.ruleset.empty()) return args.ruleset;
  if (args.dirs.empty()) {
    if (!args.json)
      std::cerr << "mlbert rcp: warning: no --ruleset and no result folder: using ruleset "
                << default_ruleset() << ", the newest with BERT\n";
    return default_ruleset();
  }
  const RulesetChoice choice = choose_rulesets("", args.dirs, "folder");
  for (std::size_t i = 1; i < choice.rulesets.size(); ++i) {
    if (choice.rulesets[i] != choice.rulesets.front())
      throw AuditError("the folders are of different rounds (" + choice.per_path.front() + "; " +
                       choice.per_path[i] +
                       "): check them one command at a time, or pass --ruleset");
  }
  if (!args.json) print_ruleset_note("mlbert rcp", choice, args.verbose);
  return choice.rulesets.front();
}

// RCPs apply to closed-division results only: the official package checker and summarizer run the
// RCP test in the closed division alone. True (and the answer printed) when every log of `dir`
// says submission_division "open".
bool open_division(const std::string& dir, bool json, nlohmann::json& results) {
  if (logged_division(find_result_files(dir)) != "open") return false;
  const std::string why =
      "open division: RCPs apply to closed-division results only, as in the official package "
      "checker (--any-division or `mlbert rcp_checker` check it anyway, as the official "
      "rcp_checker does)";
  results.push_back(
      {{"dir", dir}, {"passed", true}, {"verdict", "not applicable"}, {"message", why}});
  if (!json) std::cout << dir << ": RCP not applicable: " << why << "\n";
  return true;
}

int run_rcp(const RcpArgs& given) {
  if (given.dirs.empty() && !given.table && given.batch_sizes.empty()) {
    throw AuditError("rcp: give a result directory, --table or --batch-size");
  }
  RcpArgs args = given;
  args.ruleset = rcp_ruleset(given);
  require_ruleset_format(args.ruleset);
  const RcpPass pass = args.pass == "full" ? RcpPass::full : RcpPass::pruned;
  if (rcp_not_applicable(args)) return 0;
  const RcpCatalog catalog = args.custom_rcps.empty()
                                 ? RcpCatalog(args.ruleset)
                                 : RcpCatalog(args.custom_rcps, read_rcp_json(args.custom_rcps));
  nlohmann::json out = {{"ruleset", catalog.ruleset()}, {"data_ruleset", catalog.data_ruleset()}};
  if (args.table) out["points"] = print_rcp_table(catalog, args.json);
  if (!args.batch_sizes.empty()) out["lookups"] = print_rcp_lookups(catalog, args, pass);

  bool all_passed = true;
  nlohmann::json results = nlohmann::json::array();
  for (const auto& dir : args.dirs) {
    if (!args.any_division && open_division(dir, args.json, results)) continue;
    RcpOptions options;
    options.ruleset = args.ruleset;
    options.custom_rcps = args.custom_rcps;
    options.pass = pass;
    options.bert_train_samples = args.bert_train_samples;
    options.bypass = args.bypass;
    options.write_scaling = args.write_scaling;
    const RcpResult result = check_rcp_directory(dir, options);
    all_passed = all_passed && result.passed;
    results.push_back(rcp_result_json(dir, result));
    if (!args.json) print_rcp_result(dir, result, args);
  }
  if (!args.dirs.empty()) out["results"] = results;
  if (args.json) std::cout << out.dump(2) << "\n";
  return all_passed ? 0 : 1;
}

void register_rcp(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RcpArgs>();
  CLI::App* cmd = app.add_subcommand("rcp", "reference convergence point check of result folders")
                      ->group("audit");
  cmd->add_option("dirs", args->dirs, "directories holding result_*.txt")
      ->check(cli::existing_directory());
  cmd->add_option("--ruleset", args->ruleset,
                  "training ruleset, e.g. 4.1.0; default: the round in the path, else the newest "
                  "with BERT (with a warning)");
  cmd->add_option("--custom-rcps", args->custom_rcps,
                  "RCP JSON file (official layout) to use instead of the ruleset's table")
      ->check(CLI::ExistingFile);
  cmd->add_option("--rcp-pass", args->pass, "reference set: pruned (official default) or full")
      ->check(CLI::IsMember({"pruned", "full"}));
  cmd->add_flag("--table", args->table, "print every RCP with its statistics and pruning");
  cmd->add_option("--batch-size", args->batch_sizes,
                  "print the (possibly interpolated) RCP a submission at this batch size meets");
  cmd->add_flag("--bert-train-samples", args->bert_train_samples,
                "take samples to converge from train_samples instead of eval epoch_num");
  cmd->add_flag("--rcp-bypass", args->bypass, "let RCP failures pass (needs committee review)");
  cmd->add_flag("--set-scaling", args->write_scaling,
                "write scaling.json into the directory as the official package checker does");
  cmd->add_flag("--any-division", args->any_division,
                "check open-division folders too, as the official rcp_checker does");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->add_flag("-v,--verbose", args->verbose, "per-run samples to converge");
  cmd->callback([args, &exit_code] { exit_code = run_rcp(*args); });
  cli::set_example(*cmd, "mlbert rcp --ruleset 4.1.0 --batch-size 4096");
}

// ---- mlbert system-check ------------------------------------------------------------------------

struct SystemCheckArgs {
  std::vector<std::string> files;
  std::string ruleset;
  bool werror = false;
  bool json = false;
};

int run_system_check(const SystemCheckArgs& args) {
  bool all_valid = true;
  nlohmann::json results = nlohmann::json::array();
  const RulesetChoice choice = choose_rulesets(args.ruleset, args.files, "file");
  if (!args.json) print_ruleset_note("mlbert system-check", choice, false);
  for (std::size_t i = 0; i < args.files.size(); ++i) {
    const std::string& file = args.files[i];
    const SystemDescResult result = check_system_desc_file(file, choice.rulesets[i], args.werror);
    all_valid = all_valid && result.valid;
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& finding : result.findings) {
      findings.push_back(
          {{"level", finding.level == SystemDescFinding::Level::error ? "error" : "warning"},
           {"field", finding.field},
           {"text", finding.text}});
    }
    results.push_back({{"file", file},
                       {"valid", result.valid},
                       {"system_name", result.system_name},
                       {"findings", findings}});
    if (args.json) continue;
    std::cout << (result.valid ? "PASS " : "FAIL ") << file;
    if (!result.system_name.empty()) std::cout << " (" << result.system_name << ")";
    std::cout << "\n";
    for (const auto& finding : result.findings) {
      std::cout << "  " << (finding.level == SystemDescFinding::Level::error ? "error" : "warning")
                << ": " << file << ": "
                << (finding.field.empty() ? std::string() : "field '" + finding.field + "': ")
                << finding.text << "\n";
    }
  }
  if (args.json) std::cout << results.dump(2) << "\n";
  return all_valid ? 0 : 1;
}

void register_system_check(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<SystemCheckArgs>();
  CLI::App* cmd =
      app.add_subcommand("system-check", "system description files, as the official checker")
          ->group("audit");
  cmd->add_option("files", args->files, "systems/<system>.json files")
      ->required()
      ->check(cli::existing_file());
  cmd->add_option("--ruleset", args->ruleset,
                  "training ruleset, e.g. 4.1.0; default: the round in the path, else the newest "
                  "with BERT (with a warning)");
  cmd->add_flag("--werror", args->werror, "warnings (types, integer counts, division) are errors");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->callback([args, &exit_code] { exit_code = run_system_check(*args); });
  cli::set_example(*cmd, "mlbert system-check --ruleset 4.1.0 systems/dgxa100_128x8.json");
}

// ---- mlbert package -----------------------------------------------------------------------------

struct PackageArgs {
  std::string dir;
  PackageOptions options;
  bool json = false;
  bool verbose = false;
};

std::string_view level_name(PackageFinding::Level level) {
  switch (level) {
    case PackageFinding::Level::error:
      return "ERROR";
    case PackageFinding::Level::warning:
      return "WARNING";
    case PackageFinding::Level::info:
      return "INFO";
  }
  return "ERROR";
}

int run_package(const PackageArgs& given) {
  PackageArgs args = given;
  const RulesetChoice choice = choose_rulesets(args.options.ruleset, {args.dir}, "folder");
  if (!args.json) print_ruleset_note("mlbert package", choice, false);
  args.options.ruleset = choice.rulesets.front();
  const PackageResult result = check_package(args.dir, args.options);
  if (args.json) {
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : result.findings) {
      findings.push_back(
          {{"level", level_name(f.level)}, {"where", f.where.string()}, {"text", f.text}});
    }
    nlohmann::json benchmarks = nlohmann::json::array();
    for (const auto& b : result.benchmarks) {
      benchmarks.push_back(
          {{"system", b.system},
           {"folder", b.folder.string()},
           {"division", b.division},
           {"result_files", b.result_files},
           {"failed_runs", b.failed_compliance},
           {"seeds_ok", b.seeds_ok ? nlohmann::json(*b.seeds_ok) : nlohmann::json()},
           {"rcp_ok", b.rcp_ok ? nlohmann::json(*b.rcp_ok) : nlohmann::json()},
           {"rcp_message", b.rcp_message},
           {"rcp_scaling_factor", b.rcp_scaling_factor}});
    }
    std::cout << nlohmann::json{{"package", args.dir},
                                {"passed", result.passed},
                                {"errors", result.error_count()},
                                {"warnings", result.warning_count()},
                                {"benchmarks", benchmarks},
                                {"findings", findings}}
                     .dump(2)
              << "\n";
    return result.passed ? 0 : 1;
  }
  for (const auto& f : result.findings) {
    if (f.level == PackageFinding::Level::info && !args.verbose) continue;
    std::cout << level_name(f.level) << " " << f.where.string() << ": " << f.text << "\n";
  }
  for (const auto& b : result.benchmarks) {
    std::cout << b.folder.string() << ": " << b.division << " division, " << b.result_files
              << " result files, " << b.failed_compliance << " failing";
    if (b.seeds_ok) std::cout << ", seeds " << (*b.seeds_ok ? "ok" : "FAILED");
    if (b.rcp_ok)
      std::cout << ", RCP " << (*b.rcp_ok ? "ok" : "FAILED") << " (" << b.rcp_message << ")";
    std::cout << "\n";
  }
  std::cout << (result.passed ? "PACKAGE PASSED: " : "PACKAGE FAILED: ") << args.dir << " ("
            << result.error_count() << " errors, " << result.warning_count() << " warnings)\n";
  return result.passed ? 0 : 1;
}

void register_package(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<PackageArgs>();
  CLI::App* cmd =
      app.add_subcommand("package", "a whole submission package, as the official package_checker")
          ->group("audit");
  cmd->add_option("dir", args->dir, "the organization folder of the package")
      ->required()
      ->check(cli::existing_directory());
  cmd->add_option("--ruleset", args->options.ruleset,
                  "training ruleset, e.g. 4.1.0; default: the round in the path, else the newest "
                  "with BERT (with a warning)");
  cmd->add_flag("--quiet", args->options.quiet, "do not report compliance warnings");
  cmd->add_flag("--werror", args->options.werror,
                "compliance and system-description warnings are errors");
  cmd->add_flag("--rcp-bypass", args->options.rcp_bypass,
                "RCP failures pass (needs committee review)");
  cmd->add_flag("--rcp-bert-train-samples", args->options.rcp_bert_train_samples,
                "RCP samples to converge from train_samples instead of eval epoch_num");
  cmd->add_flag("--seed-checker-bypass", args->options.seed_checker_bypass, "skip the seed check");
  cmd->add_flag("--set-scaling", args->options.write_scaling,
                "write scaling.json next to results that converge faster than the RCP mean, as the "
                "official checker does");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->add_flag("-v,--verbose", args->verbose, "also print informational findings");
  cmd->callback([args, &exit_code] { exit_code = run_package(*args); });
  cli::set_example(*cmd, "mlbert package --ruleset 4.1.0 results/package/mlbert");
}

}  // namespace

void register_audit_cli(CLI::App& app, int& exit_code) {
  register_score(app, exit_code);
  register_rcp(app, exit_code);
  register_system_check(app, exit_code);
  register_package(app, exit_code);
}

}  // namespace mlbert::logging
