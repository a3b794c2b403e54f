// The one rule every audit command (check, score, report, rcp, system-check, package and the
// official forms that may omit the ruleset) follows to pick the ruleset of each path it is given.
// Design choice: nothing is guessed silently. --ruleset wins; else the round in the path
// (`v4.1` or `training_results_v4.1` -> 4.1.0, the innermost such folder); else the newest ruleset
// with BERT, and the note that says so is a warning, so a log of another round that then fails
// has its cause printed next to it.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert::logging {

struct RulesetChoice {
  std::vector<std::string> rulesets;  // one per path, in order
  std::vector<bool> from_default;     // per path: no --ruleset and no round in the path
  std::size_t defaulted = 0;          // how many paths got the default
  // What was inferred, in one line ("" when --ruleset was given): "ruleset 4.0.0 from the round in
  // the path", or the warning naming the default and the paths without a round.
  std::string note;
  bool note_is_warning = false;  // some path got the default
  // Per path, for --verbose: "PATH: ruleset 4.0.0 (from the round in its path)".
  std::vector<std::string> per_path;
  std::string what;  // the inputs' noun, "log"
};

// `what` names the inputs in the note ("log", "folder", "file"). Throws AuditError when a round in
// a path names a ruleset the official tools do not know (e.g. v9.9).
RulesetChoice choose_rulesets(const std::string& given, const std::vector<std::string>& paths,
                              std::string_view what);

// Prints the choice on stderr as `command`'s note, once ("mlbert check: ruleset 4.0.0 from the
// round in the path (--ruleset overrides)"); with `verbose` first one line per path. Nothing when
// --ruleset was given.
void print_ruleset_note(std::string_view command, const RulesetChoice& choice, bool verbose);

// The default: the newest ruleset with BERT (rulesets.h).
std::string default_ruleset();

}  // namespace mlbert::logging
