// A published MLPerf BERT result folder (`result_*.txt` and the submission's `system.json`) as
// `mlbert simulate` reads it: what the machine was, how the run was set up, and what each run did.
//
// Design choice: everything comes from the log toolkit (its parser for the MLLOG records, its
// result-file discovery, ruleset-from-path and scoring), from the system description's own fields
// or from the launch line the logs echo (launch_line.h); what they imply for how the
// implementation ran is derived once into PublishedResult::launch (published_launch.h). A value
// none states is a documented default, recorded in ClusterRun::notes so the output names it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlperf_logging/log/run_timeline.h"
#include "simulate/launch_line.h"
#include "simulate/published_launch.h"

namespace mlbert::simulate {

// An evaluation the log times with eval_start and eval_stop (the log toolkit's run timeline).
using TimedEval = mllog::TimedEval;

struct PublishedRun {
  std::filesystem::path file;
  double seconds = 0;              // run_start to run_stop
  std::int64_t samples = 0;        // trained when it stopped
  std::int64_t evals = 0;          // eval_accuracy records
  std::vector<double> eval_times;  // seconds after run_start
  // The samples at each eval_accuracy (its epoch_num), 0 where not stated (1,000 or less).
  std::vector<std::int64_t> eval_samples;
  std::vector<TimedEval> timed_evals;  // eval_start .. eval_stop pairs, in order
  std::string status;                  // run_stop's metadata.status
  // Steps trained but not in `samples`: the loss-scale overflows the log announces (skipped_steps).
  std::int64_t skipped_steps = 0;
  std::int64_t steps(std::int64_t global_batch_size) const {
    return samples / global_batch_size + skipped_steps;
  }
  // The time before the first step, as the run's evaluation cadence shows it: the first interval
  // (run_start to the first eval_accuracy) minus the second, which trains as many samples (the
  // cadence of rules 1.0.0 and later), floored at 0. nullopt with fewer than two evaluations.
  std::optional<double> run_start_excess() const;
};

// Steps a log says were skipped for a loss-scale overflow, computed but not counted: apex amp's
// "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to X" (every rank prints
// it) and NVIDIA's "Overflow detected, reduced loss_scaler to X" (the main process). The
// implementations that print them do not advance global_step on such a step, and train_samples is
// global_step x GBS (Samsung's and NVIDIA's v1.0 run_pretraining.py), so each is a step the run
// computed beyond its logged samples. Counted as the distinct scales announced: the scale only
// falls between them (apex's dynamic scaler grows it back after 2,000 clean steps, more than a
// BERT run takes), and the ranks' copies of one announcement count once. Samsung's logs agree
// with their own count of steps run, "(epoch, training_steps)", in each of their 40 runs.
std::int64_t skipped_steps(const std::filesystem::path& log);

struct PublishedResult {
  std::filesystem::path dir;
  std::filesystem::path system_file;  // its system description (logging::find_system_description)
  nlohmann::json system;              // that file's JSON
  std::string ruleset;                // from the path (v1.1 -> 1.1.0) or given
  std::string division;
  std::vector<PublishedRun> runs;
  std::vector<std::string> skipped_runs;  // "<file>: why" for each log cut short, left out
  std::int64_t global_batch_size = 0;
  int gradient_accumulation = 1;
  std::int64_t eval_samples = 10000;
  std::optional<std::string> opt_name;            // MLLOG opt_name, when logged
  std::optional<std::int64_t> device_batch_size;  // MLLOG d_batch_size: rows per GPU per micro-step
  std::string framework;   // system.json framework, e.g. "PyTorch NVIDIA Release 21.08"
  LaunchLine launch_line;  // of the first result file
  // What the fields above imply for how the implementation ran (derive_launch).
  PublishedLaunch launch;

  // Olympic mean of the run times in seconds (drop fastest and slowest, no compliance filter).
  double olympic_seconds() const;
};

// What the logs say each phase of the runs took, to set beside a prediction's: medians over every
// run of the folder; a figure the logs cannot give is nullopt.
struct PublishedPhases {
  // Seconds per step between evaluations: each eval_stop to the next eval_start, over the steps
  // of the samples between the two (global batch size samples a step).
  std::optional<double> step_seconds;
  std::size_t step_intervals = 0;
  std::optional<double> eval_seconds;  // eval_start to eval_stop
  std::size_t timed_evals = 0;
  // Seconds per step over whole evaluation intervals, the evaluation included: per run, from the
  // second eval_accuracy to the last (the first interval holds the run start) over the steps of
  // the samples between them, which the records' epoch_num states from v3.0 on; where it does
  // not, `assumed_eval_interval` samples an interval (the rules' cadence), when given. Older logs,
  // which time no evaluation, give this.
  std::optional<double> interval_step_seconds;
  std::size_t intervals = 0;
  bool intervals_from_cadence = false;  // some run's intervals counted at assumed_eval_interval
  // PublishedRun::run_start_excess; only for rulesets 1.0.0 and later (0.x logs put the first
  // evaluation elsewhere).
  std::optional<double> run_start_seconds;
};
PublishedPhases published_phases(const PublishedResult& result,
                                 std::int64_t assumed_eval_interval = 0);

// A result log that does not time a whole run (no run_start, no run_stop after it, no count of
// the samples trained): read_published_result leaves it out and names it.
struct IncompleteRun : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads `dir` (result_*.txt and system.json). `ruleset` empty: from the path. An incomplete run
// is left out (skipped_runs); throws std::runtime_error naming the file and record when the folder
// cannot be read or holds no complete run.
PublishedResult read_published_result(const std::filesystem::path& dir,
                                      const std::string& ruleset = "");

// The official score (minutes) by the toolkit's summarizer rules, or why there is none.
struct OfficialScore {
  std::optional<double> minutes;
  std::string note;
};
OfficialScore official_score(const PublishedResult& result);

}  // namespace mlbert::simulate
