// Tables, JSON and the SVG plot of `mlbert simulate` (see report.h).
#include "simulate/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "common/html_escape.h"
#include "common/thousands.h"
#include "mlperf_logging/package/score.h"

namespace mlbert::simulate {
namespace {

using nlohmann::json;

std::string fmt(const char* format, double x) {
  char text[64];
  std::snprintf(text, sizeof(text), format, x);
  return text;
}

std::string with_commas(std::int64_t x) {
  return group_thousands(std::to_string(x));
}

json breakdown_to_json(const StepBreakdown& b) {
  return {{"exchange", b.exchange},   {"compute", b.compute},
          {"imbalance", b.imbalance}, {"exposed_comm", b.exposed_comm},
          {"clip", b.clip},           {"optimizer", b.optimizer},
          {"host", b.host},           {"fixed", b.fixed},
          {"total", b.total()}};
}

struct Component {
  const char* name;
  const char* color;
  double TimeComponents::*field;
};
constexpr Component kComponents[] = {
    {"run start", "#9e9e9e", &TimeComponents::run_start},
    {"compute", "#4878d0", &TimeComponents::compute},
    {"imbalance", "#ee854a", &TimeComponents::imbalance},
    {"exposed communication", "#d65f5f", &TimeComponents::exposed_comm},
    {"exchange", "#956cb4", &TimeComponents::exchange},
    {"norm/scaling passes", "#8c613c", &TimeComponents::clip},
    {"optimizer", "#6acc64", &TimeComponents::optimizer},
    {"host between steps", "#d5bb67", &TimeComponents::host},
    {"fixed per step (fitted)", "#82c6e2", &TimeComponents::fixed},
    {"evaluation", "#dc7ec0", &TimeComponents::evaluation},
};

}  // namespace

TimeComponents components_of(const Prediction& p) {
  const double steps = static_cast<double>(p.step_seconds.size());
  TimeComponents c;
  c.run_start = p.run_start_seconds;
  c.compute = p.mean_step.compute * steps;
  c.imbalance = p.mean_step.imbalance * steps;
  c.exposed_comm = p.mean_step.exposed_comm * steps;
  c.exchange = p.mean_step.exchange * steps;
  c.clip = p.mean_step.clip * steps;
  c.optimizer = p.mean_step.optimizer * steps;
  c.host = p.mean_step.host * steps;
  c.fixed = p.mean_step.fixed * steps;
  c.evaluation = p.eval_total_seconds;
  return c;
}

std::string format_prediction(const Prediction& p, const AcceleratorProfile& profile) {
  std::ostringstream o;
  const Convergence& c = p.convergence;
  const double steps = static_cast<double>(p.step_seconds.size());
  o << "mlbert simulate: " << p.name << " (" << p.nodes << " nodes x " << p.ranks_per_node << " "
    << p.accelerator << ", " << p.nodes * p.ranks_per_node << " ranks, GBS "
    << with_commas(p.global_batch_size) << ")\n";
  o << "profile: " << profile.path.string() << " (" << profile.provenance_kind << ")\n";
  o << "convergence: " << with_commas(c.samples) << " samples in " << c.steps << " steps, "
    << c.evals << " evaluations (" << c.source << ")\n\n";
  o << "predicted time to train: " << fmt("%.2f", p.total_seconds) << " s ("
    << fmt("%.3f", p.total_seconds / 60) << " min)" << (c.reached ? "" : "  NOT CONVERGED") << "\n";
  o << "  run start              " << fmt("%9.2f s", p.run_start_seconds) << "\n";
  o << "  training steps         " << fmt("%9.2f s", p.train_seconds) << "   " << c.steps << " x "
    << fmt("%.2f ms", steps > 0 ? p.train_seconds / steps * 1e3 : 0) << "\n";
  o << "  evaluation             " << fmt("%9.2f s", p.eval_total_seconds) << "   " << c.evals
    << " x " << fmt("%.2f ms", p.eval_seconds * 1e3) << "\n";
  o << "per step (mean over the steps):\n";
  const StepBreakdown& b = p.mean_step;
  o << "  compute (mean rank)    " << fmt("%9.2f ms", b.compute * 1e3) << "   of it "
    << fmt("%.2f ms", p.host_bound * 1e3) << " waiting for the host (" << p.kernels_per_micro_step
    << " kernels per micro-step)\n";
  o << "  imbalance (slowest)    " << fmt("%9.2f ms", b.imbalance * 1e3) << "   max/mean "
    << fmt("%.4f", p.straggler_ratio) << "\n";
  o << "  exposed communication  " << fmt("%9.2f ms", b.exposed_comm * 1e3) << "   of "
    << fmt("%.2f ms", p.comm_busy * 1e3) << " allreduce busy\n";
  o << "  exchange               " << fmt("%9.2f ms", b.exchange * 1e3) << "\n";
  o << "  norm/scaling passes    " << fmt("%9.2f ms", b.clip * 1e3) << "\n";
  o << "  optimizer              " << fmt("%9.2f ms", b.optimizer * 1e3) << "\n";
  if (b.host > 0)
    o << "  host between steps     " << fmt("%9.2f ms", b.host * 1e3)
      << "   (a read-back after backward, then the host's loops the GPU does not hide)\n";
  if (b.fixed > 0)
    o << "  fixed per step         " << fmt("%9.2f ms", b.fixed * 1e3)
      << "   (the profile's, fitted on two results at different batches per GPU)\n";
  o << "  step                   " << fmt("%9.2f ms", b.total() * 1e3) << "\n";
  o << "gradients: " << p.buckets << " buckets, " << fmt("%.3f GB", p.gradient_bytes / 1e9)
    << " per step on the wire (" << p.allreduce_choice << ")\n";
  o << "assumptions:\n";
  for (const auto& a : p.assumptions) o << "  - " << a << "\n";
  return o.str();
}

json prediction_to_json(const Prediction& p) {
  const TimeComponents t = components_of(p);
  json components = json::object();
  for (const Component& c : kComponents) components[c.name] = t.*(c.field);
  return {{"system", p.name},
          {"accelerator", p.accelerator},
          {"nodes", p.nodes},
          {"ranks_per_node", p.ranks_per_node},
          {"global_batch_size", p.global_batch_size},
          {"convergence",
           {{"target_samples", p.convergence.target_samples},
            {"source", p.convergence.source},
            {"samples", p.convergence.samples},
            {"steps", p.convergence.steps},
            {"evals", p.convergence.evals},
            {"eval_interval", p.convergence.eval_interval},
            {"reached", p.convergence.reached}}},
          {"total_seconds", p.total_seconds},
          {"run_start_seconds", p.run_start_seconds},
          {"train_seconds", p.train_seconds},
          {"eval_seconds", p.eval_seconds},
          {"eval_total_seconds", p.eval_total_seconds},
          {"mean_step_seconds", breakdown_to_json(p.mean_step)},
          {"allreduce_busy_seconds_per_step", p.comm_busy},
          {"host_bound_seconds_per_step", p.host_bound},
          {"kernels_per_micro_step", p.kernels_per_micro_step},
          {"straggler_ratio", p.straggler_ratio},
          {"buckets", p.buckets},
          {"gradient_bytes_per_step", p.gradient_bytes},
          {"allreduce", p.allreduce_choice},
          {"components_seconds", components},
          {"assumptions", p.assumptions}};
}

std::string format_sweep(const std::string& field, const std::vector<SweepPoint>& points) {
  std::ostringstream o;
  o << "mlbert simulate: sweep of " << field << "\n";
  char line[512];
  std::snprintf(
      line, sizeof(line), "%-12s %6s %7s %5s %6s %6s %9s %9s %8s %8s %8s %8s %7s %8s %6s %6s %8s\n",
      field.c_str(), "ranks", "GBS", "batch", "steps", "evals", "time s", "step ms", "compute",
      "imbal", "exposed", "exchange", "passes", "optim", "host", "fixed", "eval s");
  o << line;
  for (const SweepPoint& s : points) {
    const Prediction& p = s.prediction;
    const StepBreakdown& b = p.mean_step;
    const int world = p.nodes * p.ranks_per_node;
    std::snprintf(line, sizeof(line),
                  "%-12s %6d %7lld %5lld %6lld %6lld %9.2f %9.2f %8.2f %8.2f %8.2f %8.2f %7.2f "
                  "%8.2f %6.2f %6.2f %8.2f%s\n",
                  s.value.c_str(), world, static_cast<long long>(p.global_batch_size),
                  static_cast<long long>(p.global_batch_size / world),
                  static_cast<long long>(p.convergence.steps),
                  static_cast<long long>(p.convergence.evals), p.total_seconds, b.total() * 1e3,
                  b.compute * 1e3, b.imbalance * 1e3, b.exposed_comm * 1e3, b.exchange * 1e3,
                  b.clip * 1e3, b.optimizer * 1e3, b.host * 1e3, b.fixed * 1e3,
                  p.eval_total_seconds, p.convergence.reached ? "" : "  (not converged)");
    o << line;
  }
  o << "(per-step columns in ms; batch = sequences per rank and step)\n";
  if (!points.empty()) {
    o << "assumptions (of the first point):\n";
    for (const auto& a : points.front().prediction.assumptions) o << "  - " << a << "\n";
  }
  return o.str();
}

json sweep_to_json(const std::string& field, const std::vector<SweepPoint>& points) {
  json out = {{"field", field}, {"points", json::array()}};
  for (const SweepPoint& s : points)
    out["points"].push_back({{"value", s.value}, {"prediction", prediction_to_json(s.prediction)}});
  return out;
}

std::string sweep_svg(const std::string& field, const std::vector<SweepPoint>& points) {
  const double width = 760, height = 460, left = 70, right = 200, top = 40, bottom = 60;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  double max_total = 0;
  for (const SweepPoint& s : points) max_total = std::max(max_total, s.prediction.total_seconds);
  // A round axis top: 1, 2 or 5 times a power of ten.
  double axis = 1;
  if (max_total > 0) {
    const double base = std::pow(10.0, std::floor(std::log10(max_total)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
      if (base * m >= max_total) {
        axis = base * m;
        break;
      }
  }
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<title>mlbert simulate: predicted time to train against " << escape_html(field)
    << "</title>\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << left << "\" y=\"22\" font-size=\"15\">Predicted time to train ("
    << escape_html(points.empty() ? std::string() : points.front().prediction.name) << ") against "
    << escape_html(field) << "</text>\n";
  for (int i = 0; i <= 5; ++i) {
    const double v = axis * i / 5, y = top + plot_h - plot_h * i / 5;
    o << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << y << "\" y2=\"" << y
      << "\" stroke=\"#dddddd\"/>\n";
    o << "<text x=\"" << left - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << fmt("%g", v)
      << "</text>\n";
  }
  o << "<text x=\"18\" y=\"" << top + plot_h / 2 << "\" transform=\"rotate(-90 18 "
    << top + plot_h / 2 << ")\" text-anchor=\"middle\">seconds (run_start to run_stop)</text>\n";
  const double slot = points.empty() ? plot_w : plot_w / static_cast<double>(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const TimeComponents t = components_of(points[i].prediction);
    const double x = left + slot * static_cast<double>(i) + slot * 0.15, w = slot * 0.7;
    double y = top + plot_h;
    for (const Component& c : kComponents) {
      const double h = axis > 0 ? t.*(c.field) / axis * plot_h : 0;
      if (h <= 0) continue;
      y -= h;
      o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h
        << "\" fill=\"" << c.color << "\"><title>" << c.name << ": " << fmt("%.3f s", t.*(c.field))
        << "</title></rect>\n";
    }
    o << "<text x=\"" << x + w / 2 << "\" y=\"" << y - 4 << "\" text-anchor=\"middle\">"
      << fmt("%.1f", points[i].prediction.total_seconds) << "</text>\n";
    o << "<text x=\"" << x + w / 2 << "\" y=\"" << top + plot_h + 18 << "\" text-anchor=\"middle\">"
      << escape_html(points[i].value) << "</text>\n";
  }
  o << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << height - 18 << "\" text-anchor=\"middle\">"
    << escape_html(field) << "</text>\n";
  double ly = top + 10;
  for (auto it = std::rbegin(kComponents); it != std::rend(kComponents); ++it) {
    o << "<rect x=\"" << left + plot_w + 20 << "\" y=\"" << ly - 10
      << "\" width=\"12\" height=\"12\" fill=\"" << it->color << "\"/>\n";
    o << "<text x=\"" << left + plot_w + 38 << "\" y=\"" << ly << "\">" << it->name << "</text>\n";
    ly += 20;
  }
  o << "</svg>\n";
  return o.str();
}

ResultComparison compare_with_result(const PublishedResult& result, const Prediction& prediction) {
  ResultComparison c;
  c.result = result;
  c.prediction = prediction;
  std::vector<double> predicted, published;
  for (const PublishedRun& run : result.runs) {
    const auto steps = static_cast<std::size_t>(run.steps(prediction.global_batch_size));
    double seconds = prediction.run_start_seconds;
    for (std::size_t i = 0; i < steps && i < prediction.step_seconds.size(); ++i)
      seconds += prediction.step_seconds[i];
    seconds += static_cast<double>(run.evals) * prediction.eval_seconds;
    c.predicted_runs.push_back(seconds);
    predicted.push_back(seconds);
    published.push_back(run.seconds);
  }
  c.olympic = result.runs.size() >= 3;
  const auto mean = [&](const std::vector<double>& seconds) {
    if (c.olympic) return logging::olympic_average(seconds, 0, 1).value_or(0);
    return seconds.empty() ? 0.0
                           : std::accumulate(seconds.begin(), seconds.end(), 0.0) /
                                 static_cast<double>(seconds.size());
  };
  c.predicted_olympic = mean(predicted);
  c.published_olympic = mean(published);
  c.official = official_score(result);
  c.phases = published_phases(result, prediction.convergence.eval_interval);
  return c;
}

namespace {

// The predicted step with its share of an evaluation: one every eval_interval samples (none
// without a cadence).
double interval_step(const Prediction& p) {
  if (p.convergence.eval_interval <= 0) return p.mean_step.total();
  return p.mean_step.total() + p.eval_seconds * static_cast<double>(p.global_batch_size) /
                                   static_cast<double>(p.convergence.eval_interval);
}

// The published phases beside the predicted ones: where a prediction misses, which phase it is.
std::string format_phases(const PublishedPhases& ph, const Prediction& p) {
  std::ostringstream o;
  o << "published phases (medians over the runs):";
  if (ph.step_seconds)
    o << " step " << fmt("%.2f ms", *ph.step_seconds * 1e3) << " between evaluations ("
      << ph.step_intervals << " intervals),";
  if (ph.eval_seconds)
    o << " evaluation " << fmt("%.1f ms", *ph.eval_seconds * 1e3) << " (" << ph.timed_evals
      << " timed),";
  if (!ph.step_seconds && !ph.eval_seconds)
    o << " the logs time no evaluation (no eval_start and eval_stop pair),";
  if (ph.interval_step_seconds)
    o << " " << fmt("%.2f ms", *ph.interval_step_seconds * 1e3)
      << " a step over whole evaluation intervals (" << ph.intervals << ", evaluation included"
      << (ph.intervals_from_cadence ? ", the samples between them from the cadence" : "") << "),";
  if (ph.run_start_seconds)
    o << " run start " << fmt("%.2f s", *ph.run_start_seconds)
      << " (first evaluation interval minus the second)";
  else
    o << " no run start (fewer than two evaluations, or a 0.x ruleset's cadence)";
  o << "; predicted step " << fmt("%.2f ms", p.mean_step.total() * 1e3);
  if (ph.interval_step_seconds && p.convergence.eval_interval > 0)
    o << " (" << fmt("%.2f ms", interval_step(p) * 1e3) << " with the evaluation's share)";
  o << ", evaluation " << fmt("%.1f ms", p.eval_seconds * 1e3) << ", run start "
    << fmt("%.2f s", p.run_start_seconds) << "\n";
  return o.str();
}

json optional_json(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

std::string format_comparison(const ResultComparison& c, const AcceleratorProfile& profile) {
  std::ostringstream o;
  const Prediction& p = c.prediction;
  o << "mlbert simulate --results " << c.result.dir.string() << "\n";
  o << p.nodes << " nodes x " << p.ranks_per_node << " " << p.accelerator << ", GBS "
    << with_commas(p.global_batch_size) << ", ruleset "
    << (c.result.ruleset.empty() ? "?" : c.result.ruleset) << ", " << c.result.division << "\n";
  o << "profile: " << profile.path.string() << " (" << profile.provenance_kind << ": "
    << profile.source() << ")\n\n";
  char line[256];
  std::snprintf(line, sizeof(line), "%-16s %10s %6s %8s %12s %12s %8s\n", "run", "samples", "evals",
                "status", "published s", "predicted s", "error");
  o << line;
  for (std::size_t i = 0; i < c.result.runs.size(); ++i) {
    const PublishedRun& r = c.result.runs[i];
    std::snprintf(line, sizeof(line), "%-16s %10lld %6lld %8s %12.2f %12.2f %+7.1f%%\n",
                  r.file.filename().string().c_str(), static_cast<long long>(r.samples),
                  static_cast<long long>(r.evals), r.status.c_str(), r.seconds, c.predicted_runs[i],
                  (c.predicted_runs[i] / r.seconds - 1) * 100);
    o << line;
  }
  for (const auto& skipped : c.result.skipped_runs) o << "left out: " << skipped << "\n";
  const double error = c.published_olympic > 0 ? c.predicted_olympic / c.published_olympic - 1 : 0;
  o << (c.olympic ? "\nolympic mean (drop fastest and slowest, no compliance filter): published "
                  : "\nmean of " + std::to_string(c.result.runs.size()) +
                        " run(s), too few for the olympic mean: published ")
    << fmt("%.2f s", c.published_olympic) << ", predicted " << fmt("%.2f s", c.predicted_olympic)
    << " (" << fmt("%+.1f%%", error * 100) << ")\n";
  if (c.official.minutes)
    o << "official score (" << c.result.ruleset
      << " summarizer rules): " << fmt("%.4f min", *c.official.minutes) << " = "
      << fmt("%.2f s", *c.official.minutes * 60) << "\n";
  else
    o << c.official.note << "\n";
  o << "predicted step " << fmt("%.2f ms", p.mean_step.total() * 1e3) << ": compute "
    << fmt("%.2f", p.mean_step.compute * 1e3) << " (of it " << fmt("%.2f", p.host_bound * 1e3)
    << " waiting for the host), imbalance " << fmt("%.2f", p.mean_step.imbalance * 1e3)
    << ", exposed communication " << fmt("%.2f", p.mean_step.exposed_comm * 1e3) << ", exchange "
    << fmt("%.2f", p.mean_step.exchange * 1e3) << ", norm and scaling passes "
    << fmt("%.2f", p.mean_step.clip * 1e3) << ", optimizer "
    << fmt("%.2f", p.mean_step.optimizer * 1e3) << ", host between steps "
    << fmt("%.2f", p.mean_step.host * 1e3) << ", fixed per step "
    << fmt("%.2f", p.mean_step.fixed * 1e3) << " ms; evaluation "
    << fmt("%.1f ms", p.eval_seconds * 1e3) << "; run start " << fmt("%.2f s", p.run_start_seconds)
    << "\n";
  o << format_phases(c.phases, p);
  o << "assumptions:\n";
  for (const auto& a : p.assumptions) o << "  - " << a << "\n";
  return o.str();
}

json comparison_to_json(const ResultComparison& c) {
  json runs = json::array();
  for (std::size_t i = 0; i < c.result.runs.size(); ++i) {
    const PublishedRun& r = c.result.runs[i];
    runs.push_back({{"file", r.file.filename().string()},
                    {"samples", r.samples},
                    {"evals", r.evals},
                    {"status", r.status},
                    {"published_seconds", r.seconds},
                    {"predicted_seconds", c.predicted_runs[i]}});
  }
  json out = {
      {"results", c.result.dir.string()},
      {"ruleset", c.result.ruleset},
      {"runs", runs},
      {"skipped_runs", c.result.skipped_runs},
      {"mean", c.olympic ? "olympic" : "plain (fewer than 3 runs)"},
      {"published_olympic_seconds", c.published_olympic},
      {"predicted_olympic_seconds", c.predicted_olympic},
      {"error", c.published_olympic > 0 ? c.predicted_olympic / c.published_olympic - 1 : 0.0},
      {"prediction", prediction_to_json(c.prediction)},
      {"published_phases",
       {{"step_seconds", optional_json(c.phases.step_seconds)},
        {"step_intervals", c.phases.step_intervals},
        {"eval_seconds", optional_json(c.phases.eval_seconds)},
        {"timed_evals", c.phases.timed_evals},
        {"run_start_seconds", optional_json(c.phases.run_start_seconds)},
        {"interval_step_seconds", optional_json(c.phases.interval_step_seconds)},
        {"intervals", c.phases.intervals},
        {"intervals_from_cadence", c.phases.intervals_from_cadence}}},
      {"predicted_interval_step_seconds", interval_step(c.prediction)}};
  if (c.official.minutes)
    out["official_score_minutes"] = *c.official.minutes;
  else
    out["official_score_note"] = c.official.note;
  return out;
}

}  // namespace mlbert::simulate
