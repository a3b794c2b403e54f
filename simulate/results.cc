// Reading a published result folder for `mlbert simulate --results` (see results.h).
#include "simulate/results.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>

#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/package/score.h"
#include "mlperf_logging/report/report.h"
#include "simulate/system_fields.h"

namespace mlbert::simulate {
namespace {

// The configuration keys read here; the timing keys are the run timeline's.
const std::set<std::string, std::less<>> kConfigurationKeys = {
    "global_batch_size", "gradient_accumulation_steps",
    "opt_name",          "submission_division",
    "eval_samples",      "d_batch_size"};

std::int64_t integer_value(const mllog::LogRecord& r, const std::filesystem::path& file) {
  if (const auto n = mllog::logged_count(r.value)) return *n;
  throw std::runtime_error(file.string() + ":" + std::to_string(r.line) + ": " + r.key +
                           ": value " + r.value.dump() +
                           (r.value.is_number() ? " is out of range" : " is not a number"));
}

}  // namespace

std::int64_t skipped_steps(const std::filesystem::path& log) {
  static constexpr std::string_view kAnnouncements[] = {"reducing loss scale to ",
                                                        "reduced loss_scaler to "};
  std::ifstream in(log, std::ios::binary);
  std::set<std::string, std::less<>> scales;
  std::string line;
  while (std::getline(in, line) && scales.size() < 4096) {
    if (line.find(":::MLLOG") != std::string::npos) continue;
    for (const std::string_view announcement : kAnnouncements)
      for (std::size_t at = line.find(announcement); at != std::string::npos;
           at = line.find(announcement, at + 1)) {
        std::size_t end = at + announcement.size();
        const std::size_t begin = end;
        while (end < line.size() && end - begin < 32 &&
               (std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '.'))
          ++end;
        if (line.find_first_of("0123456789", begin) >= end) continue;
        // 65536.0 and 65536.000000 are one scale.
        std::string digits = line.substr(begin, end - begin);
        if (const std::size_t dot = digits.find('.'); dot != std::string::npos) {
          while (digits.back() == '0') digits.pop_back();
          if (digits.back() == '.') digits.pop_back();
        }
        scales.insert(std::move(digits));
      }
  }
  return static_cast<std::int64_t>(scales.size());
}

namespace {

// What one log's records say: the run's timing (the log toolkit's run timeline), and the
// result-wide configuration (batch sizes, optimizer, division) into the result.
class RunRecords {
 public:
  RunRecords(const std::filesystem::path& file, PublishedResult& result)
      : file_(file), result_(result), timeline_(file) {}

  void read(const mllog::LogRecord& r) {
    if (!timeline_.read(r)) configuration(r);
  }

  // The run as its records time it; throws IncompleteRun when they do not time a whole run.
  PublishedRun finish() {
    const mllog::RunTiming t = timeline_.finish();
    if (!t.run_start) throw IncompleteRun(file_.string() + ": no run_start record");
    if (!t.run_stop)
      throw IncompleteRun(file_.string() +
                          ": no run_stop record after run_start (the log ends before the run)");
    PublishedRun run;
    run.file = file_;
    run.seconds = (*t.run_stop - *t.run_start) / 1000.0;
    run.skipped_steps = skipped_steps(file_);
    run.samples = t.samples;
    if (run.samples == 0)
      throw IncompleteRun(file_.string() +
                          ": neither train_samples nor an eval epoch_num says how many samples "
                          "the run trained");
    run.evals = t.evals;
    run.eval_times = t.eval_times;
    run.eval_samples = t.eval_samples;
    run.timed_evals = t.timed_evals;
    run.status = t.status;
    return run;
  }

 private:
  // The records that configure the result, whichever run states them.
  void configuration(const mllog::LogRecord& r) {
    if (r.key == "global_batch_size") {
      result_.global_batch_size = integer_value(r, file_);
    } else if (r.key == "gradient_accumulation_steps") {
      const std::int64_t steps = integer_value(r, file_);
      if (steps > std::numeric_limits<int>::max())
        throw std::runtime_error(file_.string() + ":" + std::to_string(r.line) + ": " + r.key +
                                 ": value " + r.value.dump() + " is out of range");
      result_.gradient_accumulation = static_cast<int>(steps);
    } else if (r.key == "eval_samples") {
      result_.eval_samples = integer_value(r, file_);
    } else if (r.key == "d_batch_size") {
      result_.device_batch_size = integer_value(r, file_);
    } else if (r.key == "opt_name" && r.value.is_string()) {
      result_.opt_name = r.value.get<std::string>();
    } else if (r.key == "submission_division" && r.value.is_string()) {
      result_.division = r.value.get<std::string>();
    }
  }

