// Python-dialect JSON decoding (see python_json.h). One recursive-descent decoder, written once as
// a template over what it builds: nlohmann::json values for records, canonical strings for
// equality. The grammar and error cases follow CPython 3.11's C scanner (Modules/_json.c) decision
// by decision.
#include "mlperf_logging/log/python_json.h"
#include "mlperf_logging/log/python_float.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/utf8.h"

namespace mlbert::mllog::pyjson {
namespace {

bool is_json_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

// The end of the run of plain string characters at `from`: the first '"', '\\' or control
// character (or `size`). Eight bytes at a time: "has a byte < n" is exact for n <= 128.
std::size_t plain_run_end(std::string_view s, std::size_t from) {
  constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  auto has_zero = [&](std::uint64_t x) { return (x - ones) & ~x & highs; };
  std::size_t i = from;
  while (i + 8 <= s.size()) {
    std::uint64_t v;
    std::memcpy(&v, s.data() + i, 8);
    if (has_zero(v ^ (ones * '"')) | has_zero(v ^ (ones * '\\')) | ((v - ones * 0x20) & ~v & highs))
      break;
    i += 8;
  }
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\' || c < 0x20) break;
    ++i;
  }
  return i;
}

// The character a one-letter escape (the letter after a backslash) stands for; 0 when JSON has no
// such escape.
char unescaped(char letter) {
  constexpr std::string_view kLetters = "\"\\/bfnrt";
  constexpr std::string_view kCharacters = "\"\\/\b\f\n\r\t";
  const auto at = kLetters.find(letter);
  return at == std::string_view::npos ? 0 : kCharacters[at];
}

// Appends Latin-1 text as UTF-8 (ASCII runs in one piece).
void append_latin1(std::string& out, std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t ascii = i;
    while (ascii < text.size() && static_cast<unsigned char>(text[ascii]) < 0x80) ++ascii;
    out.append(text.data() + i, ascii - i);
    i = ascii;
    while (i < text.size() && static_cast<unsigned char>(text[i]) >= 0x80) {
      auto c = static_cast<unsigned char>(text[i++]);
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
}

// Parses a decimal float literal (JSON grammar, already validated). Out-of-range values become
// +-inf or +-0 exactly as Python's float() rounds them.
double parse_double(std::string_view text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && ptr == text.data() + text.size()) return value;
  std::string copy(text);  // strtod sets +-HUGE_VAL / 0 on range errors, correctly rounded
  return std::strtod(copy.c_str(), nullptr);
}

// ---- canonical numbers ----------------------------------------------------------------------

// Exact decimal digits of an integral double (|value| may be up to 1.8e308).
std::string exact_integer_digits(double value) {
  double magnitude = std::fabs(value);
  if (magnitude < 9.2e18) return std::to_string(static_cast<std::int64_t>(magnitude));
  int exponent = 0;
  double mantissa = std::frexp(magnitude, &exponent);  // magnitude = mantissa * 2^exponent
  auto bits = static_cast<std::uint64_t>(std::ldexp(mantissa, 53));
  exponent -= 53;
  std::vector<int> digits;  // little-endian base 10
  for (std::uint64_t b = bits; b > 0; b /= 10) digits.push_back(static_cast<int>(b % 10));
  for (int i = 0; i < exponent; ++i) {
    int carry = 0;
    for (int& d : digits) {
      int v = d * 2 + carry;
      d = v % 10;
      carry = v / 10;
    }
    if (carry) digits.push_back(carry);
  }
  std::string out;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it)
    out.push_back(static_cast<char>('0' + *it));
  return out;
}

