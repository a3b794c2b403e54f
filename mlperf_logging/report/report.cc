// Reading a result directory for the report (see report.h): one streaming pass per log for the
// curves and phase times, then the toolkit's checker, scorer, RCP check and system description
// check, each called as its own subcommand calls it.
#include "mlperf_logging/report/report.h"

#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "common/atomic_file.h"
#include "common/standard_output.h"
#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;
using Want = mllog::ParseOptions::Want;

constexpr std::string_view kTracedKeys[] = {
    "init_start", "init_stop",     "run_start",     "run_stop",          "eval_start",
    "eval_stop",  "eval_accuracy", "tracked_stats", "global_batch_size", "train_samples"};

std::optional<double> number(const nlohmann::json& value) {
  if (!value.is_number()) return std::nullopt;
  const double x = value.get<double>();
  return std::isfinite(x) ? std::optional<double>(x) : std::nullopt;
}

std::optional<double> metadata_number(const nlohmann::json& metadata, const char* name) {
  if (!metadata.is_object()) return std::nullopt;
  const auto it = metadata.find(name);
  return it == metadata.end() ? std::nullopt : number(*it);
}

void set_first(std::optional<double>& slot, double value) {
  if (!slot) slot = value;
}

RunTrace read_run_trace(const fs::path& file) {
  RunTrace run;
  run.file = file;
  mllog::ParseOptions options;
  options.wanted = [](std::string_view key, bool key_is_string) {
    if (!key_is_string) return Want::skip;
    for (std::string_view traced : kTracedKeys)
      if (key == traced) return Want::all;
    return Want::skip;
  };
  std::optional<double> eval_open;
  const auto on_record = [&](const mllog::LogRecord& r) {
    const std::string& key = r.key;
    const double t = r.timestamp;
    if (key == "init_start")
      set_first(run.init_start_ms, t);
    else if (key == "init_stop")
      set_first(run.init_stop_ms, t);
    else if (key == "run_start")
      set_first(run.run_start_ms, t);
    else if (key == "run_stop") {
      if (!run.run_stop_ms) {
        run.run_stop_ms = t;
        if (r.metadata.is_object() && r.metadata.contains("status"))
          run.stop_status = r.metadata["status"].is_string()
                                ? r.metadata["status"].get<std::string>()
                                : r.metadata["status"].dump();
      }
    } else if (key == "eval_start") {
      eval_open = t;
    } else if (key == "eval_stop") {
      if (eval_open) run.eval_intervals.emplace_back(*eval_open, t);
      eval_open.reset();
    } else if (key == "eval_accuracy") {
      if (const auto accuracy = number(r.value)) {
        const auto samples = metadata_number(r.metadata, "epoch_num");
        run.evals.push_back({samples.value_or(std::nan("")), *accuracy, t, r.line});
      }
    } else if (key == "tracked_stats") {
      // A whole-run summary (metadata.summary) is not a point of the throughput curve.
      const bool summary = r.metadata.is_object() && r.metadata.contains("summary");
      if (!summary && r.value.is_object() && r.value.contains("throughput"))
        if (const auto rate = number(r.value["throughput"])) run.throughput.emplace_back(t, *rate);
    } else if (key == "global_batch_size") {
      if (const auto bs = number(r.value)) run.global_batch_size = *bs;
    } else if (key == "train_samples") {
      if (const auto samples = number(r.value)) run.train_samples = *samples;
    }
  };
  try {
    mllog::for_each_record(
        file, on_record, [&](const mllog::ParseError&) { ++run.parse_errors; }, options);
  } catch (const std::exception& e) {
    run.read_error = e.what();
  }
  return run;
}

// A ruleset's compliance verdicts, or why there are none.
std::string check_runs(SystemReport& report) {
  if (!mllog::is_supported_ruleset(report.ruleset)) {
    return "ruleset " + report.ruleset + " has no BERT compliance rules in this mlbert (known: " +
           mllog::ruleset_names(&mllog::TrainingRuleset::bert_rules) + ")";
  }
  mllog::CheckOptions options;
  options.ruleset = report.ruleset;  // as `mlbert check`: training usage, warnings shown
  for (RunTrace& run : report.runs) {
    if (!run.read_error.empty()) continue;
    try {
      run.check = mllog::check_log(run.file, options);
    } catch (const std::exception& e) {
      run.read_error = e.what();
    }
  }
  return "";
}

bool counts_samples(const SystemReport& report) {
  for (const RunTrace& run : report.runs) {
    if (run.evals.empty()) continue;
    double previous = 0;
    for (const EvalPoint& eval : run.evals) {
      if (!std::isfinite(eval.samples) || eval.samples <= previous) return false;
      previous = eval.samples;
    }
    if (run.global_batch_size && run.evals.front().samples < *run.global_batch_size) return false;
  }
  return true;
}

