// MLLOG emitter (see mllog.h): Python-identical line encoding and the thread-safe Logger.
// Lines are encoded completely before the lock is taken; the lock only covers the writes.
#include "mlperf_logging/log/mllog.h"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace mlbert::mllog {

std::string_view to_string(EventType type) {
  switch (type) {
    case EventType::point_in_time:
      return constants::point_in_time;
    case EventType::interval_start:
      return constants::interval_start;
    case EventType::interval_end:
      return constants::interval_end;
  }
  return constants::point_in_time;
}

// ---- Python float repr -----------------------------------------------------------------------

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";

  // Shortest round-trip digits, as CPython's dtoa mode 0: "d.ddddde[+-]x".
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<std::size_t>(end - buf));
  bool negative = sci.front() == '-';
  if (negative) sci.remove_prefix(1);
  std::size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos))
    if (c != '.') digits.push_back(c);
  int exponent = 0;  // decimal exponent of the first digit
  std::string_view exp_text = sci.substr(e_pos + 1);
  if (!exp_text.empty() && exp_text.front() == '+') exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exponent);
  const int decpt = exponent + 1;  // digits[0:decpt] is the integer part
  const int ndigits = static_cast<int>(digits.size());

  std::string out = negative ? "-" : "";
  if (decpt <= -4 || decpt > 16) {  // CPython's repr switches to exponent form here
    out += digits[0];
    if (ndigits > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    out += 'e';
    out += exponent < 0 ? '-' : '+';
    int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude < 10) out += '0';
    out += std::to_string(magnitude);
  } else if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-decpt), '0');
    out += digits;
  } else if (decpt >= ndigits) {
    out += digits;
    out.append(static_cast<std::size_t>(decpt - ndigits), '0');
    out += ".0";
  } else {
    out.append(digits, 0, static_cast<std::size_t>(decpt));
    out += '.';
    out.append(digits, static_cast<std::size_t>(decpt), std::string::npos);
  }
  return out;
}

// ---- json.dumps --------------------------------------------------------------------------------

namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_u_escape(std::string& out, unsigned cp) {
  out += "\\u";
  out += kHex[(cp >> 12) & 0xF];
  out += kHex[(cp >> 8) & 0xF];
  out += kHex[(cp >> 4) & 0xF];
  out += kHex[cp & 0xF];
}

// Decodes UTF-8 (three-byte surrogates included, as Python strings may hold them); a byte that
// starts no valid sequence stands for its Latin-1 code point.
char32_t decode_code_point(std::string_view s, std::size_t& i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](std::size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  unsigned char b0 = byte(i);
  if (b0 >= 0xC2 && b0 < 0xE0 && cont(i + 1)) {
    char32_t cp = ((b0 & 0x1Fu) << 6) | (byte(i + 1) & 0x3Fu);
    i += 2;
    return cp;
  }
  if (b0 >= 0xE0 && b0 < 0xF0 && cont(i + 1) && cont(i + 2)) {
    char32_t cp = ((b0 & 0x0Fu) << 12) | ((byte(i + 1) & 0x3Fu) << 6) | (byte(i + 2) & 0x3Fu);
    if (cp >= 0x800) {
      i += 3;
      return cp;
    }
  }
  if (b0 >= 0xF0 && b0 < 0xF5 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
    char32_t cp = ((b0 & 0x07u) << 18) | ((byte(i + 1) & 0x3Fu) << 12) |
                  ((byte(i + 2) & 0x3Fu) << 6) | (byte(i + 3) & 0x3Fu);
    if (cp >= 0x10000 && cp <= 0x10FFFF) {
      i += 4;
      return cp;
    }
  }
  ++i;
  return b0;
}

void append_python_string(std::string& out, std::string_view s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {  // the common case: printable ASCII
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    char32_t cp = decode_code_point(s, i);
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (cp >= 0x10000) {  // ensure_ascii writes a surrogate pair
          char32_t v = cp - 0x10000;
          append_u_escape(out, 0xD800 | static_cast<unsigned>(v >> 10));
          append_u_escape(out, 0xDC00 | static_cast<unsigned>(v & 0x3FF));
        } else {
          append_u_escape(out, static_cast<unsigned>(cp));
        }
    }
  }
  out += '"';
}

}  // namespace

void append_python_json(std::string& out, const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      out += "null";
      break;
    case Json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      break;
    case Json::value_t::number_integer:
      out += std::to_string(value.get<std::int64_t>());
      break;
    case Json::value_t::number_unsigned:
      out += std::to_string(value.get<std::uint64_t>());
      break;
    case Json::value_t::number_float: {
      double d = value.get<double>();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d > 0 ? "Infinity" : "-Infinity";
      } else {
        out += python_float_repr(d);
      }
      break;
    }
    case Json::value_t::string:
      append_python_string(out, value.get_ref<const std::string&>());
      break;
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& item : value) {
        if (!first) out += ", ";
        first = false;
        append_python_json(out, item);
      }
      out += ']';
      break;
    }
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, v] : value.items()) {
        if (!first) out += ", ";
        first = false;
        append_python_string(out, k);
        out += ": ";
        append_python_json(out, v);
      }
      out += '}';
      break;
    }
    case Json::value_t::binary:
    case Json::value_t::discarded:
      throw std::invalid_argument(
          "mllog: binary and discarded JSON values have no Python encoding");
  }
}

