// Per-log advisories (see log_advice.h). Tolerances are chosen so that every published log the
// official tools accept passes: the packed-data logs of v4.0 stamp epoch_num from an estimate that
// drifts up to 1,300 samples between evals, and ranks' clocks disagree by a few milliseconds.
#include "mlperf_logging/advise/log_advice.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

std::string grouped(double value) {
  std::string digits = std::to_string(static_cast<long long>(std::llround(value)));
  const std::size_t sign = digits.front() == '-' ? 1 : 0;
  for (std::size_t i = digits.size(); i > sign + 3; i -= 3) digits.insert(i - 3, ",");
  return digits;
}

std::string file_name(const LogFacts& log) {
  return log.file.filename().string();
}

// Lower-case letters and digits only: "SAMSUNG" and "Samsung", "TPU v3-32" and "tpu-v3-32" agree.
std::string folded(std::string_view text) {
  std::string out;
  for (unsigned char c : text)
    if (std::isalnum(c)) out.push_back(static_cast<char>(std::tolower(c)));
  return out;
}

std::optional<std::string> description_string(const AdviceContext& context, const char* field) {
  if (!context.description || !context.description->is_object()) return std::nullopt;
  const auto it = context.description->find(field);
  if (it == context.description->end()) return std::nullopt;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// The evals' epoch_num as sample counts; empty when they are not (absent, not numbers, not
// increasing, or below one global batch: the placeholder 1 of NVIDIA's early logs).
std::vector<double> samples_at_evals(const LogFacts& log, double global_batch_size) {
  std::vector<double> samples;
  for (const LoggedEval& eval : log.evals) {
    if (!eval.epoch_num.is_number()) return {};
    const double value = eval.epoch_num.get<double>();
    if (!std::isfinite(value) || value < global_batch_size) return {};
    if (!samples.empty() && value <= samples.back()) return {};
    samples.push_back(value);
  }
  return samples;
}

}  // namespace

