// BERT RCP check. Result files are scanned the way the official rcp_checker scans them (substring
// tests on each MLLOG payload, JSON parsed only for the lines that match), so the same logs yield
// the same samples-to-converge; where the official tool would crash on a malformed record, this one
// names the file, line and field instead and returns an error verdict.
#include "mlperf_logging/rcp/rcp.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/atomic_file.h"
#include "common/input_file.h"
#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/log/python_json.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rcp/stats.h"
#include "mlperf_logging/rcp/table.h"

namespace mlbert::logging {
namespace {

constexpr double kNotConvergedSamples = 1e9;  // the official checker's "infinite"
constexpr int kReferenceDrop = 1;             // olympic mean drops one run each side
constexpr double kSubmissionOlympicRuns = kBertResultFileCount - 2 * kReferenceDrop;
constexpr double kInterpolationReferenceRuns = 2 * kBertResultFileCount;

}  // namespace

std::string batch_size_text(double bs) {
  // Batch sizes are integers in every real log; print them without a ".0".
  if (std::floor(bs) == bs && std::fabs(bs) < 1e15)
    return std::to_string(static_cast<long long>(bs));
  return mllog::python_float_repr(bs);
}

std::string_view to_string(RcpVerdict verdict) {
  switch (verdict) {
    case RcpVerdict::pass:
      return "pass";
    case RcpVerdict::fail:
      return "fail";
    case RcpVerdict::missing:
      return "missing";
    case RcpVerdict::error:
      return "error";
  }
  return "error";
}

// ---- reference statistics -----------------------------------------------------------------------

RcpCatalog::RcpCatalog(std::string_view ruleset) {
  const RcpSet set = bert_rcp_set(ruleset);
  ruleset_ = std::string(set.ruleset);
  data_ruleset_ = std::string(set.data_ruleset);
  std::vector<RcpReference> references;
  for (const RcpRecord& record : set.records) {
    references.push_back({std::string(record.name),
                          static_cast<double>(record.batch_size),
                          {record.samples_to_converge.begin(), record.samples_to_converge.end()}});
  }
  compute(std::move(references));
}

RcpCatalog::RcpCatalog(std::string label, std::vector<RcpReference> references)
    : ruleset_(label), data_ruleset_(std::move(label)) {
  compute(std::move(references));
}

void RcpCatalog::compute(std::vector<RcpReference> references) {
  if (references.empty()) throw AuditError("RCP set " + data_ruleset_ + " has no references");
  for (RcpReference& reference : references) {
    std::vector<double>& samples = reference.samples_to_converge;
    if (samples.size() < 3) {
      throw AuditError("RCP " + reference.name + " of " + data_ruleset_ + " has " +
                       std::to_string(samples.size()) + " runs; the olympic mean needs at least 3");
    }
    std::sort(samples.begin(), samples.end());
    RcpPoint point;
    point.name = reference.name;
    point.batch_size = reference.batch_size;
    point.runs = static_cast<int>(samples.size());
    point.mean = rcp_olympic_mean(samples, kReferenceDrop);
    point.stdev = population_stdev(samples);
    point.min_mean = min_acceptable_mean(point.mean, point.stdev,
                                         static_cast<double>(samples.size() - 2 * kReferenceDrop),
                                         kSubmissionOlympicRuns);
    point.max_speedup = point.mean / point.min_mean;
    all_.push_back(std::move(point));
  }
  std::stable_sort(all_.begin(), all_.end(), [](const RcpPoint& a, const RcpPoint& b) {
    return a.batch_size < b.batch_size;
  });

  // Pruning, step 1: batch sizes below the fastest-converging one go; the smallest remaining batch
  // size is then the fastest.
  auto fastest = std::min_element(all_.begin(), all_.end(),
                                  [](const auto& a, const auto& b) { return a.mean < b.mean; });
  for (const RcpPoint& point : all_) {
    if (point.batch_size >= fastest->batch_size) pruned_.push_back(point);
  }
  // The lower convex envelope of the same points (Andrew's monotone chain, lower half): a point
  // goes when it lies strictly above the segment from the last kept point to the next one, and
  // each removal re-examines the kept point before it. Points on a segment stay, as officially.
  for (const RcpPoint& point : pruned_) {
    while (envelope_.size() >= 2) {
      const RcpPoint& low = envelope_[envelope_.size() - 2];
      const RcpPoint& middle = envelope_.back();
      if (point.batch_size == low.batch_size) break;  // no line through two points of one size
      const double slope = (point.mean - low.mean) / (point.batch_size - low.batch_size);
      if (middle.mean <= slope * (middle.batch_size - low.batch_size) + low.mean) break;
      envelope_.pop_back();
    }
    envelope_.push_back(point);
  }
  // Step 2: a point converging slower than the interpolation of its two neighbours goes. One pass
  // left to right as officially (not a full lower convex hull: a removal is not re-examined to the
  // left).
  for (std::size_t i = 1; i + 1 < pruned_.size();) {
    const RcpPoint& low = pruned_[i - 1];
    const RcpPoint& high = pruned_[i + 1];
    const double slope = (high.mean - low.mean) / (high.batch_size - low.batch_size);
    const double interpolated_mean = slope * (pruned_[i].batch_size - low.batch_size) + low.mean;
    if (pruned_[i].mean > interpolated_mean) {
      pruned_.erase(pruned_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

std::optional<RcpPoint> RcpCatalog::find(double batch_size, RcpPass pass) const {
  for (const RcpPoint& point : points(pass)) {
    if (point.batch_size == batch_size) return point;
  }
  return std::nullopt;
}

std::optional<RcpPoint> RcpCatalog::nearest_below(double batch_size, RcpPass pass) const {
  std::optional<RcpPoint> best;
  for (const RcpPoint& point : points(pass)) {
    if (point.batch_size < batch_size && point.batch_size > 0 &&
        (!best || point.batch_size > best->batch_size)) {
      best = point;
    }
  }
  return best;
}

std::optional<RcpPoint> RcpCatalog::nearest_above(double batch_size, RcpPass pass) const {
  std::optional<RcpPoint> best;
  for (const RcpPoint& point : points(pass)) {
    if (point.batch_size > batch_size && (!best || point.batch_size < best->batch_size)) {
      best = point;
    }
  }
  return best;
}

RcpPoint RcpCatalog::interpolate(double batch_size, const RcpPoint& low,
                                 const RcpPoint& high) const {
  auto lerp = [&](double y_low, double y_high) {
    const double slope = (y_high - y_low) / (high.batch_size - low.batch_size);
    return slope * (batch_size - low.batch_size) + y_low;
  };
  RcpPoint point;
  point.name = std::string(kBertBenchmark) + "_interp_" + batch_size_text(batch_size);
  point.batch_size = batch_size;
  point.interpolated = true;
  point.mean = batch_size == low.batch_size ? low.mean : lerp(low.mean, high.mean);
  point.stdev = batch_size == low.batch_size ? low.stdev : lerp(low.stdev, high.stdev);
  point.min_mean = min_acceptable_mean(point.mean, point.stdev, kInterpolationReferenceRuns,
                                       kSubmissionOlympicRuns);
  point.max_speedup = point.mean / point.min_mean;
  return point;
}

RcpCatalog::Match RcpCatalog::match(double batch_size, RcpPass pass) const {
  if (auto exact = find(batch_size, pass)) return {Match::Kind::exact, exact};
  const auto below = nearest_below(batch_size, pass);
  const auto above = nearest_above(batch_size, pass);
  if (below && above) return {Match::Kind::interpolated, interpolate(batch_size, *below, *above)};
  if (below) return {Match::Kind::beyond_largest, std::nullopt};
  if (above) return {Match::Kind::smallest, points(pass).front()};
  return {Match::Kind::none, std::nullopt};
}

std::vector<RcpReference> read_rcp_json(const std::filesystem::path& file) {
  const nlohmann::json root = read_json_file(file);
  if (!root.is_object())
    throw AuditError(file.string() + ": an RCP file is a JSON object of records");
  std::vector<RcpReference> references;
  for (const auto& [name, record] : root.items()) {
    const std::string where_record = file.string() + ": record '" + name + "'";
    if (!record.is_object()) throw AuditError(where_record + " is not an object");
    const auto benchmark = record.find("Benchmark");
    if (benchmark != record.end() && *benchmark != kBertBenchmark) {
      throw AuditError(where_record + ": Benchmark is " + benchmark->dump() + ", not \"bert\"");
    }
    const auto bs = record.find("BS");
    if (bs == record.end() || !bs->is_number()) {
      throw AuditError(where_record + ": field BS is missing or not a number");
    }
    const auto samples = record.find("Epochs to converge");
    if (samples == record.end() || !samples->is_array()) {
      throw AuditError(where_record + ": field \"Epochs to converge\" is missing or not a list");
    }
    RcpReference reference{name, bs->get<double>(), {}};
    for (const auto& value : *samples) {
      if (!value.is_number()) {
        throw AuditError(where_record + ": \"Epochs to converge\" holds " + value.dump() +
                         ", not a number");
      }
      reference.samples_to_converge.push_back(value.get<double>());
    }
    references.push_back(std::move(reference));
  }
  return references;
}

// ---- reading submissions ------------------------------------------------------------------------

namespace {

// One result file's records as the RCP checker reads them: the batch size, the benchmark, the last
// eval (or train_samples) figure, and run_stop's verdict on it.
class RcpRunReader {
 public:
  RcpRunReader(const std::filesystem::path& file, bool bert_train_samples,
               std::vector<std::string>& problems)
      : problems_(problems), use_train_samples_(bert_train_samples) {
    run_.file = file;
    run_.samples_to_converge = kNotConvergedSamples;
  }

  void on_payload(std::string_view payload, int line) {
    const auto has = [&](std::string_view needle) {
      return payload.find(needle) != std::string_view::npos;
    };
    const bool wants_bs = has("global_batch_size");
    const bool wants_benchmark = has("submission_benchmark");
    const bool mentions_eval = has("eval_error") || has("eval_accuracy");
    const bool mentions_train = has("train_samples");
    const bool wants_stop = has("run_stop");
    if (!(wants_bs || wants_benchmark || mentions_eval || mentions_train || wants_stop)) return;

    line_ = line;
    try {
      record_ = mllog::pyjson::loads(payload);  // json.loads, as the official checker decodes
    } catch (const mllog::pyjson::DecodeError& e) {
      problem(std::string("malformed MLLOG JSON: ") + e.what());
      return;
    }
    if (!record_.is_object()) {
      problem("MLLOG payload is not a JSON object");
      return;
    }
    if (wants_bs) read_batch_size();
    if (wants_benchmark) read_benchmark();
    // Decided after the benchmark line, which may switch train_samples off for non-BERT logs.
    if (!use_train_samples_ && mentions_eval) {
      read_samples(metadata_field("epoch_num"), "metadata.epoch_num", true);
    } else if (use_train_samples_ && mentions_train) {
      read_samples(field("value"), "train_samples value", false);
    }
    if (wants_stop && record_.value("key", nlohmann::json()) == "run_stop") read_run_stop();
  }

  RcpRun finish(std::size_t problems_before) {
    if (!run_.converged && run_.note.empty()) {
      run_.note = problems_.size() > problems_before ? "unreadable records" : "no run_stop record";
    }
    return std::move(run_);
  }

 private:
  void problem(const std::string& text) {
    problems_.push_back(run_.file.string() + ":" + std::to_string(line_) + ": " + text);
  }

  const nlohmann::json* field(std::string_view name) {
    auto it = record_.find(std::string(name));
    if (it == record_.end()) {
      problem("record has no '" + std::string(name) + "' field");
      return nullptr;
    }
    return &*it;
  }

  const nlohmann::json* metadata_field(std::string_view name) {
    const nlohmann::json* metadata = field("metadata");
    if (!metadata) return nullptr;
    if (!metadata->is_object() || !metadata->contains(std::string(name))) {
      const auto key = record_.find("key");
      const std::string key_text = key == record_.end() ? "?"
                                   : key->is_string()   ? key->get<std::string>()
                                                        : key->dump();
      problem("key '" + key_text + "' has no metadata." + std::string(name));
      return nullptr;
    }
    return &(*metadata)[std::string(name)];
  }

  void read_batch_size() {
    const nlohmann::json* value = field("value");
    if (!value) return;
    if (value->is_number())
      run_.batch_size = value->get<double>();
    else
      problem("global_batch_size value " + value->dump() + " is not a number");
  }

  void read_benchmark() {
    const nlohmann::json* value = field("value");
    if (!value) return;
    run_.benchmark = value->is_string() ? value->get<std::string>() : value->dump();
    if (*run_.benchmark != kBertBenchmark) use_train_samples_ = false;
  }

  // A figure of samples trained: an eval's metadata.epoch_num (rounded as officially) or
  // train_samples' value.
  void read_samples(const nlohmann::json* value, const std::string& what, bool rounded) {
    if (!value) return;
    if (!value->is_number()) {
      problem(what + " " + value->dump() + " is not a number");
      return;
    }
    conv_samples_ = rounded ? round_to_3_decimals(value->get<double>()) : value->get<double>();
    conv_line_ = line_;
  }

  void read_run_stop() {
    const nlohmann::json* status = metadata_field("status");
    run_.converged = false;
    run_.samples_to_converge = kNotConvergedSamples;
    if (!status || *status != "success") {
      run_.note = "run_stop status " + (status ? status->dump() : std::string("missing")) +
                  " at line " + std::to_string(line_);
      return;
    }
    if (!conv_samples_) {
      problem(std::string("run_stop status success but no ") +
              (use_train_samples_ ? "train_samples" : "eval_accuracy") +
              " record before it says how many samples were trained");
      return;
    }
    run_.converged = true;
    run_.samples_to_converge = *conv_samples_;
    run_.note = "samples from line " + std::to_string(conv_line_);
  }

  RcpRun run_;
  std::vector<std::string>& problems_;
  bool use_train_samples_;
  nlohmann::json record_;               // the record being read
  int line_ = 0;                        // its line
  std::optional<double> conv_samples_;  // the last eval figure seen so far
  int conv_line_ = 0;
};

}  // namespace

RcpRun read_rcp_run(const std::filesystem::path& file, bool bert_train_samples,
                    std::vector<std::string>& problems) {
  const std::size_t problems_before = problems.size();
  RcpRunReader reader(file, bert_train_samples, problems);
  for_each_mllog_payload(
      file, [&](std::string_view payload, int line) { reader.on_payload(payload, line); });
  return reader.finish(problems_before);
}

// ---- the check ----------------------------------------------------------------------------------

namespace {

// Judges the submission against one reference point as the official _eval_submission_record does.
bool evaluate(const RcpPoint& reference, std::vector<double> samples, RcpResult& result,
              const std::filesystem::path& dir, bool write_scaling) {
  std::sort(samples.begin(), samples.end());
  const double mean = rcp_olympic_mean(samples, kReferenceDrop);
  const double norm = reference.mean / mean;
  result.reference = reference;
  result.submission_mean = mean;
  result.scaling_factor = norm < 1 ? 1.0 : norm;
  const auto scaling_file = dir / "scaling.json";
  if (write_scaling) {
    std::error_code ec;
    std::filesystem::remove(scaling_file, ec);
  }
  if (mean >= reference.mean / reference.max_speedup) {
    if (mean < reference.mean && write_scaling) {
      // Byte for byte what the official json.dumps({'scaling_factor': x}) writes.
      try {
        files::write_file_atomically(
            scaling_file,
            "{\"scaling_factor\": " + mllog::python_float_repr(result.scaling_factor) + "}");
      } catch (const std::exception& e) {
        throw AuditError(e.what());
      }
    }
    return true;
  }
  return false;
}

// Every run that could be read must name the same benchmark (BERT) and batch size: what is wrong
// goes to problems. A run whose log cannot be read says nothing.
void check_runs_agree(RcpResult& result) {
  const auto readable = [](const RcpRun& run) { return run.unreadable.empty(); };
  const auto first_readable = std::find_if(result.runs.begin(), result.runs.end(), readable);
  if (first_readable == result.runs.end()) {
    result.problems.push_back(result.dir.string() + ": no result log could be read");
    return;
  }
  const RcpRun& first = *first_readable;
  for (const RcpRun& run : result.runs) {
    if (!readable(run)) continue;
    if (run.benchmark && *run.benchmark != kBertBenchmark) {
      result.problems.push_back(run.file.string() + ": submission_benchmark is '" + *run.benchmark +
                                "'; mlbert rcp checks BERT only");
    }
    if (!run.batch_size) {
      result.problems.push_back(run.file.string() + ": no global_batch_size record");
    } else if (!std::isfinite(*run.batch_size) || *run.batch_size <= 0) {
      result.problems.push_back(run.file.string() + ": global_batch_size " +
                                batch_size_text(*run.batch_size) + " is not a batch size");
    } else if (first.batch_size && std::isfinite(*first.batch_size) &&
               *run.batch_size != *first.batch_size) {
      result.problems.push_back(run.file.string() + ": global_batch_size " +
                                batch_size_text(*run.batch_size) + " differs from " +
                                batch_size_text(*first.batch_size) + " in " + first.file.string());
    }
  }
}

// The verdict on converged runs at batch size `bs`, against the reference the catalog matches.
void judge(const RcpCatalog& catalog, double bs, const std::filesystem::path& dir,
           const RcpOptions& options, RcpResult& result) {
  std::vector<double> samples;
  for (const RcpRun& run : result.runs) samples.push_back(run.samples_to_converge);
  const std::string missing_message =
      "Missing RCP, please submit RCP with BS = " + batch_size_text(bs);
  const RcpCatalog::Match match = catalog.match(bs, options.pass);
  bool passed = false;
  switch (match.kind) {
    case RcpCatalog::Match::Kind::exact:
    case RcpCatalog::Match::Kind::interpolated:
      result.message =
          match.kind == RcpCatalog::Match::Kind::exact ? "RCP found" : "RCP Interpolation";
      passed = evaluate(*match.point, samples, result, dir, options.write_scaling);
      result.verdict = passed ? RcpVerdict::pass : RcpVerdict::fail;
      break;
    case RcpCatalog::Match::Kind::smallest:
      // Smaller than every reference: judged against the smallest batch size, which (after
      // pruning) converges fastest, so converging slower than it is acceptable.
      passed = evaluate(*match.point, samples, result, dir, options.write_scaling);
      result.message =
          passed ? "RCP not found but slower convergence on smaller batch size" : missing_message;
      result.verdict = passed ? RcpVerdict::pass : RcpVerdict::missing;
      break;
    case RcpCatalog::Match::Kind::beyond_largest:
      result.message = missing_message;
      result.verdict = RcpVerdict::missing;
      break;
    case RcpCatalog::Match::Kind::none:
      result.message = "Cannot find any RCPs";
      result.verdict = RcpVerdict::missing;
      break;
  }
  if (!passed && options.bypass &&
      (result.message == "RCP found" || result.message == "RCP Interpolation" ||
       result.message == missing_message)) {
    result.message += " passed using rcp_bypass";
    result.bypassed = true;
    passed = true;
  }
  result.passed = passed;
}

}  // namespace

bool stops_official_rcp_checker(const RcpResult& result) {
  // open() raises in the official reader (IsADirectoryError, PermissionError) and stops it.
  for (const RcpRun& run : result.runs)
    if (!run.unreadable.empty()) return true;
  if (result.problems.empty()) return false;
  const bool only_batch_sizes_missing =
      result.problems.size() == result.runs.size() &&
      std::all_of(result.runs.begin(), result.runs.end(), [](const RcpRun& run) {
        return !run.batch_size && run.benchmark == std::string(kBertBenchmark);
      });
  return !only_batch_sizes_missing;
}

RcpResult check_rcp_directory(const std::filesystem::path& dir, const RcpOptions& options) {
  require_ruleset_format(options.ruleset);
  RcpResult result;
  result.dir = dir;
  // Throws for rulesets without BERT RCPs and for malformed custom RCP files.
  const RcpCatalog catalog =
      options.custom_rcps.empty()
          ? RcpCatalog(options.ruleset)
          : RcpCatalog(options.custom_rcps.string(), read_rcp_json(options.custom_rcps));
  const auto files = find_result_files(dir);
  if (files.empty()) throw AuditError(dir.string() + ": no result_*.txt files");

  int not_converged = 0;
  for (const auto& file : files) {
    try {
      ::close(files::open_regular_file(file));  // as `score` opens a log: the same words
      result.runs.push_back(read_rcp_run(file, options.bert_train_samples, result.problems));
    } catch (const std::exception& e) {
      // One log that cannot be read drops that run, not the folder: the others still judge it.
      RcpRun run;
      run.file = file;
      run.samples_to_converge = kNotConvergedSamples;
      run.unreadable = std::string("cannot read: ") + e.what();
      run.note = run.unreadable;
      result.runs.push_back(std::move(run));
    }
    if (!result.runs.back().converged) ++not_converged;
  }
  check_runs_agree(result);
  std::optional<double> batch_size;
  bool batch_size_known = true;
  for (const RcpRun& run : result.runs) {
    if (!run.unreadable.empty()) continue;
    if (!batch_size) batch_size = run.batch_size;
    batch_size_known = batch_size_known && run.batch_size && run.batch_size == batch_size;
  }
  if (!result.problems.empty()) {
    result.verdict = RcpVerdict::error;
    result.message = batch_size_known && batch_size ? "Malformed result logs"
                                                    : "Could not detect global_batch_size";
    return result;
  }
  result.batch_size = *batch_size;
  if (not_converged > kBertMaxDroppedRuns) {
    result.verdict = RcpVerdict::fail;
    result.message = "Insufficient convergence";
    return result;
  }
  judge(catalog, *result.batch_size, dir, options, result);
  return result;
}

}  // namespace mlbert::logging
