// Python semantics of the rule operations (see pyops.h). Numbers compare through long double,
// whose 64-bit mantissa holds every int64, uint64 and double exactly, as Python's mixed
// int/float comparison is exact.
#include "mlperf_logging/log/pyops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "mlperf_logging/log/mllog.h"

namespace mlbert::mllog::py {
namespace {

bool is_numeric(const nlohmann::json& v) {
  return v.is_number() || v.is_boolean();
}

long double numeric_value(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? 1.0L : 0.0L;
    case nlohmann::json::value_t::number_integer:
      return static_cast<long double>(v.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return static_cast<long double>(v.get<std::uint64_t>());
    default:
      return static_cast<long double>(v.get<double>());
  }
}

[[noreturn]] void compare_error(const char* op, const nlohmann::json& v, double x) {
  throw Error(std::string("TypeError: '") + op + "' not supported between instances of '" +
              type_name(v) + "' and '" +
              (x == std::floor(x) && std::fabs(x) < 1e15 ? "int" : "float") + "'");
}

}  // namespace

const char* type_name(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "NoneType";
    case nlohmann::json::value_t::boolean:
      return "bool";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "int";
    case nlohmann::json::value_t::number_float:
      return "float";
    case nlohmann::json::value_t::string:
      return "str";
    case nlohmann::json::value_t::array:
      return "list";
    case nlohmann::json::value_t::object:
      return "dict";
    default:
      return "object";
  }
}

std::string str(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "None";
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? "True" : "False";
    case nlohmann::json::value_t::string:
      return v.get<std::string>();
    case nlohmann::json::value_t::number_float:
      return python_float_repr(v.get<double>());
    default:
      return python_json_dumps(v);
  }
}

bool contains(const nlohmann::json& container, std::string_view needle) {
  switch (container.type()) {
    case nlohmann::json::value_t::object:
      return container.get_ref<const nlohmann::json::object_t&>().count(std::string(needle)) > 0;
    case nlohmann::json::value_t::array:
      for (const auto& item : container)
        if (item.is_string() && item.get_ref<const std::string&>() == needle) return true;
      return false;
    case nlohmann::json::value_t::string:
      return container.get_ref<const std::string&>().find(needle) != std::string::npos;
    default:
      throw Error(std::string("TypeError: argument of type '") + type_name(container) +
                  "' is not iterable");
  }
}

const nlohmann::json& getitem(const nlohmann::json& container, std::string_view key) {
  if (container.is_object()) {
    const auto& obj = container.get_ref<const nlohmann::json::object_t&>();
    auto it = obj.find(std::string(key));
    if (it == obj.end()) throw Error("KeyError: '" + std::string(key) + "'");
    return it->second;
  }
  if (container.is_array())
    throw Error("TypeError: list indices must be integers or slices, not str");
  if (container.is_string()) throw Error("TypeError: string indices must be integers");
  throw Error(std::string("TypeError: '") + type_name(container) + "' object is not subscriptable");
}

bool lt(const nlohmann::json& v, double x) {
  if (!is_numeric(v)) compare_error("<", v, x);
  return numeric_value(v) < static_cast<long double>(x);
}
bool le(const nlohmann::json& v, double x) {
  if (!is_numeric(v)) compare_error("<=", v, x);
  return numeric_value(v) <= static_cast<long double>(x);
}
bool gt(const nlohmann::json& v, double x) {
  if (!is_numeric(v)) compare_error(">", v, x);
  return numeric_value(v) > static_cast<long double>(x);
}
bool ge(const nlohmann::json& v, double x) {
  if (!is_numeric(v)) compare_error(">=", v, x);
  return numeric_value(v) >= static_cast<long double>(x);
}

bool ne_empty_string(const nlohmann::json& v) {
  return !(v.is_string() && v.get_ref<const std::string&>().empty());
}

bool in_list(const nlohmann::json& v, std::initializer_list<std::string_view> items) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  for (auto item : items)
    if (s == item) return true;
  return false;
}

std::optional<std::string> int_text(const nlohmann::json& value, std::string& why) {
  if (value.is_boolean()) return value.get<bool>() ? "1" : "0";
  if (value.is_number_integer()) return value.dump();
  if (value.is_number_float()) {
    const double x = value.get<double>();
    if (!std::isfinite(x)) {
      why = "cannot convert float " + value.dump() + " to integer";
      return std::nullopt;
    }
    char buffer[400];
    std::snprintf(buffer, sizeof buffer, "%.0f", std::trunc(x));
    return std::string(buffer) == "-0" ? "0" : buffer;
  }
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    const auto first = text.find_first_not_of(" \t\n\r\f\v");
    const auto last = text.find_last_not_of(" \t\n\r\f\v");
    if (first != std::string::npos) {
      text = text.substr(first, last - first + 1);
      std::string digits = text;
      bool negative = false;
      if (digits.front() == '+' || digits.front() == '-') {
        negative = digits.front() == '-';
        digits.erase(0, 1);
      }
      if (!digits.empty() &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
        return (negative && digits != "0" ? "-" : "") + digits;
      }
    }
    why = "invalid literal for int() with base 10: " + value.dump();
    return std::nullopt;
  }
  why = "int() argument must be a string or a number, not " + std::string(value.type_name());
  return std::nullopt;
}

}  // namespace mlbert::mllog::py