bool has_rcps(std::string_view ruleset) {
  const mllog::TrainingRuleset* row = mllog::find_training_ruleset(ruleset);
  return row && row->bert_rcps;
}

void check_rcp(SystemReport& report) {
  if (!has_rcps(report.ruleset)) {
    report.rcp_note = "ruleset " + report.ruleset + " has no BERT RCPs";
    return;
  }
  RcpOptions options;
  options.ruleset = report.ruleset;
  try {
    report.rcp = check_rcp_directory(report.results_dir, options);
    // Logs whose eval epoch_num is not a sample count (e.g. always 1): the official default reads
    // nonsense there, so the train_samples reading (--rcp-bert-train-samples) is shown beside it.
    if (!report.evals_count_samples) {
      options.bert_train_samples = true;
      report.rcp_train_samples = check_rcp_directory(report.results_dir, options);
    }
  } catch (const std::exception& e) {
    report.rcp_note = e.what();
  }
}

void read_description(SystemReport& report) {
  report.description_file = report.input.system_json.empty()
                                ? find_system_description(report.results_dir)
                                : report.input.system_json;
  if (report.description_file.empty()) {
    report.description_note =
        "no system description found (system.json beside the results, or "
        "<org>/systems/<system>.json in a submission package)";
    return;
  }
  try {
    report.description = read_json_file(report.description_file);
  } catch (const std::exception& e) {
    report.description_note = e.what();
    return;
  }
  if (!is_known_training_ruleset(report.ruleset)) {
    report.description_note = "ruleset " + report.ruleset + " is unknown to the system check";
    return;
  }
  report.description_check =
      check_system_desc(*report.description, report.ruleset, report.description_file);
}

}  // namespace

std::optional<std::string> SystemReport::division() const {
  for (const RunTrace& run : runs)
    if (run.check && run.check->division) return run.check->division;
  if (description && description->is_object() && description->contains("division") &&
      (*description)["division"].is_string())
    return (*description)["division"].get<std::string>();
  return std::nullopt;
}

const RcpResult* SystemReport::rcp_shown() const {
  return rcp_train_samples ? &*rcp_train_samples : rcp ? &*rcp : nullptr;
}

std::optional<double> SystemReport::global_batch_size() const {
  for (const RunTrace& run : runs)
    if (run.global_batch_size) return run.global_batch_size;
  return std::nullopt;
}

SystemReport read_system_report(const ReportInput& input) {
  SystemReport report;
  report.input = input;
  report.target = input.target.value_or(kBertQualityTarget);
  if (!input.ruleset.empty()) {
    report.ruleset = input.ruleset;
  } else if (auto inferred = ruleset_from_path(input.dir)) {
    report.ruleset = *inferred;
  } else {
    throw AuditError(input.dir.string() +
                     ": no --ruleset given and no round (e.g. v4.0) in the path to infer it from");
  }
  require_ruleset_format(report.ruleset);

  report.results_dir = input.dir;
  auto files = find_result_files(input.dir);
  if (files.empty() && fs::is_directory(input.dir / kBertBenchmark)) {
    report.results_dir = input.dir / kBertBenchmark;
    files = find_result_files(report.results_dir);
  }
  if (files.empty()) throw AuditError(input.dir.string() + ": no result_*.txt files");

  fs::path system_dir = fs::absolute(report.results_dir).lexically_normal();
  if (system_dir.filename().empty()) system_dir = system_dir.parent_path();
  if (system_dir.filename() == kBertBenchmark) system_dir = system_dir.parent_path();
  report.name = system_dir.filename().string();
  fs::path above = system_dir.parent_path();
  for (int depth = 0; depth < 2 && !above.filename().empty(); ++depth) {
    const std::string folder = above.filename().string();
    if (folder != "results")
      report.context = folder + (report.context.empty() ? "" : " / ") + report.context;
    above = above.parent_path();
  }

  for (const auto& file : files) report.runs.push_back(read_run_trace(file));
  report.evals_count_samples = counts_samples(report);
  report.check_note = check_runs(report);
  if (report.check_note.empty()) {
    try {
      ScoreOptions options;
      options.ruleset = report.ruleset;
      report.score = score_system(report.results_dir, options);
    } catch (const std::exception& e) {
      report.score_note = e.what();
    }
  } else {
    report.score_note = "no score without compliance rules";
  }
  check_rcp(report);
  read_description(report);
  try {
    report.advice = advise_result_folder(report.results_dir, report.ruleset);
  } catch (const std::exception& e) {
    report.advice_note = e.what();
  }
  return report;
}

void write_report_file(const fs::path& file, const std::string& html) {
  if (files::names_standard_output(file)) return files::write_output(file, html);
  try {
    files::write_file_atomically(file, html);  // a page is whole under its name, or absent
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (const std::string named = file.string() + ": "; why.starts_with(named))
      why.erase(0, named.size());
    throw AuditError(file.string() + ": cannot write the report there (" + why + ")");
  }
}

}  // namespace mlbert::logging
