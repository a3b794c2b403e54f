// One config's side of the single streaming pass (see config_run.h): every record of its keys is
// fed as it streams by, and what the official checker would report is recorded as events, with
// the messages the official checker prints, in the order it prints them.
#include "mlperf_logging/rules/config_run.h"

#include <algorithm>
#include <sstream>

#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/log/pyops.h"
#include "mlperf_logging/log/python_json.h"
#include "mlperf_logging/rules/bert_tensors.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::mllog {
namespace {

constexpr std::size_t kRecordDisplayLimit = 2000;

std::string state_summary(const rules::State& s) {
  std::ostringstream out;
  out << "s: init_started=" << (s.init_started ? "True" : "False")
      << ", init_stopped=" << (s.init_stopped ? "True" : "False")
      << ", run_started=" << (s.run_started ? "True" : "False")
      << ", first_init_start=" << python_float_repr(s.first_init_start)
      << ", compile_time_mins=" << s.compile_time_mins;
  return out.str();
}

}  // namespace

std::string shorten(std::string_view raw) {
  if (raw.size() <= kRecordDisplayLimit) return std::string(raw);
  return std::string(raw.substr(0, kRecordDisplayLimit)) + " ... (" + std::to_string(raw.size()) +
         " bytes)";
}

std::string short_name(const std::string& config) {
  auto slash = config.rfind('/');
  std::string base = slash == std::string::npos ? config : config.substr(slash + 1);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".yaml") == 0)
    base.resize(base.size() - 5);
  return base;
}

const std::string& RecordFacts::value_fingerprint() {
  if (!fingerprint) {
    try {
      fingerprint = pyjson::canonical(record->value_text);
    } catch (const pyjson::DecodeError&) {
      fingerprint = python_json_dumps(Json(record->value));  // unreachable: the text decoded once
    }
  }
  return *fingerprint;
}

ConfigRun::ConfigRun(const rules::Config& config, std::string ruleset)
    : config_(config), name_(short_name(config.name)), ruleset_(std::move(ruleset)) {
  if (config_.begin) config_.begin(state_);
  tallies_.resize(config_.keys.size());
}

void ConfigRun::feed(std::size_t rule_index, const LogRecord& r, RecordFacts& facts) {
  if (crashed_) return;
  const rules::KeyRule& rule = config_.keys[rule_index];
  KeyTally& tally = tallies_[rule_index];
  ++tally.count;
  if (rule.req == "EXACTLY_ONE") track_value(tally, r, facts);

  if (!tally.executed) {
    for (const rules::Expr& check : rule.checks) {
      try {
        if (!check.eval(r, state_))
          keyed(rule.name, r,
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
      ConfigEvent event{ConfigEvent::Kind::crash, rule.name, {}};
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

void ConfigRun::finish() {
  if (crashed_) return;
  report_atleast_one_checks();
  report_alternatives(report_counts());
  if (config_.end) {
    try {
      if (!config_.end(state_)) unkeyed("END", "END CHECK failed: " + end_detail());
    } catch (const py::Error& e) {
      unkeyed("END", "END CHECK raised " + std::string(e.what()));
    }
  }
}

void ConfigRun::report_atleast_one_checks() {
  for (std::size_t i = 0; i < config_.keys.size(); ++i) {
    const auto& rule = config_.keys[i];
    const auto& tally = tallies_[i];
    if (rule.atleast_one_check && tally.atleast_seen && tally.atleast_passed == 0) {
      unkeyed(rule.name, "Failed checks for " + rule.name + " : " + rule.atleast_one_check->source +
                             " (none of the " + std::to_string(tally.count) + " records passes)");
    }
  }
}

// The alternatives' groups ("AT_LEAST_ONE_OR(x)": the key or x), each sorted.
std::set<std::vector<std::string>> ConfigRun::report_counts() {
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
      keyed_whole_log(rule.name, "Required AT_LEAST_ONE occurrence of '" + rule.name + "'" + found);
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
  return alternatives;
}

void ConfigRun::report_alternatives(const std::set<std::vector<std::string>>& alternatives) {
  for (const auto& group : alternatives) {
    bool any = false;
    std::string names;
    for (const auto& k : group) {
      any = any || count_of(k) > 0;
      names += (names.empty() ? "'" : " or '") + k + "'";
    }
    if (!any) unkeyed(group.front(), "Required AT_LEAST_ONE occurrence of " + names);
  }
}

std::size_t ConfigRun::count_of(const std::string& key) const {
  for (std::size_t i = 0; i < config_.keys.size(); ++i)
    if (config_.keys[i].name == key) return tallies_[i].count;
  return 0;
}

// Python's str() of the record's value, decoding it when the parser left it undecoded.
std::string ConfigRun::shown_value(const LogRecord& r) {
  if (r.payload_decoded) return py::str(r.value);
  try {
    return py::str(pyjson::loads(r.value_text));
  } catch (const pyjson::DecodeError&) {
    return std::string(r.value_text);
  }
}

void ConfigRun::track_value(KeyTally& tally, const LogRecord& r, RecordFacts& facts) {
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
std::string ConfigRun::benchmark_note(const rules::KeyRule& rule, const LogRecord& r) const {
  if (rule.name != "submission_benchmark" || !r.value.is_string()) return "";
  const std::string& benchmark = r.value.get_ref<const std::string&>();
  if (benchmark == "bert") {
    const std::string absence = bert_absence(ruleset_);
    if (!absence.empty()) return " (" + absence + ")";
  }
  return " ('" + benchmark + "' is not a benchmark of training ruleset " + ruleset_ + ")";
}

// For checks on the state, the state they saw (what the official checker prints as context).
std::string ConfigRun::context(const std::string& source) const {
  if (source.find("s['") == std::string::npos) return "";
  return " (" + state_summary(state_) + ")";
}

std::string ConfigRun::end_detail() const {
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
                     std::to_string(state_.tensors_logged) + " logged, " + std::to_string(missing) +
                     " missing";
  if (!first_missing.empty()) text += " (first: " + first_missing + ")";
  text += ", " + std::to_string(repeated) + " repeated, " +
          std::to_string(state_.tensors_unexpected) + " not BERT tensor names";
  return text;
}

CheckMessage ConfigRun::message(const std::string& key, const LogRecord& r,
                                std::string text) const {
  CheckMessage m;
  m.level = CheckMessage::Level::error;
  m.rule = name_ + ":" + key;
  m.line = r.line;
  m.record = shorten(r.raw);
  m.text = std::move(text);
  return m;
}

void ConfigRun::keyed(const std::string& key, const LogRecord& r, std::string text) {
  events_.push_back({ConfigEvent::Kind::keyed, key, message(key, r, std::move(text))});
}

void ConfigRun::keyed_whole_log(const std::string& key, std::string text) {
  CheckMessage m;
  m.rule = name_ + ":" + key;
  m.text = std::move(text);
  events_.push_back({ConfigEvent::Kind::keyed, key, std::move(m)});
}

void ConfigRun::unkeyed(const std::string& label, std::string text) {
  CheckMessage m;
  m.rule = name_ + ":" + label;
  m.text = std::move(text);
  events_.push_back({ConfigEvent::Kind::unkeyed, "", std::move(m)});
}

void ConfigRun::warning(const std::string& key, std::string text) {
  CheckMessage m;
  m.level = CheckMessage::Level::warning;
  m.rule = name_ + ":" + key;
  m.text = std::move(text);
  events_.push_back({ConfigEvent::Kind::warning, key, std::move(m)});
}

}  // namespace mlbert::mllog
