// What `mlbert score` is given on its command line, read into the result folders it scores: a
// system folder (result_*.txt, or a bert/ folder holding them), an organization folder of a
// submission (results/<system>/bert/, the folder the official result_summarizer takes), and the
// summarizer's own trailing `USAGE RULESET` words, so `mlbert score DIR training 4.1.0` means what
// `result_summarizer DIR training 4.1.0` means.
#pragma once
#include <string>
#include <vector>

namespace mlbert::logging {

struct ScoreInputs {
  std::vector<std::string> dirs;   // system folders, in the order given (an org folder's sorted)
  std::string ruleset;             // --ruleset, or the RULESET word; "" when neither
  std::vector<std::string> notes;  // how the words were read, for stderr
};

// Throws AuditError for a missing folder (named), an `hpc` USAGE word, a RULESET word that
// disagrees with --ruleset, and an organization folder without BERT results.
ScoreInputs read_score_inputs(const std::vector<std::string>& words, const std::string& ruleset);

}  // namespace mlbert::logging
