// `mlbert report`: one self-contained HTML page (inline SVG, no script, no network) that shows a
// BERT result directory, or several side by side, the way an auditor reads them: convergence of
// every run, time to train with the olympic mean and the score, compliance per file, the RCP test,
// a timeline of the phases, throughput, and the system description.
//
// Design choice: the report judges nothing itself. Verdicts, the score and the RCP test come from
// the toolkit's own checker (checker.h), scorer (score.h), RCP check (rcp.h) and system
// description check (system_desc.h), called exactly as `mlbert check|score|rcp|system-check` call
// them; the report only adds what those tools do not keep (the eval curve, the phase times,
// throughput), read with the streaming parser.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlperf_logging/advise/advise.h"
#include "mlperf_logging/package/score.h"
#include "mlperf_logging/package/system_desc.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/rules/checker.h"

namespace mlbert::logging {

// MLPerf BERT's quality target: masked-LM accuracy (the closed rules' eval_accuracy check).
inline constexpr double kBertQualityTarget = 0.720;

struct ReportInput {
  std::filesystem::path dir;          // result_*.txt, or a folder whose bert/ holds them
  std::string ruleset;                // "" -> the round in the path (v4.0 -> 4.0.0)
  std::filesystem::path system_json;  // "" -> looked up next to the results (see below)
  std::optional<double> target;       // the accuracy target line; default kBertQualityTarget
};

// One eval as the log records it.
struct EvalPoint {
  double samples = 0;   // metadata.epoch_num (NaN when absent or not a number)
  double accuracy = 0;  // value
  double time_ms = 0;   // time_ms
  std::size_t line = 0;
};

// What one result log says, beyond the verdicts.
struct RunTrace {
  std::filesystem::path file;
  std::vector<EvalPoint> evals;
  std::optional<double> init_start_ms, init_stop_ms, run_start_ms, run_stop_ms;  // first of each
  std::optional<std::string> stop_status;                 // run_stop's metadata.status
  std::vector<std::pair<double, double>> eval_intervals;  // eval_start .. eval_stop, time_ms
  std::vector<std::pair<double, double>> throughput;      // (time_ms, tracked_stats throughput)
  std::optional<double> global_batch_size, train_samples;
  std::size_t parse_errors = 0;
  std::string read_error;  // the file could not be read at all

  std::optional<mllog::CheckResult> check;  // the compliance verdict, when the ruleset has rules
};

struct SystemReport {
  ReportInput input;
  std::filesystem::path results_dir;  // where the result files are
  std::string name;                   // the system folder's name
  std::string context;                // the folders above it, e.g. "v2.0 / Samsung"
  std::string ruleset;
  double target = kBertQualityTarget;
  std::vector<RunTrace> runs;
  std::string check_note;  // why there are no compliance verdicts ("" when there are)

  std::optional<SystemScore> score;
  std::string score_note;  // why there is no score table

  std::optional<RcpResult> rcp;
  std::optional<RcpResult> rcp_train_samples;  // when epoch_num does not count samples
  std::string rcp_note;                        // e.g. "ruleset 0.7.0 has no BERT RCPs"

  std::filesystem::path description_file;
  std::optional<nlohmann::json> description;
  std::optional<SystemDescResult> description_check;
  std::string description_note;

  // Every log's facts (SHA-256, seeds, hyperparameters) and the advisories beside the verdicts.
  std::optional<FolderAdvice> advice;
  std::string advice_note;  // why there is none

  // True when every run's eval records count samples in epoch_num (strictly increasing, at least
  // one global batch): the convergence plot then has samples on its x axis, else minutes.
  bool evals_count_samples = false;
  std::optional<std::string> division() const;  // the logs' submission_division, else the JSON's
  std::optional<double> global_batch_size() const;
  // The RCP result the report judges by: read from train_samples when epoch_num does not count
  // samples (as --rcp-bert-train-samples), else the official default; nullptr when none.
  const RcpResult* rcp_shown() const;
};

// The report's headline score: the olympic mean normalized by the RCP scaling factor, as the
// official result_summarizer scores a closed result after the package checker has written the
// factor to scaling.json (rounds with RCPs, the RCP check passed, faster than the RCP mean); the
// raw olympic mean beside it.
struct ScoreHeadline {
  std::optional<double> raw;         // minutes, no factor applied
  std::optional<double> normalized;  // minutes, raw x factor
  double factor = 1.0;
  std::string basis;  // where the factor comes from, or why it is 1
};
ScoreHeadline score_headline(const SystemReport& system);

// Reads one result directory and runs the checks on it. The system description is `system_json`,
// else system.json in the result folder or above a bert/ folder, else, in a submission package,
// <org>/systems/<system>.json. Throws AuditError when the directory is missing, holds no result
// files (nor bert/ with some), or no ruleset is given or in the path. Everything wrong inside the
// logs or the description is part of the report, never an exception.
SystemReport read_system_report(const ReportInput& input);

// A comparison of two result sets, computed above the toolkit (`mlbert report --compare` fills it
// from `mlbert reproduce compare`) and rendered here as given: the report judges nothing itself.
struct ComparisonTable {
  std::string caption;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // cells as text, one per column
  std::string empty_note;                      // shown instead of an empty table
};
struct ComparisonSection {
  std::string verdict;  // the comparison's last line: "reproduced" or "not reproduced: why"
  bool reproduced = false;
  std::vector<ComparisonTable> tables;
};

struct ReportOptions {
  std::string title = "MLPerf Training BERT results";
  std::string generated_by;  // a line for the footer, e.g. the command
  std::optional<ComparisonSection> comparison;  // a section after the summary, when given
};

// The whole page. Every string from a log or a JSON file is escaped.
std::string render_report_html(const std::vector<SystemReport>& systems,
                               const ReportOptions& options);

// Writes `html` to `file` (via a temporary in the same folder), or to standard output for "-" and
// /dev/stdout (common/standard_output.h); AuditError naming the file when it cannot be written.
void write_report_file(const std::filesystem::path& file, const std::string& html);

// The summary as the official result_summarizer's table: one row per system with its columns
// (division, availability, submitter, system, number_of_nodes, host_processor_model_name,
// host_processors_count, accelerator_model_name, accelerators_count, framework, notes, private_id,
// bert, then the detailed table's bert:time_to_train, bert:Energy, bert:GBS,
// bert:samples_to_converge, bert:RCP, bert:rcp_scaling_factor, then details_url, code_url), rows
// sorted by their columns as the summarizer sorts them. `bert` is the headline score.
std::vector<std::string> summary_columns();
nlohmann::ordered_json summary_rows(const std::vector<SystemReport>& systems);
// The rows as CSV (pandas' to_csv: no index, empty cells for missing values, RFC 4180 quoting),
// and as JSON: the rows, each with "mlbert" beside the official columns (the raw score, the
// advisories, every log's SHA-256).
std::string summary_csv(const std::vector<SystemReport>& systems);
std::string summary_json(const std::vector<SystemReport>& systems);

}  // namespace mlbert::logging
