// Timing a run from its records (see run_timeline.h).
#include "mlperf_logging/log/run_timeline.h"

#include <cmath>
#include <stdexcept>

namespace mlbert::mllog {
namespace {

// Counts in the logs (samples, batch sizes, epochs) are whole numbers up to 2^53.
constexpr double kMaxLoggedCount = 9007199254740992.0;

// Early rounds log epoch_num 1 on every eval; a count of samples is larger.
constexpr std::int64_t kLargestEpochNumber = 1000;

}  // namespace

std::optional<std::int64_t> logged_count(const nlohmann::json& value) {
  if (!value.is_number()) return std::nullopt;
  const double v = value.get<double>();
  if (!std::isfinite(v) || std::abs(v) > kMaxLoggedCount) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

const std::set<std::string, std::less<>>& run_timeline_keys() {
  static const std::set<std::string, std::less<>> keys = {
      "init_start", "init_stop", "run_start",  "run_stop",   "eval_accuracy",
      "eval_start", "eval_stop", "block_stop", "epoch_stop", "train_samples"};
  return keys;
}

bool RunTimeline::read(const LogRecord& r) {
  RunTiming& t = timing_;
  const bool running = t.run_start && !t.run_stop;
  if (r.key == "init_start") {
    if (!t.init_start) t.init_start = r.timestamp;
  } else if (r.key == "init_stop") {
    if (t.init_start && !t.init_stop) t.init_stop = r.timestamp;
  } else if (r.key == "run_start") {
    if (!t.run_start) t.run_start = r.timestamp;
  } else if (r.key == "run_stop") {
    if (running) {
      t.run_stop = r.timestamp;
      if (r.metadata.is_object() && r.metadata.contains("status") &&
          r.metadata["status"].is_string())
        t.status = r.metadata["status"].get<std::string>();
    }
  } else if (r.key == "block_stop" || r.key == "epoch_stop") {
    if (running) t.last_block_stop = r.timestamp;
  } else if (r.key == "eval_accuracy") {
    if (running) eval_accuracy(r);
  } else if (r.key == "eval_start") {
    if (running) eval_start(r);
  } else if (r.key == "eval_stop") {
    if (running && eval_open_) {
      t.timed_evals.back().stop = since_start(r);
      eval_open_ = false;
    }
  } else if (r.key == "train_samples") {
    // What the run trained. Before run_start it is a configuration, not a count of this run
    // (Composer logs the dataset's size there); the last eval's epoch_num then counts.
    if (!t.run_start) return true;
    const auto n = logged_count(r.value);
    if (!n)
      throw std::runtime_error(file_.string() + ":" + std::to_string(r.line) + ": " + r.key +
                               ": value " + r.value.dump() +
                               (r.value.is_number() ? " is out of range" : " is not a number"));
    t.samples = *n;
  } else {
    return false;
  }
  return true;
}

void RunTimeline::eval_accuracy(const LogRecord& r) {
  ++timing_.evals;
  timing_.eval_times.push_back(since_start(r));
  std::optional<std::int64_t> epoch;
  if (r.metadata.is_object() && r.metadata.contains("epoch_num"))
    epoch = logged_count(r.metadata["epoch_num"]);
  if (epoch) last_epoch_ = *epoch;
  timing_.eval_samples.push_back(epoch && *epoch > kLargestEpochNumber ? *epoch : 0);
}

void RunTimeline::eval_start(const LogRecord& r) {
  TimedEval e;
  e.start = e.stop = since_start(r);
  e.samples = logged_count(r.value);
  if ((!e.samples || *e.samples <= kLargestEpochNumber) && r.metadata.is_object() &&
      r.metadata.contains("epoch_num"))
    e.samples = logged_count(r.metadata["epoch_num"]);
  if (e.samples && *e.samples <= kLargestEpochNumber) e.samples.reset();
  if (eval_open_) timing_.timed_evals.pop_back();  // a start without its stop times nothing
  timing_.timed_evals.push_back(e);
  eval_open_ = true;
}

RunTiming RunTimeline::finish() {
  if (eval_open_) {
    timing_.timed_evals.pop_back();
    eval_open_ = false;
  }
  if (timing_.samples == 0 && last_epoch_ > kLargestEpochNumber) timing_.samples = last_epoch_;
  return timing_;
}

RunPhases run_phases(const RunTiming& t) {
  RunPhases p;
  if (t.init_start && (t.init_stop || t.run_start))
    p.init = ((t.init_stop ? *t.init_stop : *t.run_start) - *t.init_start) / 1000.0;
  if (!t.timed_evals.empty()) {
    p.eval = 0;
    for (const TimedEval& e : t.timed_evals) *p.eval += e.stop - e.start;
  }
  if (t.run_start && t.run_stop && (p.eval || t.evals == 0)) {
    const double end =
        ((t.last_block_stop ? *t.last_block_stop : *t.run_stop) - *t.run_start) / 1000.0;
    double training = end;
    for (const TimedEval& e : t.timed_evals)
      if (e.stop <= end) training -= e.stop - e.start;
    p.training = training;
  }
  return p;
}

}  // namespace mlbert::mllog