std::int64_t reference_eval_interval(double global_batch_size) {
  const double samples = 0.05 * (230.23 * global_batch_size + 3'000'000);
  return static_cast<std::int64_t>(std::floor(samples / 25'000)) * 25'000;
}

// The gap between consecutive evals (the first from 0) must be the interval within one global
// batch (an eval waits for the step that crosses its point) plus 1% of the interval (packed data
// counts samples by an estimate).
void advise_eval_schedule(const LogFacts& log, const AdviceContext& context,
                          AdviceReport& report) {
  // The schedule is the rules' from v1.0 on, the round RCPs began with; v0.7 evaluated from 3M
  // samples on.
  const mllog::TrainingRuleset* row = mllog::find_training_ruleset(context.ruleset);
  if (!row || !row->bert_rcps || log.evals.empty()) return;
  if (!log.global_batch_size || !log.global_batch_size->value.is_number()) return;
  const double gbs = log.global_batch_size->value.get<double>();
  if (!std::isfinite(gbs) || gbs <= 0) return;
  const std::vector<double> samples = samples_at_evals(log, gbs);
  if (samples.empty()) {
    report.notes.push_back(file_name(log) +
                           ": eval epoch_num does not count samples, so the eval schedule "
                           "cannot be checked against it");
    return;
  }
  const auto interval = static_cast<double>(reference_eval_interval(gbs));
  const double tolerance = gbs + interval / 100;
  std::size_t off = 0;
  std::optional<std::size_t> first;
  for (std::size_t k = 0; k < samples.size(); ++k) {
    const double gap = samples[k] - (k == 0 ? 0.0 : samples[k - 1]);
    if (std::fabs(gap - interval) <= tolerance) continue;
    if (!first) first = k;
    ++off;
  }
  if (!first) return;
  const std::size_t k = *first;
  const double gap = samples[k] - (k == 0 ? 0.0 : samples[k - 1]);
  std::string text = "eval " + std::to_string(k + 1) + " at epoch_num " + grouped(samples[k]) +
                     " comes " + grouped(gap) + " samples after " +
                     (k == 0 ? std::string("the start") : "the eval before it") +
                     "; the reference schedule for global batch size " + grouped(gbs) +
                     " evaluates every " + grouped(interval) + " samples (within " +
                     grouped(tolerance) + ")";
  if (off > 1) text += "; " + std::to_string(off - 1) + " more evals are off it";
  report.add(advice::kEvalSchedule, log.file, log.evals[k].line, text);
}

void advise_org_platform(const LogFacts& log, const AdviceContext& context, AdviceReport& report) {
  const mllog::TrainingRuleset* row = mllog::find_training_ruleset(context.ruleset);
  if (!row || !row->submission_org_platform) return;
  if (!context.description) {
    report.notes.push_back(file_name(log) +
                           ": no system description found, so submission_org and "
                           "submission_platform are not compared with one");
    return;
  }
  const std::string where = " (" + context.description_file.filename().string() + ")";
  if (log.submission_org && log.submission_org->value.is_string()) {
    const std::string org = log.submission_org->value.get<std::string>();
    const auto submitter = description_string(context, "submitter");
    if (submitter && folded(org) != folded(*submitter))
      report.add(advice::kOrgPlatform, log.file, log.submission_org->line,
                 "submission_org '" + org + "' is not the system description's submitter '" +
                     *submitter + "'" + where);
  }
  if (!log.submission_platform || !log.submission_platform->value.is_string()) return;
  const std::string platform = log.submission_platform->value.get<std::string>();
  const std::size_t line = log.submission_platform->line;
  if (folded(platform).find("placeholder") != std::string::npos) {
    report.add(advice::kOrgPlatform, log.file, line,
               "submission_platform '" + platform + "' is a placeholder, not the system");
    return;
  }
  // NVIDIA's form "<nodes>x<platform>": the count must be the description's number_of_nodes.
  const auto x = platform.find('x');
  if (x > 0 && x != std::string::npos &&
      std::all_of(platform.begin(), platform.begin() + static_cast<long>(x),
                  [](unsigned char c) { return std::isdigit(c); })) {
    const auto nodes = description_string(context, "number_of_nodes");
    if (nodes && folded(*nodes) != platform.substr(0, x))
      report.add(advice::kOrgPlatform, log.file, line,
                 "submission_platform '" + platform + "' says " + platform.substr(0, x) +
                     " nodes; the system description says number_of_nodes " + *nodes + where);
    return;
  }
  // Otherwise it names the system: its system_name or its folder.
  const std::string logged = folded(platform);
  for (const std::string& name :
       {folded(description_string(context, "system_name").value_or("")),
        folded(context.system_folder)}) {
    if (!name.empty() && !logged.empty() &&
        (name.find(logged) != std::string::npos || logged.find(name) != std::string::npos))
      return;
  }
  report.add(advice::kOrgPlatform, log.file, line,
             "submission_platform '" + platform + "' names neither the system '" +
                 description_string(context, "system_name").value_or("?") + "'" + where +
                 " nor its folder '" + context.system_folder + "', nor a node count");
}

void advise_run_stop(const LogFacts& log, AdviceReport& report) {
  if (log.run_stop_line || !log.read_error.empty()) return;
  report.add(advice::kNoRunStop, log.file, 0,
             "no run_stop record: the run never ended (a crash, a timeout or a truncated log), "
             "and it counts as a failed run" +
                 std::string(log.run_start_line ? "" : "; there is no run_start either"));
}

void advise_clock(const LogFacts& log, AdviceReport& report) {
  if (log.clock_steps_back.empty()) return;
  const auto worst = std::max_element(
      log.clock_steps_back.begin(), log.clock_steps_back.end(), [](const auto& a, const auto& b) {
        return a.latest_ms - a.time_ms < b.latest_ms - b.time_ms;
      });
  std::string text = "time_ms steps back " + grouped(static_cast<double>(worst->latest_ms - worst->time_ms)) +
                     " ms here (to " + std::to_string(worst->time_ms) + " after " +
                     std::to_string(worst->latest_ms) +
                     "): the clock that times the run, from run_start on, is not monotonic";
  if (log.clock_steps_back.size() > 1)
    text += "; " + std::to_string(log.clock_steps_back.size()) + " records step back by more than " +
            grouped(static_cast<double>(kClockJitterMs)) + " ms";
  if (log.run_start_ms && log.run_stop_ms && *log.run_stop_ms < *log.run_start_ms)
    text += "; run_stop is earlier than run_start";
  report.add(advice::kClockBackwards, log.file, worst->line, text);
}

AdviceReport advise_log(const LogFacts& log, const AdviceContext& context) {
  AdviceReport report;
  if (!log.read_error.empty()) {
    report.notes.push_back(log.read_error);
    return report;
  }
  advise_eval_schedule(log, context, report);
  advise_org_platform(log, context, report);
  advise_run_stop(log, report);
  advise_clock(log, report);
  return report;
}

}  // namespace mlbert::logging
