// Typed reads of one JSON object of a system file, every problem recorded with the field's JSON
// path (`run.optimizer.beta1: missing (a number is required)`) instead of thrown, so a user sees
// all of a file's problems at once.
//
// Design choice: a reader is a table of its fields. A `Field` row names the key, where the value
// goes (its type follows from the target), whether it is required and the rule it must satisfy;
// `read_fields` reads a table row by row, in order, so the problems come in the table's order.
// Rules that join several fields stay as code after the table that reads them.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mlbert::harness::field_table {

class FieldReader {
 public:
  FieldReader(const nlohmann::json* object, std::string path, std::vector<std::string>* problems)
      : object_(object), path_(std::move(path)), problems_(problems) {}

  std::string where(const std::string& key) const;  // the field's JSON path
  bool has(const std::string& key) const;
  void problem(const std::string& key, const std::string& text) const;
  // The object at `key`; an invalid reader (reads find nothing) when it is absent or no object.
  FieldReader child(const std::string& key, bool required) const;
  bool valid() const { return object_ != nullptr; }
  const nlohmann::json* raw() const { return object_; }

  // Each returns the value, or nothing (a problem recorded) when it is absent or of another type.
  std::optional<double> number(const std::string& key, bool required) const;  // finite
  std::optional<std::int64_t> integer(const std::string& key, bool required) const;
  std::optional<bool> boolean(const std::string& key, bool required) const;
  std::optional<std::string> string(const std::string& key, bool required) const;
  // A string that must be one of `choices`; returns its index.
  std::optional<std::size_t> choice(const std::string& key, const std::vector<std::string>& choices,
                                    bool required) const;

 private:
  const nlohmann::json* object_;
  std::string path_;
  std::vector<std::string>* problems_;
};

// A string field that names one of `names`: `set` stores the index of the name found.
struct Choice {
  const std::vector<std::string>* names;
  std::function<void(std::size_t)> set;
};
// An enum whose values are numbered like `names`, or the name itself.
template <typename Enum>
Choice one_of(Enum* target, const std::vector<std::string>& names) {
  return {&names, [target](std::size_t i) { *target = static_cast<Enum>(i); }};
}
Choice one_of(std::string* target, const std::vector<std::string>& names);

// What a value must satisfy: the problem's text, or "" when the value is fine. Integers reach it
// as doubles (exact up to 2^53, and the bounds are far below).
using Rule = std::function<std::string(double value)>;
Rule in_range(std::int64_t lo, std::int64_t hi);             // "must be in lo..hi"
Rule in_range(std::int64_t lo, std::int64_t hi, std::string hi_name);  // "must be in lo..hi_name"
Rule at_least(std::int64_t lo);                              // "must be >= lo"
Rule positive();      // "must be > 0, found <value>"
Rule non_negative();  // "must be >= 0, found <value>"
Rule in_open_unit_interval();       // "must be in (0, 1)"
Rule in_half_open_unit_interval();  // "must be in [0, 1)"

// An int or int64 target reads a JSON integer (an int keeps the value cast as it is, so a later
// rule sees what an out-of-range value became); a double, any finite number; bool and string,
// their own type.
using Target = std::variant<int*, std::int64_t*, double*, bool*, std::string*, Choice>;

struct Field {
  std::string_view key;
  Target target;
  bool required = false;
  Rule rule = {};  // applied to a value that was read; absent fields keep their defaults
};

// Reads `fields` from `r` in order: each value read is stored, then its rule checked.
void read_fields(const FieldReader& r, std::initializer_list<Field> fields);

}  // namespace mlbert::harness::field_table
