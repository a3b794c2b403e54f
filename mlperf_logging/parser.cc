// Streaming MLLOG parser (see parser.h). The reader searches each buffer for ":::MLLOG " first and
// only counts line ends in between, so text without records streams at memchr speed; a partial
// line is carried to the next buffer, compacted to what can still matter when it grows large.
#include "mlperf_logging/parser.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "mlperf_logging/python_json.h"

namespace mlbert::mllog {
namespace {

constexpr std::string_view kToken = ":::MLLOG ";
constexpr std::size_t kChunk = std::size_t{1} << 20;
// A partial line longer than this is compacted to the bytes that can still matter.
constexpr std::size_t kCompactAt = std::size_t{4} << 20;

// Python's str.strip() characters among Latin-1 code points.
bool is_latin1_space(unsigned char c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0;
}

const char* find_token(const char* begin, const char* end) {
  if (end - begin < static_cast<std::ptrdiff_t>(kToken.size())) return nullptr;
  return static_cast<const char*>(
      memmem(begin, static_cast<std::size_t>(end - begin), kToken.data(), kToken.size()));
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

// Turns the text after the last token into a record, or explains why the official parser cannot.
class RecordBuilder {
 public:
  // `raw` starts at the token; returns false and fills `error` when the line is not a record.
  bool build(std::string_view raw, std::size_t line, std::size_t index, LogRecord& record,
             ParseError& error) {
    record = LogRecord{};
    record.line = line;
    record.index = index;
    record.raw = raw;
    error = ParseError{};
    error.line = line;
    error.index = index;
    error.raw = raw;

    std::string_view payload = raw.substr(kToken.size());
    if (payload.empty()) {
      error.message = "nothing follows \":::MLLOG\"";
      return false;
    }
    if (payload.size() > max_record_bytes) {
      error.message = "record of " + std::to_string(payload.size()) + " bytes is longer than the " +
                      std::to_string(max_record_bytes >> 20) + " MiB limit";
      return false;
    }
    nlohmann::json m;
    pyjson::TopLevelSpans spans;
    try {
      m = pyjson::loads(payload, &spans);
    } catch (const pyjson::DecodeError& e) {
      // Columns count from the start of the record text (":::MLLOG " is 9 characters).
      error.message = std::string("invalid JSON: ") + e.what();
      auto at = error.message.rfind("at column ");
      if (at != std::string::npos)
        error.message = error.message.substr(0, at) + "at column " +
                        std::to_string(e.offset() + kToken.size() + 1) + " of the record";
      error.official_checker_crashes = e.recursion();
      return false;
    }
    if (!m.is_object()) {
      error.message = "the record is " + describe_json_type(m) + ", not a JSON object";
      error.official_checker_crashes = true;  // TypeError on m['time_ms']
      return false;
    }
    auto& obj = m.get_ref<nlohmann::json::object_t&>();
    // Field by field in the official parser's order, which decides crash versus parse error.
    auto time_it = obj.find("time_ms");
    if (time_it == obj.end()) return missing(error, "time_ms");
    if (!timestamp_of(time_it->second, spans, record.timestamp, error)) return false;
    record.time_ms = std::isfinite(record.timestamp) && std::fabs(record.timestamp) < 9.2e18
                         ? static_cast<std::int64_t>(record.timestamp)
                         : 0;
    auto key_it = obj.find("key");
    if (key_it == obj.end()) return missing(error, "key");
    auto value_it = obj.find("value");
    if (value_it == obj.end()) return missing(error, "value");
    auto meta_it = obj.find("metadata");
    if (meta_it == obj.end()) return missing(error, "metadata");

    if (key_it->second.is_string()) {
      record.key = std::move(key_it->second.get_ref<std::string&>());
    } else {
      record.key = json_text(key_it->second);
      record.key_is_string = false;
    }
    if (auto et = obj.find("event_type"); et != obj.end())
      record.event_type = et->second.is_string() ? std::move(et->second.get_ref<std::string&>())
                                                 : json_text(et->second);
    record.value = std::move(value_it->second);
    record.metadata = std::move(meta_it->second);
    // value_text is a view into raw: map it from the payload view.
    record.value_text = spans.value_text;
    return true;
  }

 private:
  static bool missing(ParseError& error, const char* field) {
    error.message = std::string("missing field \"") + field + "\"";
    error.official_checker_crashes = true;  // KeyError
    return false;
  }

  // float(m['time_ms']) with Python's outcomes.
  static bool timestamp_of(const nlohmann::json& t, const pyjson::TopLevelSpans& spans, double& out,
                           ParseError& error) {
    switch (t.type()) {
      case nlohmann::json::value_t::number_integer:
        out = static_cast<double>(t.get<std::int64_t>());
        return true;
      case nlohmann::json::value_t::number_unsigned:
        out = static_cast<double>(t.get<std::uint64_t>());
        return true;
      case nlohmann::json::value_t::number_float:
        if (spans.time_ms_int_overflows) {
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
  Reader(const RecordCallback& on_record, const ErrorCallback& on_error, std::string source)
      : on_record_(on_record), on_error_(on_error), source_(std::move(source)) {}

  // Feeds `data` (which starts with the carried partial line); consumes complete lines and keeps
  // the partial last one (all of it when `eof`).
  void feed(std::string& buffer, bool eof) {
    const char* data = buffer.data();
    const char* end = data + buffer.size();
    const char* pos = data;
    if (pending_cr_ && pos < end) {
      if (*pos == '\n') ++pos;  // the second half of a "\r\n" split across reads
      pending_cr_ = false;
    }
    const bool has_cr = std::memchr(pos, '\r', static_cast<std::size_t>(end - pos)) != nullptr;
    const char* line_start = pos;

    while (pos < end) {
      const char* token = find_token(pos, end);
      const char* region_end = token ? token : end;
      // Complete lines without a token.
      while (pos < region_end) {
        const char* nl = next_line_end(pos, region_end, has_cr);
        if (!nl) {
          pos = region_end;
          break;
        }
        pos = consume_line_end(nl, end);
        end_line_without_record();
        line_start = pos;
      }
      if (!token) break;
      // The line holding the token: find its end.
      const char* line_end = next_line_end(token, end, has_cr);
      if (!line_end && !eof) break;  // finish it with the next read
      if (!line_end) line_end = end;
      const char* last = token;
      while (const char* again = find_token(last + 1, line_end)) last = again;
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
      buffer.clear();
      return;
    }
    std::string rest(line_start, end);
    if (rest.size() > kCompactAt) compact(rest);
    buffer = std::move(rest);
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
  void compact(std::string& rest) {
    const char* b = rest.data();
    const char* e = b + rest.size();
    const char* last = nullptr;
    for (const char* t = find_token(b, e); t; t = find_token(t + 1, e)) last = t;
    if (last && static_cast<std::size_t>(e - last) - kToken.size() <= max_record_bytes) {
      rest.erase(0, static_cast<std::size_t>(last - b));
      overlong_ = false;
      return;
    }
    if (last) {
      overlong_ = true;
      overlong_bytes_ = static_cast<std::size_t>(e - last) - kToken.size();
    } else if (overlong_) {
      overlong_bytes_ += rest.size() - (kToken.size() - 1);
    }
    rest.erase(0, rest.size() - (kToken.size() - 1));
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
    if (builder_.build(raw, stats_.lines + 1, index_++, record_, error_)) {
      ++stats_.records;
      on_record_(record_);
    } else {
      deliver_error(error_);
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
  RecordBuilder builder_;
  LogRecord record_;
  ParseError error_;
  ParseStats stats_;
  std::size_t index_ = 0;
  bool pending_cr_ = false;
  bool overlong_ = false;
  std::size_t overlong_bytes_ = 0;
};

template <class ReadFn>
ParseStats drive(ReadFn&& read_some, const RecordCallback& on_record, const ErrorCallback& on_error,
                 std::string source) {
  Reader reader(on_record, on_error, std::move(source));
  std::string buffer;
  std::uint64_t bytes = 0;
  while (true) {
    std::size_t carried = buffer.size();
    buffer.resize(carried + kChunk);
    std::size_t got = read_some(buffer.data() + carried, kChunk);
    buffer.resize(carried + got);
    bytes += got;
    bool eof = got == 0;
    reader.feed(buffer, eof);
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
                           const ErrorCallback& on_error, std::string_view source_name) {
  return drive(
      [&](char* dst, std::size_t n) -> std::size_t {
        if (!in) return 0;
        in.read(dst, static_cast<std::streamsize>(n));
        if (in.bad()) throw std::runtime_error(std::string(source_name) + ": read error");
        return static_cast<std::size_t>(in.gcount());
      },
      on_record, on_error, std::string(source_name));
}

ParseStats for_each_record(const std::filesystem::path& file, const RecordCallback& on_record,
                           const ErrorCallback& on_error) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(file.string() + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (std::filesystem::is_directory(file))
    throw std::runtime_error(file.string() + ": is a directory");
  return drive(
      [&](char* dst, std::size_t n) -> std::size_t {
        while (true) {
          ssize_t got = ::read(fd, dst, n);
          if (got >= 0) return static_cast<std::size_t>(got);
          if (errno != EINTR)
            throw std::runtime_error(file.string() + ": read error: " + std::strerror(errno));
        }
      },
      on_record, on_error, file.string());
}

ParseStats for_each_record_in(std::string_view text, const RecordCallback& on_record,
                              const ErrorCallback& on_error, std::string_view source_name) {
  // The text is in memory already: one buffer, one pass, no chunking.
  Reader reader(on_record, on_error, std::string(source_name));
  std::string buffer(text);
  reader.feed(buffer, /*eof=*/true);
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
