// Python's float() (see python_float.h). A str is reduced to the ASCII grammar CPython accepts
// after mapping Unicode spaces, then handed to strtod, which rounds correctly as CPython does.
#include "mlperf_logging/log/python_float.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "common/utf8.h"

namespace mlbert::mllog::pyjson {
namespace {

bool is_ascii_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

std::optional<double> float_from_string(std::string_view utf8) {
  // Python maps every Unicode space to ' ' and strips; only ASCII remains acceptable after that
  // (CPython also maps Unicode decimal digits to ASCII; logs never write time_ms that way).
  std::string ascii;
  for (std::size_t i = 0; i < utf8.size();) {
    char32_t c = decode_utf8_lenient(utf8, i);
    if (is_python_space(c)) {
      ascii.push_back(' ');
    } else if (c < 0x80) {
      ascii.push_back(static_cast<char>(c));
    } else {
      return std::nullopt;
    }
  }
  auto first = ascii.find_first_not_of(" \t\n\r\v\f");
  if (first == std::string::npos) return std::nullopt;
  auto last = ascii.find_last_not_of(" \t\n\r\v\f");
  std::string_view s(ascii.data() + first, last - first + 1);

  std::string_view body = s;
  bool negative = false;
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  std::string lower;
  for (char c : body) lower.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
  if (lower == "inf" || lower == "infinity") return negative ? -HUGE_VAL : HUGE_VAL;
  if (lower == "nan") return std::numeric_limits<double>::quiet_NaN();

  // digitpart ('.' digitpart?)? | '.' digitpart, then an optional exponent; '_' only between
  // digits.
  std::string cleaned;
  std::size_t i = 0;
  auto digitpart = [&](bool required) {
    std::size_t count = 0;
    while (i < body.size()) {
      if (is_ascii_digit(body[i])) {
        cleaned.push_back(body[i++]);
        ++count;
      } else if (body[i] == '_' && count > 0 && i + 1 < body.size() &&
                 is_ascii_digit(body[i + 1])) {
        ++i;
      } else {
        break;
      }
    }
    return count > 0 || !required;
  };
  bool int_digits = digitpart(false);
  bool frac_digits = false;
  if (i < body.size() && body[i] == '.') {
    cleaned.push_back('.');
    ++i;
    std::size_t before = cleaned.size();
    digitpart(false);
    frac_digits = cleaned.size() > before;
  }
  if (cleaned.empty() || cleaned == "." || (!int_digits && !frac_digits)) return std::nullopt;
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    cleaned.push_back('e');
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) cleaned.push_back(body[i++]);
    if (!digitpart(true)) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  double value = std::strtod(cleaned.c_str(), nullptr);
  return negative ? -value : value;
}

std::optional<double> float_from_int_literal(std::string_view literal) {
  std::string copy(literal);
  double value = std::strtod(copy.c_str(), nullptr);  // correctly rounded, like int.__float__
  if (std::isinf(value)) return std::nullopt;
  return value;
}

}  // namespace mlbert::mllog::pyjson
