// Comparing a reproduction with the published result (see compare.h).
#include "harness/reproduce/compare.h"

#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

namespace mlbert::harness::reproduce {
namespace {

ComparedSide read_side(const std::filesystem::path& dir, const std::string& ruleset) {
  ComparedSide side;
  side.dir = dir;
  side.runs = read_published_runs(dir);
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

std::string minutes_text(const std::optional<double>& minutes) {
  if (!minutes) return "none";
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << *minutes << " min";
  return s.str();
}

}  // namespace

double parse_tolerance(const std::string& text) {
  try {
    std::size_t used = 0;
    double value = std::stod(text, &used);
    if (used < text.size() && text.substr(used) == "%") value /= 100.0;
    else if (used != text.size()) throw std::invalid_argument(text);
    if (!(value >= 0 && value < 10)) throw std::invalid_argument(text);
    return value;
  } catch (const std::exception&) {
    throw std::invalid_argument("--tolerance " + text + ": not a fraction (0.05) or a percentage (5%)");
  }
}

Comparison compare_results(const std::filesystem::path& reproduced,
                           const std::filesystem::path& published, const std::string& ruleset,
                           double tolerance) {
  Comparison c;
  c.ruleset = ruleset;
  c.tolerance = tolerance;
  c.reproduced = read_side(reproduced, ruleset);
  c.published = read_side(published, ruleset);
  c.differing = differing_fields(c.reproduced.runs, c.published.runs);
  const auto& r = c.reproduced.score.score;
  const auto& p = c.published.score.score;
  if (r && p && *p > 0) c.ratio = *r / *p;
  if (!c.differing.empty()) {
    c.verdict = "not reproduced: " + c.differing.front().key + " differs (" +
                std::to_string(c.differing.size()) + " logged hyperparameter" +
                (c.differing.size() == 1 ? "" : "s") + " differ)";
  } else if (!c.ratio) {
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

std::string format_comparison(const Comparison& c) {
  std::ostringstream s;
  s << "reproduced: " << c.reproduced.dir.string() << "\npublished:  " << c.published.dir.string()
    << "\nruleset " << c.ruleset << "\n\n";
  s << "score (olympic mean): reproduced " << minutes_text(c.reproduced.score.score)
    << ", published " << minutes_text(c.published.score.score);
  if (c.ratio) s << ", ratio " << std::fixed << std::setprecision(3) << *c.ratio;
  s << "\nRCP: reproduced " << logging::to_string(c.reproduced.rcp.verdict) << " ("
    << c.reproduced.rcp.message << "), published " << logging::to_string(c.published.rcp.verdict)
    << " (" << c.published.rcp.message << ")\n\n";
  s << "samples trained, run by run (reproduced | published), and run_stop's status:\n";
  const auto& rr = c.reproduced.runs.runs;
  const auto& pr = c.published.runs.runs;
  for (std::size_t i = 0; i < std::max(rr.size(), pr.size()); ++i) {
    const auto cell = [](const std::vector<PublishedRun>& runs, std::size_t k) {
      if (k >= runs.size()) return std::string("-");
      return std::to_string(runs[k].samples) + " " + runs[k].status;
    };
    s << "  " << i << ": " << cell(rr, i) << " | " << cell(pr, i) << "\n";
  }
  s << "\nlogged hyperparameters that differ: " << (c.differing.empty() ? "none" : "") << "\n";
  for (const auto& d : c.differing)
    s << "  " << d.key << ": reproduced " << d.reproduced << ", published " << d.published << "\n";
  s << "\n" << c.verdict << "\n";
  return s.str();
}

}  // namespace mlbert::harness::reproduce
