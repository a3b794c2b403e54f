// Line-level helpers shared by the tokenizer, vocabulary and corpus readers (UTF-8 itself is
// common/utf8.h).
// Whitespace here means Python's `str.isspace()` (common/utf8.h), because the reference strips
// lines with `strip()`.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "common/utf8.h"

namespace mlbert::data {

// Python's str.strip() on valid UTF-8.
std::string_view python_strip(std::string_view text);

}  // namespace mlbert::data