std::string python_json_dumps(const Json& value) {
  std::string out;
  append_python_json(out, value);
  return out;
}

std::string format_line(std::string_view ns, std::int64_t time_ms, EventType type,
                        std::string_view key, const Json& value, const Json& metadata) {
  std::string out = ":::MLLOG {\"namespace\": ";
  append_python_string(out, ns);
  out += ", \"time_ms\": ";
  out += std::to_string(time_ms);
  out += ", \"event_type\": ";
  append_python_string(out, to_string(type));
  out += ", \"key\": ";
  append_python_string(out, key);
  out += ", \"value\": ";
  append_python_json(out, value);
  out += ", \"metadata\": ";
  append_python_json(out, metadata);
  out += '}';
  return out;
}

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int rank_from_environment() {
  for (const char* name :
       {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK"}) {
    if (const char* v = std::getenv(name); v && *v) {
      int rank = 0;
      auto [ptr, ec] = std::from_chars(v, v + std::strlen(v), rank);
      if (ec == std::errc()) return rank;
    }
  }
  return 0;
}

// ---- Logger
// --------------------------------------------------------------------------------------

Logger::Logger() : Logger(LoggerOptions{}) {}

Logger::Logger(LoggerOptions options) : options_(std::move(options)) {
  open_sinks();
}

Logger::~Logger() {
  if (file_) std::fclose(file_);
}

void Logger::sink_error(const std::string& what) const {
  const int error = errno;
  throw std::runtime_error("mllog: " + file_path_.string() + ": " + what +
                           (error ? std::string(": ") + std::strerror(error) : std::string()));
}

void Logger::open_sinks() {
  if (file_) {
    std::FILE* closing = std::exchange(file_, nullptr);
    errno = 0;
    if (std::fclose(closing) != 0) sink_error("cannot close it");
  }
  bool active = !options_.rank0_only || options_.rank == 0;
  if (active && options_.file) {
    // Appended to, not written atomically: a log that a crash cuts short must keep its lines,
    // as Python's FileHandler keeps them.
    file_path_ = *options_.file;
    file_ = std::fopen(file_path_.c_str(), "a");
    if (!file_) sink_error("cannot open it");
  }
}

void Logger::reconfigure(LoggerOptions options) {
  std::lock_guard lock(mutex_);
  options_ = std::move(options);
  open_sinks();
}

bool Logger::enabled() const {
  std::lock_guard lock(mutex_);
  return !options_.rank0_only || options_.rank == 0;
}

void Logger::write_line(const std::string& line) {
  // Standard output's errors are left to the command's final check of stdout (common/cli.h).
  if (options_.to_stdout) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  }
  if (file_) {
    errno = 0;
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
      sink_error("cannot write it");
  }
  if (options_.line_sink) options_.line_sink(line);
}

void Logger::log(EventType type, std::string_view key, const Json& value, const Json& metadata,
                 const EventOptions& call, SourceLocation where) {
  // Copy what the line needs under the lock, then encode outside it.
  LoggerOptions snapshot;
  {
    std::lock_guard lock(mutex_);
    if (options_.rank0_only && options_.rank != 0) return;
    snapshot.default_namespace = options_.default_namespace;
    snapshot.root_dir = options_.root_dir;
    snapshot.clear_line = options_.clear_line;
  }
  const std::string ns = call.ns ? *call.ns : snapshot.default_namespace;
  const std::int64_t time_ms = call.time_ms ? *call.time_ms : now_ms();
  const bool clear_line = call.clear_line ? *call.clear_line : snapshot.clear_line;

  std::string file = where.file_name();
  if (!snapshot.root_dir.empty()) {
    std::string prefix = snapshot.root_dir + "/";
    if (file.compare(0, prefix.size(), prefix) == 0) file.erase(0, prefix.size());
  }
  Json merged = Json::object();
  merged["file"] = file;
  merged["lineno"] = where.line();

  // Python's "if metadata:" skips None and empty containers, warns about other non-dicts, and
  // warns about (then applies) overrides of file/lineno.
  std::string warnings;
  bool truthy = !metadata.is_null() && !(metadata.is_structured() && metadata.empty()) &&
                !(metadata.is_string() && metadata.get_ref<const std::string&>().empty()) &&
                !(metadata.is_boolean() && !metadata.get<bool>()) &&
                !(metadata.is_number() && metadata.get<double>() == 0);
  if (truthy) {
    if (!metadata.is_object()) {
      warnings += "\nMetadata is not dictionary, ignored.\n";
    } else {
      std::string overlap;
      for (const char* field : {"file", "lineno"}) {
        if (metadata.contains(field))
          overlap += overlap.empty() ? field : std::string(", ") + field;
      }
      if (!overlap.empty()) warnings += "\nMetadata fields overridden: " + overlap + "\n";
      for (const auto& [k, v] : metadata.items()) merged[k] = v;
    }
  }
  std::string line = warnings;
  if (clear_line) line += '\n';
  line += format_line(ns, time_ms, type, key, value, merged);
  line += '\n';

  std::lock_guard lock(mutex_);
  write_line(line);
}

Logger& default_logger() {
  static Logger logger;
  return logger;
}

}  // namespace mlbert::mllog
