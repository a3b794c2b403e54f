// MLLOG emitter: writes `:::MLLOG {...}` lines byte-identical to the official Python `mllog`
// (key order namespace, time_ms, event_type, key, value, metadata; json.dumps spacing and float
// repr). Values are nlohmann::ordered_json so metadata keys keep the caller's order, as Python
// dicts do; a plain nlohmann::json converts implicitly (its keys then come out sorted).
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mlperf_logging/log/mllog_constants.h"

#if __has_include(<source_location>)
#include <source_location>
#endif

namespace mlbert::mllog {

// std::source_location where the standard library provides it. Clang 14 with libstdc++ 12 (the
// fuzz build) lacks the builtin <source_location> needs, so there the same interface is made of
// __builtin_FILE/__builtin_LINE, which also take the caller's position as default arguments.
#if defined(__cpp_lib_source_location)
using SourceLocation = std::source_location;
#else
class SourceLocation {
 public:
  static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                          std::uint_least32_t line = __builtin_LINE()) noexcept {
    SourceLocation where;
    where.file_ = file;
    where.line_ = line;
    return where;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }

 private:
  const char* file_ = "";
  std::uint_least32_t line_ = 0;
};
#endif

using Json = nlohmann::ordered_json;

enum class EventType { point_in_time, interval_start, interval_end };
std::string_view to_string(EventType type);

// ---- Python-compatible encoding -------------------------------------------------------------

// `repr(float)` of CPython: shortest round-trip digits, exponent form below 1e-4 and from 1e16 on
// ("1e-06", "1e+16"), ".0" on integral values ("1271.0"), "inf", "-inf", "nan".
std::string python_float_repr(double value);

// `json.dumps(value)` with the defaults mllog uses: ", " and ": " separators, ensure_ascii (every
// non-ASCII code point as \uXXXX, surrogate pairs above U+FFFF), NaN/Infinity/-Infinity literals.
// Strings are read as UTF-8; a byte that is not part of valid UTF-8 is taken as its Latin-1 code
// point.
void append_python_json(std::string& out, const Json& value);
std::string python_json_dumps(const Json& value);

// One complete log line without the trailing newline: ":::MLLOG {"namespace": ..., "metadata":
// ...}".
std::string format_line(std::string_view ns, std::int64_t time_ms, EventType type,
                        std::string_view key, const Json& value, const Json& metadata);

// Milliseconds since the Unix epoch, as `int(time.time() * 1e3)`.
std::int64_t now_ms();

// The process rank from the launcher's environment (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK,
// SLURM_PROCID, RANK), or 0 when none is set.
int rank_from_environment();

// ---- Logger -----------------------------------------------------------------------------------

struct LoggerOptions {
  std::optional<std::filesystem::path> file;  // appended to, like Python's logging.FileHandler
  bool to_stdout = true;
  int rank = 0;             // this process's rank
  bool rank0_only = false;  // when set, ranks other than 0 write nothing
  std::string default_namespace;
  std::string root_dir;     // trimmed (with its '/') from the front of metadata.file
  bool clear_line = false;  // prefix every line with "\n" (Python's default_clear_line)
  // Also receives every line (newline included) under the logger's lock, after stdout; what it
  // throws reaches the caller of log(). For sinks that must check each write (a result file).
  std::function<void(std::string_view line)> line_sink;
};

// Per-call overrides of Python's optional `namespace`, `time_ms` and `clear_line` arguments.
struct EventOptions {
  std::optional<std::int64_t> time_ms;
  std::optional<std::string> ns;
  std::optional<bool> clear_line;
};

// Thread-safe: each line is written whole under a lock and flushed, so lines from several threads
// never interleave. Metadata `file`/`lineno` come from the call site; caller metadata keys follow
// in the caller's order and override them (with Python's "Metadata fields overridden" warning
// line).
class Logger {
 public:
  Logger();
  explicit Logger(LoggerOptions options);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  void event(std::string_view key, const Json& value = nullptr, const Json& metadata = nullptr,
             SourceLocation where = SourceLocation::current()) {
    log(EventType::point_in_time, key, value, metadata, {}, where);
  }
  void start(std::string_view key, const Json& value = nullptr, const Json& metadata = nullptr,
             SourceLocation where = SourceLocation::current()) {
    log(EventType::interval_start, key, value, metadata, {}, where);
  }
  void end(std::string_view key, const Json& value = nullptr, const Json& metadata = nullptr,
           SourceLocation where = SourceLocation::current()) {
    log(EventType::interval_end, key, value, metadata, {}, where);
  }
  // The general form: explicit event type and per-call overrides.
  void log(EventType type, std::string_view key, const Json& value, const Json& metadata,
           const EventOptions& options, SourceLocation where = SourceLocation::current());

  // Replaces the options (closing and reopening the file sink) under the logger's lock.
  void reconfigure(LoggerOptions options);

  // False when rank0_only is set on a rank other than 0: callers may skip building values.
  bool enabled() const;

 private:
  void open_sinks();                         // with mutex_ held
  void write_line(const std::string& line);  // with mutex_ held
  // Throws "mllog: <file>: <what>: <errno's text>".
  [[noreturn]] void sink_error(const std::string& what) const;

  mutable std::mutex mutex_;
  LoggerOptions options_;
  std::FILE* file_ = nullptr;
  std::filesystem::path file_path_;  // what file_ has open
};

// The process-wide logger (the one piece of global mutable state the project allows), like
// Python's `mllog.get_mllogger()`; `mllog.config(...)` is `default_logger().reconfigure(...)`.
Logger& default_logger();

}  // namespace mlbert::mllog
