// Streaming MLLOG parser with the official checker's semantics (mlperf_logging 4.1.59 mlp_parser):
// the file is read as Latin-1 text with universal newlines; a line counts only if it contains
// ":::MLLOG ", and everything up to its LAST occurrence is dropped; the rest, stripped, is Python
// JSON. Memory stays bounded: one read buffer plus the current record, whatever the file size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <istream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mlbert::mllog {

// One MLLOG record. Strings hold the official checker's view of the text: each byte of the file is
// a Latin-1 character, re-encoded here as UTF-8 (ASCII is unchanged); \u escapes give their code
// point. `raw`, `value_text` and the record itself are valid only during the callback.
struct LogRecord {
  std::size_t line = 0;       // 1-based line of the file (universal newlines: \n, \r\n, \r)
  std::size_t index = 0;      // 0-based position among the MLLOG lines (the checker's `lineno`)
  std::int64_t time_ms = 0;   // `timestamp` truncated to an integer (0 when not finite)
  double timestamp = 0;       // float(time_ms) exactly as the official checker computes it
  std::string event_type;     // "" when the record has none (the official parser does not need it)
  std::string key;            // the key; for a non-string key, its JSON text
  bool key_is_string = true;  // a non-string key matches no rule (the checker skips the record)
  nlohmann::json value, metadata;  // null when ParseOptions asked for fields only
  bool payload_decoded = true;     // false when value and metadata were left undecoded
  std::string_view raw;            // the record from ":::MLLOG " on, trailing whitespace stripped
  std::string_view value_text;  // the JSON text of "value" inside `raw` (the last one if repeated)
};

// A line the official parser cannot turn into a record.
struct ParseError {
  std::size_t line = 0;
  std::size_t index = 0;
  std::string
      message;  // what is wrong and where: "invalid JSON at column 57: Expecting ',' delimiter"
  std::string_view raw;  // the record text, as in LogRecord::raw
  // The official checker lists a JSON error or a bad time_ms string as "Log lines had parsing
  // errors" and goes on; a missing field, a non-object record, a time_ms of the wrong type or too
  // large, or nesting past Python's recursion limit crash it instead (KeyError, TypeError, ...).
  // Either way its verdict is FAILED.
  bool official_checker_crashes = false;
};

// Thrown by the strict form (no error callback): "<source>:<line>: <message>".
class LogParseError : public std::runtime_error {
 public:
  LogParseError(std::string source, ParseError error);
  const ParseError& error() const { return error_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  ParseError error_;
};

struct ParseStats {
  std::uint64_t bytes = 0;
  std::size_t lines = 0;     // physical lines
  std::size_t records = 0;   // records delivered to the callback
  std::size_t filtered = 0;  // valid records left out by ParseOptions::wanted
  std::size_t errors = 0;    // lines that were not records
};

using RecordCallback = std::function<void(const LogRecord&)>;
using ErrorCallback = std::function<void(const ParseError&)>;

struct ParseOptions {
  enum class Want {
    skip,    // leave the record out (it is still validated and counted in ParseStats::filtered)
    fields,  // deliver it without decoding value and metadata (they stay null; value_text is set)
    all,     // deliver it decoded
  };
  // When set, says per key (the record's key, or its JSON text when not a string) how much of a
  // record to decode. Every record is still validated completely, so the errors reported are the
  // same; decoding only what a consumer reads is what makes a checker fast.
  std::function<Want(std::string_view key, bool key_is_string)> wanted;
};

// Calls `on_record` for every record in file order. Without `on_error`, the first bad MLLOG line
// throws LogParseError; with it, bad lines are reported there and parsing goes on.
// Reading failures (missing file, I/O error) throw std::runtime_error naming the file.
ParseStats for_each_record(std::istream& in, const RecordCallback& on_record,
                           const ErrorCallback& on_error = {},
                           std::string_view source_name = "<stream>",
                           const ParseOptions& options = {});
ParseStats for_each_record(const std::filesystem::path& file, const RecordCallback& on_record,
                           const ErrorCallback& on_error = {}, const ParseOptions& options = {});
// The same over text already in memory (used by tests and fuzzers).
ParseStats for_each_record_in(std::string_view text, const RecordCallback& on_record,
                              const ErrorCallback& on_error = {},
                              std::string_view source_name = "<memory>",
                              const ParseOptions& options = {});

// Files and streams are read in windows of this size: small enough that the buffer stays in cache
// and costs a fresh process few page faults (`mlbert check` of a 2 MiB log: 134 page faults with 64
// KiB, 185 with 256 KiB, and 40% more CPU time with 1 MiB), large enough that read() calls stay few
// (in-process, 64 to 256 KiB check that log equally fast).
inline constexpr std::size_t read_window_bytes = std::size_t{64} << 10;

// Largest record accepted (the text after ":::MLLOG "); longer ones are parse errors, so memory
// stays bounded even for a single huge line.
inline constexpr std::size_t max_record_bytes = std::size_t{64} << 20;

// A string of the log (Latin-1 characters as UTF-8) back to the bytes the file held; characters
// above U+00FF (from \u escapes) stay UTF-8.
std::string to_file_bytes(std::string_view logged);

}  // namespace mlbert::mllog
