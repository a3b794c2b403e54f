// The known name a mistyped one was most likely meant to be: a command ("chek" -> "check"), an
// option ("--ruleest" -> "--ruleset") or a key in a file ("coolng" -> "cooling"). Design choice:
// the distance counts an adjacent swap as one edit (optimal string alignment), and a name is only
// suggested when at most a third of the word differs, so an unrelated word gets no suggestion.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert {

// Insertions, deletions, substitutions and adjacent swaps that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The name in `known` closest to `word` by edit_distance, when at most a third of `word` (at least
// one character) must change; "" otherwise. The first of equally close names wins.
std::string nearest_name(std::string_view word, const std::vector<std::string>& known);

}  // namespace mlbert
