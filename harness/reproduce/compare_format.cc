// A comparison as a terminal and a script read it (see compare.h): the same facts in both, the
// verdict the last line of the text.
#include <iomanip>
#include <sstream>

#include "harness/reproduce/compare.h"

namespace mlbert::harness::reproduce {
namespace {

std::string minutes_text(const std::optional<double>& minutes) {
  if (!minutes) return "none";
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << *minutes << " min";
  return s.str();
}

std::string seconds_text(const std::optional<double>& seconds) {
  if (!seconds) return "not timed";
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << *seconds << " s";
  return s.str();
}

std::optional<double> ratio(const std::optional<double>& reproduced,
                            const std::optional<double>& published) {
  if (!reproduced || !published || *published <= 0) return std::nullopt;
  return *reproduced / *published;
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

struct Phase {
  const char* name;
  std::optional<double> PhaseMedians::*field;
};
constexpr Phase kPhases[] = {{"init", &PhaseMedians::init},
                             {"training", &PhaseMedians::training},
                             {"eval", &PhaseMedians::eval}};

void format_phases(const Comparison& c, std::ostringstream& s) {
  s << "phase times, median over the successful runs (reproduced " << c.reproduced.phases.runs
    << ", published " << c.published.phases.runs << "):\n";
  for (const Phase& p : kPhases) {
    const auto& r = c.reproduced.phases.*p.field;
    const auto& pub = c.published.phases.*p.field;
    s << "  " << p.name << ": reproduced " << seconds_text(r) << ", published "
      << seconds_text(pub);
    if (const auto x = ratio(r, pub)) s << ", ratio " << std::fixed << std::setprecision(3) << *x;
    s << "\n";
  }
}

void format_system_fields(const Comparison& c, std::ostringstream& s) {
  if (!c.system_note.empty()) {
    s << c.system_note << "\n";
    return;
  }
  s << "system fields that differ: " << (c.system_differing.empty() ? "none" : "") << "\n";
  for (const SystemFieldDifference& d : c.system_differing)
    s << "  " << d.field << ": reproduced " << d.reproduced << ", published " << d.published
      << (d.fails ? " (fails the comparison)" : "") << "\n";
}

nlohmann::json side_json(const ComparedSide& side) {
  nlohmann::json runs = nlohmann::json::array();
  for (const PublishedRun& r : side.runs.runs)
    runs.push_back({{"file", r.file.filename().string()},
                    {"samples", r.samples},
                    {"status", r.status},
                    {"seconds", r.seconds},
                    {"init_seconds", optional_json(r.phases.init)},
                    {"training_seconds", optional_json(r.phases.training)},
                    {"eval_seconds", optional_json(r.phases.eval)}});
  nlohmann::json phases = {{"successful_runs", side.phases.runs}};
  for (const Phase& p : kPhases)
    phases[std::string(p.name) + "_seconds"] = optional_json(side.phases.*p.field);
  return {
      {"dir", side.dir.string()},
      {"score_minutes", optional_json(side.score.score)},
      {"rcp", {{"verdict", logging::to_string(side.rcp.verdict)}, {"message", side.rcp.message}}},
      {"system_description", side.system_file.empty() ? nlohmann::json(nullptr)
                                                      : nlohmann::json(side.system_file.string())},
      {"phases_median", phases},
      {"runs", runs}};
}

}  // namespace

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
  format_phases(c, s);
  s << "\nsamples trained, run by run (reproduced | published), and run_stop's status:\n";
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
  format_system_fields(c, s);
  s << "\n" << c.verdict << "\n";
  return s.str();
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json phase_ratios;
  for (const Phase& p : kPhases)
    phase_ratios[p.name] =
        optional_json(ratio(c.reproduced.phases.*p.field, c.published.phases.*p.field));
  nlohmann::json hyperparameters = nlohmann::json::array();
  for (const DifferingField& d : c.differing)
    hyperparameters.push_back(
        {{"key", d.key}, {"reproduced", d.reproduced}, {"published", d.published}});
  nlohmann::json system = nlohmann::json::array();
  for (const SystemFieldDifference& d : c.system_differing)
    system.push_back({{"field", d.field},
                      {"reproduced", d.reproduced},
                      {"published", d.published},
                      {"fails", d.fails}});
  return {{"ruleset", c.ruleset},
          {"tolerance", c.tolerance},
          {"reproduced", side_json(c.reproduced)},
          {"published", side_json(c.published)},
          {"score_ratio", optional_json(c.ratio)},
          {"phase_ratios", phase_ratios},
          {"differing_hyperparameters", hyperparameters},
          {"differing_system_fields", system},
          {"system_note",
           c.system_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.system_note)},
          {"reproduced_verdict", c.reproduced_verdict},
          {"verdict", c.verdict}};
}

