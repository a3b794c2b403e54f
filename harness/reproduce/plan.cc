// Building a reproduction plan from a published result (see plan.h).
#include "harness/reproduce/plan.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include "common/input_file.h"
#include "harness/config/system_config.h"
#include "harness/reproduce/plan_builder.h"

namespace mlbert::harness::reproduce {
namespace {

using nlohmann::json;

json::json_pointer pointer(const std::string& field) {
  std::string p = "/" + field;
  std::replace(p.begin(), p.end(), '.', '/');
  return json::json_pointer(p);
}

// The keys an mlbert system file's topology and run may hold (system_config.cc reads these).
const std::set<std::string>& known_keys(const std::string& part) {
  static const std::set<std::string> topology = {"nodes", "ranks_per_node", "accelerator",
                                                 "intra_node", "nics", "cpu", "local_ranks"};
  static const std::set<std::string> run = {
      "ruleset", "division", "backend", "precision", "model", "per_rank_batch",
      "gradient_accumulation", "global_batch_size", "optimizer", "lr_schedule", "clipping",
      "loss_scale", "bucket_mb", "sampler", "load_balancing", "eval", "target_accuracy",
      "max_steps", "max_samples", "seed", "watchdog_seconds", "max_seq_length",
      "max_predictions_per_seq", "warmup_iterations", "samples_to_converge", "result_name"};
  return part == "run" ? run : topology;
}

json read_description(const std::filesystem::path& file) {
  std::ifstream in = files::open_input(file, "the system description");
  json d = json::parse(in, nullptr, false);
  if (d.is_discarded() || !d.is_object())
    throw std::runtime_error(file.string() + ": not a JSON object (the system description)");
  for (const char* part : {"topology", "run"}) {
    if (!d.contains(part)) continue;
    if (!d[part].is_object()) throw std::runtime_error(file.string() + ": " + part + ": not an object");
    for (const auto& [key, value] : d[part].items())
      if (!known_keys(part).contains(key))
        throw std::runtime_error(file.string() + ": " + part + "." + key +
                                 ": unknown field of an mlbert system file");
  }
  return d;
}

std::string system_name_of(const std::filesystem::path& dir) {
  std::filesystem::path d = std::filesystem::weakly_canonical(dir);
  std::string name = d.filename().string();
  if (name == "bert" || name.empty()) name = d.parent_path().filename().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' && c != '+')
      c = '_';
  return name;
}

// Rows per GPU and micro-step: the log's d_batch_size when it accounts for the global batch,
// else the global batch split evenly (the published run packed several samples into a row).
void plan_rank_batch(const PublishedRuns& runs, PlanBuilder& b) {
  const json& s = b.plan().system;
  const std::int64_t world =
      s["topology"]["nodes"].get<std::int64_t>() * s["topology"]["ranks_per_node"].get<std::int64_t>();
  const std::int64_t accumulation = s["run"]["gradient_accumulation"].get<std::int64_t>();
  const std::int64_t global = s["run"]["global_batch_size"].get<std::int64_t>();
  const LoggedValue* logged = runs.find("d_batch_size");
  if (global % (world * accumulation) != 0) {
    b.refuse("global_batch_size " + std::to_string(global) + " does not split evenly over " +
             std::to_string(world) + " ranks x " + std::to_string(accumulation) +
             " accumulation steps");
    return;
  }
  const std::int64_t even = global / (world * accumulation);
  if (logged && logged->value.is_number_integer() && logged->value.get<std::int64_t>() == even) {
    b.set("run.per_rank_batch", even, "log " + logged->source() + " d_batch_size");
    return;
  }
  b.set("run.per_rank_batch", even, "global_batch_size / (ranks x gradient_accumulation)");
  if (logged)
    b.differ("packed rows: d_batch_size " + logged->value.dump() + " (" + logged->source() +
                 ") x " + std::to_string(world) + " ranks x " + std::to_string(accumulation) +
                 " does not give global_batch_size " + std::to_string(global),
             "unpacked: " + std::to_string(even) +
                 " samples per rank and micro-step, the same samples per step");
}

void plan_differences(const json& d, PlanBuilder& b) {
  const std::string framework = d.value("framework", "");
  if (framework.rfind("mlbert", 0) != 0)
    b.differ("implementation: " + (framework.empty() ? std::string("not stated") : framework),
             "mlbert's C++/CUDA BERT (same model, optimizer and schedule as logged)");
  const std::string notes = framework + " " + d.value("sw_notes", "") + " " + d.value("hw_notes", "");
  for (const char* fp8 : {"FP8", "fp8", "Transformer Engine"})
    if (notes.find(fp8) != std::string::npos) {
      b.differ("FP8 matrix multiplies (system.json names " + std::string(fp8) + ")",
               "fp16/bf16: mlbert has no FP8 path");
      break;
    }
  const json& run = b.plan().system["run"];
  const std::string optimizer = run["optimizer"].value("name", "");
  if (optimizer != "lamb" && optimizer != "adam" && optimizer != "adamw")
    b.refuse("optimizer \"" + optimizer + "\" (opt_name): mlbert has lamb, adam and adamw only");
}

// The availability status in the spelling of rulesets 4.0.0 and later, which the system reader
// checks; earlier descriptions wrote "onprem", "cloud", "preview", "research".
void plan_status(const json& d, PlanBuilder& b) {
  static const std::map<std::string, std::string> kSpellings = {
      {"onprem", "Available on-premise"},
      {"cloud", "Available cloud"},
      {"preview", "Preview"},
      {"research", "Research, Development, or Internal (RDI)"}};
  const std::string status = d.value("status", "");
  const auto it = kSpellings.find(status);
  if (it != kSpellings.end())
    b.set("status", it->second, "system.json status \"" + status + "\" in today's spelling");
}

ConvergenceSpread spread_of(const PublishedRuns& runs) {
  ConvergenceSpread s;
  for (const auto& r : runs.runs) {
    s.samples.push_back(r.samples);
    if (r.status == "success") ++s.converged;
  }
  std::vector<std::int64_t> sorted = s.samples;
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  const std::size_t n = sorted.size();
  s.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
  return s;
}

// The system file read back by harness's own reader: anything it refuses refuses the plan.
void validate(PlanBuilder& b) {
  try {
    parse_system(b.plan().system, b.plan().system_name + ".json");
  } catch (const SystemConfigError& e) {
    b.refuse(std::string("mlbert's system reader refuses the planned system file: ") + e.what());
  }
}

}  // namespace

void PlanBuilder::set(const std::string& field, const json& value, const std::string& source) {
  plan_.system[pointer(field)] = value;
  auto& fields = plan_.fields;
  const auto it = std::find_if(fields.begin(), fields.end(),
                               [&](const FieldSource& f) { return f.field == field; });
  if (it != fields.end()) *it = FieldSource{field, value, source};
  else fields.push_back(FieldSource{field, value, source});
}

void PlanBuilder::differ(std::string published, std::string substitution) {
  plan_.differences.push_back(Difference{std::move(published), std::move(substitution)});
}

void PlanBuilder::refuse(const std::string& why) {
  plan_.refusal = plan_.refusal ? *plan_.refusal + "; " + why : why;
}

ReproductionPlan make_plan(const PublishedRuns& runs, const std::filesystem::path& description_file,
                           const LaunchFacts& launch) {
  ReproductionPlan plan;
  plan.result_dir = runs.dir;
  plan.system_description = description_file;
  plan.system_name = system_name_of(runs.dir);
  const json d = read_description(description_file);
  PlanBuilder b(plan);
  plan.system = json::object();
  for (const auto& [key, value] : d.items())
    if (key != "topology" && key != "run") plan.system[key] = value;
  plan.fields.push_back(FieldSource{"(official description fields)", static_cast<int>(plan.system.size()),
                                    description_file.filename().string() + ", verbatim"});
  plan_status(d, b);
  plan_topology(d, description_file, b);
  plan_run(runs, d, description_file, launch, b);
  b.set("run.result_name", plan.system_name,
        "the published result's folder: the runs' logs go to results/" + plan.system_name + "/bert");
  plan.ruleset = plan.system["run"].value("ruleset", "");
  if (!plan.refusal) plan_rank_batch(runs, b);
  plan_differences(d, b);
  if (!plan.refusal) validate(b);
  if (plan.refusal) plan.system = nullptr;
  plan.spread = spread_of(runs);
  return plan;
}

}  // namespace mlbert::harness::reproduce
