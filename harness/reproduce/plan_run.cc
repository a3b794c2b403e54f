// The run of a reproduction's system file: the logs' hyperparameters over a base run.
//
// Design choice: the base is the published system file's own `run` when the result is mlbert's
// (the demo's), else a BERT-large GPU run whose every field carries the reason it was chosen;
// then each logged key overwrites its field, so a value the logs state always wins and says so.
#include <cmath>
#include <set>
#include <stdexcept>

#include "harness/reproduce/plan_builder.h"
#include "mlperf_logging/package/layout.h"

namespace mlbert::harness::reproduce {
namespace {

using nlohmann::json;

enum class Kind { integer, number, text };

// A system-file field and the log keys that state it, the first one logged winning.
struct LogMapping {
  const char* field;
  std::vector<const char*> keys;
  Kind kind;
};

const std::vector<LogMapping>& log_mappings() {
  static const std::vector<LogMapping> mappings = {
      {"run.global_batch_size", {"global_batch_size"}, Kind::integer},
      {"run.gradient_accumulation",
       {"gradient_accumulation_steps", "opt_gradient_accumulation_steps"}, Kind::integer},
      {"run.optimizer.name", {"opt_name"}, Kind::text},
      {"run.optimizer.learning_rate", {"opt_base_learning_rate"}, Kind::number},
      {"run.optimizer.beta1", {"opt_lamb_beta_1", "opt_adam_beta_1"}, Kind::number},
      {"run.optimizer.beta2", {"opt_lamb_beta_2", "opt_adam_beta_2"}, Kind::number},
      {"run.optimizer.epsilon", {"opt_lamb_epsilon", "opt_adam_epsilon", "opt_epsilon"},
       Kind::number},
      {"run.optimizer.weight_decay", {"opt_lamb_weight_decay_rate", "opt_weight_decay"},
       Kind::number},
      {"run.lr_schedule.poly_power", {"opt_lamb_learning_rate_decay_poly_power"}, Kind::number},
      {"run.lr_schedule.warmup_steps", {"opt_learning_rate_warmup_steps"}, Kind::integer},
      {"run.lr_schedule.start_warmup_step", {"start_warmup_step"}, Kind::integer},
      {"run.lr_schedule.training_steps", {"opt_learning_rate_training_steps"}, Kind::integer},
      {"run.max_steps", {"opt_learning_rate_training_steps"}, Kind::integer},
      {"run.max_seq_length", {"max_sequence_length"}, Kind::integer},
      {"run.max_predictions_per_seq", {"max_predictions_per_seq"}, Kind::integer},
      {"run.eval.eval_samples", {"eval_samples"}, Kind::integer},
      {"run.division", {"submission_division"}, Kind::text},
  };
  return mappings;
}

// The base of a published GPU result: each field with why it is what it is.
const std::vector<std::pair<const char*, std::pair<json, const char*>>>& gpu_defaults() {
  static const std::vector<std::pair<const char*, std::pair<json, const char*>>> defaults = {
      {"run.backend", {"cuda", "default: a GPU result runs on mlbert's CUDA backend"}},
      {"run.precision",
       {"fp16", "default: the logs do not state it; NVIDIA-derived BERT trains in fp16 AMP"}},
      {"run.model", {json{{"preset", "bert-large"}}, "default: the benchmark's model"}},
      {"run.optimizer.name", {"lamb", "default: no opt_name logged; BERT's closed optimizer"}},
      {"run.lr_schedule.end_learning_rate", {0.0, "default: the reference's (not logged)"}},
      {"run.clipping", {json{{"mode", "after-allreduce"}, {"max_norm", 1.0}},
                        "default: the reference's (not logged)"}},
      {"run.loss_scale", {json{{"initial", 131072.0}, {"dynamic", true}, {"growth_interval", 2000}},
                          "default: apex's dynamic scaler (not logged)"}},
      {"run.bucket_mb", {25.0, "default: PyTorch DDP's bucket size"}},
      {"run.sampler", {json{{"name", "random"}}, "default: the reference's sampler"}},
      {"run.load_balancing", {"none", "default: the reference balances nothing"}},
      {"run.eval", {json{{"cadence", "mlperf"}, {"eval_samples", 10000}, {"batch_size", 16}},
                    "default: the rules' cadence and eval set"}},
      {"run.target_accuracy", {0.720, "default: the rules' target (masked-LM accuracy 0.720)"}},
      {"run.max_seq_length", {512, "default: the benchmark's sequence length"}},
      {"run.watchdog_seconds", {600.0, "default: mlbert's"}},
      {"run.warmup_iterations", {2, "default: mlbert's untimed warm-up steps"}},
  };
  return defaults;
}

const LoggedValue* first_logged(const PublishedRuns& runs, const LogMapping& m) {
  for (const char* key : m.keys)
    if (const LoggedValue* v = runs.find(key)) return v;
  return nullptr;
}

std::string key_of(const PublishedRuns& runs, const LogMapping& m) {
  for (const char* key : m.keys)
    if (runs.find(key)) return key;
  return "";
}

json converted(const LoggedValue& v, const std::string& key, Kind kind) {
  const auto bad = [&](const char* what) {
    return std::runtime_error(v.file.string() + ":" + std::to_string(v.line) + ": " + key +
                              ": value " + v.value.dump() + " is not " + what);
  };
  if (kind == Kind::text) {
    if (!v.value.is_string()) throw bad("a string");
    return v.value;
  }
  if (!v.value.is_number() || !std::isfinite(v.value.get<double>())) throw bad("a number");
  const double d = v.value.get<double>();
  if (kind == Kind::number) return d;
  if (d != std::floor(d) || std::abs(d) > 9007199254740992.0) throw bad("a whole number");
  return static_cast<std::int64_t>(d);
}

// Every logged hyperparameter into its field; the keys used are added to `used`.
void apply_logs(const PublishedRuns& runs, PlanBuilder& b, std::set<std::string>& used) {
  for (const LogMapping& m : log_mappings()) {
    const LoggedValue* v = first_logged(runs, m);
    if (!v) continue;
    const std::string key = key_of(runs, m);
    used.insert(key);
    b.set(m.field, converted(*v, key, m.kind), "log " + v->source() + " " + key);
  }
  // Other keys naming a field already set (opt_epsilon beside opt_lamb_epsilon) are listed as
  // not carried, with the key the field took.
  for (const LogMapping& m : log_mappings())
    for (const char* key : m.keys)
      if (const LoggedValue* v = runs.find(key); v && !used.contains(key)) {
        used.insert(key);
        b.not_carried(std::string(key) + " = " + v->value.dump() + " (" + v->source() +
                      "): another key for " + m.field + ", which takes " + key_of(runs, m));
      }
}

}  // namespace

void plan_run(const PublishedRuns& runs, const json& d, const std::filesystem::path& file,
              const LaunchFacts& launch, PlanBuilder& b) {
  const bool own = d.contains("run");
  if (own) {
    b.set("run", d["run"], file.filename().string() + " run (an mlbert system file)");
  } else {
    for (const auto& [field, value] : gpu_defaults()) b.set(field, value.first, value.second);
    const std::string framework = d.value("framework", "");
    if (framework.find("NVIDIA") != std::string::npos)
      b.set("run.lr_schedule.style", "nvidia",
            "system.json framework \"" + framework + "\" (NVIDIA's PyTorch scheduler)");
    else
      b.set("run.lr_schedule.style", "reference", "default: the reference's schedule");
  }
  for (const auto& fact : launch.fields) b.set(fact.field, fact.value, fact.source);
  const auto ruleset = logging::ruleset_from_path(runs.dir);
  if (ruleset) b.set("run.ruleset", *ruleset, "the folder's path (round " + *ruleset + ")");
  else if (!own)
    throw std::runtime_error(runs.dir.string() +
                             ": no round in the path (v1.1/...) and no mlbert system file: "
                             "the ruleset is unknown");
  std::set<std::string> used;
  apply_logs(runs, b, used);
  if (!b.plan().system["run"].contains("division")) {
    if (!d.contains("division") || !d["division"].is_string())
      throw std::runtime_error(file.string() + ": division: missing (and no submission_division "
                               "logged)");
    b.set("run.division", d["division"], "system.json division");
  }
  b.set("division", b.plan().system["run"]["division"], "= run.division");
  for (const auto& [key, v] : runs.hyperparameters)
    if (!used.contains(key))
      b.not_carried(key + " = " + v.value.dump() + " (" + v.source() +
                    "): not a setting of mlbert's run");
}

}  // namespace mlbert::harness::reproduce
