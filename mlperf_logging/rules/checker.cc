// The compliance engine (see checker.h). The official checker runs its config queue one config at a
// time, each with a fresh state and a full pass over the log. Configs never see each other's state,
// so here every config the queue can reach runs side by side in ONE streaming pass, recording what
// it would report; the queue is then replayed in the official order (which configs were enqueued,
// which messages a later config overwrites, where a Python exception would have stopped
// everything).
#include "mlperf_logging/rules/checker.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/log/pyops.h"
#include "mlperf_logging/log/python_json.h"
#include "mlperf_logging/rules/bert_tensors.h"
#include "mlperf_logging/rules/rules.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::mllog {
namespace {

constexpr std::size_t kRecordDisplayLimit = 2000;

std::string shorten(std::string_view raw) {
  if (raw.size() <= kRecordDisplayLimit) return std::string(raw);
  return std::string(raw.substr(0, kRecordDisplayLimit)) + " ... (" + std::to_string(raw.size()) +
         " bytes)";
}

// "training_4.0.0/closed_bert.yaml" -> "closed_bert"
std::string short_name(const std::string& config) {
  auto slash = config.rfind('/');
  std::string base = slash == std::string::npos ? config : config.substr(slash + 1);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".yaml") == 0)
    base.resize(base.size() - 5);
  return base;
}

// What one config reports, in the order it reports it.
struct Event {
  enum class Kind { keyed, unkeyed, warning, crash };
  Kind kind;
  std::string key;  // keyed messages and warnings: the dict key they are stored under
  CheckMessage message;
};

struct KeyTally {
  std::size_t count = 0;
  std::string first_fingerprint;
  bool all_same = true;
  std::vector<std::string> distinct_values;  // Python str() of a few distinct values, for messages
  bool executed = false;                     // has_been_exec: submission_* keys run CHECK/POST once
  bool atleast_seen = false;
  std::size_t atleast_passed = 0;
};

std::string state_summary(const rules::State& s) {
  std::ostringstream out;
  out << "s: init_started=" << (s.init_started ? "True" : "False")
      << ", init_stopped=" << (s.init_stopped ? "True" : "False")
      << ", run_started=" << (s.run_started ? "True" : "False")
      << ", first_init_start=" << python_float_repr(s.first_init_start)
      << ", compile_time_mins=" << s.compile_time_mins;
  return out.str();
}

// Lazily computed canonical forms of the current record's value, shared by all configs.
struct RecordFacts {
  const LogRecord* record = nullptr;
  std::optional<std::string> fingerprint;
  const std::string& value_fingerprint() {
    if (!fingerprint) {
      try {
        fingerprint = pyjson::canonical(record->value_text);
      } catch (const pyjson::DecodeError&) {
        fingerprint = python_json_dumps(Json(record->value));  // unreachable: the text decoded once
      }
    }
    return *fingerprint;
  }
};

class ConfigRun {
 public:
  ConfigRun(const rules::Config& config, std::string ruleset)
      : config_(config), name_(short_name(config.name)), ruleset_(std::move(ruleset)) {
    if (config_.begin) config_.begin(state_);
    tallies_.resize(config_.keys.size());
  }

  const rules::Config& config() const { return config_; }
  const std::vector<Event>& events() const { return events_; }
  const std::vector<std::string>& enqueued() const { return effects_.enqueued; }

