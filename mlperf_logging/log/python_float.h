// Python's float() of the numbers and strings a log's JSON decodes to: a str as float(s) parses it
// (Unicode spaces, underscores between digits, inf/nan in any case) and an integer literal of any
// length as float(int) rounds it. Where Python raises, the answer is std::nullopt.
#pragma once
#include <optional>
#include <string_view>

namespace mlbert::mllog::pyjson {

// Python's float(s) for a str held as UTF-8: surrounding whitespace, underscores between digits,
// inf/infinity/nan in any case. std::nullopt where Python raises ValueError.
std::optional<double> float_from_string(std::string_view utf8);

// Python's float(int) for a decimal integer literal ("-123..."): std::nullopt where Python raises
// OverflowError (the value rounds past the largest double).
std::optional<double> float_from_int_literal(std::string_view literal);

}  // namespace mlbert::mllog::pyjson
