// The few Python operations the official rule expressions apply to decoded JSON values (`in`,
// subscripting, comparison with a number, `!=` with a string), with Python's results and its
// exceptions: a rule that raises is reported by the checker differently from one that is false.
#pragma once
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mlbert::mllog::py {

// A Python exception raised while evaluating a rule; what() is "TypeError: ..." or "KeyError: ...".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Python's type name of a decoded JSON value: NoneType, bool, int, float, str, list, dict.
const char* type_name(const nlohmann::json& v);

// Python's str(v), for messages.
std::string str(const nlohmann::json& v);

// `needle in container`: dict keys, list elements, substrings of a str; TypeError otherwise.
bool contains(const nlohmann::json& container, std::string_view needle);

// `container[key]`: KeyError when a dict lacks it, TypeError for anything but a dict.
const nlohmann::json& getitem(const nlohmann::json& container, std::string_view key);

// `v < x`, `v <= x`, `v > x`, `v >= x` for a number x: bool, int and float compare by value
// (NaN is unordered); anything else raises TypeError.
bool lt(const nlohmann::json& v, double x);
bool le(const nlohmann::json& v, double x);
bool gt(const nlohmann::json& v, double x);
bool ge(const nlohmann::json& v, double x);

// `v != ''`
bool ne_empty_string(const nlohmann::json& v);

// Python's int(v) as decimal text (a seed, a node count): bool, int, a finite float truncated, a
// str of an optionally signed decimal integer between whitespace; empty with `why` set to the
// error int() would raise.
std::optional<std::string> int_text(const nlohmann::json& v, std::string& why);

// `v in ['a', 'b', ...]`
bool in_list(const nlohmann::json& v, std::initializer_list<std::string_view> items);

}  // namespace mlbert::mllog::py
