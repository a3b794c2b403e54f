// The report page (see report.h): a summary table, then one row of cards per section with one
// column per system, so the same plot of every system sits side by side (a single system's cards
// flow two to a row). The page carries a Content-Security-Policy that forbids every load and every
// script, so even markup that slipped past escaping could neither run nor call out; it needs
// neither: tooltips are SVG <title>s and the long message lists are <details>.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/thousands.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/report/report.h"
#include "mlperf_logging/report/svg.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;
using report::Axis;
using report::Chart;
using report::escape_html;
using report::Point;

constexpr std::string_view kTargetColour = "#1f2328";
constexpr std::string_view kFailColour = "#cf222e";
constexpr std::string_view kDroppedColour = "#c4c9cf";
constexpr std::string_view kInitColour = "#a8b3bf";
constexpr std::string_view kTrainColour = "#4e79a7";
constexpr std::string_view kEvalColour = "#f28e2b";
constexpr std::string_view kMeanColour = "#2e7d32";

std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// 2932736 -> "2,932,736"
std::string grouped(double value) {
  if (!std::isfinite(value)) return "n/a";
  return group_thousands(fixed(value, 0));
}

std::string run_name(const RunTrace& run) {
  return run.file.stem().string();
}

std::string badge(std::string_view kind, std::string_view text) {
  return "<span class=\"badge " + std::string(kind) + "\">" + escape_html(text) + "</span>";
}

std::string missing(std::string_view kind, std::string_view why) {
  return "<p class=\"missing\" data-plot=\"" + std::string(kind) + "\">" + escape_html(why) +
         "</p>\n";
}

std::string paragraph(std::string_view text, std::string_view css_class = "note") {
  return "<p class=\"" + std::string(css_class) + "\">" + escape_html(text) + "</p>\n";
}

double min_of(const std::vector<double>& values) {
  double m = NAN;
  for (double v : values)
    if (std::isfinite(v) && !(v >= m)) m = v;
  return m;
}

double max_of(const std::vector<double>& values) {
  double m = NAN;
  for (double v : values)
    if (std::isfinite(v) && !(v <= m)) m = v;
  return m;
}

// Height of a chart with one row per run (bars, the timeline, the RCP strip).
double rows_height(std::size_t runs) {
  return 60 + 22.0 * static_cast<double>(std::max<std::size_t>(runs, 3));
}

std::vector<std::string> run_labels(const SystemReport& system) {
  std::vector<std::string> labels;
  for (const RunTrace& run : system.runs) labels.push_back(run_name(run));
  return labels;
}

// Seconds or minutes, whichever reads better for a span of `seconds`.
struct TimeUnit {
  double divisor;
  const char* name;
};
TimeUnit time_unit(double seconds) {
  return seconds > 600 ? TimeUnit{60, "minutes"} : TimeUnit{1, "seconds"};
}

std::string legend(const SystemReport& system) {
  std::string out = "<ul class=\"legend\">";
  for (std::size_t i = 0; i < system.runs.size(); ++i)
    out += "<li><i style=\"background:" + std::string(report::run_colour(i)) + "\"></i>" +
           escape_html(run_name(system.runs[i])) + "</li>";
  return out + "</ul>\n";
}

// ---- convergence --------------------------------------------------------------------------------

// Where an eval sits on the convergence plot's x axis: samples, or minutes after run_start.
double eval_x(const SystemReport& system, const RunTrace& run, const EvalPoint& e) {
  if (system.evals_count_samples) return e.samples;
  return run.run_start_ms ? (e.time_ms - *run.run_start_ms) / 60000.0 : NAN;
}

// Every run's eval curve on the given axes, the target line and the stop markers.
Chart accuracy_chart(const SystemReport& system, Axis x, Axis y, double width, double height) {
  const bool by_samples = system.evals_count_samples;
  Chart chart(width, height);
  chart.set_axes(std::move(x), std::move(y));
  chart.set_labels(by_samples ? "training samples (eval epoch_num)" : "minutes since run_start",
                   "eval accuracy");
  chart.hrule(system.target, kTargetColour, "target " + fixed(system.target, 3), "5 4");
  for (std::size_t i = 0; i < system.runs.size(); ++i) {
    const RunTrace& run = system.runs[i];
    const std::string colour(report::run_colour(i));
    std::vector<Point> line;
    for (const EvalPoint& e : run.evals) line.push_back({eval_x(system, run, e), e.accuracy});
    chart.line(line, colour, run_name(run));
    for (const EvalPoint& e : run.evals) {
      const double x_value = eval_x(system, run, e);
      const std::string where =
          by_samples ? grouped(e.samples) + " samples" : fixed(x_value, 2) + " min after run_start";
      chart.marker({x_value, e.accuracy}, Chart::Shape::dot, colour,
                   run_name(run) + ": accuracy " + fixed(e.accuracy, 4) + " at " + where +
                       " (line " + std::to_string(e.line) + ")",
                   2.2);
    }
    if (run.evals.empty()) continue;
    const EvalPoint& last = run.evals.back();
    const std::string status = run.stop_status.value_or("no run_stop");
    const bool success = status == "success";
    chart.marker({eval_x(system, run, last), last.accuracy},
                 success ? Chart::Shape::diamond : Chart::Shape::cross,
                 success ? colour : std::string(kFailColour),
                 run_name(run) + " stopped: " + status + ", accuracy " + fixed(last.accuracy, 4),
                 4.5);
  }
  return chart;
}

