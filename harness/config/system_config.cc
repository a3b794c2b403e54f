// Loading and validating systems/*.json. Every check appends to one problem list so a user fixes
// a bad file in one pass; the messages name the file and the JSON path of the field.
#include "harness/config/system_config.h"

#include "common/input_file.h"
#include "mlperf_logging/rules/rulesets.h"
#include "mlperf_logging/package/system_desc.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

namespace mlbert::harness {
namespace {

using nlohmann::json;

// Reads typed fields from one JSON object and records problems with their path.
class FieldReader {
 public:
  FieldReader(const json* object, std::string path, std::vector<std::string>* problems)
      : object_(object), path_(std::move(path)), problems_(problems) {}

  std::string where(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  bool has(const std::string& key) const {
    return object_ && object_->is_object() && object_->contains(key);
  }
  void problem(const std::string& key, const std::string& text) const {
    problems_->push_back(where(key) + ": " + text);
  }

  FieldReader child(const std::string& key, bool required) const {
    if (!has(key)) {
      if (required) problem(key, "missing (an object is required)");
      return FieldReader(nullptr, where(key), problems_);
    }
    const json& value = (*object_)[key];
    if (!value.is_object()) {
      problem(key, "must be an object, found " + std::string(value.type_name()));
      return FieldReader(nullptr, where(key), problems_);
    }
    return FieldReader(&value, where(key), problems_);
  }
  bool valid() const { return object_ != nullptr; }
  const json* raw() const { return object_; }

  std::optional<double> number(const std::string& key, bool required) const {
    if (!has(key)) {
      if (required && valid()) problem(key, "missing (a number is required)");
      return std::nullopt;
    }
    const json& value = (*object_)[key];
    if (!value.is_number()) {
      problem(key, "must be a number, found " + std::string(value.type_name()));
      return std::nullopt;
    }
    const double number = value.get<double>();
    if (!std::isfinite(number)) {
      problem(key, "must be finite");
      return std::nullopt;
    }
    return number;
  }

  std::optional<std::int64_t> integer(const std::string& key, bool required) const {
    if (!has(key)) {
      if (required && valid()) problem(key, "missing (an integer is required)");
      return std::nullopt;
    }
    const json& value = (*object_)[key];
    if (!value.is_number_integer()) {
      problem(key,
              "must be an integer, found " + std::string(value.type_name()) + " " + value.dump());
      return std::nullopt;
    }
    return value.get<std::int64_t>();
  }

  std::optional<bool> boolean(const std::string& key, bool required) const {
    if (!has(key)) {
      if (required && valid()) problem(key, "missing (true or false is required)");
      return std::nullopt;
    }
    const json& value = (*object_)[key];
    if (!value.is_boolean()) {
      problem(key, "must be true or false, found " + std::string(value.type_name()));
      return std::nullopt;
    }
    return value.get<bool>();
  }

  std::optional<std::string> string(const std::string& key, bool required) const {
    if (!has(key)) {
      if (required && valid()) problem(key, "missing (a string is required)");
      return std::nullopt;
    }
    const json& value = (*object_)[key];
    if (!value.is_string()) {
      problem(key, "must be a string, found " + std::string(value.type_name()));
      return std::nullopt;
    }
    return value.get<std::string>();
  }

  // A string that must be one of `choices`; returns its index.
  std::optional<std::size_t> choice(const std::string& key, const std::vector<std::string>& choices,
                                    bool required) const {
    const auto text = string(key, required);
    if (!text) return std::nullopt;
    const auto it = std::find(choices.begin(), choices.end(), *text);
    if (it == choices.end()) {
      std::string list;
      for (const auto& c : choices) list += (list.empty() ? "" : ", ") + ("\"" + c + "\"");
      problem(key, "\"" + *text + "\" is not one of " + list);
      return std::nullopt;
    }
    return static_cast<std::size_t>(it - choices.begin());
  }

 private:
  const json* object_;
  std::string path_;
  std::vector<std::string>* problems_;
};

template <typename T>
void assign(T& target, const std::optional<T>& value) {
  if (value) target = *value;
}

void check_positive(const FieldReader& r, const std::string& key, double value, bool strict) {
  if (strict ? !(value > 0) : !(value >= 0))
    r.problem(key, "must be " + std::string(strict ? "> 0" : ">= 0") + ", found " +
                       std::to_string(value));
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

// ---------------------------------------------------------------------------------------------

void read_description(const json& root, SystemConfig& config, std::vector<std::string>& problems) {
  config.description = json::object();
  for (const auto& [key, value] : root.items()) {
    if (key == "topology" || key == "run") continue;
    config.description[key] = value;
  }
  for (const std::string_view name : logging::system_desc_required_fields()) {
    const std::string field(name);
    if (!root.contains(field)) {
      problems.push_back(field + ": missing (an official system-description field)");
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
  const auto string_field = [&](const char* key) -> std::string {
    return root.contains(key) && root[key].is_string() ? root[key].get<std::string>() : "";
  };
  const std::string division = string_field("division");
  if (root.contains("division") && division != "closed" && division != "open")
    problems.push_back("division: \"" + division + "\" is not \"closed\" or \"open\"");
  for (const char* key : {"submitter", "system_name"})
    if (root.contains(key) && string_field(key).empty())
      problems.push_back(std::string(key) + ": must not be empty");
}

void read_topology(const FieldReader& r, Topology& topology, std::vector<std::string>& problems) {
  if (!r.valid()) return;
  if (auto v = r.integer("nodes", true)) {
    topology.nodes = static_cast<int>(*v);
    if (*v < 1 || *v > 100000) r.problem("nodes", "must be in 1..100000");
  }
  if (auto v = r.integer("ranks_per_node", true)) {
    topology.ranks_per_node = static_cast<int>(*v);
    if (*v < 1 || *v > 1024) r.problem("ranks_per_node", "must be in 1..1024");
  }
  const FieldReader accel = r.child("accelerator", true);
  if (accel.valid()) {
    static const std::vector<std::string> kinds = {"gpu", "cpu"};
    if (auto k = accel.choice("kind", kinds, true)) topology.accelerator.kind = kinds[*k];
    assign(topology.accelerator.model, accel.string("model", true));
    const bool gpu = topology.accelerator.kind == "gpu";
    for (auto [key, target] :
         {std::pair{"peak_tflops_bf16", &topology.accelerator.peak_tflops_bf16},
          std::pair{"peak_tflops_fp16", &topology.accelerator.peak_tflops_fp16},
          std::pair{"peak_tflops_fp32", &topology.accelerator.peak_tflops_fp32},
          std::pair{"memory_gib", &topology.accelerator.memory_gib},
          std::pair{"memory_bandwidth_tbs", &topology.accelerator.memory_bandwidth_tbs}}) {
      const bool required = gpu && std::string(key) != "peak_tflops_fp32";
      if (auto v = accel.number(key, required)) {
        *target = *v;
        check_positive(accel, key, *v, required);
      }
    }
  }
  if (auto link = r.child("intra_node", false); link.valid()) {
    assign(topology.intra_node_link, link.string("link", true));
    if (auto v = link.number("bandwidth_gbs", true)) {
      topology.intra_node_bandwidth_gbs = *v;
      check_positive(link, "bandwidth_gbs", *v, false);
    }
  }
  const FieldReader cpu = r.child("cpu", true);
  if (cpu.valid()) {
    for (auto [key, target] : {std::pair{"sockets", &topology.cpu.sockets},
                               std::pair{"cores_per_socket", &topology.cpu.cores_per_socket},
                               std::pair{"threads_per_core", &topology.cpu.threads_per_core},
                               std::pair{"numa_nodes", &topology.cpu.numa_nodes}}) {
      if (auto v = cpu.integer(key, true)) {
        *target = static_cast<int>(*v);
        if (*v < 1 || *v > 4096) cpu.problem(key, "must be in 1..4096");
      }
    }
    const int cores = topology.cpu.sockets * topology.cpu.cores_per_socket;
    if (topology.cpu.numa_nodes > 0 && cores % topology.cpu.numa_nodes != 0)
      cpu.problem("numa_nodes", std::to_string(cores) + " cores do not split evenly into " +
                                    std::to_string(topology.cpu.numa_nodes) + " NUMA nodes");
  }

  std::set<std::string> nic_names;
  if (r.has("nics")) {
    const json& nics = (*r.raw())["nics"];
    if (!nics.is_array()) {
      r.problem("nics", "must be an array");
    } else {
      for (std::size_t i = 0; i < nics.size(); ++i) {
        const std::string path = r.where("nics") + "[" + std::to_string(i) + "]";
        if (!nics[i].is_object()) {
          problems.push_back(path + ": must be an object");
          continue;
        }
        FieldReader nr(&nics[i], path, &problems);
        NicSpec nic;
        assign(nic.name, nr.string("name", true));
        if (auto v = nr.integer("port", false)) nic.port = static_cast<int>(*v);
        if (auto v = nr.number("bandwidth_gbps", true)) {
          nic.bandwidth_gbps = *v;
          check_positive(nr, "bandwidth_gbps", *v, true);
        }
        if (auto v = nr.integer("numa_node", true)) {
          nic.numa_node = static_cast<int>(*v);
          if (*v < 0 || *v >= topology.cpu.numa_nodes)
            nr.problem("numa_node", "must be in 0.." + std::to_string(topology.cpu.numa_nodes - 1));
        }
        if (!nic.name.empty() && !nic_names.insert(nic.name).second)
          nr.problem("name", "\"" + nic.name + "\" is listed twice");
        topology.nics.push_back(nic);
      }
    }
  }

  // local_ranks: required when there are several ranks per node or NICs to pick from.
  const bool need_affinity = topology.accelerator.kind == "gpu";
  if (!r.has("local_ranks")) {
    if (need_affinity) r.problem("local_ranks", "missing (one entry per GPU: numa_node, nic)");
    topology.local_ranks.assign(std::max(topology.ranks_per_node, 1), LocalRankAffinity{});
    return;
  }
  const json& locals = (*r.raw())["local_ranks"];
  if (!locals.is_array()) {
    r.problem("local_ranks", "must be an array");
    return;
  }
  if (static_cast<int>(locals.size()) != topology.ranks_per_node)
    r.problem("local_ranks", "has " + std::to_string(locals.size()) +
                                 " entries but ranks_per_node is " +
                                 std::to_string(topology.ranks_per_node));
  std::map<int, int> ranks_per_numa;
  for (std::size_t i = 0; i < locals.size(); ++i) {
    const std::string path = r.where("local_ranks") + "[" + std::to_string(i) + "]";
    if (!locals[i].is_object()) {
      problems.push_back(path + ": must be an object");
      continue;
    }
    FieldReader lr(&locals[i], path, &problems);
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

void read_run(const FieldReader& r, RunSpec& run, std::vector<std::string>& problems) {
  if (!r.valid()) return;
  // The rulesets with BERT: 5.1.0 has rules here only to fail BERT logs, as officially.
  if (auto v = r.choice("ruleset", mllog::bert_rulesets(), true))
    run.ruleset = mllog::bert_rulesets()[*v];
  static const std::vector<std::string> divisions = {"closed", "open"};
  if (auto v = r.choice("division", divisions, true)) run.division = divisions[*v];
  static const std::vector<std::string> backends = {"cpu", "cuda"};
  if (auto v = r.choice("backend", backends, true)) run.backend = backends[*v];
  static const std::vector<std::string> precisions = {"fp32", "fp16", "bf16"};
  if (auto v = r.choice("precision", precisions, true)) run.precision = static_cast<Precision>(*v);
  if (run.backend == "cpu" && run.precision != Precision::fp32)
    r.problem("precision", "the cpu backend computes in fp32 only");

  if (const FieldReader model = r.child("model", true); model.valid()) {
    assign(run.model.preset, model.string("preset", true));
    if (auto path = model.string("config_path", run.model.preset == "file"))
      run.model.config_path = *path;
    assign(run.model.vocab_from_data, model.boolean("vocab_from_data", false));
    if (model.has("overrides")) {
      run.model.overrides = (*model.raw())["overrides"];
      if (!run.model.overrides.is_object()) model.problem("overrides", "must be an object");
    }
  }
  if (auto v = r.integer("per_rank_batch", true)) {
    run.per_rank_batch = static_cast<int>(*v);
    if (*v < 1 || *v > 65536) r.problem("per_rank_batch", "must be in 1..65536");
  }
  if (auto v = r.integer("gradient_accumulation", true)) {
    run.gradient_accumulation = static_cast<int>(*v);
    if (*v < 1 || *v > 65536) r.problem("gradient_accumulation", "must be in 1..65536");
  }
  assign(run.global_batch_size, r.integer("global_batch_size", true));

  if (const FieldReader opt = r.child("optimizer", true); opt.valid()) {
    static const std::vector<std::string> names = {"lamb", "adam", "adamw"};
    if (auto v = opt.choice("name", names, true))
      run.optimizer.kind = static_cast<OptimizerKind>(*v);
    if (auto v = opt.number("learning_rate", true)) {
      run.optimizer.learning_rate = *v;
      check_positive(opt, "learning_rate", *v, true);
    }
    for (auto [key, target] :
         {std::pair{"beta1", &run.optimizer.beta1}, std::pair{"beta2", &run.optimizer.beta2}}) {
      if (auto v = opt.number(key, true)) {
        *target = *v;
        if (!(*v >= 0 && *v < 1)) opt.problem(key, "must be in [0, 1)");
      }
    }
    if (auto v = opt.number("epsilon", true)) {
      run.optimizer.epsilon = *v;
      check_positive(opt, "epsilon", *v, true);
    }
    if (auto v = opt.number("weight_decay", true)) {
      run.optimizer.weight_decay = *v;
      check_positive(opt, "weight_decay", *v, false);
    }
  }

  if (const FieldReader lr = r.child("lr_schedule", true); lr.valid()) {
    static const std::vector<std::string> styles = {"reference", "nvidia"};
    if (auto v = lr.choice("style", styles, false))
      run.lr_schedule.style = static_cast<LrScheduleStyle>(*v);
    assign(run.lr_schedule.warmup_steps, lr.integer("warmup_steps", true));
    assign(run.lr_schedule.start_warmup_step, lr.integer("start_warmup_step", true));
    assign(run.lr_schedule.training_steps, lr.integer("training_steps", true));
    run.lr_schedule.decay_steps = run.lr_schedule.training_steps;
    assign(run.lr_schedule.decay_steps, lr.integer("decay_steps", false));
    assign(run.lr_schedule.poly_power, lr.number("poly_power", true));
    assign(run.lr_schedule.end_learning_rate, lr.number("end_learning_rate", true));
    const auto& s = run.lr_schedule;
    if (s.warmup_steps < 0) lr.problem("warmup_steps", "must be >= 0");
    if (s.start_warmup_step > 0)
      lr.problem("start_warmup_step", "must be <= 0 (a positive offset gives negative rates)");
    if (s.training_steps < 1) lr.problem("training_steps", "must be >= 1");
    if (s.decay_steps < 1) lr.problem("decay_steps", "must be >= 1");
    if (!(s.poly_power > 0)) lr.problem("poly_power", "must be > 0");
    if (s.end_learning_rate < 0 || s.end_learning_rate > run.optimizer.learning_rate)
      lr.problem("end_learning_rate", "must be in [0, optimizer.learning_rate]");
    if (s.style == LrScheduleStyle::nvidia && s.decay_steps <= s.warmup_steps)
      lr.problem("decay_steps",
                 "must exceed warmup_steps for the nvidia style (it divides by "
                 "decay_steps - warmup_steps)");
  }

  if (const FieldReader clip = r.child("clipping", true); clip.valid()) {
    static const std::vector<std::string> modes = {"after-allreduce", "bucket-before-allreduce",
                                                   "none"};
    if (auto v = clip.choice("mode", modes, true)) run.clipping = static_cast<ClippingMode>(*v);
    if (auto v = clip.number("max_norm", run.clipping == ClippingMode::after_allreduce)) {
      run.max_grad_norm = *v;
      check_positive(clip, "max_norm", *v, true);
    }
  }
  if (const FieldReader ls = r.child("loss_scale", run.precision == Precision::fp16); ls.valid()) {
    if (auto v = ls.number("initial", true)) {
      run.loss_scale.initial = *v;
      check_positive(ls, "initial", *v, true);
    }
    assign(run.loss_scale.dynamic, ls.boolean("dynamic", true));
    assign(run.loss_scale.growth_interval, ls.integer("growth_interval", false));
    if (run.loss_scale.growth_interval < 1) ls.problem("growth_interval", "must be >= 1");
  }
  if (auto v = r.number("bucket_mb", false)) {
    run.bucket_mb = *v;
    check_positive(r, "bucket_mb", *v, true);
  }

  if (const FieldReader sampler = r.child("sampler", true); sampler.valid()) {
    static const std::vector<std::string> names = {"random", "stratified"};
    if (auto v = sampler.choice("name", names, true)) run.sampler = static_cast<SamplerKind>(*v);
    if (run.sampler == SamplerKind::stratified) {
      if (!sampler.has("quotas") || !(*sampler.raw())["quotas"].is_array()) {
        sampler.problem("quotas", "missing (an array of 4 per-bin counts is required)");
      } else {
        const json& quotas = (*sampler.raw())["quotas"];
        for (const auto& q : quotas) {
          if (!q.is_number_integer() || q.get<std::int64_t>() < 0) {
            sampler.problem("quotas", "entries must be integers >= 0");
            break;
          }
          run.stratified_quotas.push_back(q.get<int>());
        }
        if (quotas.size() != 4)
          sampler.problem("quotas", "must have 4 entries (one per length bin)");
        const int sum =
            std::accumulate(run.stratified_quotas.begin(), run.stratified_quotas.end(), 0);
        if (sum != run.per_rank_batch)
          sampler.problem("quotas", "sum to " + std::to_string(sum) + " but per_rank_batch is " +
                                        std::to_string(run.per_rank_batch));
      }
    }
  }
  static const std::vector<std::string> balancing = {"none", "global-exchange", "node-exchange",
                                                     "global-deal"};
  if (auto v = r.choice("load_balancing", balancing, true))
    run.load_balancing = static_cast<LoadBalancing>(*v);

  if (const FieldReader eval = r.child("eval", true); eval.valid()) {
    if (eval.has("cadence") && (*eval.raw())["cadence"].is_string()) {
      if ((*eval.raw())["cadence"] != "mlperf")
        eval.problem("cadence", "must be \"mlperf\" or an interval in samples");
      run.eval.mlperf_cadence = true;
    } else if (auto v = eval.integer("cadence", true)) {
      run.eval.mlperf_cadence = false;
      run.eval.interval_samples = *v;
      if (*v < 1) eval.problem("cadence", "must be >= 1 samples");
    }
    assign(run.eval.start_samples, eval.integer("start_samples", false));
    if (run.eval.start_samples < 0) eval.problem("start_samples", "must be >= 0");
    assign(run.eval.eval_samples, eval.integer("eval_samples", true));
    if (run.eval.eval_samples < 1) eval.problem("eval_samples", "must be >= 1");
    if (auto v = eval.integer("batch_size", false)) {
      run.eval.batch_size = static_cast<int>(*v);
      if (*v < 1) eval.problem("batch_size", "must be >= 1");
    }
  }
  if (auto v = r.number("target_accuracy", true)) {
    run.target_accuracy = *v;
    if (!(*v > 0 && *v < 1)) r.problem("target_accuracy", "must be in (0, 1)");
  }
  if (auto v = r.integer("max_steps", true)) {
    run.max_steps = *v;
    if (*v < 1) r.problem("max_steps", "must be >= 1");
  }
  assign(run.max_samples, r.integer("max_samples", false));
  assign(run.seed, r.integer("seed", false));
  if (auto v = r.number("watchdog_seconds", false)) {
    run.watchdog_seconds = *v;
    check_positive(r, "watchdog_seconds", *v, true);
  }
  if (auto v = r.integer("max_seq_length", false)) {
    run.max_seq_length = static_cast<int>(*v);
    if (*v < 8 || *v > 4096) r.problem("max_seq_length", "must be in 8..4096");
  }
  if (auto v = r.integer("max_predictions_per_seq", false)) {
    run.max_predictions_per_seq = static_cast<int>(*v);
    if (*v < 1 || *v > run.max_seq_length)
      r.problem("max_predictions_per_seq", "must be in 1..max_seq_length");
  }
  assign(run.warmup_iterations, r.integer("warmup_iterations", false));
  if (run.warmup_iterations < 0) r.problem("warmup_iterations", "must be >= 0");
  assign(run.samples_to_converge, r.integer("samples_to_converge", false));
  if (run.samples_to_converge < 0) r.problem("samples_to_converge", "must be >= 0");
  (void)problems;
}

// Cross-field rules: the things a single field cannot know.
void check_consistency(SystemConfig& config, std::vector<std::string>& problems) {
  const Topology& t = config.topology;
  const RunSpec& run = config.run;
  const json& d = config.description;
  const auto string_field = [&](const char* key) -> std::string {
    return d.contains(key) && d[key].is_string() ? d[key].get<std::string>() : "";
  };

  if (d.contains("number_of_nodes")) {
    const auto nodes = parse_count(string_field("number_of_nodes"));
    if (!nodes)
      problems.push_back("number_of_nodes: \"" + string_field("number_of_nodes") +
                         "\" is not a whole number");
    else if (*nodes != t.nodes)
      problems.push_back("number_of_nodes: \"" + string_field("number_of_nodes") +
                         "\" but topology.nodes is " + std::to_string(t.nodes));
  }
  if (t.accelerator.kind == "gpu" && d.contains("accelerators_per_node")) {
    const auto per_node = parse_count(string_field("accelerators_per_node"));
    if (!per_node || *per_node != t.ranks_per_node)
      problems.push_back("accelerators_per_node: \"" + string_field("accelerators_per_node") +
                         "\" but topology.ranks_per_node is " + std::to_string(t.ranks_per_node) +
                         " (one rank per GPU)");
  }
  if (t.accelerator.kind == "cpu" && run.backend == "cuda")
    problems.push_back("run.backend: \"cuda\" on a system whose accelerator.kind is \"cpu\"");
  if (t.accelerator.kind == "gpu" && run.backend == "cpu")
    problems.push_back("run.backend: \"cpu\" on a GPU system (use \"cuda\")");

  const std::string division = string_field("division");
  if (!run.division.empty() && !division.empty() && run.division != division)
    problems.push_back("run.division: \"" + run.division + "\" differs from division \"" +
                       division + "\"");
  // The official system-description check of the run's ruleset (what `mlbert package` applies
  // to the submission's copy of these fields): status categories from 4.0.0 on, and the rest.
  if (!run.ruleset.empty()) {
    const logging::SystemDescResult official =
        logging::check_system_desc(config.description, run.ruleset, config.path);
    for (const auto& finding : official.findings)
      if (finding.level == logging::SystemDescFinding::Level::error)
        problems.push_back((finding.field.empty() ? std::string("(file)") : finding.field) + ": " +
                           finding.text + " (MLPerf system description check, ruleset " +
                           run.ruleset + ")");
  }

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

  // The MLPerf closed-division rules that a configuration (not a log) decides.
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
  read_run(top.child("run", true), config.run, problems);
  if (problems.empty()) check_consistency(config, problems);
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

const char* to_string(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::lamb:
      return "lamb";
    case OptimizerKind::adam:
      return "adam";
    case OptimizerKind::adamw:
      return "adamw";
  }
  return "?";
}
const char* to_string(ClippingMode m) {
  switch (m) {
    case ClippingMode::after_allreduce:
      return "after-allreduce";
    case ClippingMode::bucket_before_allreduce:
      return "bucket-before-allreduce";
    case ClippingMode::none:
      return "none";
  }
  return "?";
}
const char* to_string(SamplerKind k) {
  return k == SamplerKind::random ? "random" : "stratified";
}
const char* to_string(LoadBalancing b) {
  switch (b) {
    case LoadBalancing::none:
      return "none";
    case LoadBalancing::global_exchange:
      return "global-exchange";
    case LoadBalancing::node_exchange:
      return "node-exchange";
    case LoadBalancing::global_deal:
      return "global-deal";
  }
  return "?";
}
const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
  }
  return "?";
}
const char* to_string(LrScheduleStyle s) {
  return s == LrScheduleStyle::reference ? "reference" : "nvidia";
}

}  // namespace mlbert::harness
