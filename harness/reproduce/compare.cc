// Comparing a reproduction with the published result (see compare.h).
#include "harness/reproduce/compare.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

namespace mlbert::harness::reproduce {
namespace {

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

ComparedSide read_side(const std::filesystem::path& dir, const std::string& ruleset,
                       const std::filesystem::path& system) {
  ComparedSide side;
  side.dir = dir;
  side.runs = read_published_runs(dir);
  side.phases = phase_medians(side.runs);
  side.system = read_system_description(dir, system, side.system_file);
  logging::ScoreOptions score;
  score.ruleset = ruleset;
  side.score = logging::score_system(dir, score);
  logging::RcpOptions rcp;
  rcp.ruleset = ruleset;
  side.rcp = logging::check_rcp_directory(dir, rcp);
  return side;
}

bool same_value(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

// Keys that describe the submission rather than the training (and differ by design when a
// result is reproduced on another machine or by another organisation).
const std::set<std::string, std::less<>> kNotTraining = {"submission_division",
                                                         "submission_status"};

std::vector<DifferingField> differing_fields(const PublishedRuns& reproduced,
                                             const PublishedRuns& published) {
  std::set<std::string> keys;
  for (const auto& [key, v] : reproduced.hyperparameters) keys.insert(key);
  for (const auto& [key, v] : published.hyperparameters) keys.insert(key);
  std::vector<DifferingField> differing;
  for (const auto& key : keys) {
    if (kNotTraining.contains(key)) continue;
    const LoggedValue* r = reproduced.find(key);
    const LoggedValue* p = published.find(key);
    if (r && p && same_value(r->value, p->value)) continue;
    differing.push_back({key, r ? r->value.dump() + " (" + r->source() + ")" : "(not logged)",
                         p ? p->value.dump() + " (" + p->source() + ")" : "(not logged)"});
  }
  return differing;
}

// Why the comparison fails, or "" when nothing but the score is left to judge.
std::string configuration_verdict(const Comparison& c) {
  if (!c.differing.empty())
    return "not reproduced: " + c.differing.front().key + " differs (" +
           std::to_string(c.differing.size()) + " logged hyperparameter" +
           (c.differing.size() == 1 ? "" : "s") + " differ)";
  for (const SystemFieldDifference& d : c.system_differing)
    if (d.fails)
      return "not reproduced: " + d.field + " differs (" + d.reproduced + " reproduced, " +
             d.published + " published: another accelerator count is another experiment)";
  return "";
}

}  // namespace

PhaseMedians phase_medians(const PublishedRuns& runs) {
  std::vector<double> init, training, eval;
  PhaseMedians m;
  for (const PublishedRun& run : runs.runs) {
    if (run.status != "success") continue;
    ++m.runs;
    if (run.phases.init) init.push_back(*run.phases.init);
    if (run.phases.training) training.push_back(*run.phases.training);
    if (run.phases.eval) eval.push_back(*run.phases.eval);
  }
  m.init = median(init);
  m.training = median(training);
  m.eval = median(eval);
  return m;
}

double parse_tolerance(const std::string& text) {
  try {
    std::size_t used = 0;
    double value = std::stod(text, &used);
    if (used < text.size() && text.substr(used) == "%")
      value /= 100.0;
    else if (used != text.size())
      throw std::invalid_argument(text);
    if (!(value >= 0 && value < 10)) throw std::invalid_argument(text);
    return value;
  } catch (const std::exception&) {
    throw std::invalid_argument("--tolerance " + text +
                                ": not a fraction (0.05) or a percentage (5%)");
  }
}

Comparison compare_results(const std::filesystem::path& reproduced,
                           const std::filesystem::path& published, const std::string& ruleset,
                           double tolerance, const std::filesystem::path& reproduced_system) {
  Comparison c;
  c.ruleset = ruleset;
  c.tolerance = tolerance;
  c.reproduced = read_side(reproduced, ruleset, reproduced_system);
  c.published = read_side(published, ruleset, {});
  c.differing = differing_fields(c.reproduced.runs, c.published.runs);
  if (c.reproduced.system_file.empty())
    c.system_note = "system fields not compared: no system description for the reproduced runs "
                    "(pass --reproduced-system)";
  else if (c.published.system_file.empty())
    c.system_note = "system fields not compared: no system description for the published runs";
  else
    c.system_differing = differing_system_fields(c.reproduced.system, c.published.system);
  const auto& r = c.reproduced.score.score;
  const auto& p = c.published.score.score;
  if (r && p && *p > 0) c.ratio = *r / *p;
  c.verdict = configuration_verdict(c);
  if (!c.verdict.empty()) return c;
  if (!c.ratio) {
    c.verdict = std::string("not reproduced: no official score for the ") +
                (r ? "published" : "reproduced") + " runs";
  } else if (std::abs(*c.ratio - 1.0) > tolerance) {
    std::ostringstream s;
    s << "not reproduced: time to train " << std::fixed << std::setprecision(3) << *c.ratio
      << "x the published, outside the tolerance of " << tolerance * 100 << "%";
    c.verdict = s.str();
  } else {
    c.reproduced_verdict = true;
    c.verdict = "reproduced";
  }
  return c;
}

}  // namespace mlbert::harness::reproduce