std::string convergence_card(const SystemReport& system, const std::string& id, double width) {
  std::vector<double> xs, ys{system.target};
  for (const RunTrace& run : system.runs)
    for (const EvalPoint& e : run.evals) {
      xs.push_back(eval_x(system, run, e));
      ys.push_back(e.accuracy);
    }
  if (xs.empty()) return missing("accuracy", "no eval_accuracy records in these logs");
  std::string out =
      accuracy_chart(system, report::nice_axis(std::min(0.0, min_of(xs)), max_of(xs), 6),
                     report::nice_axis(min_of(ys), max_of(ys), 6), width, 300)
          .svg(id, "accuracy", "eval accuracy against samples for every run");

  // The close-up: the last stretch to the target, where the runs part.
  constexpr double kBand = 0.02;
  std::vector<double> near_x, near_y{system.target};
  for (const RunTrace& run : system.runs)
    for (const EvalPoint& e : run.evals)
      if (e.accuracy >= system.target - kBand) {
        near_x.push_back(eval_x(system, run, e));
        near_y.push_back(e.accuracy);
      }
  const bool close_up = near_x.size() >= 2;
  if (close_up) {
    const double lo = min_of(near_x), hi = max_of(near_x);
    const double pad = (hi - lo) * 0.04;
    out += accuracy_chart(system, report::nice_axis(lo - pad, hi + pad, 6),
                          report::nice_axis(system.target - kBand, max_of(near_y) + 0.002, 4),
                          width, 190)
               .svg(id + "-near", "accuracy-near-target", "close-up of the evals near the target");
  }
  out += legend(system);
  std::string note =
      close_up ? "Below: the evals within " + fixed(kBand, 2) + " of the target. " : std::string();
  note += "Diamond: where a run stopped with status success; red cross: any other status.";
  if (!system.evals_count_samples)
    note +=
        " These logs' eval_accuracy records do not count samples in epoch_num, so accuracy is "
        "plotted against time.";
  return out + paragraph(note);
}

// ---- time to train ------------------------------------------------------------------------------

struct TimeToTrain {
  std::vector<double> minutes;       // per run, NaN when unknown
  std::vector<bool> counted, kept;   // counted by the scorer; kept in the olympic mean
  std::vector<std::string> reasons;  // why not counted
};

TimeToTrain time_to_train(const SystemReport& system) {
  TimeToTrain t;
  const std::size_t n = system.runs.size();
  t.minutes.assign(n, NAN);
  t.counted.assign(n, false);
  t.kept.assign(n, false);
  t.reasons.assign(n, "");
  std::map<fs::path, const RunScore*> scored;
  if (system.score)
    for (const RunScore& run : system.score->runs) scored[run.file] = &run;
  std::vector<double> counted_minutes;
  std::vector<std::size_t> counted_runs;
  for (std::size_t i = 0; i < n; ++i) {
    const RunTrace& run = system.runs[i];
    const auto it = scored.find(run.file);
    if (it != scored.end() && it->second->counted && it->second->minutes) {
      t.minutes[i] = *it->second->minutes;
      t.counted[i] = true;
      counted_minutes.push_back(t.minutes[i]);
      counted_runs.push_back(i);
      continue;
    }
    if (it != scored.end()) t.reasons[i] = it->second->reason;
    if (run.run_start_ms && run.run_stop_ms)
      t.minutes[i] = (*run.run_stop_ms - *run.run_start_ms) / 60000.0;
  }
  if (system.score && system.score->score) {
    for (std::size_t k : olympic_kept(counted_minutes, system.score->dropped, kBertMaxDroppedRuns))
      t.kept[counted_runs[k]] = true;
  }
  return t;
}

