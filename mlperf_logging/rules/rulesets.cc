// The training rulesets (see rulesets.h). Facts from the official mlperf_logging 4.1.59 package:
// benchmark_meta's benchmarks per round, the compliance_checker and rcp_checker folders, the
// package checker's ruleset sets for its system-description, seed and RCP steps, and each ruleset's
// BERT compliance YAML for what a BERT log holds.
#include "mlperf_logging/rules/rulesets.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "mlperf_logging/log/mllog_constants.h"

namespace mlbert::mllog {
namespace {

constexpr std::string_view kEpsilon = key::opt_epsilon;
constexpr std::string_view kLambEpsilon = key::opt_lamb_epsilon;

// name, bert_benchmark, bert_rules, bert_rcps, package_audits, availability_status,
// then the BERT log: submission_org_platform, submission_status, weights_initialization,
// lamb_epsilon_key, epoch_alternative
constexpr std::array<TrainingRuleset, 14> kRulesets = {{
    {"0.6.0", false, false, false, false, false, false, false, false, "", ""},
    {"0.7.0", true, true, false, false, false, true, true, false, kEpsilon, ""},
    {"1.0.0", true, true, true, true, false, true, true, false, kEpsilon, ""},
    {"1.1.0", true, true, true, true, false, true, true, true, kEpsilon, ""},
    {"2.0.0", true, true, true, true, false, true, true, true, kEpsilon, ""},
    {"2.1.0", true, true, true, true, false, true, true, true, kLambEpsilon, ""},
    {"3.0.0", true, true, true, true, false, true, true, false, kLambEpsilon, ""},
    {"3.1.0", true, true, true, true, false, true, true, false, kLambEpsilon, "step_num"},
    {"4.0.0", true, true, true, true, true, true, true, false, kLambEpsilon, "samples_count"},
    {"4.1.0", true, true, true, true, true, true, false, false, kLambEpsilon, "samples_count"},
    {"5.0.0", true, true, true, true, true, false, false, false, kLambEpsilon, "samples_count"},
    {"5.1.0", false, true, true, true, true, true, false, false, kLambEpsilon, "samples_count"},
    {"6.0.0", false, false, false, true, true, false, false, false, "", ""},
    {"6.1.0", false, false, false, true, true, false, false, false, "", ""},
}};

}  // namespace

std::span<const TrainingRuleset> training_rulesets() {
  return kRulesets;
}

const TrainingRuleset* find_training_ruleset(std::string_view name) {
  const auto it = std::find_if(kRulesets.begin(), kRulesets.end(),
                               [&](const TrainingRuleset& r) { return r.name == name; });
  return it == kRulesets.end() ? nullptr : &*it;
}

const TrainingRuleset& training_ruleset(std::string_view name) {
  if (const TrainingRuleset* row = find_training_ruleset(name)) return *row;
  throw std::invalid_argument("'" + std::string(name) + "' is not a training ruleset (known: " +
                              ruleset_names([](const TrainingRuleset&) { return true; }) + ")");
}

const std::vector<std::string>& bert_rulesets() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& r : kRulesets)
      if (r.bert_benchmark) out.emplace_back(r.name);
    return out;
  }();
  return names;
}

std::string_view newest_bert_ruleset() {
  return bert_rulesets().back();
}

std::string ruleset_names(bool (*accept)(const TrainingRuleset&)) {
  std::string out;
  for (const auto& r : kRulesets)
    if (accept(r)) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

std::string ruleset_names(bool TrainingRuleset::*flag) {
  std::string out;
  for (const auto& r : kRulesets)
    if (r.*flag) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

std::string bert_absence(std::string_view ruleset) {
  const TrainingRuleset* row = find_training_ruleset(ruleset);
  if (row && row->bert_benchmark) return "";
  return "bert is not a benchmark of training ruleset " + std::string(ruleset) +
         "; BERT was one from " + bert_rulesets().front() + " to " + bert_rulesets().back();
}

BertInitRecords bert_init_records(std::string_view ruleset) {
  const TrainingRuleset* row = find_training_ruleset(ruleset);
  if (!row || !row->bert_benchmark) throw std::invalid_argument(bert_absence(ruleset));
  // Rows are oldest first: a record that a round dropped is kept by the rows before it.
  const auto before = [&](std::string_view round) { return row < find_training_ruleset(round); };
  return {before("5.0.0"), before("4.1.0"), before("2.1.0") ? "opt_epsilon" : "opt_lamb_epsilon",
          row->weights_initialization};
}

}  // namespace mlbert::mllog
