// The MLPerf Training rulesets the official mlperf_logging tools know (0.6.0 .. 6.1.0), with what
// each means for BERT. This is the project's one list of rulesets: the checker, the audit commands,
// the harness and the CLI all ask it, so a new round is one row here plus its rule table. Code asks
// the rows instead of comparing ruleset names as versions: the rows are oldest first, and a
// question such as "does this ruleset log submission_status" is a field of the row.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert::mllog {

struct TrainingRuleset {
  std::string_view name;  // "4.1.0"
  bool bert_benchmark;    // BERT is one of the round's benchmarks (0.7.0 .. 5.0.0)
  bool bert_rules;        // `mlbert check` holds the configs a BERT log reaches (0.7.0 .. 5.1.0)
  bool bert_rcps;         // the official rcp_checker has BERT RCPs (1.0.0 .. 5.1.0)
  bool package_audits;    // the package checker checks system descriptions, seeds and RCPs
  // System descriptions' `status` names an availability category ("Available on-premise", ...)
  // instead of onprem/cloud (4.0.0 on: the official checker tests "major >= 4").
  bool availability_status;

  // What a compliant BERT log of the ruleset holds (meaningful in the rows with bert_rules): the
  // rule tables require it, and the trainer and the example log write it.
  bool submission_org_platform;  // submission_org and submission_platform (all but 5.0.0)
  bool submission_status;        // submission_status, onprem/cloud/... (up to 4.0.0)
  bool weights_initialization;   // one weights_initialization per tensor, the 398 of bert-large
                                 // (1.1.0 .. 2.1.0)
  std::string_view lamb_epsilon_key;  // opt_epsilon up to 2.0.0, opt_lamb_epsilon from 2.1.0
  // The metadata field block_start/block_stop and eval records may carry instead of
  // epoch_count/first_epoch_num/epoch_num: "" up to 3.0.0, "step_num" in 3.1.0, "samples_count"
  // from 4.0.0.
  std::string_view epoch_alternative;
};

// Every training ruleset of the official tools, oldest first.
std::span<const TrainingRuleset> training_rulesets();

// The row of `name`, or nullptr when the official tools know no such training ruleset.
const TrainingRuleset* find_training_ruleset(std::string_view name);
// The row of `name`; throws std::invalid_argument naming it and the known ones when there is none.
// The trainer asks it what its log must hold, e.g. training_ruleset(r).submission_status.
const TrainingRuleset& training_ruleset(std::string_view name);

// Names of the rows with `bert_benchmark` set, oldest first; and the newest of them.
const std::vector<std::string>& bert_rulesets();
std::string_view newest_bert_ruleset();

// Names of the rows a predicate accepts, or of the rows with a flag set, joined with ", " (for
// messages listing what is known).
std::string ruleset_names(bool (*accept)(const TrainingRuleset&));
std::string ruleset_names(bool TrainingRuleset::*flag);

// Why a BERT result cannot be judged by `ruleset`: "bert is not a benchmark of training ruleset
// 5.1.0; BERT was one from 0.7.0 to 5.0.0"; empty when BERT is one of its benchmarks.
std::string bert_absence(std::string_view ruleset);

// The init-phase records of a BERT log whose presence or key its ruleset decides (the official
// common.yaml and closed_bert.yaml of each round), for a row with `bert_benchmark` set.
struct BertInitRecords {
  bool submission_org_and_platform;   // up to 4.1.0
  bool submission_status;             // up to 4.0.0
  std::string_view lamb_epsilon_key;  // opt_epsilon up to 2.0.0, opt_lamb_epsilon from 2.1.0
  bool weights_initialization;        // the row's column
};
// Throws std::invalid_argument (bert_absence's text) for a ruleset without BERT.
BertInitRecords bert_init_records(std::string_view ruleset);

}  // namespace mlbert::mllog
