// Loading and validating systems/*.json. Every check appends to one problem list so a user fixes
// a bad file in one pass; the messages name the file and the JSON path of the field. Each object
// is read by a table of its fields (field_reader.h); the rules that join fields follow its table.
#include "harness/config/system_config.h"

#include "common/input_file.h"
#include "common/nearest_name.h"
#include "harness/config/field_reader.h"
#include "mlperf_logging/rules/rulesets.h"
#include "mlperf_logging/package/system_desc.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

namespace mlbert::harness {
namespace {

using nlohmann::json;
using namespace field_table;

// The names each enum is written with (in files, logs and messages), in the order of its values.
const std::vector<std::string> kAcceleratorKinds = {"gpu", "cpu"};
const std::vector<std::string> kDivisions = {"closed", "open"};
const std::vector<std::string> kBackends = {"cpu", "cuda"};
const std::vector<std::string> kPrecisions = {"fp32", "fp16", "bf16"};
const std::vector<std::string> kOptimizers = {"lamb", "adam", "adamw"};
const std::vector<std::string> kLrScheduleStyles = {"reference", "nvidia"};
const std::vector<std::string> kClippingModes = {"after-allreduce", "bucket-before-allreduce",
                                                 "none"};
const std::vector<std::string> kSamplers = {"random", "stratified"};
const std::vector<std::string> kLoadBalancings = {"none", "global-exchange", "node-exchange",
                                                  "global-deal"};

// The string at `key`, or "" when it is absent or not a string.
std::string string_or_empty(const json& object, const char* key) {
  return object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : "";
}

// Parses "128" or "8"; returns nullopt for anything else ("", "8 GPUs").
std::optional<std::int64_t> parse_count(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
    if (value > (1LL << 40)) return std::nullopt;
  }
  return value;
}

// The array at `key` of `r`, or nullptr (a problem recorded when it is there but no array).
const json* array_field(const FieldReader& r, const char* key) {
  if (!r.has(key)) return nullptr;
  const json& value = (*r.raw())[key];
  if (value.is_array()) return &value;
  r.problem(key, "must be an array");
  return nullptr;
}

// A reader of element i of an array field, or an invalid one (a problem recorded) when the
// element is no object.
FieldReader element(const FieldReader& r, const char* key, const json& array, std::size_t i,
                    std::vector<std::string>& problems) {
  const std::string path = r.where(key) + "[" + std::to_string(i) + "]";
  if (array[i].is_object()) return FieldReader(&array[i], path, &problems);
  problems.push_back(path + ": must be an object");
  return FieldReader(nullptr, path, &problems);
}

// ---------------------------------------------------------------------------------------------
// the official fields

void read_description(const json& root, SystemConfig& config, std::vector<std::string>& problems) {
  config.description = json::object();
  for (const auto& [key, value] : root.items()) {
    if (key == "topology" || key == "run") continue;
    config.description[key] = value;
  }
  std::vector<std::string> required;
  for (const std::string_view name : logging::system_desc_required_fields())
    required.emplace_back(name);
  // A key the file has that is no field of its own but a misspelling of a missing one.
  std::map<std::string, std::string> misspelled;  // missing field -> the file's key
  for (const auto& [key, value] : root.items())
    if (key != "topology" && key != "run" &&
        std::find(required.begin(), required.end(), key) == required.end())
      if (std::string near = nearest_name(key, required); !near.empty() && !root.contains(near))
        misspelled.emplace(near, key);
  for (const std::string& field : required) {
    if (!root.contains(field)) {
      std::string problem = field + ": missing (an official system-description field)";
      if (auto it = misspelled.find(field); it != misspelled.end())
        problem += "; the file has \"" + it->second + "\", which looks like a misspelling of it";
      problems.push_back(problem);
      continue;
    }
    const json& value = root[field];
    if (field == "other_software_stack") {
      if (!value.is_object())
        problems.push_back(field + ": must be an object, found " + value.type_name());
    } else if (!value.is_string()) {
      problems.push_back(field + ": must be a string, found " + std::string(value.type_name()));
    }
  }
  const std::string division = string_or_empty(root, "division");
  if (root.contains("division") && division != "closed" && division != "open")
    problems.push_back("division: \"" + division + "\" is not \"closed\" or \"open\"");
  for (const char* key : {"submitter", "system_name"})
    if (root.contains(key) && string_or_empty(root, key).empty())
      problems.push_back(std::string(key) + ": must not be empty");
}

// ---------------------------------------------------------------------------------------------
// topology

void read_accelerator(const FieldReader& r, AcceleratorSpec& accelerator) {
  if (!r.valid()) return;
  read_fields(r, {{"kind", one_of(&accelerator.kind, kAcceleratorKinds), true},
                  {"model", &accelerator.model, true}});
  // A GPU states its datasheet figures (fp32 optional); a CPU may, and they are 0 by default.
  const bool gpu = accelerator.kind == "gpu";
  const Rule figure = gpu ? positive() : non_negative();
  read_fields(r, {{"peak_tflops_bf16", &accelerator.peak_tflops_bf16, gpu, figure},
                  {"peak_tflops_fp16", &accelerator.peak_tflops_fp16, gpu, figure},
                  {"peak_tflops_fp32", &accelerator.peak_tflops_fp32, false, non_negative()},
                  {"memory_gib", &accelerator.memory_gib, gpu, figure},
                  {"memory_bandwidth_tbs", &accelerator.memory_bandwidth_tbs, gpu, figure}});
}

void read_cpu(const FieldReader& r, CpuSpec& cpu) {
  if (!r.valid()) return;
  read_fields(r, {{"sockets", &cpu.sockets, true, in_range(1, 4096)},
                  {"cores_per_socket", &cpu.cores_per_socket, true, in_range(1, 4096)},
                  {"threads_per_core", &cpu.threads_per_core, true, in_range(1, 4096)},
                  {"numa_nodes", &cpu.numa_nodes, true, in_range(1, 4096)}});
  const int cores = cpu.sockets * cpu.cores_per_socket;
  if (cpu.numa_nodes > 0 && cores % cpu.numa_nodes != 0)
    r.problem("numa_nodes", std::to_string(cores) + " cores do not split evenly into " +
                                std::to_string(cpu.numa_nodes) + " NUMA nodes");
}

// Returns the NICs' names (for local_ranks to name).
std::set<std::string> read_nics(const FieldReader& r, Topology& topology,
                                std::vector<std::string>& problems) {
  std::set<std::string> names;
  const json* nics = array_field(r, "nics");
  if (!nics) return names;
  for (std::size_t i = 0; i < nics->size(); ++i) {
    const FieldReader nr = element(r, "nics", *nics, i, problems);
    if (!nr.valid()) continue;
    NicSpec nic;
    read_fields(nr, {{"name", &nic.name, true},
                     {"port", &nic.port, false},
                     {"bandwidth_gbps", &nic.bandwidth_gbps, true, positive()},
                     {"numa_node", &nic.numa_node, true,
                      in_range(0, topology.cpu.numa_nodes - 1)}});
    if (!nic.name.empty() && !names.insert(nic.name).second)
      nr.problem("name", "\"" + nic.name + "\" is listed twice");
    topology.nics.push_back(nic);
  }
  return names;
}

// local_ranks: where each GPU's rank lives; required on GPU systems.
void read_local_ranks(const FieldReader& r, const std::set<std::string>& nic_names,
                      Topology& topology, std::vector<std::string>& problems) {
  if (!r.has("local_ranks")) {
    if (topology.accelerator.kind == "gpu")
      r.problem("local_ranks", "missing (one entry per GPU: numa_node, nic)");
    topology.local_ranks.assign(std::max(topology.ranks_per_node, 1), LocalRankAffinity{});
    return;
  }
  const json* locals = array_field(r, "local_ranks");
  if (!locals) return;
  if (static_cast<int>(locals->size()) != topology.ranks_per_node)
    r.problem("local_ranks", "has " + std::to_string(locals->size()) +
                                 " entries but ranks_per_node is " +
                                 std::to_string(topology.ranks_per_node));
  std::map<int, int> ranks_per_numa;
  for (std::size_t i = 0; i < locals->size(); ++i) {
    const FieldReader lr = element(r, "local_ranks", *locals, i, problems);
    if (!lr.valid()) continue;
    LocalRankAffinity affinity;
    if (auto v = lr.integer("numa_node", true)) {
      affinity.numa_node = static_cast<int>(*v);
      if (*v < 0 || *v >= topology.cpu.numa_nodes)
        lr.problem("numa_node", "must be in 0.." + std::to_string(topology.cpu.numa_nodes - 1));
      ++ranks_per_numa[affinity.numa_node];
    }
    if (auto nic = lr.string("nic", !topology.nics.empty())) {
      affinity.nic = *nic;
      if (!nic_names.count(*nic)) lr.problem("nic", "\"" + *nic + "\" is not one of topology.nics");
    }
    topology.local_ranks.push_back(affinity);
  }
  const int cores_per_numa =
      topology.cpu.sockets * topology.cpu.cores_per_socket / std::max(topology.cpu.numa_nodes, 1);
  for (const auto& [numa, count] : ranks_per_numa)
    if (count > cores_per_numa)
      r.problem("local_ranks", std::to_string(count) + " ranks share NUMA node " +
                                   std::to_string(numa) + " which has only " +
                                   std::to_string(cores_per_numa) + " cores");
}

void read_topology(const FieldReader& r, Topology& topology, std::vector<std::string>& problems) {
  if (!r.valid()) return;
  read_fields(r, {{"nodes", &topology.nodes, true, in_range(1, 100000)},
                  {"ranks_per_node", &topology.ranks_per_node, true, in_range(1, 1024)}});
  read_accelerator(r.child("accelerator", true), topology.accelerator);
  if (const FieldReader link = r.child("intra_node", false); link.valid())
    read_fields(link, {{"link", &topology.intra_node_link, true},
                       {"bandwidth_gbs", &topology.intra_node_bandwidth_gbs, true, non_negative()}});
  read_cpu(r.child("cpu", true), topology.cpu);
  const std::set<std::string> nic_names = read_nics(r, topology, problems);
  read_local_ranks(r, nic_names, topology, problems);
}

// ---------------------------------------------------------------------------------------------
// run

void read_model(const FieldReader& r, ModelSpec& model) {
  if (!r.valid()) return;
  read_fields(r, {{"preset", &model.preset, true}});
  if (auto path = r.string("config_path", model.preset == "file")) model.config_path = *path;
  read_fields(r, {{"vocab_from_data", &model.vocab_from_data, false}});
  if (r.has("overrides")) {
    model.overrides = (*r.raw())["overrides"];
    if (!model.overrides.is_object()) r.problem("overrides", "must be an object");
  }
}

void read_optimizer(const FieldReader& r, OptimizerSpec& optimizer) {
  if (!r.valid()) return;
  read_fields(r, {{"name", one_of(&optimizer.kind, kOptimizers), true},
                  {"learning_rate", &optimizer.learning_rate, true, positive()},
                  {"beta1", &optimizer.beta1, true, in_half_open_unit_interval()},
                  {"beta2", &optimizer.beta2, true, in_half_open_unit_interval()},
                  {"epsilon", &optimizer.epsilon, true, positive()},
                  {"weight_decay", &optimizer.weight_decay, true, non_negative()}});
}

void read_lr_schedule(const FieldReader& r, LrScheduleSpec& s, double learning_rate) {
  if (!r.valid()) return;
  read_fields(r, {{"style", one_of(&s.style, kLrScheduleStyles), false},
                  {"warmup_steps", &s.warmup_steps, true},
                  {"start_warmup_step", &s.start_warmup_step, true},
                  {"training_steps", &s.training_steps, true}});
  s.decay_steps = s.training_steps;
  read_fields(r, {{"decay_steps", &s.decay_steps, false},
                  {"poly_power", &s.poly_power, true},
                  {"end_learning_rate", &s.end_learning_rate, true}});
  // Checked once all are read, as they are held: an absent or unreadable field's default too.
  if (s.warmup_steps < 0) r.problem("warmup_steps", "must be >= 0");
  if (s.start_warmup_step > 0)
    r.problem("start_warmup_step", "must be <= 0 (a positive offset gives negative rates)");
  if (s.training_steps < 1) r.problem("training_steps", "must be >= 1");
  if (s.decay_steps < 1) r.problem("decay_steps", "must be >= 1");
  if (!(s.poly_power > 0)) r.problem("poly_power", "must be > 0");
  if (s.end_learning_rate < 0 || s.end_learning_rate > learning_rate)
    r.problem("end_learning_rate", "must be in [0, optimizer.learning_rate]");
  if (s.style == LrScheduleStyle::nvidia && s.decay_steps <= s.warmup_steps)
    r.problem("decay_steps",
              "must exceed warmup_steps for the nvidia style (it divides by "
              "decay_steps - warmup_steps)");
}

void read_clipping(const FieldReader& r, RunSpec& run) {
  if (!r.valid()) return;
  read_fields(r, {{"mode", one_of(&run.clipping, kClippingModes), true}});
  read_fields(r, {{"max_norm", &run.max_grad_norm, run.clipping == ClippingMode::after_allreduce,
                   positive()}});
}

void read_loss_scale(const FieldReader& r, LossScaleSpec& loss_scale) {
  if (!r.valid()) return;
  read_fields(r, {{"initial", &loss_scale.initial, true, positive()},
                  {"dynamic", &loss_scale.dynamic, true},
                  {"growth_interval", &loss_scale.growth_interval, false, at_least(1)}});
}

void read_sampler(const FieldReader& r, RunSpec& run) {
  if (!r.valid()) return;
  read_fields(r, {{"name", one_of(&run.sampler, kSamplers), true}});
  if (run.sampler != SamplerKind::stratified) return;
  if (!r.has("quotas") || !(*r.raw())["quotas"].is_array()) {
    r.problem("quotas", "missing (an array of 4 per-bin counts is required)");
    return;
  }
  const json& quotas = (*r.raw())["quotas"];
  for (const auto& q : quotas) {
    if (!q.is_number_integer() || q.get<std::int64_t>() < 0) {
      r.problem("quotas", "entries must be integers >= 0");
      break;
    }
    run.stratified_quotas.push_back(q.get<int>());
  }
  if (quotas.size() != 4) r.problem("quotas", "must have 4 entries (one per length bin)");
  const int sum = std::accumulate(run.stratified_quotas.begin(), run.stratified_quotas.end(), 0);
  if (sum != run.per_rank_batch)
    r.problem("quotas", "sum to " + std::to_string(sum) + " but per_rank_batch is " +
                            std::to_string(run.per_rank_batch));
}

void read_eval(const FieldReader& r, EvalSpec& eval) {
  if (!r.valid()) return;
  // "mlperf" or an interval in samples.
  if (r.has("cadence") && (*r.raw())["cadence"].is_string()) {
    if ((*r.raw())["cadence"] != "mlperf")
      r.problem("cadence", "must be \"mlperf\" or an interval in samples");
    eval.mlperf_cadence = true;
  } else if (auto v = r.integer("cadence", true)) {
    eval.mlperf_cadence = false;
    eval.interval_samples = *v;
    if (*v < 1) r.problem("cadence", "must be >= 1 samples");
  }
  read_fields(r, {{"start_samples", &eval.start_samples, false, at_least(0)},
                  {"eval_samples", &eval.eval_samples, true, at_least(1)},
                  {"batch_size", &eval.batch_size, false, at_least(1)}});
}

void read_run(const FieldReader& r, RunSpec& run) {
  if (!r.valid()) return;
  // The rulesets with BERT: 5.1.0 has rules here only to fail BERT logs, as officially.
  read_fields(r, {{"ruleset", one_of(&run.ruleset, mllog::bert_rulesets()), true},
                  {"division", one_of(&run.division, kDivisions), true},
                  {"backend", one_of(&run.backend, kBackends), true},
                  {"precision", one_of(&run.precision, kPrecisions), true}});
  if (run.backend == "cpu" && run.precision != Precision::fp32)
    r.problem("precision", "the cpu backend computes in fp32 only");
  read_model(r.child("model", true), run.model);
  read_fields(r, {{"per_rank_batch", &run.per_rank_batch, true, in_range(1, 65536)},
                  {"gradient_accumulation", &run.gradient_accumulation, true, in_range(1, 65536)},
                  {"global_batch_size", &run.global_batch_size, true}});
  read_optimizer(r.child("optimizer", true), run.optimizer);
  read_lr_schedule(r.child("lr_schedule", true), run.lr_schedule, run.optimizer.learning_rate);
  read_clipping(r.child("clipping", true), run);
  read_loss_scale(r.child("loss_scale", run.precision == Precision::fp16), run.loss_scale);
  read_fields(r, {{"bucket_mb", &run.bucket_mb, false, positive()}});
  read_sampler(r.child("sampler", true), run);
  read_fields(r, {{"load_balancing", one_of(&run.load_balancing, kLoadBalancings), true}});
  read_eval(r.child("eval", true), run.eval);
  read_fields(r, {{"target_accuracy", &run.target_accuracy, true, in_open_unit_interval()},
                  {"max_steps", &run.max_steps, true, at_least(1)},
                  {"max_samples", &run.max_samples, false},
                  {"seed", &run.seed, false},
                  {"watchdog_seconds", &run.watchdog_seconds, false, positive()},
                  {"max_seq_length", &run.max_seq_length, false, in_range(8, 4096)}});
  read_fields(r, {{"max_predictions_per_seq", &run.max_predictions_per_seq, false,
                   in_range(1, run.max_seq_length, "max_seq_length")},
                  {"warmup_iterations", &run.warmup_iterations, false, at_least(0)},
                  {"samples_to_converge", &run.samples_to_converge, false, at_least(0)}});
  read_fields(r, {{"result_name", &run.result_name, false}});
  const std::string& n = run.result_name;
  if (r.has("result_name") &&
      (n.empty() || n == "." || n == ".." ||
       n.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-") !=
           std::string::npos))
    r.problem("result_name",
              "\"" + n + "\" must be a folder name of letters, digits, '_', '.', '+', '-'");
}

// ---------------------------------------------------------------------------------------------
// cross-field rules: the things a single field cannot know

// The official fields against the topology and the run, and the ruleset's own check of them.
void check_description(const SystemConfig& config, std::vector<std::string>& problems) {
  const Topology& t = config.topology;
  const RunSpec& run = config.run;
  const json& d = config.description;
  if (d.contains("number_of_nodes")) {
    const std::string text = string_or_empty(d, "number_of_nodes");
    const auto nodes = parse_count(text);
    if (!nodes)
      problems.push_back("number_of_nodes: \"" + text + "\" is not a whole number");
    else if (*nodes != t.nodes)
      problems.push_back("number_of_nodes: \"" + text + "\" but topology.nodes is " +
                         std::to_string(t.nodes));
  }
  if (t.accelerator.kind == "gpu" && d.contains("accelerators_per_node")) {
    const std::string text = string_or_empty(d, "accelerators_per_node");
    const auto per_node = parse_count(text);
    if (!per_node || *per_node != t.ranks_per_node)
      problems.push_back("accelerators_per_node: \"" + text +
                         "\" but topology.ranks_per_node is " + std::to_string(t.ranks_per_node) +
                         " (one rank per GPU)");
  }
  if (t.accelerator.kind == "cpu" && run.backend == "cuda")
    problems.push_back("run.backend: \"cuda\" on a system whose accelerator.kind is \"cpu\"");
  if (t.accelerator.kind == "gpu" && run.backend == "cpu")
    problems.push_back("run.backend: \"cpu\" on a GPU system (use \"cuda\")");
  const std::string division = string_or_empty(d, "division");
  if (!run.division.empty() && !division.empty() && run.division != division)
    problems.push_back("run.division: \"" + run.division + "\" differs from division \"" +
                       division + "\"");
  // The official system-description check of the run's ruleset (what `mlbert package` applies
  // to the submission's copy of these fields): status categories from 4.0.0 on, and the rest.
  if (run.ruleset.empty()) return;
  const logging::SystemDescResult official =
      logging::check_system_desc(config.description, run.ruleset, config.path);
  for (const auto& finding : official.findings)
    if (finding.level == logging::SystemDescFinding::Level::error)
      problems.push_back((finding.field.empty() ? std::string("(file)") : finding.field) + ": " +
                         finding.text + " (MLPerf system description check, ruleset " +
                         run.ruleset + ")");
}

// The run's sizes against the world it runs on.
void check_run_size(const SystemConfig& config, std::vector<std::string>& problems) {
  const Topology& t = config.topology;
  const RunSpec& run = config.run;
  const std::int64_t world = t.world_size();
  const std::int64_t expected_gbs =
      static_cast<std::int64_t>(run.per_rank_batch) * world * run.gradient_accumulation;
  if (run.per_rank_batch > 0 && run.global_batch_size != expected_gbs)
    problems.push_back("run.global_batch_size: " + std::to_string(run.global_batch_size) +
                       " but per_rank_batch x ranks x gradient_accumulation = " +
                       std::to_string(run.per_rank_batch) + " x " + std::to_string(world) + " x " +
                       std::to_string(run.gradient_accumulation) + " = " +
                       std::to_string(expected_gbs));
  if (run.load_balancing == LoadBalancing::node_exchange && t.ranks_per_node < 2)
    problems.push_back("run.load_balancing: \"node-exchange\" needs at least 2 ranks per node");
  if (run.max_steps > 0 && run.lr_schedule.training_steps > 0 &&
      run.max_steps > run.lr_schedule.training_steps)
    problems.push_back("run.max_steps: " + std::to_string(run.max_steps) +
                       " exceeds lr_schedule.training_steps " +
                       std::to_string(run.lr_schedule.training_steps));
  if (run.eval.eval_samples < world)
    problems.push_back("run.eval.eval_samples: " + std::to_string(run.eval.eval_samples) +
                       " is fewer than the " + std::to_string(world) + " ranks that share it");
}

// The MLPerf rules that a configuration (not a log) decides: the closed division's, and the
// ruleset's per-tensor initialization records.
void check_rules(const RunSpec& run, std::vector<std::string>& problems) {
  if (run.division == "closed") {
    const auto closed = [&](const std::string& field, const std::string& text) {
      problems.push_back(field + ": " + text + " (not allowed in the closed division)");
    };
    if (run.optimizer.kind != OptimizerKind::lamb) closed("run.optimizer.name", "must be \"lamb\"");
    if (run.clipping != ClippingMode::after_allreduce)
      closed("run.clipping.mode", "must be \"after-allreduce\"");
    else if (run.max_grad_norm != 1.0)
      closed("run.clipping.max_norm", "must be 1.0");
    if (run.sampler != SamplerKind::random)
      closed("run.sampler.name", "must be \"random\" (reference data order)");
    if (!run.eval.mlperf_cadence) closed("run.eval.cadence", "must be \"mlperf\"");
    if (run.target_accuracy != 0.720) closed("run.target_accuracy", "must be 0.720");
    if (run.model.preset != "bert-large") closed("run.model.preset", "must be \"bert-large\"");
    if (run.eval.eval_samples != 10000) closed("run.eval.eval_samples", "must be 10000");
  }
  // Rulesets 1.1.0-2.1.0 require weights_initialization for the 398 bert-large tensors.
  const mllog::TrainingRuleset* row = mllog::find_training_ruleset(run.ruleset);
  if (row && row->weights_initialization && run.model.preset != "bert-large")
    problems.push_back("run.ruleset: " + run.ruleset +
                       " requires weights_initialization for the 398 bert-large tensors; model "
                       "preset \"" +
                       run.model.preset + "\" cannot log them (use 3.0.0 or later)");
}

}  // namespace