// The figures behind the bars, one row per run; the run_stop status where it is not success.
std::string runs_table(const SystemReport& system, const TimeToTrain& t) {
  std::string out =
      "<table class=\"runs\"><thead><tr><th>run</th><th>min</th><th>train_samples</th>"
      "<th>last eval</th><th></th></tr></thead><tbody>\n";
  const bool scored = system.score && system.score->score;
  for (std::size_t i = 0; i < system.runs.size(); ++i) {
    const RunTrace& run = system.runs[i];
    const std::string role = !t.counted[i] ? badge("fail", "failed")
                             : !scored     ? badge("none", "counted")
                             : t.kept[i]   ? badge("pass", "mean")
                                           : badge("none", "dropped");
    std::string last = run.evals.empty() ? "?" : fixed(run.evals.back().accuracy, 4);
    const std::string status = run.stop_status.value_or("no run_stop");
    if (status != "success") last += " " + status;
    out += "<tr><td><i class=\"swatch\" style=\"background:" + std::string(report::run_colour(i)) +
           "\"></i>" + escape_html(run_name(run)) + "</td><td class=\"num\">" +
           fixed(t.minutes[i], 3) + "</td><td class=\"num\">" +
           (run.train_samples ? grouped(*run.train_samples) : std::string("?")) +
           "</td><td class=\"num\">" + escape_html(last) + "</td><td>" + role + "</td></tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string time_to_train_card(const SystemReport& system, const std::string& id, double width) {
  const TimeToTrain t = time_to_train(system);
  if (std::none_of(t.minutes.begin(), t.minutes.end(), [](double m) { return std::isfinite(m); }))
    return missing("time-to-train", "no run has both run_start and run_stop");
  const std::size_t n = system.runs.size();
  Chart chart(width, rows_height(n));
  chart.set_left_margin(70);
  chart.set_axes(report::nice_axis(0, max_of(t.minutes) * 1.22, 6),  // room for the labels
                 report::category_axis(run_labels(system)));
  chart.set_labels("minutes from run_start to run_stop", "");
  const bool scored = system.score && system.score->score;
  for (std::size_t i = 0; i < n; ++i) {
    const double m = t.minutes[i];
    const double row = static_cast<double>(i);
    std::string how;
    std::string_view fill = report::run_colour(i);
    if (!t.counted[i]) {
      how = "not counted: " + (t.reasons[i].empty() ? std::string("not scored") : t.reasons[i]);
      fill = kFailColour;
    } else if (scored && !t.kept[i]) {
      how = "dropped by the olympic mean";
      fill = kDroppedColour;
    } else {
      how = "in the mean";
    }
    chart.box(0, m, row - 0.32, row + 0.32, fill,
              run_name(system.runs[i]) + ": " + fixed(m, 3) + " min, " + how,
              t.counted[i] ? 1.0 : 0.35, t.counted[i] ? "" : kFailColour);
    std::string tag = fixed(m, 3);
    if (!t.counted[i])
      tag += " \u2717";
    else if (scored && !t.kept[i])
      tag += " dropped";
    chart.text({std::isfinite(m) ? m : 0, row}, " " + tag, "bar-label");
  }
  std::string out;
  if (scored) {
    const double mean = *system.score->score / system.score->scaling_factor;
    chart.vrule(mean, kMeanColour, "olympic mean " + fixed(mean, 3));
  }
  out += chart.svg(id, "time-to-train", "time to train per run with the olympic mean");
  if (scored) {
    std::string line = "Score " + fixed(*system.score->score, 4) + " min";
    if (system.score->scaling_factor != 1.0)
      line += " (olympic mean x RCP scaling factor " + fixed(system.score->scaling_factor, 4) + ")";
    out += "<p class=\"score\">" + escape_html(line) + "</p>\n";
  } else {
    out += "<p class=\"score none\">No score" +
           escape_html(system.score_note.empty() ? "" : ": " + system.score_note) + "</p>\n";
  }
  if (system.score)
    for (const auto& note : system.score->notes) out += paragraph(note);
  out += runs_table(system, t);
  return out + paragraph(
                   "Grey: the fastest and slowest counted runs, which the olympic mean drops; "
                   "red, \u2717: a run the scorer does not count (hover it for why).");
}

// ---- RCP ----------------------------------------------------------------------------------------

std::string rcp_verdict_badge(const RcpResult& rcp) {
  const std::string_view kind = rcp.passed                        ? "pass"
                                : rcp.verdict == RcpVerdict::fail ? "fail"
                                                                  : "warn";
  return badge(kind, "RCP " + std::string(to_string(rcp.verdict)));
}

std::string rcp_card(const SystemReport& system, const std::string& id, double width) {
  if (!system.rcp) return missing("rcp", system.rcp_note);
  const bool use_train_samples = system.rcp_train_samples.has_value();
  const RcpResult& rcp = use_train_samples ? *system.rcp_train_samples : *system.rcp;
  std::vector<double> xs;
  for (const RcpRun& run : rcp.runs)
    if (run.converged) xs.push_back(run.samples_to_converge);
  std::string out;
  if (xs.empty()) {
    out +=
        missing("rcp", "no run converged: nothing to compare with the RCP (" + rcp.message + ")");
  } else {
    if (rcp.reference) {
      xs.push_back(rcp.reference->mean);
      xs.push_back(rcp.reference->min_mean);
    }
    if (rcp.submission_mean) xs.push_back(*rcp.submission_mean);
    const double lo = min_of(xs), hi = max_of(xs);
    const double pad = (hi - lo) * 0.08 + hi * 0.01;
    const Axis x = report::nice_axis(std::max(lo - pad, 0.0), hi + pad, 6);  // samples >= 0
    const std::size_t n = rcp.runs.size();
    Chart chart(width, rows_height(n));
    chart.set_left_margin(70);
    std::vector<std::string> labels;
    for (const RcpRun& run : rcp.runs) labels.push_back(run.file.stem().string());
    chart.set_axes(x, report::category_axis(labels));
    chart.set_labels(use_train_samples ? "samples to converge (train_samples)"
                                       : "samples to converge (last eval epoch_num)",
                     "");
    if (rcp.reference) {
      const double bound = rcp.reference->min_mean;
      chart.box(x.lo, bound, -0.5, static_cast<double>(n) - 0.5, kFailColour,
                "faster than the acceptance bound: the RCP check fails", 0.08);
      // The bound is below the mean: its label goes left of its rule, the mean's right of its.
      chart.vrule(rcp.reference->mean, kTargetColour, "RCP mean " + grouped(rcp.reference->mean));
      chart.vrule(bound, kFailColour, "acceptance bound " + grouped(bound), "5 4", "end");
    }
    if (rcp.submission_mean) chart.vrule(*rcp.submission_mean, kMeanColour, "", "2 2");
    for (std::size_t i = 0; i < n; ++i) {
      const RcpRun& run = rcp.runs[i];
      const double row = static_cast<double>(i);
      if (run.converged) {
        chart.marker({run.samples_to_converge, row}, Chart::Shape::dot, report::run_colour(i),
                     run.file.stem().string() + ": " + grouped(run.samples_to_converge) +
                         " samples (" + run.note + ")",
                     4.5);
      } else {
        chart.marker({x.hi, row}, Chart::Shape::cross, kFailColour,
                     run.file.stem().string() + ": not converged (" + run.note + ")", 4.5);
      }
    }
    out += chart.svg(id, "rcp", "samples to converge against the RCP mean and acceptance bound");
  }
  out += "<p>" + rcp_verdict_badge(rcp) + " " + escape_html(rcp.message);
  if (rcp.batch_size) out += escape_html(", global batch size " + grouped(*rcp.batch_size));
  out += "</p>\n";
  if (rcp.reference) {
    const RcpPoint& ref = *rcp.reference;
    std::string text = ref.name + (ref.interpolated ? " (interpolated)" : "") + ": mean " +
                       grouped(ref.mean) + ", acceptance bound " + grouped(ref.min_mean) +
                       " (max speedup " + fixed(ref.max_speedup, 4) + ")";
    if (rcp.submission_mean)
      text += "; submission olympic mean " + grouped(*rcp.submission_mean) + " (dotted green)";
    if (rcp.passed && rcp.scaling_factor > 1.0)
      text += "; score scaling " + fixed(rcp.scaling_factor, 4);
    out += paragraph(text);
  }
  for (const auto& problem : rcp.problems) out += paragraph(problem, "note fail");
  if (use_train_samples)
    out += paragraph(
        "The official default reads samples from eval epoch_num, which these logs do "
        "not count (" +
        std::string(to_string(system.rcp->verdict)) + ": " + system.rcp->message +
        "); shown with train_samples, as --rcp-bert-train-samples reads them.");
  if (const auto division = system.division(); division && *division != "closed")
    out += paragraph(*division +
                     " division: the package check applies RCPs to closed results "
                     "only; shown for reference.");
  return out;
}

// ---- timeline -----------------------------------------------------------------------------------

std::string timeline_card(const SystemReport& system, const std::string& id, double width) {
  std::vector<double> ends;
  for (const RunTrace& run : system.runs) {
    const auto origin = run.init_start_ms ? run.init_start_ms : run.run_start_ms;
    if (!origin) continue;
    for (const auto& t : {run.init_stop_ms, run.run_start_ms, run.run_stop_ms})
      if (t) ends.push_back((*t - *origin) / 1000.0);
  }
  if (ends.empty()) return missing("timeline", "no init_start or run_start in these logs");
  const TimeUnit unit = time_unit(max_of(ends));
  const std::size_t n = system.runs.size();
  Chart chart(width, rows_height(n));
  chart.set_left_margin(70);
  chart.set_axes(report::nice_axis(0, max_of(ends) / unit.divisor, 6),
                 report::category_axis(run_labels(system)));
  chart.set_labels(std::string(unit.name) + " since the first init_start", "");
  bool has_intervals = false, has_ticks = false;
  for (std::size_t i = 0; i < n; ++i) {
    const RunTrace& run = system.runs[i];
    const auto origin = run.init_start_ms ? run.init_start_ms : run.run_start_ms;
    if (!origin) continue;
    const auto at = [&](double ms) { return (ms - *origin) / 1000.0 / unit.divisor; };
    const double row = static_cast<double>(i);
    const std::string name = run_name(run);
    if (run.init_start_ms && run.init_stop_ms)
      chart.box(
          at(*run.init_start_ms), at(*run.init_stop_ms), row - 0.3, row + 0.3, kInitColour,
          name + ": init " + fixed((*run.init_stop_ms - *run.init_start_ms) / 1000, 1) + " s");
    if (run.run_start_ms && run.run_stop_ms)
      chart.box(at(*run.run_start_ms), at(*run.run_stop_ms), row - 0.3, row + 0.3, kTrainColour,
                name + ": run_start to run_stop " +
                    fixed((*run.run_stop_ms - *run.run_start_ms) / 1000, 1) + " s (" +
                    run.stop_status.value_or("no status") + ")");
    for (const auto& [start, stop] : run.eval_intervals) {
      chart.box(at(start), at(stop), row - 0.3, row + 0.3, kEvalColour,
                name + ": eval " + fixed((stop - start) / 1000, 2) + " s");
      has_intervals = true;
    }
    if (run.eval_intervals.empty())
      for (const EvalPoint& e : run.evals) {
        chart.box(at(e.time_ms), at(e.time_ms), row - 0.38, row + 0.38, kEvalColour,
                  name + ": eval_accuracy " + fixed(e.accuracy, 4));
        has_ticks = true;
      }
  }
  std::string out = chart.svg(id, "timeline", "timeline of init, training and eval phases");
  out += "<ul class=\"legend\"><li><i style=\"background:" + std::string(kInitColour) +
         "\"></i>init</li><li><i style=\"background:" + std::string(kTrainColour) +
         "\"></i>run_start to run_stop</li><li><i style=\"background:" + std::string(kEvalColour) +
         "\"></i>" + (has_intervals ? "eval_start to eval_stop" : "eval_accuracy") + "</li></ul>\n";
  if (has_ticks && !has_intervals)
    out += paragraph(
        "These logs have no eval_start/eval_stop: evals are marked where their "
        "eval_accuracy was logged.");
  return out;
}

// ---- throughput ---------------------------------------------------------------------------------

std::string throughput_card(const SystemReport& system, const std::string& id, double width) {
  std::vector<double> xs{0}, ys{0};
  std::vector<double> averages;
  for (const RunTrace& run : system.runs) {
    if (run.train_samples && run.run_start_ms && run.run_stop_ms &&
        *run.run_stop_ms > *run.run_start_ms)
      averages.push_back(*run.train_samples / ((*run.run_stop_ms - *run.run_start_ms) / 1000));
    if (!run.run_start_ms) continue;
    for (const auto& [t, rate] : run.throughput) {
      xs.push_back((t - *run.run_start_ms) / 1000);
      ys.push_back(rate);
    }
  }
  std::string out;
  if (xs.size() == 1) {
    out += missing("throughput", "these logs carry no throughput (tracked_stats)");
  } else {
    const TimeUnit unit = time_unit(max_of(xs));
    Chart chart(width, 260);
    chart.set_axes(report::nice_axis(0, max_of(xs) / unit.divisor, 6),
                   report::nice_axis(0, max_of(ys) * 1.05, 5));
    chart.set_labels(std::string(unit.name) + " since run_start", "throughput as logged");
    for (std::size_t i = 0; i < system.runs.size(); ++i) {
      const RunTrace& run = system.runs[i];
      if (!run.run_start_ms) continue;
      std::vector<Point> line;
      for (const auto& [t, rate] : run.throughput)
        line.push_back({(t - *run.run_start_ms) / 1000 / unit.divisor, rate});
      chart.line(line, report::run_colour(i), run_name(run));
      for (const Point& p : line)
        chart.marker(
            p, Chart::Shape::dot, report::run_colour(i),
            run_name(run) + ": " + fixed(p.y, 1) + " at " + fixed(p.x, 2) + " " + unit.name, 2.2);
    }
    out += chart.svg(id, "throughput", "throughput over the run from tracked_stats");
    out += paragraph("tracked_stats throughput, in the unit the submitter logs (sequences/s).");
  }
  if (!averages.empty())
    out +=
        paragraph("Average over run_start..run_stop (train_samples / time to train): " +
                  grouped(min_of(averages)) + " to " + grouped(max_of(averages)) + " samples/s.");
  return out;
}

// ---- compliance ---------------------------------------------------------------------------------

std::string message_text(const mllog::CheckMessage& m) {
  return "<b>" + escape_html(m.rule) + "</b>: " + escape_html(m.text);
}

// Per file a verdict chip; then each distinct error once, with the files and lines it occurs at
// and the first offending record; every message of every file behind a <details>.
std::string compliance_card(const SystemReport& system) {
  if (!system.check_note.empty()) return paragraph(system.check_note, "missing");
  std::string out = "<ul class=\"chips\">";
  struct Group {
    const mllog::CheckMessage* first = nullptr;
    std::vector<std::string> where;
  };
  std::vector<std::pair<std::string, Group>> groups;  // in order of first appearance
  std::string details;
  std::size_t warnings = 0;
  for (const RunTrace& run : system.runs) {
    const std::string name = run_name(run);
    if (!run.check) {
      out += "<li>" + badge("fail", name + " unreadable") + "</li>";
      groups.push_back({"read:" + run.read_error, {nullptr, {name + ": " + run.read_error}}});
      continue;
    }
    const mllog::CheckResult& check = *run.check;
    warnings += check.warning_count();
    out += "<li>" +
           badge(check.success ? "pass" : "fail", name + (check.success ? " \u2713" : " \u2717")) +
           "</li>";
    for (const auto& m : check.messages) {
      if (m.level != mllog::CheckMessage::Level::error) continue;
      const std::string key = m.rule + "\n" + m.text;
      auto it =
          std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
      if (it == groups.end()) {
        groups.push_back({key, {&m, {}}});
        it = groups.end() - 1;
      }
      it->second.where.push_back(name + (m.line > 0 ? " line " + std::to_string(m.line) : ""));
    }
    if (check.messages.empty()) continue;
    details += "<li><b>" + escape_html(name) + "</b><ul>";
    for (const auto& m : check.messages) {
      details += "<li>" +
                 std::string(m.level == mllog::CheckMessage::Level::error ? "error " : "warning ") +
                 message_text(m) + (m.line > 0 ? " (line " + std::to_string(m.line) + ")" : "");
      if (!m.record.empty()) details += "<code>" + escape_html(m.record) + "</code>";
      details += "</li>";
    }
    details += "</ul></li>";
  }
  out += "</ul>\n";
  if (!groups.empty()) {
    out += "<ol class=\"failures\">";
    for (const auto& [key, group] : groups) {
      out += "<li>";
      if (group.first)
        out += message_text(*group.first);
      else
        out += "<b>unreadable</b>";
      std::string where;
      for (const auto& w : group.where) where += (where.empty() ? "" : ", ") + w;
      out += "<div class=\"note\">" + escape_html(where) + "</div>";
      if (group.first && !group.first->record.empty())
        out += "<code>" + escape_html(group.first->record) + "</code>";
      out += "</li>";
    }
    out += "</ol>\n";
  }
  if (!details.empty())
    out += "<details><summary>every message of every file" +
           std::string(warnings ? " (" + std::to_string(warnings) + " warnings)" : "") +
           "</summary><ul>" + details + "</ul></details>\n";
  return out + paragraph("Verdicts of mlbert check --ruleset " + system.ruleset +
                         " (the official compliance checker's semantics); each distinct error "
                         "once, with the files and lines it occurs at and its first record.");
}

// ---- system description -------------------------------------------------------------------------

constexpr std::string_view kDescriptionRows[] = {
    "submitter",
    "division",
    "status",
    "system_name",
    "number_of_nodes",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "accelerator_interconnect",
    "host_processors_per_node",
    "host_processor_model_name",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_networking",
    "host_networking_topology",
    "framework",
    "other_software_stack",
    "operating_system",
};

std::string json_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object()) {
    std::string out;
    for (const auto& [k, v] : value.items())
      out +=
          (out.empty() ? "" : "; ") + k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
    return out;
  }
  return value.dump();
}

