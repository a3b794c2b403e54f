// `mlbert rcp_checker DIR [--rcp_usage training] [--rcp_version R] [--verbose]
// [--bert_train_samples] [--log_output FILE] [--rcp_pass pruned_rcps|full_rcps]
// [--custom_rcps FILE]`: the official `python -m mlperf_logging.rcp_checker` command line over
// `mlbert rcp`'s engine: its log lines (a " Run incomplete or did not converge" warning per such
// run, the submission mean, then "INFO - MESSAGE, RCP test PASSED" or "ERROR - MESSAGE, RCP test
// FAILED, ..."), its stdout line and its exit status (1 when the test fails). Like the official
// tool it checks whatever division the logs are of and writes no scaling.json.
//
// Where the official tool stops with a Python exception (a log without a batch size next to one
// with it: `KeyError: None`; a malformed record; a ruleset without BERT RCPs), this one logs what
// is wrong, file and line, and fails the test: exit status 1, as the exception's.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "common/cli.h"
#include "mlperf_logging/cli/official_tool.h"
#include "mlperf_logging/cli/ruleset_choice.h"
#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/rcp/table.h"

namespace mlbert::logging::official {
namespace {

struct RcpCheckerArgs {
  std::string dir;
  std::string usage = "training";
  std::string version;
  bool verbose = false;
  bool bert_train_samples = false;
  std::string log_output = "rcp_checker.log";
  std::string rcp_pass = "pruned_rcps";
  std::string custom_rcps;
};

std::string chosen_ruleset(const RcpCheckerArgs& args, OfficialLog& log) {
  if (!args.version.empty()) return args.version;
  const RulesetChoice choice = choose_rulesets("", {args.dir}, "folder");
  const std::string note =
      "mlbert: " + choice.note + " (no --rcp_version: the official default has no BERT RCPs)";
  choice.note_is_warning ? log.warning(note) : log.info(note);
  return choice.rulesets.front();
}

// --verbose: the reference points, as the official tool prints its records on stdout.
void print_references(const RcpCatalog& catalog) {
  for (RcpPass pass : {RcpPass::full, RcpPass::pruned}) {
    if (pass == RcpPass::pruned) std::printf("Pruned RCPs:\n");
    for (const RcpPoint& p : catalog.points(pass)) {
      std::printf(
          "%s {'BS': %s, 'RCP Mean': %s, 'RCP Stdev': %s, 'Max Speedup': %s, "
          "'Min Epochs': %s} \n\n",
          p.name.c_str(), batch_size_text(p.batch_size).c_str(),
          mllog::python_float_repr(p.mean).c_str(), mllog::python_float_repr(p.stdev).c_str(),
          mllog::python_float_repr(p.max_speedup).c_str(),
          mllog::python_float_repr(p.min_mean).c_str());
    }
  }
}

void log_comparison(const RcpResult& result, OfficialLog& log) {
  if (!result.reference || !result.submission_mean) return;
  char mean[64];
  std::snprintf(mean, sizeof mean, " Submission mean epochs: %.4f", *result.submission_mean);
  log.info(mean);
  if (result.passed && *result.submission_mean < result.reference->mean) {
    log.info(
        " Submission mean epochs faster than RCP mean but within max speedup range. Score "
        "should be normalized by factor of " +
        mllog::python_float_repr(result.reference->mean) + " / " +
        mllog::python_float_repr(*result.submission_mean) + " = " +
        mllog::python_float_repr(result.scaling_factor));
  }
}

int check(const RcpCheckerArgs& args, OfficialLog& log) {
  log.info(kDivider);
  log.info(" Running RCP Checker, pass: " + args.rcp_pass);
  log.info(kDivider);
  const std::string ruleset = chosen_ruleset(args, log);
  if (args.custom_rcps.empty()) {
    if (const std::string absent = bert_rcp_absence(ruleset); !absent.empty())
      throw OfficialStop("no BERT RCPs for --rcp_version " + ruleset + ": " + absent);
  }
  if (find_result_files(args.dir).empty()) throw OfficialStop(args.dir + ": no result_*.txt files");
  RcpOptions options;
  options.ruleset = ruleset;
  options.custom_rcps = args.custom_rcps;
  options.pass = args.rcp_pass == "full_rcps" ? RcpPass::full : RcpPass::pruned;
  options.bert_train_samples = args.bert_train_samples;
  const RcpResult result = check_rcp_directory(args.dir, options);
  // The official reader's open() raises on a log it cannot read, which ends the checker.
  for (const RcpRun& run : result.runs)
    if (!run.unreadable.empty()) throw OfficialStop(run.unreadable);
  if (args.verbose) {
    print_references(args.custom_rcps.empty()
                         ? RcpCatalog(ruleset)
                         : RcpCatalog(args.custom_rcps, read_rcp_json(args.custom_rcps)));
  }
  for (const RcpRun& run : result.runs)
    if (!run.converged) log.warning(" Run incomplete or did not converge. Marking as infinite.");
  for (const auto& problem : result.problems) log.error("mlbert: " + problem);
  log_comparison(result, log);
  if (result.passed) {
    log.info(result.message + ", RCP test PASSED");
  } else {
    log.error(result.message +
              ", RCP test FAILED, consider adding --rcp_bypass in when running the "
              "package_checker.");
  }
  std::printf("** Logging output also at %s\n", log.file().c_str());
  return result.passed ? 0 : 1;
}

}  // namespace

void register_rcp_checker(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RcpCheckerArgs>();
  CLI::App* cmd =
      app.add_subcommand("rcp_checker", "mlperf_logging.rcp_checker, same arguments")
          ->group("official");
  cli::set_example(*cmd, "mlbert rcp_checker --rcp_version 4.1.0 NVIDIA/results/dgxh100/bert");
  cmd->add_option("dir", args->dir, "the directory to check for compliance")->required();
  cmd->add_option("--rcp_usage", args->usage,
                  "what WG does the benchmark come from (training; hpc is not supported)")
      ->check(CLI::IsMember({"training", "hpc"}))
      ->capture_default_str();
  cmd->add_option("--rcp_version", args->version,
                  "what version of rules to check the log against (default: the round in the "
                  "path, else the newest with BERT, with a warning)");
  cmd->add_flag("--verbose", args->verbose, "print the reference points");
  cmd->add_flag("--bert_train_samples", args->bert_train_samples,
                "samples to converge from train_samples instead of epoch_num");
  cmd->add_option("--log_output", args->log_output, "where to store RCP checker output log")
      ->capture_default_str();
  cmd->add_option("--rcp_pass", args->rcp_pass,
                  "use \"pruned_rcps\" or \"full_rcps\" for convergence checks")
      ->check(CLI::IsMember({"pruned_rcps", "full_rcps"}))
      ->capture_default_str();
  cmd->add_option("--custom_rcps", args->custom_rcps, "specify an RCP json file to use")
      ->check(CLI::ExistingFile);
  cmd->callback([args, &exit_code] {
    check_usage("rcp_checker", args->usage);
    exit_code = run_official("rcp_checker", args->log_output,
                             [&](OfficialLog& log) { return check(*args, log); });
  });
}

}  // namespace mlbert::logging::official