SystemConfig parse_system(const nlohmann::json& root, const std::filesystem::path& origin) {
  SystemConfig config;
  config.path = origin;
  config.name = origin.stem().string();
  std::vector<std::string> problems;
  if (!root.is_object()) {
    throw SystemConfigError(origin.string() + ": the top level must be a JSON object");
  }
  read_description(root, config, problems);
  FieldReader top(&root, "", &problems);
  read_topology(top.child("topology", true), config.topology, problems);
  read_run(top.child("run", true), config.run);
  if (!config.run.result_name.empty()) config.name = config.run.result_name;
  if (problems.empty()) {
    check_description(config, problems);
    check_run_size(config, problems);
    check_rules(config.run, problems);
  }
  if (!problems.empty()) {
    std::ostringstream message;
    message << origin.string() << ": invalid system description (" << problems.size()
            << (problems.size() == 1 ? " problem" : " problems") << ")";
    for (const auto& p : problems) message << "\n  " << origin.string() << ": " << p;
    throw SystemConfigError(message.str());
  }
  return config;
}

SystemConfig load_system(const std::string& name_or_path,
                         const std::filesystem::path& systems_dir) {
  std::filesystem::path path = name_or_path;
  const bool bare_name = name_or_path.find('/') == std::string::npos && path.extension() != ".json";
  if (bare_name) path = systems_dir / (name_or_path + ".json");
  const std::string unreadable = files::unreadable_reason(path);
  std::ifstream in;
  if (unreadable.empty()) in.open(path, std::ios::binary);
  if (!in.is_open() || !in) {
    std::string hint;
    if (bare_name) {
      std::error_code ec;
      std::vector<std::string> names;
      for (const auto& entry : std::filesystem::directory_iterator(systems_dir, ec))
        if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
      std::sort(names.begin(), names.end());
      for (const auto& n : names) hint += (hint.empty() ? " (known systems: " : ", ") + n;
      if (!hint.empty()) hint += ")";
      if (!std::filesystem::is_directory(systems_dir, ec))
        hint = " (no folder " + systems_dir.string() +
               " here: run from the mlbert checkout, or give --systems-dir or a path)";
    }
    throw SystemConfigError(path.string() + ": cannot open system file: " +
                            (unreadable.empty() ? "cannot be opened" : unreadable) + hint);
  }
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number out of range
    throw SystemConfigError(path.string() + ": not valid JSON: " + e.what());
  }
  SystemConfig config = parse_system(root, path);
  // Relative model config paths are relative to the system file.
  if (!config.run.model.config_path.empty() && config.run.model.config_path.is_relative())
    config.run.model.config_path = path.parent_path() / config.run.model.config_path;
  return config;
}