std::string canonical_double(double value) {
  if (std::isnan(value)) return "n";  // json's NaN is one shared object: NaN == NaN by identity
  if (std::isinf(value)) return value > 0 ? "f+inf" : "f-inf";
  if (value == std::floor(value)) {
    if (value == 0) return "i0";
    return std::string(value < 0 ? "i-" : "i") + exact_integer_digits(value);
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return "f" + std::string(buf, end);
}

// ---- builders -------------------------------------------------------------------------------

struct JsonBuilder {
  using Value = nlohmann::json;
  using Array = nlohmann::json;
  using Object = nlohmann::json;
  static Value null() { return Value(nullptr); }
  static Value boolean(bool b) { return Value(b); }
  static Value integer(std::string_view literal, bool& overflows) {
    bool negative = literal.front() == '-';
    if (literal.size() <= 18 + (negative ? 1 : 0)) {
      std::int64_t v = 0;
      std::from_chars(literal.data(), literal.data() + literal.size(), v);
      return Value(v);
    }
    std::int64_t v = 0;
    if (auto r = std::from_chars(literal.data(), literal.data() + literal.size(), v);
        r.ec == std::errc())
      return Value(v);
    if (!negative) {
      std::uint64_t u = 0;
      if (auto r = std::from_chars(literal.data(), literal.data() + literal.size(), u);
          r.ec == std::errc())
        return Value(u);
    }
    auto d = float_from_int_literal(literal);
    overflows = !d.has_value();
    return Value(d ? *d : (negative ? -HUGE_VAL : HUGE_VAL));
  }
  static Value floating(double d) { return Value(d); }
  static Value string(std::string&& s) { return Value(std::move(s)); }
  static Array begin_array() { return Value::array(); }
  static void push(Array& array, Value&& v) {
    array.get_ref<Value::array_t&>().push_back(std::move(v));
  }
  static Value end_array(Array&& array) { return std::move(array); }
  static Object begin_object() { return Value::object(); }
  static void put(Object& object, std::string&& key, Value&& v) {
    object.get_ref<Value::object_t&>()[std::move(key)] = std::move(v);  // the last duplicate wins
  }
  static Value end_object(Object&& object) { return std::move(object); }
};

struct CanonicalBuilder {
  using Value = std::string;
  using Array = std::string;
  using Object = std::map<std::string, std::string>;
  static Value null() { return "N"; }
  static Value boolean(bool b) { return b ? "i1" : "i0"; }  // True == 1 in Python
  static Value integer(std::string_view literal, bool& /*overflows*/) {
    bool negative = literal.front() == '-';
    std::string_view digits = negative ? literal.substr(1) : literal;
    if (digits == "0") return "i0";
    return std::string(negative ? "i-" : "i") + std::string(digits);
  }
  static Value floating(double d) { return canonical_double(d); }
  static Value string(std::string&& s) { return "s" + std::to_string(s.size()) + ":" + s; }
  static Array begin_array() { return "["; }
  static void push(Array& array, Value&& v) {
    array += v;
    array += ',';
  }
  static Value end_array(Array&& array) { return std::move(array) + "]"; }
  static Object begin_object() { return {}; }
  static void put(Object& object, std::string&& key, Value&& v) {
    object[std::move(key)] = std::move(v);
  }
  static Value end_object(Object&& object) {
    std::string out = "{";
    for (auto& [k, v] : object) out += "s" + std::to_string(k.size()) + ":" + k + "=" + v + ",";
    return out + "}";
  }
};

// Builds nothing: validation and the shape of the top-level object only.
struct NullBuilder {
  struct Value {};
  using Array = Value;
  using Object = Value;
  static Value null() { return {}; }
  static Value boolean(bool) { return {}; }
  static Value integer(std::string_view, bool&) { return {}; }
  static Value floating(double) { return {}; }
  static Value string(std::string&&) { return {}; }
  static Array begin_array() { return {}; }
  static void push(Array&, Value&&) {}
  static Value end_array(Array&&) { return {}; }
  static Object begin_object() { return {}; }
  static void put(Object&, std::string&&, Value&&) {}
  static Value end_object(Object&&) { return {}; }
  static constexpr bool kBuildsNothing = true;
};

template <class B>
constexpr bool builds_nothing() {
  if constexpr (requires { B::kBuildsNothing; }) {
    return B::kBuildsNothing;
  } else {
    return false;
  }
}

// ---- the decoder --------------------------------------------------------------------------

template <class B>
class Decoder {
 public:
  Decoder(std::string_view text, RecordShape* shape) : s_(text), shape_(shape) {}

  // Decides, from the decoded key, whether value and metadata are decoded (scan_record).
  const std::function<bool(const nlohmann::json&)>* wanted = nullptr;

  typename B::Value document() {
    skip_ws();
    if (shape_ && pos_ < s_.size()) shape_->top = s_[pos_];
    auto value = value_at(0);
    skip_ws();
    if (pos_ != s_.size()) fail("Extra data");
    return value;
  }

  bool last_int_overflows() const { return last_int_overflows_; }

 private:
  [[noreturn]] void fail(const char* what, std::size_t at) const {
    throw DecodeError(std::string(what) + " at column " + std::to_string(at + 1), at, false);
  }
  [[noreturn]] void fail(const char* what) const { fail(what, pos_); }

  void skip_ws() {
    while (pos_ < s_.size() && is_json_space(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  typename B::Value value_at(int depth) {
    if (pos_ >= s_.size()) fail("Expecting value");
    switch (s_[pos_]) {
      case '"': {
        ++pos_;
        if constexpr (builds_nothing<B>()) {
          if (depth > 0) {  // only top-level member names are needed
            skip_string_body();
            return B::null();
          }
        }
        return B::string(string_body());
      }
      case '{':
        return object(depth + 1);
      case '[':
        return array(depth + 1);
      case 'n':
        if (literal("null")) return B::null();
        break;
      case 't':
        if (literal("true")) return B::boolean(true);
        break;
      case 'f':
        if (literal("false")) return B::boolean(false);
        break;
      case 'N':
        if (literal("NaN")) return B::floating(std::numeric_limits<double>::quiet_NaN());
        break;
      case 'I':
        if (literal("Infinity")) return B::floating(HUGE_VAL);
        break;
      case '-':
        if (literal("-Infinity")) return B::floating(-HUGE_VAL);
        break;
      default:
        break;
    }
    return number();
  }

  typename B::Value number() {
    std::size_t start = pos_, i = pos_;
    auto at = [&](std::size_t k) { return k < s_.size() ? static_cast<unsigned char>(s_[k]) : 0; };
    if (at(i) == '-') ++i;
    if (at(i) >= '1' && at(i) <= '9') {
      while (is_digit(at(i))) ++i;
    } else if (at(i) == '0') {
      ++i;
    } else {
      fail("Expecting value", start);
    }
    bool is_float = false;
    if (at(i) == '.' && is_digit(at(i + 1))) {
      is_float = true;
      i += 2;
      while (is_digit(at(i))) ++i;
    }
    if (at(i) == 'e' || at(i) == 'E') {
      std::size_t e_start = i++;
      if (at(i) == '-' || at(i) == '+') ++i;
      std::size_t digits_start = i;
      while (is_digit(at(i))) ++i;
      if (i > digits_start) {
        is_float = true;
      } else {
        i = e_start;  // "1e" or "1e+": the exponent is not part of the number
      }
    }
    pos_ = i;
    std::string_view text = s_.substr(start, i - start);
    if (is_float) return B::floating(parse_double(text));
    std::size_t digits = text.size() - (text.front() == '-' ? 1 : 0);
    if (digits > max_int_digits) {
      throw DecodeError("integer literal has " + std::to_string(digits) +
                            " digits, over Python's 4300-digit limit, at column " +
                            std::to_string(start + 1),
                        start, false);
    }
    bool overflows = false;
    auto value = B::integer(text, overflows);
    last_int_overflows_ = overflows;
    return value;
  }

  static int hex_value(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // Four hex digits at pos_; -1 when they are not.
  int hex4(std::size_t at) const {
    if (at + 4 > s_.size()) return -1;
    int v = 0;
    for (std::size_t k = at; k < at + 4; ++k) {
      int h = hex_value(static_cast<unsigned char>(s_[k]));
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    return v;
  }

  // The characters after an opening quote, up to and including the closing one: validated, and
  // with kDecode appended to `*out` as UTF-8 (without, for values nobody reads, `out` is unused).
  template <bool kDecode>
  void scan_string(std::string* out) {
    const std::size_t begin = pos_ - 1;
    while (true) {
      // The run of plain characters in one go.
      const std::size_t run = plain_run_end(s_, pos_);
      if constexpr (kDecode) append_latin1(*out, s_.substr(pos_, run - pos_));
      pos_ = run;
      if (pos_ >= s_.size()) fail("Unterminated string starting", begin);
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return;
      }
      if (c < 0x20) fail("Invalid control character");
      scan_escape<kDecode>(out, begin);
    }
  }

  // The backslash escape at pos_ of the string opened at `begin`: a letter, or \uXXXX (joined with
  // a \uXXXX low surrogate after a high one). Kept out of scan_string's loop, which most strings
  // leave without an escape.
  template <bool kDecode>
  [[gnu::noinline]] void scan_escape(std::string* out, std::size_t begin) {
    ++pos_;
    if (pos_ >= s_.size()) fail("Unterminated string starting", begin);
    const char e = s_[pos_];
    if (e != 'u') {
      const char decoded = unescaped(e);
      if (!decoded) fail("Invalid \\escape", pos_ - 1);
      if constexpr (kDecode) out->push_back(decoded);
      ++pos_;
      return;
    }
    const int cp = hex4(pos_ + 1);
    if (cp < 0) fail("Invalid \\uXXXX escape", pos_ - 1);
    pos_ += 5;
    char32_t code = static_cast<char32_t>(cp);
    if (code >= 0xD800 && code <= 0xDBFF && pos_ + 1 < s_.size() && s_[pos_] == '\\' &&
        s_[pos_ + 1] == 'u') {
      const int low = hex4(pos_ + 2);
      if (low < 0) fail("Invalid \\uXXXX escape", pos_);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        code = 0x10000 + ((code - 0xD800) << 10) + (static_cast<char32_t>(low) - 0xDC00);
        pos_ += 6;
      }
    }
    if constexpr (kDecode) append_utf8(*out, code);
  }

  std::string string_body() {
    std::string out;
    scan_string<true>(&out);
    return out;
  }
  void skip_string_body() { scan_string<false>(nullptr); }

  void enter(int depth) {
    if (depth > max_depth) {
      throw DecodeError("containers nested deeper than " + std::to_string(max_depth) +
                            " (Python raises RecursionError) at column " + std::to_string(pos_ + 1),
                        pos_, true);
    }
  }

  // After an object member or an array element: true at `close` (stepped over), else steps over
  // the ',' that must come and the white space after it.
  bool closes_after_item(char close) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == close) {
      ++pos_;
      return true;
    }
    if (pos_ >= s_.size() || s_[pos_] != ',') fail("Expecting ',' delimiter");
    ++pos_;
    skip_ws();
    return false;
  }

  typename B::Value object(int depth) {
    enter(depth);
    ++pos_;  // '{'
    auto obj = B::begin_object();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return B::end_object(std::move(obj));
    }
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] != '"')
        fail("Expecting property name enclosed in double quotes");
      ++pos_;
      std::string key;
      if constexpr (builds_nothing<B>()) {
        if (depth > 1) {
          skip_string_body();
        } else {
          key = string_body();
        }
      } else {
        key = string_body();
      }
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') fail("Expecting ':' delimiter");
      ++pos_;
      skip_ws();
      if constexpr (builds_nothing<B>()) {
        if (depth == 1 && shape_ && top_level_member(key)) {
          if (closes_after_item('}')) return B::end_object(std::move(obj));
          continue;
        }
      }
      auto value = value_at(depth);
      B::put(obj, std::move(key), std::move(value));
      if (closes_after_item('}')) return B::end_object(std::move(obj));
    }
  }

  // A member of the record object that the MLLOG parser reads: decoded in place (through a
  // building decoder over the same text) instead of skipped. Returns false for other members.
  bool top_level_member(const std::string& name) {
    std::optional<nlohmann::json>* slot = nullptr;
    if (name == "time_ms") {
      slot = &shape_->time_ms;
    } else if (name == "key") {
      slot = &shape_->key;
    } else if (name == "event_type") {
      slot = &shape_->event_type;
    } else if (name == "value" || name == "metadata") {
      const bool is_value = name == "value";
      std::size_t begin = pos_;
      auto& decoded = is_value ? shape_->value : shape_->metadata;
      if (want_) {
        decoded = decode_here();
      } else {
        value_at(1);
        decoded.reset();
      }
      (is_value ? shape_->value_text : shape_->metadata_text) = s_.substr(begin, pos_ - begin);
      return true;
    } else {
      return false;
    }
    bool overflows = false;
    *slot = decode_here(&overflows);
    if (slot == &shape_->time_ms) shape_->time_ms_int_overflows = overflows;
    if (slot == &shape_->key) want_ = !wanted || !*wanted || (*wanted)(**slot);
    return true;
  }

  nlohmann::json decode_here(bool* int_overflows = nullptr) {
    Decoder<JsonBuilder> inner(s_, nullptr);
    inner.pos_ = pos_;
    nlohmann::json value = inner.value_at(1);
    pos_ = inner.pos_;
    if (int_overflows) *int_overflows = value.is_number_float() && inner.last_int_overflows_;
    return value;
  }

  typename B::Value array(int depth) {
    enter(depth);
    ++pos_;  // '['
    auto arr = B::begin_array();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return B::end_array(std::move(arr));
    }
    while (true) {
      B::push(arr, value_at(depth));
      if (closes_after_item(']')) return B::end_array(std::move(arr));
    }
  }

  template <class>
  friend class Decoder;

  std::string_view s_;
  std::size_t pos_ = 0;
  RecordShape* shape_;
  bool want_ = true;  // value and metadata are decoded until a key says otherwise
  bool last_int_overflows_ = false;
};

}  // namespace

RecordShape scan_record(std::string_view text,
                        const std::function<bool(const nlohmann::json&)>& wanted) {
  RecordShape shape;
  Decoder<NullBuilder> decoder(text, &shape);
  decoder.wanted = &wanted;
  decoder.document();
  // A value or metadata member before the key (or a later key that changed the decision) was
  // skipped: decode it now from its text.
  bool want = !wanted || !shape.key || wanted(*shape.key);
  if (!want) {
    shape.value.reset();
    shape.metadata.reset();
  } else {
    if (shape.value_text && !shape.value) shape.value = loads(*shape.value_text);
    if (shape.metadata_text && !shape.metadata) shape.metadata = loads(*shape.metadata_text);
  }
  return shape;
}

nlohmann::json loads(std::string_view text, bool* int_overflows) {
  Decoder<JsonBuilder> decoder(text, nullptr);
  nlohmann::json value = decoder.document();
  if (int_overflows) *int_overflows = value.is_number_float() && decoder.last_int_overflows();
  return value;
}

std::string canonical(std::string_view text) {
  return Decoder<CanonicalBuilder>(text, nullptr).document();
}

}  // namespace mlbert::mllog::pyjson
