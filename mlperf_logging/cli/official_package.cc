// `mlbert package_checker FOLDER USAGE RULESET [--werror] [--quiet] [--rcp-bypass]
// [--rcp-bert-train-samples] [--seed-checker-bypass] [--log_output FILE]`: the official
// `python -m mlperf_logging.package_checker` command line over `mlbert package`'s engine. Its log
// lines (each system description's verdict, per result folder the count, compliance, seed and RCP
// lines, then "PACKAGE CHECKER FOUND NO ERRORS, SUCCESS !" or "PACKAGE CHECKER FOUND ERRORS, LOOK
// INTO ERROR LOG LINES AND FIX THEM."), its stdout line, its exit status (0 whatever the verdict)
// and, as officially, scaling.json written next to results that converge faster than the RCP mean.
// mlbert's own findings follow as "mlbert:" lines; its [layout] ones never change the verdict.
// Where the official checker stops with a Python exception (a results folder without its system
// description, a malformed description, an unreadable log), this one says why, names the file,
// logs the failing verdict and exits with the exception's status, 1.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "common/cli.h"
#include "mlperf_logging/cli/official_tool.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/package/package.h"
#include "mlperf_logging/package/system_desc.h"
#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging::official {
namespace {

namespace fs = std::filesystem;

struct PackageCheckerArgs {
  std::string folder;
  std::string usage;
  PackageOptions options;
  std::string log_output = "package_checker.log";
};

// The official check_systems: every systems/*.json (hidden files are no match for the glob).
bool log_system_descriptions(const PackageCheckerArgs& args, OfficialLog& log) {
  log.info(" Checking System Description Files");
  bool all_valid = true;
  const fs::path systems = fs::path(args.folder) / "systems";
  for (const fs::path& entry : sorted_entries(systems)) {
    const std::string name = entry.filename().string();
    if (entry.extension() != ".json" || name.front() == '.') continue;
    const SystemDescResult desc = check_system_desc_file(entry, args.options.ruleset);
    try {
      log_system_desc_verdict(desc, log);
    } catch (const OfficialStop& e) {
      log.error(std::string("mlbert: ") + e.what());  // the package check names the stop below
    }
    all_valid = all_valid && desc.official_reasons.empty() && desc.official_stop.empty();
  }
  if (!all_valid) log.error("System description file checker failed");
  return all_valid;
}

void log_benchmark(const PackageCheckerArgs& args, const BenchmarkSummary& b, OfficialLog& log) {
  const std::string dir = os_path_join(args.folder, b.folder.string());
  log.info(kDivider);
  log.info(" Running compliance checks in dir " + dir);
  log.info(" System " + b.system);
  log.info(" Benchmark " + std::string(kBertBenchmark));
  log.info(kDivider);
  if (b.result_files != kBertResultFileCount) {
    log.error("Incorrect number of files in dir, or wrong file names in directory " + dir +
              ", found " + std::to_string(b.result_files) + ", expected " +
              std::to_string(kBertResultFileCount));
  }
  if (b.failed_compliance == 1) {
    log.warning(" 1 file does not comply, accepting this under olympic scoring");
  } else if (b.failed_compliance > 1) {
    log.error(" " + std::to_string(b.failed_compliance) +
              " files do not comply, directory cannot be accepted");
  }
  if (b.seeds_ok) {
    log.info(kDivider);
    log.info(" Running Seed Checker");
    if (!*b.seeds_ok) log.error("Seed checker failed");
  }
  if (b.rcp_ok) {
    if (*b.rcp_ok)
      log.info("RCP Test Passed: " + b.rcp_message);
    else
      log.error("RCP Test Failed: " + b.rcp_message);
  }
  log.info(kDivider);
}

void log_mlbert_findings(const PackageResult& result, OfficialLog& log) {
  for (const PackageFinding& f : result.findings) {
    if (f.level == PackageFinding::Level::info) continue;
    const std::string line = "mlbert: " + f.where.string() + ": " + f.text;
    f.level == PackageFinding::Level::error && !f.layout ? log.error(line) : log.warning(line);
  }
}

int check(const PackageCheckerArgs& args, OfficialLog& log) {
  if (!fs::is_directory(args.folder)) throw OfficialStop(args.folder + ": no such directory");
  const bool audits = mllog::training_ruleset(args.options.ruleset).package_audits;
  if (audits) log_system_descriptions(args, log);
  const PackageResult result = check_package(args.folder, args.options);
  for (const BenchmarkSummary& b : result.benchmarks) log_benchmark(args, b, log);
  log.info(kDivider);
  log_mlbert_findings(result, log);
  if (!result.official_stop.empty()) {
    log.error("mlbert: the official package_checker stops here with a Python exception: " +
              result.official_stop);
  }
  const bool passed = result.official_stop.empty() && result.official_passed();
  log.info(passed ? "PACKAGE CHECKER FOUND NO ERRORS, SUCCESS !"
                  : "PACKAGE CHECKER FOUND ERRORS, LOOK INTO ERROR LOG LINES AND FIX THEM.");
  log.info(kDivider);
  std::printf("\n** Detailed log output is also at %s\n", log.file().c_str());
  return result.official_stop.empty() ? 0 : 1;
}

}  // namespace

void register_package_checker(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<PackageCheckerArgs>();
  args->options.write_scaling = true;
  CLI::App* cmd = app.add_subcommand("package_checker",
                                     "mlperf_logging.package_checker, same arguments")
                      ->group("official");
  cli::set_example(*cmd, "mlbert package_checker training_results_v4.1/NVIDIA training 4.1.0");
  cmd->add_option("folder", args->folder, "the folder for a submission package")->required();
  add_usage_and_ruleset(cmd, args->usage, args->options.ruleset);
  cmd->add_flag("--werror", args->options.werror, "Treat warnings as errors");
  cmd->add_flag("--quiet", args->options.quiet,
                "Suppress warnings. Does nothing if --werror is set");
  cmd->add_flag("--rcp-bypass", args->options.rcp_bypass,
                "Bypass failed RCP checks so that submission uploads");
  cmd->add_flag("--rcp-bert-train-samples", args->options.rcp_bert_train_samples,
                "num samples used for training bert is taken from train_samples");
  cmd->add_flag("--seed-checker-bypass", args->options.seed_checker_bypass,
                "Seed checker is bypassed");
  cmd->add_option("--log_output", args->log_output, "where to store package checker output log")
      ->capture_default_str();
  cmd->callback([args, &exit_code] {
    check_usage("package_checker", args->usage);
    if (!mllog::is_supported_ruleset(args->options.ruleset)) {
      throw CLI::ValidationError(
          "RULESET", args->options.ruleset + ": " + mllog::bert_absence(args->options.ruleset) +
                         "; mlbert checks BERT packages (rulesets " +
                         mllog::ruleset_names(&mllog::TrainingRuleset::bert_rules) + ")");
    }
    exit_code = run_official("package_checker", args->log_output,
                             [&](OfficialLog& log) { return check(*args, log); });
  });
}

}  // namespace mlbert::logging::official
