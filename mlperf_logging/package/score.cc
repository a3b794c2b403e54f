// Scoring of a BERT result directory. Each log goes through the compliance checker (checker.h) with
// the summarizer's options (training usage, warnings not fatal), then through the streaming parser
// for its run_start/run_stop timestamps; arithmetic follows the summarizer's Python expression by
// expression so scores agree with the official ones to the last bit.
#include "mlperf_logging/package/score.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <exception>

#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/log/python_json.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

// The first error of a failed compliance check, as one line: "rule at line N: text".
std::string first_error(const mllog::CheckResult& result) {
  for (const auto& message : result.messages) {
    if (message.level != mllog::CheckMessage::Level::error) continue;
    std::string text = message.rule;
    if (message.line > 0) text += " at line " + std::to_string(message.line);
    text += ": " + message.text;
    const std::size_t errors = result.error_count();
    if (errors > 1) text += " (and " + std::to_string(errors - 1) + " more)";
    return text;
  }
  return "no error message";
}

std::optional<std::string> status_text(const nlohmann::json& metadata) {
  if (!metadata.is_object()) return std::nullopt;
  const auto status = metadata.find("status");
  if (status == metadata.end()) return std::nullopt;
  return status->is_string() ? status->get<std::string>() : status->dump();
}

// The fast path: decodes only the payloads that mention "run_st". False when it cannot be sure
// (a record it cannot read, a time_ms that is not a number, or no run_start/run_stop found).
bool find_run_times(const std::filesystem::path& file, std::optional<double>& run_start,
                    std::optional<double>& run_stop, std::optional<std::string>& status) {
  bool sure = true;
  for_each_mllog_payload(file, [&](std::string_view payload, int) {
    if (!sure || (run_start && run_stop) || payload.find("run_st") == std::string_view::npos)
      return;
    nlohmann::json record;
    try {
      record = mllog::pyjson::loads(payload);
    } catch (const mllog::pyjson::DecodeError&) {
      sure = false;
      return;
    }
    if (!record.is_object()) {
      sure = false;
      return;
    }
    const auto key = record.find("key");
    if (key == record.end() || !key->is_string()) return;
    const bool is_start = *key == "run_start";
    const bool is_stop = *key == "run_stop";
    if (!is_start && !is_stop) return;
    const auto time_ms = record.find("time_ms");
    if (time_ms == record.end() || !time_ms->is_number()) {
      sure = false;
      return;
    }
    if (is_start) run_start = time_ms->get<double>();
    if (is_stop) {
      run_stop = time_ms->get<double>();
      const auto metadata = record.find("metadata");
      if (metadata != record.end()) status = status_text(*metadata);
    }
  });
  return sure && run_start && run_stop;
}

mllog::ParseOptions run_records_only() {
  mllog::ParseOptions options;
  options.wanted = [](std::string_view key, bool key_is_string) {
    return key_is_string && (key == "run_start" || key == "run_stop")
               ? mllog::ParseOptions::Want::all
               : mllog::ParseOptions::Want::skip;
  };
  return options;
}

// Scores one file; any reason to drop it goes to `run.reason`.
void score_run(RunScore& run, const std::string& ruleset) {
  mllog::CheckOptions check_options;
  check_options.usage = "training";
  check_options.ruleset = ruleset;
  check_options.quiet = true;  // the summarizer's settings: warnings never fail a run
  check_options.werror = false;
  const mllog::CheckResult check = mllog::check_log(run.file, check_options);
  if (!check.success) {
    run.reason = "Compliance check failed: " + first_error(check);
    return;
  }
  // As the summarizer: the latest run_start and run_stop seen until both have been seen. A
  // compliant log parses cleanly, so only the records naming run_st... need decoding; the full
  // parser is the fallback for anything unusual (escaped keys, time_ms as text).
  std::optional<double> run_start, run_stop;
  bool parse_error = false;
  if (!find_run_times(run.file, run_start, run_stop, run.run_stop_status)) {
    run_start.reset();
    run_stop.reset();
    run.run_stop_status.reset();
    mllog::for_each_record(
        run.file,
        [&](const mllog::LogRecord& record) {
          if (run_start && run_stop) return;
          if (record.key == "run_start") run_start = record.timestamp;
          if (record.key == "run_stop") {
            run_stop = record.timestamp;
            run.run_stop_status = status_text(record.metadata);
          }
        },
        [&](const mllog::ParseError&) { parse_error = true; }, run_records_only());
  }
  if (parse_error) {
    run.reason = "Parse error";
  } else if (!run_start) {
    run.reason = "run_start not recorded";
  } else if (!run_stop) {
    run.reason = "run_stop not recorded";
  } else {
    const double time_to_train_ms = *run_stop - *run_start;
    run.minutes = time_to_train_ms / 60 / 1000;
    run.counted = true;
  }
}

}  // namespace

