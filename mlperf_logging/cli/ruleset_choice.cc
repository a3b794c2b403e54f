// The ruleset rule of every audit command (ruleset_choice.h).
#include "mlperf_logging/cli/ruleset_choice.h"

#include <cstdio>
#include <map>

#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

std::string count_of(std::size_t n, std::string_view what) {
  return std::to_string(n) + " " + std::string(what) + (n == 1 ? "" : "s");
}

// "ruleset 4.0.0 from the round in the path", "rulesets 2.0.0 (1 log), 4.0.0 (2 logs) from ...".
std::string inferred_note(const std::map<std::string, std::size_t>& counts, bool with_counts,
                          std::string_view what) {
  std::string note;
  for (const auto& [ruleset, count] : counts) {
    note += (note.empty() ? "" : ", ") + ruleset;
    if (with_counts) note += " (" + count_of(count, what) + ")";
  }
  if (note.empty()) return note;
  return (counts.size() > 1 ? "rulesets " : "ruleset ") + note + " from the round in the path";
}

}  // namespace

std::string default_ruleset() {
  return std::string(mllog::newest_bert_ruleset());
}

RulesetChoice choose_rulesets(const std::string& given, const std::vector<std::string>& paths,
                              std::string_view what) {
  RulesetChoice choice;
  choice.what = what;
  if (!given.empty()) {
    choice.rulesets.assign(paths.size(), given);
    choice.from_default.assign(paths.size(), false);
    return choice;
  }
  const std::string fallback = default_ruleset();
  std::map<std::string, std::size_t> inferred_counts;
  std::string first_defaulted;
  for (const auto& path : paths) {
    const auto inferred = ruleset_from_path(path);
    if (inferred && !mllog::find_training_ruleset(*inferred)) {
      throw AuditError(path + ": the round in its path means ruleset " + *inferred +
                       ", which the official tools do not know; pass --ruleset");
    }
    choice.rulesets.push_back(inferred.value_or(fallback));
    choice.from_default.push_back(!inferred);
    if (inferred) {
      ++inferred_counts[*inferred];
    } else if (choice.defaulted++ == 0) {
      first_defaulted = path;
    }
    choice.per_path.push_back(path + ": ruleset " + choice.rulesets.back() +
                              (inferred ? " (from the round in its path)"
                                        : " (no round in its path: the newest with BERT)"));
  }
  choice.note =
      inferred_note(inferred_counts, inferred_counts.size() > 1 || choice.defaulted > 0, what);
  if (choice.defaulted > 0) {
    const std::string which =
        choice.defaulted == 1 ? first_defaulted : count_of(choice.defaulted, what);
    choice.note += (choice.note.empty() ? "" : "; ") +
                   std::string("warning: no round (e.g. v4.1) in the path of ") + which +
                   ": using ruleset " + fallback +
                   ", the newest with BERT; pass --ruleset if it is from another round";
    choice.note_is_warning = true;
  }
  return choice;
}

void print_ruleset_note(std::string_view command, const RulesetChoice& choice, bool verbose) {
  if (choice.note.empty()) return;
  const std::string name(command);
  if (verbose) {
    for (const auto& line : choice.per_path)
      std::fprintf(stderr, "%s: %s\n", name.c_str(), line.c_str());
  }
  std::string hint;
  if (!choice.note_is_warning) {
    hint = std::string(" (--ruleset overrides") +
           (verbose || choice.per_path.size() < 2 ? "" : "; -v lists each " + choice.what) + ")";
  }
  std::fprintf(stderr, "%s: %s%s\n", name.c_str(), choice.note.c_str(), hint.c_str());
}

}  // namespace mlbert::logging