std::int64_t mlperf_eval_interval(std::int64_t global_batch_size) {
  // floor(0.05 * (230.23 * GBS + 3,000,000), 25,000) in integers: 0.05 * x / 100 = x / 2000 with
  // x = 100 * (230.23 * GBS + 3e6), so no float rounding can move a value across a multiple.
  const std::int64_t samples = (23023 * global_batch_size + 300000000) / 2000;
  return samples / 25000 * 25000;
}

std::int64_t eval_interval(const RunSpec& run) {
  return run.eval.mlperf_cadence ? mlperf_eval_interval(run.global_batch_size)
                                 : run.eval.interval_samples;
}

namespace {

// The name of enum value `value`, from the list the reader accepts.
template <typename Enum>
const char* name_of(const std::vector<std::string>& names, Enum value) {
  const auto i = static_cast<std::size_t>(value);
  return i < names.size() ? names[i].c_str() : "?";
}

}  // namespace

const char* to_string(OptimizerKind k) {
  return name_of(kOptimizers, k);
}
const char* to_string(ClippingMode m) {
  return name_of(kClippingModes, m);
}
const char* to_string(SamplerKind k) {
  return name_of(kSamplers, k);
}
const char* to_string(LoadBalancing b) {
  return name_of(kLoadBalancings, b);
}
const char* to_string(Precision p) {
  return name_of(kPrecisions, p);
}
const char* to_string(LrScheduleStyle s) {
  return name_of(kLrScheduleStyles, s);
}

}  // namespace mlbert::harness