  void feed(std::size_t rule_index, const LogRecord& r, RecordFacts& facts) {
    if (crashed_) return;
    const rules::KeyRule& rule = config_.keys[rule_index];
    KeyTally& tally = tallies_[rule_index];
    ++tally.count;
    if (rule.req == "EXACTLY_ONE") track_value(tally, r, facts);

    if (!tally.executed) {
      for (const rules::Expr& check : rule.checks) {
        try {
          if (!check.eval(r, state_))
            keyed(
                rule.name, r,
                "CHECK failed: " + check.source + context(check.source) + benchmark_note(rule, r));
        } catch (const py::Error& e) {
          keyed(rule.name, r, "CHECK raised " + std::string(e.what()) + ": " + check.source);
        }
      }
      if (rule.post) {
        try {
          rule.post(r, state_, effects_);
        } catch (const py::Error& e) {
          keyed(rule.name, r, "POST raised " + std::string(e.what()) + ": " + rule.post_source);
        }
      }
    }
    if (rule.atleast_one_check) {
      tally.atleast_seen = true;
      try {
        if (rule.atleast_one_check->eval(r, state_)) ++tally.atleast_passed;
      } catch (const py::Error& e) {
        Event event{Event::Kind::crash, rule.name, {}};
        event.message = message(rule.name, r,
                                "ATLEAST_ONE_CHECK raised " + std::string(e.what()) + ": " +
                                    rule.atleast_one_check->source +
                                    " (the official checker stops here with a Python exception)");
        events_.push_back(std::move(event));
        crashed_ = true;
        return;
      }
    }
    if (rule.name.find("submission_") != std::string::npos) tally.executed = true;
  }

  // After the pass: ATLEAST_ONE_CHECK totals, REQ counts, AT_LEAST_ONE_OR groups, END.
  void finish() {
    if (crashed_) return;
    for (std::size_t i = 0; i < config_.keys.size(); ++i) {
      const auto& rule = config_.keys[i];
      const auto& tally = tallies_[i];
      if (rule.atleast_one_check && tally.atleast_seen && tally.atleast_passed == 0) {
        unkeyed(rule.name, "Failed checks for " + rule.name + " : " +
                               rule.atleast_one_check->source + " (none of the " +
                               std::to_string(tally.count) + " records passes)");
      }
    }
    std::set<std::vector<std::string>> alternatives;
    for (std::size_t i = 0; i < config_.keys.size(); ++i) {
      const auto& rule = config_.keys[i];
      const auto& tally = tallies_[i];
      const std::string found = " but found " + std::to_string(tally.count);
      if (rule.req == "EXACTLY_ONE" && tally.count != 1) {
        std::string text = "Required EXACTLY_ONE occurrence of '" + rule.name + "'" + found;
        if (tally.count > 0 && tally.all_same) {
          warning(rule.name, text + " (all with the same value)");
        } else {
          if (tally.count > 0) {
            text += " with different values: [";
            for (std::size_t k = 0; k < tally.distinct_values.size(); ++k)
              text += (k ? ", " : "") + tally.distinct_values[k];
            text += "]";
          }
          keyed_whole_log(rule.name, text);
        }
      } else if (rule.req == "AT_LEAST_ONE" && tally.count < 1) {
        keyed_whole_log(rule.name,
                        "Required AT_LEAST_ONE occurrence of '" + rule.name + "'" + found);
      } else if (rule.req.rfind("AT_LEAST(", 0) == 0) {
        std::size_t n = std::stoul(rule.req.substr(9));
        if (tally.count < n)
          keyed_whole_log(rule.name,
                          "Required " + rule.req + " occurrence of '" + rule.name + "'" + found);
      } else if (rule.req.rfind("AT_LEAST_ONE_OR(", 0) == 0) {
        std::vector<std::string> group{rule.name};
        std::string inside = rule.req.substr(16, rule.req.size() - 17);
        std::istringstream parts(inside);
        for (std::string part; std::getline(parts, part, ',');) {
          part.erase(0, part.find_first_not_of(' '));
          part.erase(part.find_last_not_of(' ') + 1);
          group.push_back(part);
        }
        std::sort(group.begin(), group.end());
        group.erase(std::unique(group.begin(), group.end()), group.end());
        alternatives.insert(group);
      }
    }
    for (const auto& group : alternatives) {
      bool any = false;
      std::string names;
      for (const auto& k : group) {
        any = any || count_of(k) > 0;
        names += (names.empty() ? "'" : " or '") + k + "'";
      }
      if (!any) unkeyed(group.front(), "Required AT_LEAST_ONE occurrence of " + names);
    }
    if (config_.end) {
      try {
        if (!config_.end(state_)) unkeyed("END", "END CHECK failed: " + end_detail());
      } catch (const py::Error& e) {
        unkeyed("END", "END CHECK raised " + std::string(e.what()));
      }
    }
  }