std::string description_card(const std::vector<SystemReport>& systems) {
  std::string out = "<table class=\"description\"><thead><tr><th></th>";
  for (const SystemReport& s : systems) out += "<th>" + escape_html(s.name) + "</th>";
  out += "</tr></thead><tbody>\n<tr><th>system-check</th>";
  for (const SystemReport& s : systems) {
    out += "<td>";
    if (s.description_check) {
      const SystemDescResult& r = *s.description_check;
      out += badge(r.valid ? "pass" : "fail", r.valid ? "valid" : "invalid");
      // One line per distinct finding, naming every field it concerns ("missing field: a, b").
      std::vector<std::pair<std::string, std::string>> lines;
      for (const auto& f : r.findings) {
        const std::string what =
            (f.level == SystemDescFinding::Level::error ? "error: " : "warning: ") + f.text;
        auto it = std::find_if(lines.begin(), lines.end(),
                               [&](const auto& line) { return line.first == what; });
        if (it == lines.end()) it = lines.insert(lines.end(), {what, ""});
        if (!f.field.empty()) it->second += (it->second.empty() ? "" : ", ") + f.field;
      }
      for (const auto& [what, fields] : lines)
        out += "<div class=\"note\">" + escape_html(what + (fields.empty() ? "" : ": " + fields)) +
               "</div>";
    } else {
      out += badge("none", "not checked");
    }
    if (!s.description_note.empty())
      out += "<div class=\"note\">" + escape_html(s.description_note) + "</div>";
    if (!s.description_file.empty())
      out +=
          "<div class=\"note\">" + escape_html(s.description_file.filename().string()) + "</div>";
    out += "</td>";
  }
  out += "</tr>\n";
  for (std::string_view field : kDescriptionRows) {
    out += "<tr><th>" + escape_html(field) + "</th>";
    for (const SystemReport& s : systems) {
      out += "<td>";
      if (s.description && s.description->is_object()) {
        const auto it = s.description->find(std::string(field));
        if (it != s.description->end()) out += escape_html(json_text(*it));
      }
      out += "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

// ---- page ---------------------------------------------------------------------------------------

std::string summary_table(const std::vector<SystemReport>& systems) {
  std::string out =
      "<table class=\"summary\"><thead><tr><th>system</th><th>ruleset</th><th>division</th>"
      "<th>global batch</th><th>runs</th><th>compliant</th><th>score (min)</th><th>RCP</th>"
      "</tr></thead><tbody>\n";
  for (const SystemReport& s : systems) {
    std::size_t passed = 0, checked = 0;
    for (const RunTrace& run : s.runs)
      if (run.check) ++checked, passed += run.check->success ? 1 : 0;
    out += "<tr><td><b>" + escape_html(s.name) + "</b><div class=\"note\">" +
           escape_html(s.context) + "</div></td>";
    out += "<td>" + escape_html(s.ruleset) + "</td>";
    out += "<td>" + escape_html(s.division().value_or("?")) + "</td>";
    const auto bs = s.global_batch_size();
    out += "<td>" + (bs ? grouped(*bs) : std::string("?")) + "</td>";
    out += "<td>" + std::to_string(s.runs.size()) + "</td>";
    out += "<td>" +
           (s.check_note.empty()
                ? badge(passed == s.runs.size() ? "pass" : "fail",
                        std::to_string(passed) + " / " + std::to_string(s.runs.size()))
                : badge("none", "no rules")) +
           "</td>";
    out += "<td class=\"num\">" +
           (s.score && s.score->score ? "<b>" + fixed(*s.score->score, 4) + "</b>"
                                      : badge("fail", "none")) +
           "</td>";
    const RcpResult* rcp = s.rcp_train_samples ? &*s.rcp_train_samples : s.rcp ? &*s.rcp : nullptr;
    const auto division = s.division();
    out += "<td>";
    if (!rcp)
      out += badge("none", "no RCPs");
    else if (division && *division != "closed")  // the RCP check binds closed results only
      out += badge("none", "RCP " + std::string(to_string(rcp->verdict)) + " (" + *division + ")");
    else
      out += rcp_verdict_badge(*rcp);
    out += "</td></tr>\n";
  }
  return out + "</tbody></table>\n";
}

constexpr std::string_view kStyle = R"css(
:root { --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --card:#fff; --page:#f5f7f9; }
* { box-sizing: border-box; }
body { margin: 0; padding: 20px 24px 32px; background: var(--page); color: var(--ink);
  font: 13.5px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", Roboto, sans-serif; }
h1 { font-size: 21px; margin: 0 0 2px; }
header p { margin: 0 0 14px; color: var(--muted); }
h2 { font-size: 15px; margin: 0 0 2px; }
h3 { font-size: 13.5px; margin: 0 0 6px; color: var(--ink); }
h3 .sys { font-weight: normal; color: var(--muted); }
.grid { display: grid; gap: 14px; margin-top: 14px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px;
  padding: 12px 14px; min-width: 0; overflow-x: auto; }
.card.wide { grid-column: 1 / -1; }
h2, h3 { overflow-wrap: anywhere; }
body > h2 { margin: 22px 0 0; font-size: 16px; }
.chips { list-style: none; padding: 0; margin: 0 0 8px; display: flex; flex-wrap: wrap; gap: 4px; }
ol.failures { margin: 4px 0 0; padding-left: 20px; }
ol.failures li { margin-bottom: 6px; }
.plot { display: block; width: 100%; height: auto; }
.plot .area { fill: #fff; stroke: #c8d1da; }
.plot .grid { stroke: #edf0f3; }
.plot text { font-size: 11px; fill: var(--muted); }
.plot .axis-label { fill: var(--ink); }
.plot .rule-label { font-size: 10.5px; font-weight: 600; }
.plot .rule-label.inside { paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.plot .bar-label { font-size: 10.5px; fill: var(--ink); dominant-baseline: middle; }
.legend { list-style: none; padding: 0; margin: 6px 0 0; display: flex; flex-wrap: wrap; gap: 2px 12px;
  color: var(--muted); font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px;
  vertical-align: -1px; }
.note { color: var(--muted); font-size: 12px; margin: 6px 0 0; }
.note.fail { color: #cf222e; }
.missing { color: var(--muted); font-style: italic; border: 1px dashed var(--line); border-radius: 4px;
  padding: 18px 12px; text-align: center; margin: 4px 0; }
.score { font-size: 14px; font-weight: 600; margin: 6px 0 0; }
.score.none { color: #cf222e; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid #eaeef2; }
thead th { color: var(--muted); font-weight: 600; font-size: 12px; border-bottom: 1px solid var(--line); }
td.num { font-variant-numeric: tabular-nums; }
table.summary { background: var(--card); border: 1px solid var(--line); border-radius: 6px; }
table.description tbody th { width: 1%; white-space: nowrap; color: var(--muted); font-weight: 600; }
table.description td, table.compliance td { overflow-wrap: anywhere; }
table.compliance td:first-child { white-space: nowrap; }
code { display: block; margin-top: 3px; padding: 3px 6px; background: #f6f8fa; border-radius: 4px;
  font: 11.5px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; white-space: pre-wrap; }
details { margin-top: 4px; font-size: 12px; } summary { color: var(--muted); cursor: pointer; }
details ul { margin: 4px 0; padding-left: 18px; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 11.5px; font-weight: 600;
  white-space: nowrap; }
.badge.pass { background: #dafbe1; color: #116329; }
.badge.fail { background: #ffebe9; color: #a40e26; }
.badge.warn { background: #fff8c5; color: #7d4e00; }
.badge.none { background: #eef1f4; color: var(--muted); }
.quiet { color: var(--muted); }
table.runs { margin-top: 8px; font-size: 12px; }
table.runs td, table.runs th { padding: 2px 4px; white-space: nowrap; }
.swatch { display: inline-block; width: 9px; height: 9px; border-radius: 2px; margin-right: 5px; }
.more { color: var(--muted); }
footer { margin-top: 18px; color: var(--muted); font-size: 12px; }
)css";

}  // namespace

std::string render_report_html(const std::vector<SystemReport>& systems,
                               const ReportOptions& options) {
  const std::size_t n = systems.size();
  const bool multi = n > 1;
  // One system: its cards two to a row. Several: one row per section, up to three systems wide;
  // charts are drawn for their column width so that their text stays the page's size.
  const std::size_t columns = multi ? std::min<std::size_t>(n, 3) : 2;
  const double chart_width = columns >= 3 ? 400 : 560;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  // No loads of any kind, no script: the page is complete in itself and log text cannot act.
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + escape_html(options.title) + "</title>\n<style>" + std::string(kStyle) +
         "</style></head>\n<body>\n";
  out += "<header><h1>" + escape_html(options.title) + "</h1><p>" + std::to_string(n) +
         (multi ? " systems" : " system") +
         " &middot; verdicts, scores and RCP tests by mlbert check, score and rcp (official "
         "semantics) &middot; hover a mark for its figures</p></header>\n";
  out += summary_table(systems);
  const std::string grid_style =
      " style=\"grid-template-columns: repeat(" + std::to_string(columns) + ", minmax(0, 1fr))\"";

  using Section = std::string (*)(const SystemReport&, const std::string&, double);
  const std::pair<const char*, Section> sections[] = {
      {"Convergence", convergence_card}, {"Time to train", time_to_train_card}, {"RCP", rcp_card},
      {"Timeline", timeline_card},       {"Throughput", throughput_card},
  };
  const auto card = [&](std::size_t i, const std::string& title, const std::string& body,
                        bool wide) {
    std::string heading =
        multi ? escape_html(systems[i].name)
              : title + " <span class=\"sys\">&middot; " + escape_html(systems[i].name) + "</span>";
    return "<div class=\"card" + std::string(wide ? " wide" : "") + "\" data-system=\"" +
           std::to_string(i) + "\"><h3>" + heading + "</h3>\n" + body + "</div>\n";
  };
  if (!multi) out += "<main class=\"grid\"" + grid_style + ">\n";
  for (std::size_t k = 0; k < std::size(sections); ++k) {
    const auto& [title, render] = sections[k];
    if (multi)
      out += "<h2>" + std::string(title) + "</h2>\n<div class=\"grid\"" + grid_style + ">\n";
    for (std::size_t i = 0; i < n; ++i)
      out +=
          card(i, title,
               render(systems[i], "s" + std::to_string(i) + "-" + std::to_string(k), chart_width),
               false);
    if (multi) out += "</div>\n";
  }
  if (multi) out += "<h2>Compliance per file</h2>\n<div class=\"grid\"" + grid_style + ">\n";
  for (std::size_t i = 0; i < n; ++i)
    out += card(i, "Compliance per file", compliance_card(systems[i]), !multi);
  if (multi) out += "</div>\n<h2>System description</h2>\n<div class=\"grid\">\n";
  out += "<div class=\"card wide\">" + std::string(multi ? "" : "<h3>System description</h3>\n") +
         description_card(systems) + "</div>\n";
  out += multi ? "</div>\n" : "</main>\n";
  out += "<footer>" + escape_html(options.generated_by) + "</footer>\n</body></html>\n";
  return out;
}

}  // namespace mlbert::logging