  const std::filesystem::path& file_;
  PublishedResult& result_;
  mllog::RunTimeline timeline_;
};

PublishedRun read_run(const std::filesystem::path& file, PublishedResult& result) {
  RunRecords records(file, result);
  mllog::ParseOptions options;
  options.wanted = [](std::string_view key, bool is_string) {
    return is_string && (kConfigurationKeys.count(key) || mllog::run_timeline_keys().count(key))
               ? mllog::ParseOptions::Want::all
               : mllog::ParseOptions::Want::skip;
  };
  mllog::for_each_record(
      file, [&](const mllog::LogRecord& r) { records.read(r); },
      [](const mllog::ParseError&) {});  // lines the official parser rejects carry no timing
  return records.finish();
}

// The result files of `dir` (or of its bert/ in a submission package) and their system
// description, read before the logs: what cannot be modelled is said first (a TPU's or an IPU's
// logs need not follow the GPU implementations' records).
std::vector<std::filesystem::path> read_folder(const std::filesystem::path& dir,
                                               PublishedResult& result) {
  result.dir = dir;
  auto files = logging::find_result_files(dir);
  if (files.empty() && std::filesystem::is_directory(dir / logging::kBertBenchmark)) {
    result.dir = dir / logging::kBertBenchmark;
    files = logging::find_result_files(result.dir);
  }
  if (files.empty()) throw std::runtime_error(dir.string() + ": no result_*.txt files");
  const auto system_file = logging::find_system_description(result.dir);
  if (system_file.empty())
    throw std::runtime_error(dir.string() +
                             ": no system description (system.json beside the result files or "
                             "above bert/, or <org>/systems/<system>.json in a submission "
                             "package)");
  result.system_file = system_file;
  result.system = logging::read_json_file(system_file);
  if (!result.system.is_object())
    throw std::runtime_error(system_file.string() + ": must be a JSON object");
  if (const auto why = unmodelled_accelerator(string_field(result.system, "accelerator_model_name"),
                                              system_file))
    throw std::runtime_error(*why);
  return files;
}

}  // namespace

double PublishedResult::olympic_seconds() const {
  std::vector<double> seconds;
  for (const auto& r : runs) seconds.push_back(r.seconds);
  return logging::olympic_average(seconds, 0, 1).value_or(0);
}

std::optional<double> PublishedRun::run_start_excess() const {
  if (eval_times.size() < 2) return std::nullopt;
  const double excess = eval_times[0] - (eval_times[1] - eval_times[0]);
  if (!std::isfinite(excess)) return std::nullopt;
  return std::max(0.0, excess);
}

namespace {

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2) return upper;
  return (*std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid)) +
          upper) /
         2;
}

}  // namespace

PublishedPhases published_phases(const PublishedResult& result,
                                 std::int64_t assumed_eval_interval) {
  std::vector<double> steps, evals, starts, intervals;  // intervals: one figure per run
  std::size_t interval_count = 0;
  bool from_cadence = false;
  const bool even_cadence = result.ruleset.rfind("0.", 0) != 0;
  for (const PublishedRun& run : result.runs) {
    const auto& t = run.timed_evals;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (std::isfinite(t[i].stop - t[i].start) && t[i].stop >= t[i].start)
        evals.push_back(t[i].stop - t[i].start);
      if (i + 1 == t.size() || !t[i].samples || !t[i + 1].samples || result.global_batch_size <= 0)
        continue;
      const double step_count = static_cast<double>(*t[i + 1].samples - *t[i].samples) /
                                static_cast<double>(result.global_batch_size);
      const double seconds = t[i + 1].start - t[i].stop;
      if (step_count >= 1 && std::isfinite(seconds) && seconds >= 0)
        steps.push_back(seconds / step_count);
    }
    if (even_cadence)
      if (const auto excess = run.run_start_excess()) starts.push_back(*excess);
    // From the second evaluation to the last: whole intervals, the run start left out.
    const std::size_t n = std::min(run.eval_samples.size(), run.eval_times.size());
    if (n >= 3 && result.global_batch_size > 0) {
      const std::int64_t first = run.eval_samples[1], last = run.eval_samples[n - 1];
      const bool stated = first > 0 && last > first;
      const double samples =
          stated ? static_cast<double>(last - first)
                 : static_cast<double>(n - 2) * static_cast<double>(assumed_eval_interval);
      const double step_count = samples / static_cast<double>(result.global_batch_size);
      const double seconds = run.eval_times[n - 1] - run.eval_times[1];
      if (step_count >= 1 && std::isfinite(seconds) && seconds >= 0) {
        intervals.push_back(seconds / step_count);
        interval_count += n - 2;
        from_cadence = from_cadence || !stated;
      }
    }
  }
  PublishedPhases p;
  p.step_seconds = median(steps);
  p.step_intervals = steps.size();
  p.eval_seconds = median(evals);
  p.timed_evals = evals.size();
  p.run_start_seconds = median(starts);
  p.interval_step_seconds = median(intervals);
  p.intervals = interval_count;
  p.intervals_from_cadence = from_cadence;
  return p;
}

PublishedResult read_published_result(const std::filesystem::path& dir,
                                      const std::string& ruleset) {
  PublishedResult result;
  const auto files = read_folder(dir, result);
  if (!ruleset.empty()) {
    result.ruleset = ruleset;
  } else if (auto from_path = logging::ruleset_from_path(dir)) {
    result.ruleset = *from_path;
  }
  // A run whose log is cut short is left out, named; a folder of only such runs is an error.
  for (const auto& file : files) {
    try {
      result.runs.push_back(read_run(file, result));
    } catch (const IncompleteRun& e) {
      result.skipped_runs.push_back(e.what());
    }
  }
  if (result.runs.empty()) throw std::runtime_error(result.skipped_runs.front());
  result.launch_line = read_launch_line(files.front());
  if (result.global_batch_size < 1)
    throw std::runtime_error(dir.string() + ": no global_batch_size record in the logs");
  if (result.division.empty()) result.division = string_field(result.system, "division");
  result.framework = string_field(result.system, "framework");
  result.launch = derive_launch(result);
  return result;
}

OfficialScore official_score(const PublishedResult& result) {
  OfficialScore out;
  if (result.ruleset.empty()) {
    out.note = "no official score: the ruleset is unknown (pass --ruleset)";
    return out;
  }
  try {
    logging::ScoreOptions options;
    options.ruleset = result.ruleset;
    const logging::SystemScore score = logging::score_system(result.dir, options);
    out.minutes = score.score;
    if (!score.score)
      out.note = "no official score: too few runs pass the " + result.ruleset + " compliance check";
  } catch (const std::exception& e) {
    out.note = std::string("no official score: ") + e.what();
  }
  return out;
}

}  // namespace mlbert::simulate