 private:
  std::size_t count_of(const std::string& key) const {
    for (std::size_t i = 0; i < config_.keys.size(); ++i)
      if (config_.keys[i].name == key) return tallies_[i].count;
    return 0;
  }

  // Python's str() of the record's value, decoding it when the parser left it undecoded.
  static std::string shown_value(const LogRecord& r) {
    if (r.payload_decoded) return py::str(r.value);
    try {
      return py::str(pyjson::loads(r.value_text));
    } catch (const pyjson::DecodeError&) {
      return std::string(r.value_text);
    }
  }

  void track_value(KeyTally& tally, const LogRecord& r, RecordFacts& facts) {
    const std::string& fp = facts.value_fingerprint();
    if (tally.count == 1) {
      tally.first_fingerprint = fp;
      tally.distinct_values.push_back(shown_value(r));
      return;
    }
    if (fp != tally.first_fingerprint) {
      tally.all_same = false;
      std::string shown = shown_value(r);
      if (tally.distinct_values.size() < 8 &&
          std::find(tally.distinct_values.begin(), tally.distinct_values.end(), shown) ==
              tally.distinct_values.end())
        tally.distinct_values.push_back(std::move(shown));
    }
  }

  // A submission_benchmark the ruleset does not list: say so in words, and for BERT in a round
  // without it, which rounds had it.
  std::string benchmark_note(const rules::KeyRule& rule, const LogRecord& r) const {
    if (rule.name != "submission_benchmark" || !r.value.is_string()) return "";
    const std::string& benchmark = r.value.get_ref<const std::string&>();
    if (benchmark == "bert") {
      const std::string absence = bert_absence(ruleset_);
      if (!absence.empty()) return " (" + absence + ")";
    }
    return " ('" + benchmark + "' is not a benchmark of training ruleset " + ruleset_ + ")";
  }

  // For checks on the state, the state they saw (what the official checker prints as context).
  std::string context(const std::string& source) const {
    if (source.find("s['") == std::string::npos) return "";
    return " (" + state_summary(state_) + ")";
  }

  std::string end_detail() const {
    const auto& names = bert_weight_tensor_names();
    std::size_t missing = 0, repeated = 0;
    std::string first_missing;
    for (std::size_t i = 0; i < state_.tensor_counts.size(); ++i) {
      if (state_.tensor_counts[i] == 0) {
        if (missing++ == 0) first_missing = names[i];
      } else if (state_.tensor_counts[i] > 1) {
        ++repeated;
      }
    }
    std::string text = "weights_initialization must name each of the " +
                       std::to_string(names.size()) + " BERT tensors exactly once; " +
                       std::to_string(state_.tensors_logged) + " logged, " +
                       std::to_string(missing) + " missing";
    if (!first_missing.empty()) text += " (first: " + first_missing + ")";
    text += ", " + std::to_string(repeated) + " repeated, " +
            std::to_string(state_.tensors_unexpected) + " not BERT tensor names";
    return text;
  }

