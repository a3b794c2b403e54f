// The official BERT compliance configs of rulesets 0.7.0 to 5.1.0 as C++ tables (see rules.h).
// Rulesets differ in a handful of places, so each config is built once from a feature list; every
// Expr keeps the exact Python source of its YAML counterpart, and its C++ body evaluates the same
// thing with Python's semantics (py:: operations raise where Python raises).
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "mlperf_logging/log/pyops.h"
#include "mlperf_logging/rules/bert_tensors.h"
#include "mlperf_logging/rules/rules.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::mllog::rules {
namespace {

// How one ruleset's BERT configs differ from the others. What a BERT log holds (submission_org
// and submission_platform, submission_status, weights_initialization, the epsilon key, the
// alternative to epoch fields) is the ruleset's row in rulesets.h; the rest is here.
struct Features {
  const TrainingRuleset& row;
  bool compile_time_window;       // 2.0.0+: init window by division via s['compile_time_mins']
  int init_window_minutes;        // the fixed window before 2.0.0: 20 in 0.7.0, then 30
  std::string common_benchmarks;  // 0.7.0: common.yaml also checks submission_benchmark ("" none)
  bool gradient_accumulation;     // 1.0.0+: closed_common requires gradient_accumulation_steps
  bool epoch_samples_count;       // 5.0.0+: epoch_start/epoch_stop accept samples_count
  std::string closed_benchmarks;  // the source of the closed_common submission_benchmark list
  std::string open_benchmarks;
  std::string open_bert_dir;  // where open_common looks for open_bert.yaml
  bool batch_size_target;     // 0.7.0: closed target 0.712, or 0.706 from global batch 8192
  bool open_target;           // 0.7.0: open runs must also reach 0.712

