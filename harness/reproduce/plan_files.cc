// The files of a reproduction plan: plan.json, README.md and system.json, written all or nothing.
//
// Design choice: the folder is staged beside the destination under a partial name and renamed
// into place once every file is complete, so a reader (or the job) never sees a plan without its
// system file, or a system file from another plan.
#include <unistd.h>

#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "common/atomic_file.h"
#include "harness/reproduce/plan.h"

namespace mlbert::harness::reproduce {

using nlohmann::json;

json plan_to_json(const ReproductionPlan& plan) {
  json j;
  j["result_dir"] = plan.result_dir.string();
  j["system_description"] = plan.system_description.string();
  j["system_name"] = plan.system_name;
  j["ruleset"] = plan.ruleset;
  j["reproducible"] = !plan.refusal.has_value();
  if (plan.refusal) j["refusal"] = *plan.refusal;
  j["fields"] = json::array();
  for (const auto& f : plan.fields)
    j["fields"].push_back({{"field", f.field}, {"value", f.value}, {"source", f.source}});
  j["not_carried"] = plan.not_carried;
  j["differences"] = json::array();
  for (const auto& d : plan.differences)
    j["differences"].push_back({{"published", d.published}, {"substitution", d.substitution}});
  const auto& s = plan.spread;
  j["samples_to_converge"] = {{"runs", s.samples}, {"min", s.min},       {"max", s.max},
                              {"mean", s.mean},    {"median", s.median}, {"converged", s.converged}};
  j["expected_time_to_train"] = plan.expected_time;
  return j;
}

namespace {

std::string cell(const json& value) {
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string plan_readme(const ReproductionPlan& plan) {
  std::ostringstream r;
  r << "# Reproduction plan: " << plan.system_name << "\n\n";
  r << "Published result: `" << plan.result_dir.string() << "` (ruleset " << plan.ruleset
    << "), system description `" << plan.system_description.string() << "`.\n\n";
  if (plan.refusal) r << "**Not reproducible:** " << *plan.refusal << "\n\n";
  else r << "`system.json` is the mlbert system file that trains as the published runs did.\n\n";
  const auto& s = plan.spread;
  r << "Samples to converge over the " << s.samples.size() << " published runs (" << s.converged
    << " converged): min " << s.min << ", median " << std::fixed << std::setprecision(0)
    << s.median << ", max " << s.max << ".\n";
  if (plan.expected_time.contains("minutes"))
    r << "Expected time to train (simulator): " << std::setprecision(1)
      << plan.expected_time["minutes"].get<double>() << " minutes.\n";
  else if (plan.expected_time.contains("none"))
    r << "Expected time to train: none (" << plan.expected_time["none"].get<std::string>()
      << ").\n";
  r << "\n## Differences from the published run\n\n";
  if (plan.differences.empty()) r << "None.\n";
  for (const auto& d : plan.differences)
    r << "- " << d.published << " -> " << d.substitution << "\n";
  r << "\n## Fields and their sources\n\n| field | value | source |\n|---|---|---|\n";
  for (const auto& f : plan.fields)
    r << "| " << f.field << " | " << cell(f.value) << " | " << cell(json(f.source)) << " |\n";
  if (!plan.not_carried.empty()) {
    r << "\n## Logged but not carried\n\n";
    for (const auto& n : plan.not_carried) r << "- " << n << "\n";
  }
  return r.str();
}

void write_plan(const ReproductionPlan& plan, const std::filesystem::path& out_dir,
                const std::map<std::string, std::string>& more) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !(fs::is_directory(out_dir) && fs::is_empty(out_dir)))
    throw std::runtime_error(out_dir.string() +
                             ": exists and is not an empty folder (a plan is written to a new one)");
  const fs::path parent = out_dir.has_parent_path() ? out_dir.parent_path() : fs::path(".");
  fs::create_directories(parent);
  const fs::path stage =
      parent / ("." + out_dir.filename().string() + ".partial-" + std::to_string(::getpid()));
  fs::remove_all(stage);
  fs::create_directory(stage);
  try {
    if (!plan.refusal) files::write_file_atomically(stage / "system.json", plan.system.dump(2) + "\n");
    files::write_file_atomically(stage / "plan.json", plan_to_json(plan).dump(2) + "\n");
    files::write_file_atomically(stage / "README.md", plan_readme(plan));
    for (const auto& [name, text] : more) files::write_file_atomically(stage / name, text);
    if (fs::exists(out_dir)) fs::remove(out_dir);
    fs::rename(stage, out_dir);
    files::sync_directory(parent);
  } catch (...) {
    fs::remove_all(stage, ec);
    throw;
  }
}

}  // namespace mlbert::harness::reproduce
