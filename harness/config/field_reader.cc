// Typed field reads and the field table loop (see field_reader.h).
#include "harness/config/field_reader.h"

#include <algorithm>
#include <cmath>

namespace mlbert::harness::field_table {

using nlohmann::json;

std::string FieldReader::where(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

bool FieldReader::has(const std::string& key) const {
  return object_ && object_->is_object() && object_->contains(key);
}

void FieldReader::problem(const std::string& key, const std::string& text) const {
  problems_->push_back(where(key) + ": " + text);
}

FieldReader FieldReader::child(const std::string& key, bool required) const {
  if (!has(key)) {
    if (required) problem(key, "missing (an object is required)");
    return FieldReader(nullptr, where(key), problems_);
  }
  const json& value = (*object_)[key];
  if (!value.is_object()) {
    problem(key, "must be an object, found " + std::string(value.type_name()));
    return FieldReader(nullptr, where(key), problems_);
  }
  return FieldReader(&value, where(key), problems_);
}

namespace {

// What a typed read accepts, and how its messages name it.
struct Kind {
  const char* name;  // "a number": "missing (a number is required)", "must be a number, found ..."
  bool (*accepts)(const json&);
  bool show_value;  // the message also shows the value found
};
const Kind kNumber{"a number", [](const json& v) { return v.is_number(); }, false};
const Kind kInteger{"an integer", [](const json& v) { return v.is_number_integer(); }, true};
const Kind kBoolean{"true or false", [](const json& v) { return v.is_boolean(); }, false};
const Kind kString{"a string", [](const json& v) { return v.is_string(); }, false};

// The value at `key` of `r` when it is there and of `kind`; else nullptr, the problem recorded.
const json* value_of(const FieldReader& r, const std::string& key, bool required,
                     const Kind& kind) {
  if (!r.has(key)) {
    if (required && r.valid())
      r.problem(key, std::string("missing (") + kind.name + " is required)");
    return nullptr;
  }
  const json& value = (*r.raw())[key];
  if (kind.accepts(value)) return &value;
  r.problem(key, std::string("must be ") + kind.name + ", found " + value.type_name() +
                     (kind.show_value ? " " + value.dump() : ""));
  return nullptr;
}

}  // namespace

std::optional<double> FieldReader::number(const std::string& key, bool required) const {
  const json* value = value_of(*this, key, required, kNumber);
  if (!value) return std::nullopt;
  const double number = value->get<double>();
  if (!std::isfinite(number)) {
    problem(key, "must be finite");
    return std::nullopt;
  }
  return number;
}

std::optional<std::int64_t> FieldReader::integer(const std::string& key, bool required) const {
  const json* value = value_of(*this, key, required, kInteger);
  return value ? std::optional(value->get<std::int64_t>()) : std::nullopt;
}

std::optional<bool> FieldReader::boolean(const std::string& key, bool required) const {
  const json* value = value_of(*this, key, required, kBoolean);
  return value ? std::optional(value->get<bool>()) : std::nullopt;
}

std::optional<std::string> FieldReader::string(const std::string& key, bool required) const {
  const json* value = value_of(*this, key, required, kString);
  return value ? std::optional(value->get<std::string>()) : std::nullopt;
}

std::optional<std::size_t> FieldReader::choice(const std::string& key,
                                               const std::vector<std::string>& choices,
                                               bool required) const {
  const auto text = string(key, required);
  if (!text) return std::nullopt;
  const auto it = std::find(choices.begin(), choices.end(), *text);
  if (it == choices.end()) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + ("\"" + c + "\"");
    problem(key, "\"" + *text + "\" is not one of " + list);
    return std::nullopt;
  }
  return static_cast<std::size_t>(it - choices.begin());
}

// ---------------------------------------------------------------------------------------------
// rules

Choice one_of(std::string* target, const std::vector<std::string>& names) {
  return {&names, [target, &names](std::size_t i) { *target = names[i]; }};
}

Rule in_range(std::int64_t lo, std::int64_t hi) {
  return in_range(lo, hi, std::to_string(hi));
}

Rule in_range(std::int64_t lo, std::int64_t hi, std::string hi_name) {
  const std::string text = "must be in " + std::to_string(lo) + ".." + hi_name;
  return [=](double v) {
    return v < static_cast<double>(lo) || v > static_cast<double>(hi) ? text : "";
  };
}

Rule at_least(std::int64_t lo) {
  const std::string text = "must be >= " + std::to_string(lo);
  return [=](double v) { return v < static_cast<double>(lo) ? text : ""; };
}

Rule positive() {
  return [](double v) { return v > 0 ? "" : "must be > 0, found " + std::to_string(v); };
}

Rule non_negative() {
  return [](double v) { return v >= 0 ? "" : "must be >= 0, found " + std::to_string(v); };
}

Rule in_open_unit_interval() {
  return [](double v) { return v > 0 && v < 1 ? "" : "must be in (0, 1)"; };
}

Rule in_half_open_unit_interval() {
  return [](double v) { return v >= 0 && v < 1 ? "" : "must be in [0, 1)"; };
}

// ---------------------------------------------------------------------------------------------

namespace {

// Reads one field into its target; returns the value a rule checks (numbers only).
std::optional<double> read_into(const FieldReader& r, const std::string& key, const Target& target,
                                bool required) {
  struct Reader {
    const FieldReader& r;
    const std::string& key;
    bool required;
    std::optional<double> operator()(int* t) const {
      const auto v = r.integer(key, required);
      if (!v) return std::nullopt;
      *t = static_cast<int>(*v);
      return static_cast<double>(*v);
    }
    std::optional<double> operator()(std::int64_t* t) const {
      const auto v = r.integer(key, required);
      if (!v) return std::nullopt;
      *t = *v;
      return static_cast<double>(*v);
    }
    std::optional<double> operator()(double* t) const {
      const auto v = r.number(key, required);
      if (v) *t = *v;
      return v;
    }
    std::optional<double> operator()(bool* t) const {
      if (const auto v = r.boolean(key, required)) *t = *v;
      return std::nullopt;
    }
    std::optional<double> operator()(std::string* t) const {
      if (auto v = r.string(key, required)) *t = std::move(*v);
      return std::nullopt;
    }
    std::optional<double> operator()(const Choice& c) const {
      if (const auto v = r.choice(key, *c.names, required)) c.set(*v);
      return std::nullopt;
    }
  };
  return std::visit(Reader{r, key, required}, target);
}

}  // namespace

void read_fields(const FieldReader& r, std::initializer_list<Field> fields) {
  for (const Field& field : fields) {
    const std::string key(field.key);
    const std::optional<double> value = read_into(r, key, field.target, field.required);
    if (!value || !field.rule) continue;
    if (const std::string text = field.rule(*value); !text.empty()) r.problem(key, text);
  }
}

}  // namespace mlbert::harness::field_table
