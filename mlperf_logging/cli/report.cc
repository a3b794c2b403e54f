// `mlbert report RESULT_DIR... [--out report.html]`: the result directories as one self-contained
// HTML page (report.h); with `--compare PUBLISHED`, one reproduced folder and the published one
// side by side, the comparison section first. Exit status 0 when the page is written, whatever
// the verdicts in it (the page shows them; `mlbert check`, `score`, `rcp` and `reproduce compare`
// are the commands that judge by exit status);
// a missing or empty directory, an unknown ruleset, an unwritable --out or an --out that is one of
// the logs read is an error (exit 2). `--out -` (or --csv -, --json -) is standard output.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/standard_output.h"
#include "mlperf_logging/cli/cli.h"
#include "mlperf_logging/cli/ruleset_choice.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/report/report.h"

namespace mlbert::logging {
namespace {

struct ReportArgs {
  std::vector<std::string> dirs;
  std::string out = "report.html";
  std::string ruleset;
  double target = kBertQualityTarget;
  std::string title = ReportOptions{}.title;
  std::string csv;   // the summary with the official summarizer's columns
  std::string json;  // the same rows with mlbert's figures beside them
  std::string compare, tolerance = "5%";
};

// The folders to report: with --compare, the reproduced one and the published one, both read under
// one ruleset as `reproduce compare` reads them: --ruleset, else the round in the published path,
// else in the reproduced one.
std::vector<std::string> report_dirs(const ReportArgs& args, std::string& ruleset) {
  ruleset = args.ruleset;
  if (args.compare.empty()) return args.dirs;
  if (args.dirs.size() != 1)
    throw AuditError("mlbert report --compare: one reproduced folder, then --compare PUBLISHED (" +
                     std::to_string(args.dirs.size()) + " folders given)");
  for (const std::string& dir : {args.compare, args.dirs.front()})
    if (ruleset.empty())
      if (const auto round = ruleset_from_path(dir)) ruleset = *round;
  return {args.dirs.front(), args.compare};
}

int run_report(const ReportArgs& args, const ReportComparison& comparison) {
  std::vector<SystemReport> systems;
  std::string ruleset;
  const std::vector<std::string> dirs = report_dirs(args, ruleset);
  const RulesetChoice choice = choose_rulesets(ruleset, dirs, "folder");
  print_ruleset_note("mlbert report", choice, dirs.size() > 1);
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    ReportInput input;
    input.dir = dirs[i];
    input.ruleset = choice.rulesets[i];
    input.target = args.target;
    systems.push_back(read_system_report(input));
  }
  ReportOptions options;
  options.title = args.title;
  std::string command = "mlbert report";
  for (const auto& dir : args.dirs) command += " " + dir;
  if (!args.compare.empty()) {
    if (!comparison)
      throw AuditError("mlbert report --compare: carried out by mlbert-core, which this binary "
                       "cannot run");
    options.comparison = comparison(dirs[0], dirs[1], choice.rulesets[1], args.tolerance);
    command += " --compare " + args.compare + " --tolerance " + args.tolerance;
  }
  options.generated_by = "Written by `" + command + "` from the result logs alone.";
  std::vector<std::filesystem::path> inputs;
  for (const SystemReport& s : systems) {
    for (const RunTrace& run : s.runs) inputs.push_back(run.file);
    if (!s.description_file.empty()) inputs.push_back(s.description_file);
  }
  int to_stdout = 0;
  for (const std::string* file : {&args.out, &args.csv, &args.json}) {
    if (files::names_standard_output(*file))
      ++to_stdout;
    else if (!file->empty())
      files::refuse_replacing_inputs(*file, inputs);
  }
  if (to_stdout > 1)
    throw AuditError("report: only one of --out, --csv and --json can be standard output");
  write_report_file(args.out, render_report_html(systems, options));
  if (!args.csv.empty()) write_report_file(args.csv, summary_csv(systems));
  if (!args.json.empty()) write_report_file(args.json, summary_json(systems));
  // The summary goes where it cannot mix with an output on standard output.
  std::ostream& summary = to_stdout ? std::cerr : std::cout;
  for (const SystemReport& s : systems) {
    const ScoreHeadline headline = score_headline(s);
    summary << "  " << s.input.dir.string() << ": " << s.runs.size() << " runs, ruleset "
            << s.ruleset << ", score "
            << (headline.normalized ? std::to_string(*headline.normalized) + " min" : "none");
    if (headline.factor != 1.0)
      summary << " (raw " << std::to_string(*headline.raw) << " min x RCP scaling "
              << headline.factor << ")";
    summary << ", " << (s.advice ? std::to_string(s.advice->report.advisories.size()) : "no")
            << " advisories\n";
  }
  summary << "mlbert report: wrote " << args.out;
  for (const std::string* file : {&args.csv, &args.json})
    if (!file->empty()) summary << ", " << *file;
  summary << "\n";
  return 0;
}

}  // namespace

void register_report_cli(CLI::App& app, int& exit_code, ReportComparison comparison) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd =
      app.add_subcommand("report", "one HTML page of result folders: curves, scores, RCP, checks")
          ->group("audit");
  cmd->add_option("dirs", args->dirs, "result directories (result_*.txt, or a folder with bert/)")
      ->required();
  cmd->add_option("-o,--out", args->out,
                  "the HTML file to write (default report.html); - or /dev/stdout: standard "
                  "output, the summary lines then on stderr");
  cmd->add_option("--ruleset", args->ruleset,
                  "training ruleset for every directory; default: the round in each path, else "
                  "the newest with BERT (with a warning)");
  cmd->add_option("--target", args->target, "accuracy target line (default 0.720, BERT's)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--title", args->title, "the page title");
  cmd->add_option("--csv", args->csv,
                  "also write the summary as CSV, with the official result_summarizer's columns "
                  "(- for standard output)");
  cmd->add_option("--json", args->json,
                  "also write the summary as JSON: the same columns, plus each system's raw score, "
                  "advisories and log SHA-256s (- for standard output)");
  cmd->add_option("--compare", args->compare,
                  "a published result to compare the one folder given with, side by side")
      ->check(cli::existing_directory());
  cmd->add_option("--tolerance", args->tolerance,
                  "with --compare: largest difference of the scores that still reproduces "
                  "(default 5%)");
  cli::set_example(*cmd,
              "mlbert report results/v4.0/NVIDIA/h200_ngc23.09_pytorch "
              "results/v2.0/Samsung/samsung_n128 --out bert.html");
  cmd->callback([args, comparison, &exit_code] { exit_code = run_report(*args, comparison); });
}

}  // namespace mlbert::logging
