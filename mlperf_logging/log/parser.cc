// Streaming MLLOG parser (see parser.h). The reader finds the next ":::MLLOG " and counts the line
// ends before it in one pass (token_scan.h), so text without records streams at memory speed and
// only lines holding a token are looked at one by one; a partial line is carried to the next
// buffer, compacted to what can still matter when it grows large.
#include "mlperf_logging/log/parser.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/input_file.h"
#include "mlperf_logging/log/python_float.h"
#include "mlperf_logging/log/python_json.h"
#include "mlperf_logging/log/token_scan.h"

namespace mlbert::mllog {
namespace {

constexpr std::string_view kToken = kMllogToken;
// A partial line longer than this is compacted to the bytes that can still matter.
constexpr std::size_t kCompactAt = std::size_t{4} << 20;

// Python's str.strip() characters among Latin-1 code points.
bool is_latin1_space(unsigned char c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0;
}

std::string describe_json_type(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string describe_top(char top) {
  switch (top) {
    case '[':
      return "an array";
    case '"':
      return "a string";
    case 'n':
      return "null";
    case 't':
    case 'f':
      return "a boolean";
    default:
      return "a number";
  }
}

// Turns the text after the last token into a record, or explains why the official parser cannot.
// The whole JSON is validated first without building anything; then only the fields the official
// parser reads are decoded, in its order (which decides crash versus parse error), and value and
// metadata only for records the caller wants.
class RecordBuilder {
 public:
  enum class Outcome { record, filtered, error };

  Outcome build(std::string_view raw, std::size_t line, std::size_t index,
                const ParseOptions& options, LogRecord& record, ParseError& error) {
    record = LogRecord{};
    record.line = line;
    record.index = index;
    record.raw = raw;
    error = ParseError{};
    error.line = line;
    error.index = index;
    error.raw = raw;

    std::string_view payload = raw.substr(kToken.size());
    if (payload.size() > max_record_bytes) {
      error.message = "record of " + std::to_string(payload.size()) + " bytes is longer than the " +
                      std::to_string(max_record_bytes >> 20) + " MiB limit";
      return Outcome::error;
    }
    pyjson::RecordShape shape;
    ParseOptions::Want want = ParseOptions::Want::all;
    std::function<bool(const nlohmann::json&)> decide;
    if (options.wanted) {
      decide = [&](const nlohmann::json& key) {
        want = key.is_string() ? options.wanted(key.get_ref<const std::string&>(), true)
                               : options.wanted(json_text(key), false);
        return want == ParseOptions::Want::all;
      };
    }
    try {
      shape = pyjson::scan_record(payload, decide);
    } catch (const pyjson::DecodeError& e) {
      // Columns count from the start of the record text (":::MLLOG " is 9 characters).
      error.message = std::string("invalid JSON: ") + e.what();
      auto at = error.message.rfind("at column ");
      if (at != std::string::npos)
        error.message = error.message.substr(0, at) + "at column " +
                        std::to_string(e.offset() + kToken.size() + 1) + " of the record";
      error.official_checker_crashes = e.recursion();
      return Outcome::error;
    }
    if (shape.top != '{') {
      error.message = "the record is " + describe_top(shape.top) + ", not a JSON object";
      error.official_checker_crashes = true;  // TypeError on m['time_ms']
      return Outcome::error;
    }
    if (!shape.time_ms) return missing(error, "time_ms");
    if (!timestamp_of(*shape.time_ms, shape.time_ms_int_overflows, record.timestamp, error))
      return Outcome::error;
    record.time_ms = std::isfinite(record.timestamp) && std::fabs(record.timestamp) < 9.2e18
                         ? static_cast<std::int64_t>(record.timestamp)
                         : 0;
    if (!shape.key) return missing(error, "key");
    if (!shape.value_text) return missing(error, "value");
    if (!shape.metadata_text) return missing(error, "metadata");

    if (shape.key->is_string()) {
      record.key = std::move(shape.key->get_ref<std::string&>());
    } else {
      record.key = json_text(*shape.key);
      record.key_is_string = false;
    }
    if (want == ParseOptions::Want::skip) return Outcome::filtered;
    if (shape.event_type) {
      record.event_type = shape.event_type->is_string()
                              ? std::move(shape.event_type->get_ref<std::string&>())
                              : json_text(*shape.event_type);
    }
    record.payload_decoded = want == ParseOptions::Want::all;
    if (record.payload_decoded) {
      record.value = std::move(*shape.value);
      record.metadata = std::move(*shape.metadata);
    }
    record.value_text = *shape.value_text;
    return Outcome::record;
  }

 private:
  static Outcome missing(ParseError& error, const char* field) {
    error.message = std::string("missing field \"") + field + "\"";
    error.official_checker_crashes = true;  // KeyError
    return Outcome::error;
  }

  // float(m['time_ms']) with Python's outcomes.
  static bool timestamp_of(const nlohmann::json& t, bool int_overflows, double& out,
                           ParseError& error) {
    switch (t.type()) {
      case nlohmann::json::value_t::number_integer:
        out = static_cast<double>(t.get<std::int64_t>());
        return true;
      case nlohmann::json::value_t::number_unsigned:
        out = static_cast<double>(t.get<std::uint64_t>());
        return true;
      case nlohmann::json::value_t::number_float:
        if (int_overflows) {
          error.message = "time_ms is an integer too large for a float";
          error.official_checker_crashes = true;  // OverflowError
          return false;
        }
        out = t.get<double>();
        return true;
      case nlohmann::json::value_t::boolean:
        out = t.get<bool>() ? 1.0 : 0.0;
        return true;
      case nlohmann::json::value_t::string: {
        auto v = pyjson::float_from_string(t.get_ref<const std::string&>());
        if (!v) {
          error.message = "time_ms " + json_text(t) + " is not a number";
          return false;  // ValueError: listed as a parsing error
        }
        out = *v;
        return true;
      }
      default:
        error.message = "time_ms is " + describe_json_type(t) + ", not a number";
        error.official_checker_crashes = true;  // TypeError
        return false;
    }
  }
};

// The line machinery shared by every input kind.
class Reader {
 public:
  Reader(const RecordCallback& on_record, const ErrorCallback& on_error, std::string source,
         const ParseOptions& options)
      : on_record_(on_record), on_error_(on_error), source_(std::move(source)), options_(options) {}

  // Feeds [data, data + size) (which starts with the carried partial line) and consumes the
  // complete lines (all of them when `eof`). Returns the offset from which the bytes must be kept
  // for the next call: the partial last line, or the part of it that can still matter.
  std::size_t feed(const char* data, std::size_t size, bool eof) {
    const char* end = data + size;
    const char* pos = data;
    if (pending_cr_ && pos < end) {
      if (*pos == '\n') ++pos;  // the second half of a "\r\n" split across reads
      pending_cr_ = false;
    }
    const char* line_start = pos;
    while (pos < end) {
      const TokenScan scan = scan_to_token(pos, end);
      const char* token = scan.token;
      const char* region_end = token ? token : end;
      // Complete lines without a token. Without '\r' among them they are only counted (the first
      // line ends on its own, in case it closes an overlong record).
      if (!scan.has_cr && !overlong_ && scan.newlines > 0) {
        const char* last_nl = static_cast<const char*>(
            memrchr(pos, '\n', static_cast<std::size_t>(region_end - pos)));
        stats_.lines += scan.newlines;
        pos = last_nl + 1;
        line_start = pos;
      }
      while (pos < region_end) {
        const char* nl = next_line_end(pos, region_end, scan.has_cr);
        if (!nl) {
          pos = region_end;
          break;
        }
        pos = consume_line_end(nl, end);
        end_line_without_record();
        line_start = pos;
      }
      if (!token) break;
      // The line holding the token: find its end and the last token on it.
      const char* line_end = next_line_end(token, end, /*has_cr=*/true);
      if (!line_end && !eof) break;  // finish it with the next read
      if (!line_end) line_end = end;
      const char* last = token;
      for (const char* t = find_token(token + 1, line_end); t; t = find_token(t + 1, line_end))
        last = t;
      emit(std::string_view(last, static_cast<std::size_t>(line_end - last)));
      pos = line_end < end ? consume_line_end(line_end, end) : end;
      ++stats_.lines;
      overlong_ = false;
      line_start = pos;
    }

    // What is left is one partial line: [line_start, end).
    if (eof) {
      if (line_start < end || overlong_) {
        // A last line without a terminator; records were emitted above, so this holds no token.
        if (overlong_) report_overlong();
        ++stats_.lines;
      }
      return size;
    }
    if (static_cast<std::size_t>(end - line_start) > kCompactAt)
      line_start = compact(line_start, end);
    return static_cast<std::size_t>(line_start - data);
  }

  ParseStats stats() const { return stats_; }
  ParseStats& mutable_stats() { return stats_; }

 private:
  // The first '\n' or '\r' in [from, to), or nullptr.
  static const char* next_line_end(const char* from, const char* to, bool has_cr) {
    const char* nl =
        static_cast<const char*>(std::memchr(from, '\n', static_cast<std::size_t>(to - from)));
    if (!has_cr) return nl;
    const char* cr = static_cast<const char*>(
        std::memchr(from, '\r', static_cast<std::size_t>((nl ? nl : to) - from)));
    return cr ? cr : nl;
  }
  // Steps over the terminator at `at` ("\r\n" counts once); remembers a '\r' that ends the buffer.
  const char* consume_line_end(const char* at, const char* end) {
    if (*at == '\r') {
      if (at + 1 < end) return at[1] == '\n' ? at + 2 : at + 1;
      pending_cr_ = true;
    }
    return at + 1;
  }
  void end_line_without_record() {
    if (overlong_) report_overlong();
    overlong_ = false;
    ++stats_.lines;
  }

  // Keeps only what can still matter of a long partial line: the text after its last token, or the
  // last bytes that could begin a token.
  // Returns where the kept part of the partial line [b, e) starts.
  const char* compact(const char* b, const char* e) {
    const char* last = nullptr;
    for (const char* t = find_token(b, e); t; t = find_token(t + 1, e)) last = t;
    if (last && static_cast<std::size_t>(e - last) - kToken.size() <= max_record_bytes) {
      overlong_ = false;
      return last;
    }
    const char* keep = e - (kToken.size() - 1);
    if (last) {
      overlong_ = true;
      overlong_bytes_ = static_cast<std::size_t>(e - last) - kToken.size();
    } else if (overlong_) {
      overlong_bytes_ += static_cast<std::size_t>(keep - b);
    }
    return keep;
  }

  void report_overlong() {
    ParseError error;
    error.line = stats_.lines + 1;
    error.index = index_++;
    error.message = "record longer than the " + std::to_string(max_record_bytes >> 20) +
                    " MiB limit (over " + std::to_string(overlong_bytes_) + " bytes)";
    deliver_error(error);
  }

  void emit(std::string_view raw) {
    // Python strips trailing whitespace (its own, wider, set) before reading the JSON.
    while (raw.size() > 0 && is_latin1_space(static_cast<unsigned char>(raw.back())))
      raw.remove_suffix(1);
    if (raw.size() < kToken.size()) {  // only whitespace followed the token
      ParseError error;
      error.line = stats_.lines + 1;
      error.index = index_++;
      error.raw = raw;
      error.message = "nothing follows \":::MLLOG\"";
      deliver_error(error);
      return;
    }
    switch (builder_.build(raw, stats_.lines + 1, index_++, options_, record_, error_)) {
      case RecordBuilder::Outcome::record:
        ++stats_.records;
        on_record_(record_);
        break;
      case RecordBuilder::Outcome::filtered:
        ++stats_.filtered;
        break;
      case RecordBuilder::Outcome::error:
        deliver_error(error_);
        break;
    }
  }

  void deliver_error(const ParseError& error) {
    ++stats_.errors;
    if (!on_error_) throw LogParseError(source_, error);
    on_error_(error);
  }

  const RecordCallback& on_record_;
  const ErrorCallback& on_error_;
  std::string source_;
  const ParseOptions& options_;
  RecordBuilder builder_;
  LogRecord record_;
  ParseError error_;
  ParseStats stats_;
  std::size_t index_ = 0;
  bool pending_cr_ = false;
  bool overlong_ = false;
  std::size_t overlong_bytes_ = 0;
};

// A growable byte buffer that, unlike std::string, does not zero what read() overwrites anyway.
class ReadBuffer {
 public:
  explicit ReadBuffer(std::size_t capacity) : data_(new char[capacity]), capacity_(capacity) {}
  char* data() { return data_.get(); }
  std::size_t size() const { return size_; }
  // Room for `n` more bytes after the current ones.
  char* reserve_tail(std::size_t n) {
    if (size_ + n > capacity_) {
      std::size_t capacity = std::max(capacity_ * 2, size_ + n);
      std::unique_ptr<char[]> bigger(new char[capacity]);
      std::memcpy(bigger.get(), data_.get(), size_);
      data_ = std::move(bigger);
      capacity_ = capacity;
    }
    return data_.get() + size_;
  }
  void grow(std::size_t n) { size_ += n; }
  void drop_front(std::size_t n) {
    std::memmove(data_.get(), data_.get() + n, size_ - n);
    size_ -= n;
  }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t capacity_;
  std::size_t size_ = 0;
};

template <class ReadFn>
ParseStats drive(ReadFn&& read_some, std::size_t chunk, const RecordCallback& on_record,
                 const ErrorCallback& on_error, std::string source, const ParseOptions& options) {
  Reader reader(on_record, on_error, std::move(source), options);
  ReadBuffer buffer(chunk + 1);
  std::uint64_t bytes = 0;
  while (true) {
    // Fill the window behind the carried partial line; a partial line of more than half of it
    // (a long record) grows the buffer by a whole window instead.
    const std::size_t want = buffer.size() <= chunk / 2 ? chunk - buffer.size() : chunk;
    std::size_t got = read_some(buffer.reserve_tail(want), want);
    buffer.grow(got);
    bytes += got;
    bool eof = got == 0;
    buffer.drop_front(reader.feed(buffer.data(), buffer.size(), eof));
    if (eof) break;
  }
  reader.mutable_stats().bytes = bytes;
  return reader.stats();
}

}  // namespace

LogParseError::LogParseError(std::string source, ParseError error)
    : std::runtime_error(source + ":" + std::to_string(error.line) + ": " + error.message),
      source_(std::move(source)),
      error_(std::move(error)) {}

ParseStats for_each_record(std::istream& in, const RecordCallback& on_record,
                           const ErrorCallback& on_error, std::string_view source_name,
                           const ParseOptions& options) {
  return drive(
      [&](char* dst, std::size_t n) -> std::size_t {
        if (!in) return 0;
        in.read(dst, static_cast<std::streamsize>(n));
        if (in.bad()) throw std::runtime_error(std::string(source_name) + ": read error");
        return static_cast<std::size_t>(in.gcount());
      },
      read_window_bytes, on_record, on_error, std::string(source_name), options);
}

ParseStats for_each_record(const std::filesystem::path& file, const RecordCallback& on_record,
                           const ErrorCallback& on_error, const ParseOptions& options) {
  // A FIFO or a device named result_9.txt would block or never end: only regular files are read.
  const int fd = files::open_regular_file(file);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    throw std::runtime_error(file.string() + ": cannot stat: " + std::strerror(errno));
  // Small logs are read in one piece; larger ones stream through a fixed-size window.
  const std::size_t chunk = static_cast<std::uint64_t>(info.st_size) < read_window_bytes
                                ? static_cast<std::size_t>(info.st_size) + 1
                                : read_window_bytes;
  return drive(
      [&](char* dst, std::size_t n) -> std::size_t {
        while (true) {
          ssize_t got = ::read(fd, dst, n);
          if (got >= 0) return static_cast<std::size_t>(got);
          if (errno != EINTR)
            throw std::runtime_error(file.string() + ": read error: " + std::strerror(errno));
        }
      },
      chunk, on_record, on_error, file.string(), options);
}

ParseStats for_each_record_in(std::string_view text, const RecordCallback& on_record,
                              const ErrorCallback& on_error, std::string_view source_name,
                              const ParseOptions& options) {
  // The text is in memory already: one buffer, one pass, no chunking.
  Reader reader(on_record, on_error, std::string(source_name), options);
  reader.feed(text.data(), text.size(), /*eof=*/true);
  reader.mutable_stats().bytes = text.size();
  return reader.stats();
}

std::string to_file_bytes(std::string_view logged) {
  std::string out;
  out.reserve(logged.size());
  for (std::size_t i = 0; i < logged.size(); ++i) {
    auto c = static_cast<unsigned char>(logged[i]);
    if ((c == 0xC2 || c == 0xC3) && i + 1 < logged.size() &&
        (static_cast<unsigned char>(logged[i + 1]) & 0xC0) == 0x80) {
      out.push_back(static_cast<char>(((c & 0x03) << 6) |
                                      (static_cast<unsigned char>(logged[i + 1]) & 0x3F)));
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace mlbert::mllog
