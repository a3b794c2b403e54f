// A number's decimal digits grouped in thousands for reports: "2932736" -> "2,932,736".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mlbert {

// `digits` is an integer as printed (an optional '-', then digits), e.g. std::to_string's or
// "%.0f"'s output; anything else comes back unchanged but for commas between digit triples.
inline std::string group_thousands(std::string_view digits) {
  std::string out;
  if (!digits.empty() && digits.front() == '-') {
    out += '-';
    digits.remove_prefix(1);
  }
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace mlbert
