// The compliance engine (see checker.h). The official checker runs its config queue one config at a
// time, each with a fresh state and a full pass over the log. Configs never see each other's state,
// so here every config the queue can reach runs side by side in ONE streaming pass, recording what
// it would report; the queue is then replayed in the official order (which configs were enqueued,
// which messages a later config overwrites, where a Python exception would have stopped
// everything).
#include "mlperf_logging/rules/checker.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/visible_text.h"
#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/rules/config_run.h"
#include "mlperf_logging/rules/rules.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::mllog {
namespace {

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
      for (const ConfigEvent& event : run->events()) {
        switch (event.kind) {
          case ConfigEvent::Kind::keyed:
            overwritable.put(event.key, event.message);
            break;
          case ConfigEvent::Kind::unkeyed:
            fixed.push_back(event.message);
            break;
          case ConfigEvent::Kind::warning:
            if (options_.werror) {
              CheckMessage m = event.message;
              m.level = CheckMessage::Level::error;
              overwritable.put(event.key, std::move(m));
            } else if (!options_.quiet) {
              warnings.put(event.key, event.message);
            }
            break;
          case ConfigEvent::Kind::crash:
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
  // Records and file names come from the log's world: a NUL or an escape sequence is shown, not
  // sent to the terminal.
  std::string out =
      (result.success ? "SUCCESS " : "FAILED  ") + text::visible(result.file.string()) + "\n";
  for (const auto& m : result.messages) {
    if (m.level == CheckMessage::Level::warning && !show_warnings) continue;
    out += m.level == CheckMessage::Level::error ? "  error   " : "  warning ";
    out += m.rule;
    if (m.line) out += "  line " + std::to_string(m.line);
    out += ": " + text::visible(m.text) + "\n";
    if (!m.record.empty()) out += "          " + text::visible(m.record) + "\n";
  }
  return out;
}

}  // namespace mlbert::mllog