  CheckMessage message(const std::string& key, const LogRecord& r, std::string text) const {
    CheckMessage m;
    m.level = CheckMessage::Level::error;
    m.rule = name_ + ":" + key;
    m.line = r.line;
    m.record = shorten(r.raw);
    m.text = std::move(text);
    return m;
  }
  void keyed(const std::string& key, const LogRecord& r, std::string text) {
    events_.push_back({Event::Kind::keyed, key, message(key, r, std::move(text))});
  }
  void keyed_whole_log(const std::string& key, std::string text) {
    CheckMessage m;
    m.rule = name_ + ":" + key;
    m.text = std::move(text);
    events_.push_back({Event::Kind::keyed, key, std::move(m)});
  }
  void unkeyed(const std::string& label, std::string text) {
    CheckMessage m;
    m.rule = name_ + ":" + label;
    m.text = std::move(text);
    events_.push_back({Event::Kind::unkeyed, "", std::move(m)});
  }
  void warning(const std::string& key, std::string text) {
    CheckMessage m;
    m.level = CheckMessage::Level::warning;
    m.rule = name_ + ":" + key;
    m.text = std::move(text);
    events_.push_back({Event::Kind::warning, key, std::move(m)});
  }

  const rules::Config& config_;
  std::string name_;
  std::string ruleset_;
  rules::State state_;
  rules::Effects effects_;
  std::vector<KeyTally> tallies_;
  std::vector<Event> events_;
  bool crashed_ = false;
};

// Python dicts keyed by rule key: insertion order kept, a key's messages replaced or removed whole.
class MessageDict {
 public:
  void put(const std::string& key, CheckMessage m) {
    auto it = index_.find(key);
    if (it == index_.end()) {
      index_[key] = entries_.size();
      entries_.push_back({key, {}});
      it = index_.find(key);
    }
    entries_[it->second].second.push_back(std::move(m));
  }
  void erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    entries_[it->second].second.clear();
    entries_[it->second].first.clear();
    index_.erase(it);
  }
  bool empty() const { return index_.empty(); }
  void append_to(std::vector<CheckMessage>& out) const {
    for (const auto& [key, messages] : entries_)
      if (!key.empty()) out.insert(out.end(), messages.begin(), messages.end());
  }

 private:
  std::vector<std::pair<std::string, std::vector<CheckMessage>>> entries_;
  std::unordered_map<std::string, std::size_t> index_;
};

class Checker {
 public:
  Checker(const CheckOptions& options, std::filesystem::path file) : options_(options) {
    if (options.usage != "training")
      throw std::invalid_argument("usage '" + options.usage +
                                  "' is not supported: mlbert check knows the training rules");
    if (!is_supported_ruleset(options.ruleset)) {
      throw std::invalid_argument(
          "ruleset '" + options.ruleset +
          "' has no BERT rules here (known: " + ruleset_names(&TrainingRuleset::bert_rules) + ")");
    }
    if (options.rules_dir)
      throw std::invalid_argument(
          "--rules-dir is not supported yet: the rules are built in (see checker.h)");
    result_.file = std::move(file);
    const auto& configs = rules::bert_configs(options.ruleset);
    runs_.reserve(configs.size());
    for (std::size_t c = 0; c < configs.size(); ++c) {
      runs_.emplace_back(configs[c], options.ruleset);
      for (std::size_t k = 0; k < configs[c].keys.size(); ++k) {
        const rules::KeyRule& rule = configs[c].keys[k];
        Dispatch& d = dispatch_[rule.name];
        d.rules.push_back({c, k});
        d.reads_payload = d.reads_payload || reads_payload(rule);
      }
    }
  }

  // Records of keys no config names are validated by the parser but never decoded; the payload
  // (value, metadata) only of keys whose rules read it.
  ParseOptions parse_options() const {
    ParseOptions options;
    options.wanted = [this](std::string_view key, bool key_is_string) {
      if (!key_is_string) return ParseOptions::Want::skip;
      auto it = dispatch_.find(key);
      if (it == dispatch_.end()) return ParseOptions::Want::skip;
      return it->second.reads_payload ? ParseOptions::Want::all : ParseOptions::Want::fields;
    };
    return options;
  }

  void on_record(const LogRecord& r) {
    if (!r.key_is_string) return;  // an unhashable or non-string key matches no rule
    auto it = dispatch_.find(r.key);
    if (it == dispatch_.end()) return;  // keys outside every rule are allowed
    if (r.key == "submission_benchmark" && !result_.benchmark && r.value.is_string())
      result_.benchmark = r.value.get<std::string>();
    if (r.key == "submission_division" && !result_.division && r.value.is_string())
      result_.division = r.value.get<std::string>();
    RecordFacts facts{&r, std::nullopt};
    for (auto [c, k] : it->second.rules) runs_[c].feed(k, r, facts);
  }

