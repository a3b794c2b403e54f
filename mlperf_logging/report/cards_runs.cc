// The report's plots of one system's runs (see cards.h): convergence, time to train, timeline and
// throughput. The figures come from the RunTrace of each log and from the scorer's verdicts.
#include <algorithm>
#include <cmath>
#include <map>

#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/report/cards.h"
#include "mlperf_logging/report/html_parts.h"
#include "mlperf_logging/report/svg.h"

namespace mlbert::logging::report {

// ---- convergence --------------------------------------------------------------------------------

namespace {

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
    const std::string colour(run_colour(i));
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

}  // namespace

std::string convergence_card(const SystemReport& system, const std::string& id, double width) {
  std::vector<double> xs, ys{system.target};
  for (const RunTrace& run : system.runs)
    for (const EvalPoint& e : run.evals) {
      xs.push_back(eval_x(system, run, e));
      ys.push_back(e.accuracy);
    }
  if (xs.empty()) return missing("accuracy", "no eval_accuracy records in these logs");
  std::string out = accuracy_chart(system, nice_axis(std::min(0.0, min_of(xs)), max_of(xs), 6),
                                   nice_axis(min_of(ys), max_of(ys), 6), width, 300)
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
    out += accuracy_chart(system, nice_axis(lo - pad, hi + pad, 6),
                          nice_axis(system.target - kBand, max_of(near_y) + 0.002, 4), width, 190)
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

namespace {

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
  std::map<std::filesystem::path, const RunScore*> scored;
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
    out += "<tr><td><i class=\"swatch\" style=\"background:" + std::string(run_colour(i)) +
           "\"></i>" + escape_html(run_name(run)) + "</td><td class=\"num\">" +
           fixed(t.minutes[i], 3) + "</td><td class=\"num\">" +
           (run.train_samples ? grouped(*run.train_samples) : std::string("?")) +
           "</td><td class=\"num\">" + escape_html(last) + "</td><td>" + role + "</td></tr>\n";
  }
  return out + "</tbody></table>\n";
}

}  // namespace

std::string time_to_train_card(const SystemReport& system, const std::string& id, double width) {
  const TimeToTrain t = time_to_train(system);
  if (std::none_of(t.minutes.begin(), t.minutes.end(), [](double m) { return std::isfinite(m); }))
    return missing("time-to-train", "no run has both run_start and run_stop");
  const std::size_t n = system.runs.size();
  Chart chart(width, rows_height(n));
  chart.set_left_margin(70);
  chart.set_axes(nice_axis(0, max_of(t.minutes) * 1.22, 6),  // room for the labels
                 category_axis(run_labels(system)));
  chart.set_labels("minutes from run_start to run_stop", "");
  const bool scored = system.score && system.score->score;
  for (std::size_t i = 0; i < n; ++i) {
    const double m = t.minutes[i];
    const double row = static_cast<double>(i);
    std::string how;
    std::string_view fill = run_colour(i);
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
    const ScoreHeadline headline = score_headline(system);
    std::string line = "Score " + fixed(*headline.normalized, 4) + " min";
    if (headline.factor != 1.0) line += " (raw olympic mean " + fixed(*headline.raw, 4) + " min)";
    out += "<p class=\"score\">" + escape_html(line) + "</p>\n" + paragraph(headline.basis);
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
  chart.set_axes(nice_axis(0, max_of(ends) / unit.divisor, 6), category_axis(run_labels(system)));
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
    chart.set_axes(nice_axis(0, max_of(xs) / unit.divisor, 6), nice_axis(0, max_of(ys) * 1.05, 5));
    chart.set_labels(std::string(unit.name) + " since run_start", "throughput as logged");
    for (std::size_t i = 0; i < system.runs.size(); ++i) {
      const RunTrace& run = system.runs[i];
      if (!run.run_start_ms) continue;
      std::vector<Point> line;
      for (const auto& [t, rate] : run.throughput)
        line.push_back({(t - *run.run_start_ms) / 1000 / unit.divisor, rate});
      chart.line(line, run_colour(i), run_name(run));
      // A run that logs its throughput once has no line to show it: a larger dot does.
      const double radius = line.size() == 1 ? 4.5 : 2.2;
      for (const Point& p : line)
        chart.marker(
            p, Chart::Shape::dot, run_colour(i),
            run_name(run) + ": " + fixed(p.y, 1) + " at " + fixed(p.x, 2) + " " + unit.name,
            radius);
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

}  // namespace mlbert::logging::report
