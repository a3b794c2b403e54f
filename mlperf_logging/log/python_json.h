// Python's `json.loads` dialect, as the official checker applies it to Latin-1 decoded log lines:
// NaN/Infinity literals, integers of any size up to 4,300 digits, lone surrogate escapes, any byte
// >= 0x20 inside strings, duplicate keys (the last wins) and a nesting limit like CPython's.
// Also a canonical form in which Python `==` becomes string equality. Python's `float()` of what
// the decoder returns is python_float.h.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mlbert::mllog::pyjson {

// Containers nested deeper than this make the official command line checker stop with a
// RecursionError (measured: a record whose value nests 984 arrays parses, 985 does not).
inline constexpr int max_depth = 985;
// CPython refuses to convert integer literals longer than this (sys.get_int_max_str_digits()).
inline constexpr std::size_t max_int_digits = 4300;

class DecodeError : public std::runtime_error {
 public:
  DecodeError(std::string message, std::size_t offset, bool recursion)
      : std::runtime_error(std::move(message)), offset_(offset), recursion_(recursion) {}
  std::size_t offset() const { return offset_; }  // byte offset into the decoded text
  bool recursion() const { return recursion_; }   // Python raises RecursionError, not ValueError

 private:
  std::size_t offset_;
  bool recursion_;
};

// A record's JSON as the MLLOG parser needs it: the type of the top-level value and, for an object,
// the members the official parser reads (the last one when a name repeats), decoded.
struct RecordShape {
  char top =
      0;  // first character of the top-level value: '{', '[', '"', 'n', 't', 'f', or a number's
  std::optional<nlohmann::json> time_ms, key, event_type;     // decoded when present
  std::optional<std::string_view> value_text, metadata_text;  // the JSON text, when present
  std::optional<nlohmann::json> value, metadata;              // decoded when present and wanted
  bool time_ms_int_overflows = false;  // time_ms is an integer literal too large for a double
};

// Validates `text` (one byte = one Latin-1 character) exactly as json.loads would and decodes the
// record's members, skipping value and metadata when `wanted` (given the decoded key) says no.
// Nothing else is built. Throws DecodeError where json.loads raises.
RecordShape scan_record(std::string_view text,
                        const std::function<bool(const nlohmann::json& key)>& wanted = {});

// Decodes `text` like json.loads. Strings come out as UTF-8. Integers beyond 64 bits become doubles
// (rounded like Python's float(int)); `int_overflows` (optional) is set when `text` is a single
// integer literal too large for a double (float() of it raises OverflowError). Throws DecodeError.
nlohmann::json loads(std::string_view text, bool* int_overflows = nullptr);

// A string in which two JSON texts compare equal exactly when Python's `==` says their decoded
// values are equal (1 == 1.0 == true, -0.0 == 0, dict order ignored, big integers exact).
// `text` must be valid (it was decoded by loads before); throws DecodeError otherwise.
std::string canonical(std::string_view text);

}  // namespace mlbert::mllog::pyjson
