// The compliance engine's view of one config (internal to checker.cc): the checker runs every
// config a log can reach side by side in one streaming pass, and a ConfigRun is one config's share
// of it. Design choice: a ConfigRun never decides the verdict; it records Events in the order the
// official checker would report them, and the checker replays the official config queue over them.
#pragma once
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/rules.h"

namespace mlbert::mllog {

// A record as the log shows it in messages, cut at 2,000 bytes.
std::string shorten(std::string_view raw);
// "training_4.0.0/closed_bert.yaml" -> "closed_bert"
std::string short_name(const std::string& config);

// What one config reports, in the order it reports it.
struct ConfigEvent {
  enum class Kind { keyed, unkeyed, warning, crash };
  Kind kind;
  std::string key;  // keyed messages and warnings: the dict key they are stored under
  CheckMessage message;
};

// Lazily computed canonical form of the current record's value, shared by all configs.
struct RecordFacts {
  const LogRecord* record = nullptr;
  std::optional<std::string> fingerprint;
  const std::string& value_fingerprint();
};

class ConfigRun {
 public:
  ConfigRun(const rules::Config& config, std::string ruleset);

  const rules::Config& config() const { return config_; }
  const std::vector<ConfigEvent>& events() const { return events_; }
  const std::vector<std::string>& enqueued() const { return effects_.enqueued; }

  // A record of the key of config().keys[rule_index]: counts, CHECK, POST, ATLEAST_ONE_CHECK.
  void feed(std::size_t rule_index, const LogRecord& r, RecordFacts& facts);
  // After the pass: ATLEAST_ONE_CHECK totals, REQ counts, AT_LEAST_ONE_OR groups, END.
  void finish();

 private:
  struct KeyTally {
    std::size_t count = 0;
    std::string first_fingerprint;
    bool all_same = true;
    std::vector<std::string> distinct_values;  // Python str() of a few distinct values
    bool executed = false;  // has_been_exec: submission_* keys run CHECK/POST once
    bool atleast_seen = false;
    std::size_t atleast_passed = 0;
  };

  void report_atleast_one_checks();
  std::set<std::vector<std::string>> report_counts();
  void report_alternatives(const std::set<std::vector<std::string>>& alternatives);
  std::size_t count_of(const std::string& key) const;
  static std::string shown_value(const LogRecord& r);
  void track_value(KeyTally& tally, const LogRecord& r, RecordFacts& facts);
  std::string benchmark_note(const rules::KeyRule& rule, const LogRecord& r) const;
  std::string context(const std::string& source) const;
  std::string end_detail() const;
  CheckMessage message(const std::string& key, const LogRecord& r, std::string text) const;
  void keyed(const std::string& key, const LogRecord& r, std::string text);
  void keyed_whole_log(const std::string& key, std::string text);
  void unkeyed(const std::string& label, std::string text);
  void warning(const std::string& key, std::string text);

  const rules::Config& config_;
  std::string name_;
  std::string ruleset_;
  rules::State state_;
  rules::Effects effects_;
  std::vector<KeyTally> tallies_;
  std::vector<ConfigEvent> events_;
  bool crashed_ = false;
};

}  // namespace mlbert::mllog