  void on_error(const ParseError& e) {
    CheckMessage m;
    m.rule = "log:parse";
    m.line = e.line;
    m.record = shorten(e.raw);
    m.text = e.message;
    if (e.official_checker_crashes) {
      m.text += " (the official checker stops here with a Python exception)";
      result_.official_checker_crashes = true;
    }
    parse_messages_.push_back(std::move(m));
  }

  CheckResult finish(const ParseStats& stats) {
    result_.records = stats.records + stats.filtered;
    for (auto& run : runs_) run.finish();
    replay();
    return std::move(result_);
  }

 private:
  void replay() {
    MessageDict warnings, overwritable;
    std::vector<CheckMessage> fixed;  // not_overwritable
    if (!parse_messages_.empty()) {
      CheckMessage m;
      m.rule = "log:parse";
      m.text = "Log lines had parsing errors (" + std::to_string(parse_messages_.size()) + ")";
      fixed.push_back(std::move(m));
    }
    if (result_.records == 0) {
      CheckMessage m;
      m.rule = "log:records";
      m.text = "No log lines detected";
      fixed.push_back(std::move(m));
    }

    std::vector<std::string> queue{runs_.front().config().name};
    bool crashed = result_.official_checker_crashes;
    while (!queue.empty() && !crashed) {
      std::string name = queue.front();
      queue.erase(queue.begin());
      result_.configs.push_back(name);
      const ConfigRun* run = find_run(name);
      if (!run) {
        CheckMessage m;
        m.rule = short_name(name) + ":config";
        if (is_other_benchmark(name)) {
          m.text = "the official checker goes on with " + name +
                   ", another benchmark's rules; mlbert check encodes the BERT rules only";
        } else {
          m.text = "Could not find config file: " + name +
                   " (the official checker stops here with a Python exception)";
          crashed = true;
        }
        fixed.push_back(std::move(m));
        continue;
      }
      // A config overrides the messages of the keys it defines.
      for (const auto& rule : run->config().keys) overwritable.erase(rule.name);
      for (const Event& event : run->events()) {
        switch (event.kind) {
          case Event::Kind::keyed:
            overwritable.put(event.key, event.message);
            break;
          case Event::Kind::unkeyed:
            fixed.push_back(event.message);
            break;
          case Event::Kind::warning:
            if (options_.werror) {
              CheckMessage m = event.message;
              m.level = CheckMessage::Level::error;
              overwritable.put(event.key, std::move(m));
            } else if (!options_.quiet) {
              warnings.put(event.key, event.message);
            }
            break;
          case Event::Kind::crash:
            fixed.push_back(event.message);
            crashed = true;
            break;
        }
        if (crashed) break;
      }
      if (crashed) break;
      for (const auto& next : run->enqueued()) queue.push_back(next);
    }
    if (crashed) result_.official_checker_crashes = true;

    result_.messages = parse_messages_;
    warnings.append_to(result_.messages);
    overwritable.append_to(result_.messages);
    result_.messages.insert(result_.messages.end(), fixed.begin(), fixed.end());
    result_.success = !crashed && overwritable.empty() && fixed.empty();
  }

  const ConfigRun* find_run(const std::string& name) const {
    for (const auto& run : runs_)
      if (run.config().name == name) return &run;
    return nullptr;
  }

  bool is_other_benchmark(const std::string& name) const {
    for (const char* division : {"closed", "open"}) {
      for (const auto& benchmark : rules::accepted_benchmarks(options_.ruleset, division)) {
        if (benchmark == "bert") continue;
        std::string file = "/" + std::string(division) + "_" + benchmark + ".yaml";
        if (name.size() > file.size() &&
            name.compare(name.size() - file.size(), file.size(), file) == 0)
          return true;
      }
    }
    return false;
  }

