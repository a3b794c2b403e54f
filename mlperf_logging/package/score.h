// BERT result scoring as the official result_summarizer computes it: per run, minutes from
// run_start to run_stop of every log that passes the compliance checker; then the olympic mean
// (drop fastest and slowest, or only the fastest when one run failed; no score when more failed).
// The summarizer judges runs by the compliance verdict alone: a run whose run_stop status is not
// "success" still counts when the log is compliant (possible in the open division), and this module
// does the same, flagging such runs.
#pragma once
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mlbert::logging {

// Olympic average of run times with `already_dropped` runs removed before the call (they were the
// failures, which rank as slowest): sorts, drops `max_dropped` from the fast end and
// `max_dropped - already_dropped` from the slow end, and averages the rest in sorted order as the
// summarizer does. Empty when nothing remains.
std::optional<double> olympic_average(std::vector<double> minutes, int already_dropped,
                                      int max_dropped);
// The runs that olympic_average averages: indices into `minutes`, fastest first (ties keep their
// order). The others are the dropped fastest and slowest runs.
std::vector<std::size_t> olympic_kept(const std::vector<double>& minutes, int already_dropped,
                                      int max_dropped);

struct ScoreOptions {
  std::string ruleset;        // training ruleset the logs are checked against, e.g. "4.0.0"
  bool apply_scaling = true;  // multiply by scaling.json's factor when the directory has one
};

// One result file as the summarizer sees it.
struct RunScore {
  std::filesystem::path file;
  bool counted = false;                        // passed compliance and has run_start and run_stop
  std::optional<double> minutes;               // run_stop - run_start, when counted
  std::optional<std::string> run_stop_status;  // metadata.status of run_stop, when logged
  std::string reason;  // why it was dropped ("Compliance check failed: ...")
};

struct SystemScore {
  std::filesystem::path dir;  // the directory that holds the result files
  std::string ruleset;
  std::vector<RunScore> runs;
  int dropped = 0;
  std::optional<double> score;  // minutes; empty when too many runs failed or too few remain
  double scaling_factor = 1.0;
  std::vector<std::string> notes;  // notices in the summarizer's spirit (dropping, scaling, counts)
};

// Scores the result_*.txt files of `dir` (or of `dir`/bert when `dir` itself has none). Throws
// AuditError when the directory is missing, has no result files, the ruleset is unknown or
// scaling.json is malformed.
SystemScore score_system(const std::filesystem::path& dir, const ScoreOptions& options);

}  // namespace mlbert::logging