  std::string ruleset() const { return std::string(row.name); }
};

const std::string kList070 =
    "['resnet', 'ssd', 'maskrcnn', 'transformer', 'gnmt', 'minigo', 'dlrm', 'bert']";
const std::string kListA =
    "['resnet', 'ssd', 'maskrcnn', 'minigo', 'dlrm', 'bert', 'rnnt', 'unet3d']";
const std::string kListB =
    "['resnet', 'ssd', 'maskrcnn', 'gpt3', 'dlrm_dcnv2', 'bert', 'rnnt', 'unet3d']";
const std::string kListC =
    "['resnet', 'ssd', 'stable_diffusion', 'maskrcnn', 'gpt3', 'dlrm_dcnv2', 'bert', 'rnnt', "
    "'unet3d']";
const std::string kListD =
    "['resnet', 'ssd', 'stable_diffusion', 'maskrcnn', 'gpt3', 'dlrm_dcnv2', 'bert', 'rnnt', "
    "'unet3d', 'gnn']";
const std::string kListDClosed400 =
    "['resnet', 'ssd', 'stable_diffusion', 'maskrcnn', 'gpt3', 'dlrm_dcnv2', 'bert', 'rnnt', "
    "'unet3d', "
    "'gnn','llama2_70b_lora']";
const std::string kListDClosed410 =
    "['resnet', 'ssd', 'stable_diffusion', 'maskrcnn', 'gpt3', 'dlrm_dcnv2', 'bert', 'rnnt', "
    "'unet3d', "
    "'gnn', 'llama2_70b_lora']";
const std::string kListE =
    "['retinanet', 'stable_diffusion', 'dlrm_dcnv2', 'bert', 'rgat', 'llama2_70b_lora', "
    "'llama31_405b']";
const std::string kList510 =
    "['retinanet', 'flux1', 'dlrm_dcnv2', 'llama31_8b', 'rgat', 'llama2_70b_lora', "
    "'llama31_405b']";

std::vector<Features> all_features() {
  const auto row = training_ruleset;
  // row, compile_time_window, init_window_minutes, common_benchmarks, gradient_accumulation,
  // epoch_samples_count, closed_benchmarks, open_benchmarks, open_bert_dir, batch_size_target,
  // open_target
  return {
      {row("0.7.0"), false, 20, kList070, false, false, kList070, kList070, "training_0.7.0", true,
       true},
      {row("1.0.0"), false, 30, "", true, false, kListA, kListA, "training_1.0.0", false, false},
      {row("1.1.0"), false, 30, "", true, false, kListA, kListA, "training_1.0.0", false, false},
      {row("2.0.0"), true, 0, "", true, false, kListA, kListA, "training_2.0.0", false, false},
      {row("2.1.0"), true, 0, "", true, false, kListA, kListA, "training_2.1.0", false, false},
      {row("3.0.0"), true, 0, "", true, false, kListB, kListB, "training_3.0.0", false, false},
      {row("3.1.0"), true, 0, "", true, false, kListC, kListC, "training_3.1.0", false, false},
      {row("4.0.0"), true, 0, "", true, false, kListDClosed400, kListD, "training_4.0.0", false,
       false},
      {row("4.1.0"), true, 0, "", true, false, kListDClosed410, kListD, "training_4.1.0", false,
       false},
      {row("5.0.0"), true, 0, "", true, true, kListE, kListE, "training_5.0.0", false, false},
      {row("5.1.0"), true, 0, "", true, true, kList510, kList510, "training_5.1.0", false, false},
  };
}

// The quoted names of a Python list literal such as "['a', 'b']".
std::vector<std::string> list_items(const std::string& source) {
  std::vector<std::string> items;
  for (std::size_t i = source.find('\''); i != std::string::npos; i = source.find('\'', i + 1)) {
    std::size_t close = source.find('\'', i + 1);
    items.push_back(source.substr(i + 1, close - i - 1));
    i = close;
  }
  return items;
}

// ---- expression builders (each returns the YAML source and its meaning) -----------------------

const nlohmann::json& md(const LogRecord& r) {
  return r.metadata;
}

Expr value_not_empty() {
  return {"v['value'] != ''",
          [](const LogRecord& r, const State&) { return py::ne_empty_string(r.value); }};
}

Expr value_in_list(const std::string& list_source) {
  auto items = list_items(list_source);
  return {"v['value'] in " + list_source, [items](const LogRecord& r, const State&) {
            if (!r.value.is_string()) return false;
            for (const auto& item : items)
              if (r.value.get_ref<const std::string&>() == item) return true;
            return false;
          }};
}

Expr in_metadata(const std::string& field) {
  return {"'" + field + "' in v['metadata']",
          [field](const LogRecord& r, const State&) { return py::contains(md(r), field); }};
}

// "('a' in v['metadata']) | ('b' in v['metadata'])": both sides are evaluated.
Expr in_metadata_either(const std::string& a, const std::string& b) {
  return {"('" + a + "' in v['metadata']) | ('" + b + "' in v['metadata'])",
          [a, b](const LogRecord& r, const State&) {
            bool first = py::contains(md(r), a);
            bool second = py::contains(md(r), b);
            return first || second;
          }};
}

// The one field check, or the two-field form from the rulesets that accept an alternative.
Expr field_present(const std::string& field, const std::string& alternative) {
  return alternative.empty() ? in_metadata(field) : in_metadata_either(field, alternative);
}

Expr state_flag(const std::string& source, bool State::*flag, bool negate) {
  return {source, [flag, negate](const LogRecord&, const State& s) {
            return negate ? !(s.*flag) : s.*flag;
          }};
}

KeyRule key(std::string name, std::string req, std::vector<Expr> checks = {}) {
  KeyRule rule;
  rule.name = std::move(name);
  rule.req = std::move(req);
  rule.checks = std::move(checks);
  return rule;
}

// ---- common.yaml -----------------------------------------------------------------------------
// Its keys in the YAML's order: the submission, the phases, the progress of training and eval.

// submission_org .. submission_benchmark: who submits what, and the queue to the division's
// config.
void add_submission_keys(const Features& f, Config& c) {
  if (f.row.submission_org_platform) {
    c.keys.push_back(key("submission_org", "EXACTLY_ONE", {value_not_empty()}));
    c.keys.push_back(key("submission_platform", "EXACTLY_ONE", {value_not_empty()}));
  }
  KeyRule division =
      key("submission_division", "EXACTLY_ONE", {value_in_list("['closed', 'open']")});
  const std::string dir = "training_" + f.ruleset();
  const bool window = f.compile_time_window;
  division.post_source =
      "enqueue_config('" + dir + "/{}_common.yaml'.format(v['value']))" +
      (window ? "; s['compile_time_mins'] = 240 if v['value'] == 'open' else 30" : "");
  division.post = [dir, window](const LogRecord& r, State& s, Effects& e) {
    e.enqueued.push_back(dir + "/" + py::str(r.value) + "_common.yaml");
    if (window)
      s.compile_time_mins =
          r.value.is_string() && r.value.get_ref<const std::string&>() == "open" ? 240 : 30;
  };
  c.keys.push_back(std::move(division));
  if (f.row.submission_status) {
    c.keys.push_back(key("submission_status", "EXACTLY_ONE",
                         {value_in_list("['cloud', 'onprem', 'preview', 'research']")}));
  }
  if (!f.common_benchmarks.empty()) {
    c.keys.push_back(
        key("submission_benchmark", "EXACTLY_ONE", {value_in_list(f.common_benchmarks)}));
  }
}

// The init window: by division from 2.0.0 (compile_time_mins), a fixed number of minutes before.
Expr init_window(const Features& f) {
  if (f.compile_time_window) {
    return {"ll.timestamp - s['first_init_start'] < (s['compile_time_mins']*60*1e3)",
            [](const LogRecord& r, const State& s) {
              return r.timestamp - s.first_init_start <
                     static_cast<double>(s.compile_time_mins * 60) * 1e3;
            }};
  }
  const int minutes = f.init_window_minutes;
  return {"ll.timestamp - s['first_init_start'] < (" + std::to_string(minutes) + "*60*1e3)",
          [minutes](const LogRecord& r, const State& s) {
            return r.timestamp - s.first_init_start < static_cast<double>(minutes * 60) * 1e3;
          }};
}

// cache_clear, init_start, init_stop, run_start, run_stop: the phases in their order.
void add_phase_keys(const Features& f, Config& c) {
  c.keys.push_back(
      key("cache_clear", "AT_LEAST_ONE", {{"'value' in v", [](const LogRecord&, const State&) {
                                             return true;  // v is {'value': ..., 'metadata': ...}
                                           }}}));
  KeyRule init_start = key("init_start", "AT_LEAST_ONE",
                           {state_flag("not s['init_stopped']", &State::init_stopped, true),
                            state_flag("not s['run_started']", &State::run_started, true)});
  init_start.post_source =
      "s['init_started'] = True; s['first_init_start']=min(s['first_init_start'], ll.timestamp)";
  init_start.post = [](const LogRecord& r, State& s, Effects&) {
    s.init_started = true;
    if (r.timestamp < s.first_init_start)
      s.first_init_start = r.timestamp;  // min() keeps the first on ties and NaN
  };
  c.keys.push_back(std::move(init_start));

  KeyRule init_stop =
      key("init_stop", "EXACTLY_ONE",
          {state_flag("s['init_started']", &State::init_started, false),
           state_flag("not s['run_started']", &State::run_started, true), init_window(f)});
  init_stop.post_source = "s['init_stopped'] = True";
  init_stop.post = [](const LogRecord&, State& s, Effects&) { s.init_stopped = true; };
  c.keys.push_back(std::move(init_stop));

  KeyRule run_start =
      key("run_start", "EXACTLY_ONE",
          {state_flag("( s['init_stopped'] == True )", &State::init_stopped, false)});
  run_start.post_source = "s['run_started'] = True";
  run_start.post = [](const LogRecord&, State& s, Effects&) { s.run_started = true; };
  c.keys.push_back(std::move(run_start));

  KeyRule run_stop =
      key("run_stop", "EXACTLY_ONE",
          {state_flag("s['run_started']", &State::run_started, false), in_metadata("status")});
  run_stop.post_source = "s['run_stopped'] = True";
  run_stop.post = [](const LogRecord&, State& s, Effects&) { s.run_stopped = true; };
  c.keys.push_back(std::move(run_stop));
}

// block_start's checks: the epoch fields, or (3.1.0 on) the ruleset's alternative to them.
std::vector<Expr> block_start_checks(const std::string& alt) {
  if (alt.empty()) {
    return {state_flag("s['run_started']", &State::run_started, false),
            in_metadata("epoch_count"),
            in_metadata("first_epoch_num"),
            {"v['metadata']['epoch_count'] > 0", [](const LogRecord& r, const State&) {
               return py::gt(py::getitem(md(r), "epoch_count"), 0);
             }}};
  }
  return {
      state_flag("s['run_started']", &State::run_started, false),
      in_metadata_either("epoch_count", alt),
      {"'first_epoch_num' in v['metadata'] if 'epoch_count' in v['metadata'] else True",
       [](const LogRecord& r, const State&) {
         return py::contains(md(r), "epoch_count") ? py::contains(md(r), "first_epoch_num") : true;
       }},
      {"v['metadata']['epoch_count'] > 0 if 'epoch_count' in v['metadata'] else True",
       [](const LogRecord& r, const State&) {
         return py::contains(md(r), "epoch_count") ? py::gt(py::getitem(md(r), "epoch_count"), 0)
                                                   : true;
       }},
      {"v['metadata']['" + alt + "'] >= 0 if '" + alt + "' in v['metadata'] else True",
       [alt](const LogRecord& r, const State&) {
         return py::contains(md(r), alt) ? py::ge(py::getitem(md(r), alt), 0) : true;
       }}};
}

// block_*, epoch_*, eval_* and the sample counts: how far training and eval got.
void add_progress_keys(const Features& f, Config& c) {
  const std::string alt(f.row.epoch_alternative);
  c.keys.push_back(key("block_start", "AT_LEAST_ONE_OR(epoch_start)", block_start_checks(alt)));
  c.keys.push_back(
      key("block_stop", "AT_LEAST_ONE_OR(epoch_stop)", {field_present("first_epoch_num", alt)}));
  const std::string epoch_alt = f.epoch_samples_count ? "samples_count" : "";
  c.keys.push_back(
      key("epoch_start", "AT_LEAST_ONE_OR(block_start)", {field_present("epoch_num", epoch_alt)}));
  c.keys.push_back(
      key("epoch_stop", "AT_LEAST_ONE_OR(block_stop)", {field_present("epoch_num", epoch_alt)}));
  c.keys.push_back(
      key("eval_start", "AT_LEAST_ONE_OR(block_start)", {field_present("epoch_num", alt)}));
  c.keys.push_back(
      key("eval_stop", "AT_LEAST_ONE_OR(block_stop)", {field_present("epoch_num", alt)}));
  c.keys.push_back(key("eval_accuracy", "AT_LEAST_ONE", {field_present("epoch_num", alt)}));
  c.keys.push_back(key("train_samples", "EXACTLY_ONE", {value_not_empty()}));
  c.keys.push_back(key("eval_samples", "EXACTLY_ONE", {value_not_empty()}));
}

Config common_config(const Features& f) {
  Config c;
  c.name = "training_" + f.ruleset() + "/common.yaml";
  c.begin_source = std::string(
                       "s.update({\n"
                       "    'init_started': False,\n"
                       "    'init_stopped' : False,\n"
                       "    'run_started' : False,\n"
                       "    'run_stopped' : False,\n"
                       "    'in_epoch' : False,\n"
                       "    'last_epoch' : 0,\n"
                       "    'in_block' : False,\n"
                       "    'block_first_epoch' : -1,\n"
                       "    'first_init_start': 9e99,\n") +
                   (f.compile_time_window ? "    'compile_time_mins': 0,\n" : "") + "})";
  // in_epoch, last_epoch, in_block and block_first_epoch are set but never read by any rule.
  c.begin = [](State& s) { s = State{}; };
  add_submission_keys(f, c);
  add_phase_keys(f, c);
  add_progress_keys(f, c);
  return c;
}

// ---- closed_common.yaml / open_common.yaml
// ---------------------------------------------------------

Config division_config(const Features& f, bool closed) {
  Config c;
  const std::string dir = "training_" + f.ruleset();
  c.name = dir + (closed ? "/closed_common.yaml" : "/open_common.yaml");
  c.begin = [](State& s) { s = State{}; };
  KeyRule benchmark = key("submission_benchmark", "EXACTLY_ONE",
                          {value_in_list(closed ? f.closed_benchmarks : f.open_benchmarks)});
  const std::string target = closed ? dir + "/closed_" : f.open_bert_dir + "/open_";
  benchmark.post_source = "enqueue_config('" + target + "{}.yaml'.format(v['value']))";
  benchmark.post = [target](const LogRecord& r, State&, Effects& e) {
    e.enqueued.push_back(target + py::str(r.value) + ".yaml");
  };
  c.keys.push_back(std::move(benchmark));
  if (closed && f.gradient_accumulation) {
    c.keys.push_back(key(
        "gradient_accumulation_steps", "EXACTLY_ONE",
        {{"v['value'] > 0", [](const LogRecord& r, const State&) { return py::gt(r.value, 0); }}}));
  }
  return c;
}

// ---- closed_bert.yaml / open_bert.yaml
// --------------------------------------------------------------

std::string tensor_list_source() {
  std::string out = "sorted(s['initialized_tensors']) == sorted([";
  for (const auto& name : bert_weight_tensor_names()) out += "\n    \"" + name + "\",";
  return out + "\n])";
}

// 0.7.0's closed target: 0.712, or 0.706 for a global batch size of 8192 and more. The batch size
// is the last one logged before the record (a KeyError stops the official checker when none was).
Expr batch_size_target() {
  return {
      "(v['value'] >= 0.712 if s['global_batch_size'] < 8192 else v['value'] >= 0.706) and "
      "v['value'] < 1.0",
      [](const LogRecord& r, const State& s) {
        if (!s.global_batch_size) throw py::Error("KeyError: 'global_batch_size'");
        const bool reached =
            py::lt(*s.global_batch_size, 8192) ? py::ge(r.value, 0.712) : py::ge(r.value, 0.706);
        return reached && py::lt(r.value, 1.0);
      }};
}

Config closed_bert_config(const Features& f) {
  Config c;
  c.name = "training_" + f.ruleset() + "/closed_bert.yaml";
  c.begin = [](State& s) { s = State{}; };
  if (f.row.weights_initialization) {
    c.begin_source = "s.update({\n    'initialized_tensors': []\n})";
    c.begin = [](State& s) {
      s = State{};
      s.tensor_counts.assign(bert_weight_tensor_names().size(), 0);
    };
    KeyRule weights = key("weights_initialization", "AT_LEAST_ONE", {in_metadata("tensor")});
    weights.post_source = "s['initialized_tensors'] += [v['metadata']['tensor']]";
    weights.post = [](const LogRecord& r, State& s, Effects&) {
      const nlohmann::json& tensor = py::getitem(md(r), "tensor");
      ++s.tensors_logged;
      if (tensor.is_string()) {
        if (const auto i = bert_weight_tensor_index(tensor.get_ref<const std::string&>())) {
          ++s.tensor_counts[*i];
          return;
        }
      }
      ++s.tensors_unexpected;
    };
    c.keys.push_back(std::move(weights));
    c.end_source = tensor_list_source();
    c.end = [](const State& s) {
      if (s.tensors_unexpected != 0 || s.tensors_logged != s.tensor_counts.size()) return false;
      for (auto count : s.tensor_counts)
        if (count != 1) return false;
      return true;
    };
  }
  {
    KeyRule gbs = key("global_batch_size", "EXACTLY_ONE");
    gbs.post_source = "s['global_batch_size'] = v['value']";
    gbs.post = [](const LogRecord& r, State& s, Effects&) { s.global_batch_size = r.value; };
    c.keys.push_back(std::move(gbs));
  }
  for (const std::string& name :
       {std::string("opt_base_learning_rate"), std::string(f.row.lamb_epsilon_key),
        std::string("opt_learning_rate_training_steps"),
        std::string("opt_learning_rate_warmup_steps"), std::string("num_warmup_steps"),
        std::string("start_warmup_step"), std::string("opt_lamb_beta_1"),
        std::string("opt_lamb_beta_2"), std::string("opt_lamb_weight_decay_rate")}) {
    c.keys.push_back(key(name, "EXACTLY_ONE"));
  }
  KeyRule accuracy = key("eval_accuracy", "AT_LEAST_ONE", {in_metadata("epoch_num")});
  accuracy.atleast_one_check = f.batch_size_target
                                   ? batch_size_target()
                                   : Expr{"(v['value'] >= 0.720) and v['value'] < 1.0",
                                          [](const LogRecord& r, const State&) {
                                            return py::ge(r.value, 0.720) && py::lt(r.value, 1.0);
                                          }};
  c.keys.push_back(std::move(accuracy));
  return c;
}

Config open_bert_config(const Features& f) {
  Config c;
  c.name = f.open_bert_dir + "/open_bert.yaml";
  c.begin = [](State& s) { s = State{}; };
  KeyRule accuracy = key("eval_accuracy", "AT_LEAST_ONE", {in_metadata("epoch_num")});
  accuracy.atleast_one_check =
      f.open_target ? Expr{"v['value'] >= 0.712 and v['value'] < 1.0",
                           [](const LogRecord& r, const State&) {
                             return py::ge(r.value, 0.712) && py::lt(r.value, 1.0);
                           }}
                    : Expr{"v['value'] < 1.0",
                           [](const LogRecord& r, const State&) { return py::lt(r.value, 1.0); }};
  c.keys.push_back(std::move(accuracy));
  return c;
}

}  // namespace

const std::vector<Config>& bert_configs(std::string_view ruleset) {
  // Built on first use, one ruleset at a time: a command checks one ruleset, and building all eight
  // would cost more than checking a small log. Entries are never removed, so references stay valid.
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<const std::vector<Config>>, std::less<>> built;
  static const std::vector<Config> none;
  std::lock_guard lock(mutex);
  if (auto it = built.find(ruleset); it != built.end()) return *it->second;
  for (const Features& f : all_features()) {
    if (f.row.name != ruleset) continue;
    auto configs = std::make_unique<const std::vector<Config>>(
        std::vector<Config>{common_config(f), division_config(f, true), division_config(f, false),
                            closed_bert_config(f), open_bert_config(f)});
    return *built.emplace(f.ruleset(), std::move(configs)).first->second;
  }
  return none;
}

std::vector<std::string> accepted_benchmarks(std::string_view ruleset, std::string_view division) {
  for (const Features& f : all_features()) {
    if (f.row.name == ruleset)
      return list_items(division == "closed" ? f.closed_benchmarks : f.open_benchmarks);
  }
  return {};
}

}  // namespace mlbert::mllog::rules