  const CheckOptions& options_;
  CheckResult result_;
  std::vector<ConfigRun> runs_;
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  struct Dispatch {
    std::vector<std::pair<std::size_t, std::size_t>> rules;  // (config, rule) pairs naming the key
    bool reads_payload = false;  // some rule reads v['value'] or v['metadata']
  };
  // Whether a rule's Python code reads the record's value or metadata (the sources are the
  // official expressions, so the test is textual and exact: `v` appears only as v['...'] or
  // in "'value' in v", which is always true).
  static bool reads_payload(const rules::KeyRule& rule) {
    auto reads = [](const std::string& source) { return source.find("v['") != std::string::npos; };
    for (const auto& check : rule.checks)
      if (reads(check.source)) return true;
    return reads(rule.post_source) ||
           (rule.atleast_one_check && reads(rule.atleast_one_check->source));
  }
  std::unordered_map<std::string, Dispatch, KeyHash, std::equal_to<>> dispatch_;
  std::vector<CheckMessage> parse_messages_;
};

template <class Parse>
CheckResult run_checker(Parse&& parse, const CheckOptions& options,
                        const std::filesystem::path& name) {
  Checker checker(options, name);
  ParseStats stats =
      parse([&](const LogRecord& r) { checker.on_record(r); },
            [&](const ParseError& e) { checker.on_error(e); }, checker.parse_options());
  return checker.finish(stats);
}

}  // namespace

std::size_t CheckResult::error_count() const {
  return static_cast<std::size_t>(
      std::count_if(messages.begin(), messages.end(),
                    [](const CheckMessage& m) { return m.level == CheckMessage::Level::error; }));
}

std::size_t CheckResult::warning_count() const {
  return messages.size() - error_count();
}

const std::vector<std::string>& supported_rulesets() {
  static const std::vector<std::string> rulesets = [] {
    std::vector<std::string> names;
    for (const auto& r : training_rulesets())
      if (r.bert_rules) names.emplace_back(r.name);
    return names;
  }();
  return rulesets;
}

bool is_supported_ruleset(std::string_view ruleset) {
  const auto& all = supported_rulesets();
  return std::find(all.begin(), all.end(), ruleset) != all.end();
}

CheckResult check_log(const std::filesystem::path& file, const CheckOptions& options) {
  return run_checker(
      [&](const RecordCallback& on_record, const ErrorCallback& on_error,
          const ParseOptions& parse) { return for_each_record(file, on_record, on_error, parse); },
      options, file);
}

CheckResult check_log(std::istream& in, const CheckOptions& options,
                      const std::filesystem::path& name) {
  return run_checker(
      [&](const RecordCallback& on_record, const ErrorCallback& on_error,
          const ParseOptions& parse) {
        return for_each_record(in, on_record, on_error, name.string(), parse);
      },
      options, name);
}

CheckResult check_log_text(std::string_view text, const CheckOptions& options,
                           const std::filesystem::path& name) {
  return run_checker(
      [&](const RecordCallback& on_record, const ErrorCallback& on_error,
          const ParseOptions& parse) {
        return for_each_record_in(text, on_record, on_error, name.string(), parse);
      },
      options, name);
}

std::string format_result(const CheckResult& result, bool show_warnings) {
  std::string out = (result.success ? "SUCCESS " : "FAILED  ") + result.file.string() + "\n";
  for (const auto& m : result.messages) {
    if (m.level == CheckMessage::Level::warning && !show_warnings) continue;
    out += m.level == CheckMessage::Level::error ? "  error   " : "  warning ";
    out += m.rule;
    if (m.line) out += "  line " + std::to_string(m.line);
    out += ": " + m.text + "\n";
    if (!m.record.empty()) out += "          " + m.record + "\n";
  }
  return out;
}

}  // namespace mlbert::mllog