std::vector<std::size_t> olympic_kept(const std::vector<double>& minutes, int already_dropped,
                                      int max_dropped) {
  std::vector<std::size_t> order(minutes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return minutes[a] < minutes[b]; });
  const long begin = max_dropped;
  const long end = static_cast<long>(minutes.size()) - (max_dropped - already_dropped);
  if (end <= begin) return {};
  return {order.begin() + begin, order.begin() + end};
}

std::optional<double> olympic_average(std::vector<double> minutes, int already_dropped,
                                      int max_dropped) {
  const std::vector<std::size_t> kept = olympic_kept(minutes, already_dropped, max_dropped);
  if (kept.empty()) return std::nullopt;
  double sum = 0;  // Python's sum(): left to right from 0, in sorted order
  for (std::size_t i : kept) sum += minutes[i];
  return sum * 1.0 / static_cast<double>(kept.size());
}

namespace {

// Scores each file into `result.runs`; returns the counted runs' minutes.
std::vector<double> score_runs(const std::vector<std::filesystem::path>& files,
                               const std::string& ruleset, SystemScore& result) {
  std::vector<double> minutes;
  for (const auto& file : files) {
    RunScore run;
    run.file = file;
    try {
      score_run(run, ruleset);
    } catch (const std::exception& e) {  // unreadable file: the run cannot count
      run.reason = std::string("cannot read: ") + e.what();
    }
    if (run.counted) {
      minutes.push_back(*run.minutes);
      // The official summarizer counts whatever the subtraction gives; the score must say when
      // that is no time at all.
      if (!std::isfinite(*run.minutes) || *run.minutes <= 0) {
        result.notes.push_back(file.filename().string() + ": its run time (" +
                               std::to_string(*run.minutes) +
                               " min) is meaningless: run_stop is not a time after run_start; "
                               "it counts as the official summarizer counts it, so the score is "
                               "meaningless too");
      }
      if (run.run_stop_status && *run.run_stop_status != "success") {
        result.notes.push_back(file.filename().string() +
                               " counts although its run_stop status is '" + *run.run_stop_status +
                               "': the log is compliant, which is all the "
                               "summarizer asks");
      }
    } else {
      ++result.dropped;
    }
    result.runs.push_back(std::move(run));
  }
  return minutes;
}

// The factor of the results folder's scaling.json, when it has one (noted in `result`).
void read_scaling_factor(SystemScore& result) {
  const auto scaling_file = result.dir / "scaling.json";
  if (!std::filesystem::is_regular_file(scaling_file)) return;
  const nlohmann::json scaling = read_json_file(scaling_file);
  const auto factor = scaling.is_object() ? scaling.find("scaling_factor") : scaling.end();
  if (!scaling.is_object() || factor == scaling.end() || !factor->is_number()) {
    throw AuditError(scaling_file.string() + ": field scaling_factor is missing or not a number");
  }
  result.scaling_factor = factor->get<double>();
  result.notes.push_back("applying scaling factor " +
                         mllog::python_float_repr(result.scaling_factor) + " from " +
                         scaling_file.string());
}

}  // namespace

SystemScore score_system(const std::filesystem::path& dir, const ScoreOptions& options) {
  require_ruleset_with_bert_rules(options.ruleset);
  SystemScore result;
  result.ruleset = options.ruleset;
  result.dir = dir;
  if (const std::string absence = mllog::bert_absence(options.ruleset); !absence.empty())
    result.notes.push_back(absence + ": every BERT run fails its compliance check");
  auto files = find_result_files(dir);
  if (files.empty() && std::filesystem::is_directory(dir / kBertBenchmark)) {
    result.dir = dir / kBertBenchmark;
    files = find_result_files(result.dir);
  }
  if (files.empty()) throw AuditError(dir.string() + ": no result_*.txt files");
  if (static_cast<int>(files.size()) != kBertResultFileCount) {
    result.notes.push_back("found " + std::to_string(files.size()) +
                           " result files; a BERT "
                           "submission has " +
                           std::to_string(kBertResultFileCount) +
                           " (the summarizer scores whatever is there)");
  }
  const std::vector<double> minutes = score_runs(files, options.ruleset, result);

  constexpr int kMaxDropped = kBertMaxDroppedRuns;
  if (result.dropped > kMaxDropped) {
    result.notes.push_back(std::to_string(result.dropped) +
                           " runs failed; olympic scoring tolerates " +
                           std::to_string(kMaxDropped) + ": no score");
  } else if (result.dropped >= 1) {
    result.notes.push_back("dropping the failed run and the fastest run (olympic scoring)");
  }
  if (options.apply_scaling) read_scaling_factor(result);
  if (result.dropped <= kMaxDropped) {
    if (auto average = olympic_average(minutes, result.dropped, kMaxDropped)) {
      result.score = *average * result.scaling_factor;
    } else {
      result.notes.push_back("too few runs left for an olympic mean: no score");
    }
  }
  return result;
}

}  // namespace mlbert::logging