namespace {

std::string ratio_text(const std::optional<double>& r) {
  if (!r) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << *r;
  return s.str();
}

std::string rcp_text(const ComparedSide& side) {
  return std::string(logging::to_string(side.rcp.verdict)) + ": " + side.rcp.message;
}

logging::ComparisonTable runs_table(const Comparison& c) {
  logging::ComparisonTable t{"Samples to converge, run by run",
                             {"run", "reproduced", "status", "published", "status"},
                             {},
                             ""};
  const auto& rr = c.reproduced.runs.runs;
  const auto& pr = c.published.runs.runs;
  for (std::size_t i = 0; i < std::max(rr.size(), pr.size()); ++i) {
    std::vector<std::string> row = {std::to_string(i)};
    for (const auto* runs : {&rr, &pr}) {
      row.push_back(i < runs->size() ? std::to_string((*runs)[i].samples) : "-");
      row.push_back(i < runs->size() ? (*runs)[i].status : "-");
    }
    t.rows.push_back(std::move(row));
  }
  t.rows.push_back({"RCP test", rcp_text(c.reproduced), "", rcp_text(c.published), ""});
  return t;
}

}  // namespace

logging::ComparisonSection comparison_section(const Comparison& c) {
  logging::ComparisonSection section;
  section.verdict = c.verdict;
  section.reproduced = c.reproduced_verdict;
  section.tables.push_back({"Time to train: olympic mean of the official scores",
                            {"", "reproduced", "published", "ratio"},
                            {{"score", minutes_text(c.reproduced.score.score),
                              minutes_text(c.published.score.score), ratio_text(c.ratio)}},
                            ""});
  section.tables.push_back(runs_table(c));
  logging::ComparisonTable phases{"Phase times: median over the successful runs (reproduced " +
                                      std::to_string(c.reproduced.phases.runs) + ", published " +
                                      std::to_string(c.published.phases.runs) + ")",
                                  {"phase", "reproduced", "published", "ratio"},
                                  {},
                                  ""};
  for (const Phase& p : kPhases) {
    const auto& r = c.reproduced.phases.*p.field;
    const auto& pub = c.published.phases.*p.field;
    phases.rows.push_back({p.name, seconds_text(r), seconds_text(pub), ratio_text(ratio(r, pub))});
  }
  section.tables.push_back(std::move(phases));
  logging::ComparisonTable hyperparameters{
      "Logged hyperparameters that differ", {"key", "reproduced", "published"}, {}, "none"};
  for (const DifferingField& d : c.differing)
    hyperparameters.rows.push_back({d.key, d.reproduced, d.published});
  section.tables.push_back(std::move(hyperparameters));
  logging::ComparisonTable system{"System fields that differ",
                                  {"field", "reproduced", "published", "judged"},
                                  {},
                                  c.system_note.empty() ? "none" : c.system_note};
  for (const SystemFieldDifference& d : c.system_differing)
    system.rows.push_back(
        {d.field, d.reproduced, d.published, d.fails ? "fails the comparison" : "reported"});
  section.tables.push_back(std::move(system));
  return section;
}

}  // namespace mlbert::harness::reproduce
