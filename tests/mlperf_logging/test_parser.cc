// The streaming parser reads logs as the official mlp_parser does (Latin-1, universal newlines, the
// last ":::MLLOG " of a line, Python's json dialect) and names the line of every error.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/log/python_float.h"
#include "mlperf_logging/log/python_json.h"
#include "mlperf_logging/log/token_scan.h"

namespace mllog = mlbert::mllog;
namespace pyjson = mlbert::mllog::pyjson;

namespace {

std::string rec(const std::string& key, const std::string& value = "null",
                const std::string& metadata = "{}", const std::string& time = "1000") {
  return ":::MLLOG {\"namespace\": \"\", \"time_ms\": " + time +
         ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"" + key + "\", \"value\": " + value +
         ", \"metadata\": " + metadata + "}";
}

struct Parsed {
  std::vector<mllog::LogRecord> records;  // copies without the views
  std::vector<mllog::ParseError> errors;
  std::vector<std::string> raws, value_texts;
  mllog::ParseStats stats;
};

Parsed parse(const std::string& text) {
  Parsed p;
  p.stats = mllog::for_each_record_in(
      text,
      [&](const mllog::LogRecord& r) {
        p.records.push_back(r);
        p.raws.emplace_back(r.raw);
        p.value_texts.emplace_back(r.value_text);
        p.records.back().raw = {};
        p.records.back().value_text = {};
      },
      [&](const mllog::ParseError& e) {
        p.errors.push_back(e);
        p.errors.back().raw = {};
      });
  return p;
}

// Peak memory of one call, not of the process: ru_maxrss is the high-water mark of everything the
// process did before (earlier test cases included), so it hides growth below that mark. Linux
// resets the mark (VmHWM) when "5" is written to /proc/self/clear_refs.
class PeakRss {
 public:
  PeakRss() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    REQUIRE(clear.good());  // without a reset the measurement would be meaningless
    start_kib_ = high_water_kib();
  }
  // Growth of the high-water mark since construction, in MiB.
  long growth_mib() const { return (high_water_kib() - start_kib_) / 1024; }

 private:
  static long high_water_kib() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    FAIL("no VmHWM line in /proc/self/status");
    return 0;
  }
  long start_kib_ = 0;
};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Peak-RSS growth against a bound. Under AddressSanitizer the figure is ASan's: freed buffers stay
// resident in its quarantine (256 MiB by default) and every block carries redzones, so the bound is
// checked in the ordinary build only and the sanitized one says so.
void check_rss_growth(long growth_mib, long bound_mib) {
  if (kAddressSanitizer) {
    WARN("peak RSS grew " << growth_mib << " MiB (bound " << bound_mib
                          << " MiB not checked under AddressSanitizer)");
    return;
  }
  CHECK(growth_mib < bound_mib);
}

// A fresh directory for one test's files, removed with everything in it when the test ends.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    path = std::filesystem::temp_directory_path() /
           ("mlbert_logging_check_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::filesystem::path file(const std::string& name) const { return path / name; }
};

}  // namespace

TEST_CASE("text before the last :::MLLOG of a line is dropped and lines without it are ignored") {
  std::string text = "framework says hello\n" + std::string("[1,0]<stdout>:") + rec("a") + "\n" +
                     "garbage :::MLLOG not json :::MLLOG " + rec("b").substr(9) + "\n" +
                     "no token here\n" + rec("c");
  Parsed p = parse(text);
  REQUIRE(p.errors.empty());
  REQUIRE(p.records.size() == 3);
  CHECK(p.records[0].key == "a");
  CHECK(p.records[0].line == 2);
  CHECK(p.records[0].index == 0);
  CHECK(p.raws[0].rfind(":::MLLOG {", 0) == 0);
  CHECK(p.records[1].key == "b");
  CHECK(p.records[1].line == 3);
  CHECK(p.records[2].key == "c");
  CHECK(p.records[2].line == 5);
  CHECK(p.records[2].index == 2);
  CHECK(p.stats.lines == 5);
}

TEST_CASE("line numbers follow universal newlines: LF, CR LF and a lone CR all end a line") {
  std::string text = rec("a") + "\r\n" + rec("b") + "\r" + rec("c") + "\n\r\n" + rec("d") + "\n";
  Parsed p = parse(text);
  REQUIRE(p.records.size() == 4);
  CHECK(p.records[0].line == 1);
  CHECK(p.records[1].line == 2);
  CHECK(p.records[2].line == 3);
  CHECK(p.records[3].line == 5);
}

TEST_CASE("a CR LF split across read buffers counts as one line end") {
  // The first read fills one window: put the \r as its last byte.
  const std::size_t chunk = mllog::read_window_bytes;
  std::string first = rec("a") + "\n";
  std::string filler(chunk - first.size() - 1, 'x');
  std::string text = first + filler + "\r\n" + rec("b") + "\n";
  std::istringstream in(text);
  std::vector<std::size_t> lines;
  mllog::for_each_record(in, [&](const mllog::LogRecord& r) { lines.push_back(r.line); });
  CHECK(lines == std::vector<std::size_t>{1, 3});
}

TEST_CASE("the token is found at every offset, after look-alikes, and up to the last byte") {
  // The token search works 16 bytes at a time: every position relative to a block, next to
  // near-misses (":::MLLOG" without the space, ":x:M", "::MLLOG "), and at the very end.
  const std::string decoys = ":::MLLOG\t:x:M ::MLLOG  :::MLLOGX :::mllog ";
  for (std::size_t pad = 0; pad < 40; ++pad) {
    INFO("pad " << pad);
    std::string text = std::string(pad, ':') + decoys + rec("k") + "\n" + decoys;
    auto p = parse(text + "\n" + std::string(pad, 'M') + rec("last"));
    REQUIRE(p.records.size() == 2);
    CHECK(p.records[0].key == "k");
    CHECK(p.records[0].line == 1);
    CHECK(p.records[1].key == "last");
    CHECK(p.records[1].line == 3);
    CHECK(p.errors.empty());
    CHECK(parse(text).records.size() == 1);
    // A token in the last nine bytes: found, and an error since nothing follows it.
    auto tail = parse(text + ":::MLLOG ");
    REQUIRE(tail.errors.size() == 1);
    CHECK(tail.errors[0].line == 2);
    CHECK(tail.errors[0].message.find("nothing follows") != std::string::npos);
  }
}

TEST_CASE("line numbers stay exact across read buffers of plain lines") {
  // 3 MiB of short lines around two records: the reader counts lines between records in bulk.
  std::string text;
  for (int i = 0; i < 200000; ++i) text += "step " + std::to_string(i) + "\n";
  text += rec("a") + "\n";
  for (int i = 0; i < 100000; ++i) text += "x\n";
  text += rec("b");
  std::istringstream in(text);
  std::vector<std::size_t> lines;
  auto stats =
      mllog::for_each_record(in, [&](const mllog::LogRecord& r) { lines.push_back(r.line); });
  CHECK(lines == std::vector<std::size_t>{200001, 300002});
  CHECK(stats.lines == 300002);
}

TEST_CASE("a record split across read buffers is parsed whole") {
  // The record starts 19 bytes before the first window ends (the next read fills the window
  // behind it), or early in a window and runs over several (the buffer grows a window at a time).
  const std::size_t chunk = mllog::read_window_bytes;
  for (const std::size_t before : {chunk - 20, std::size_t{100}}) {
    for (const std::size_t value : {std::size_t{5000}, chunk * 5 / 2}) {
      INFO(before << " bytes before the record, a value of " << value);
      std::string filler(before, 'y');
      std::string text =
          filler + "\n" + rec("split", "\"" + std::string(value, 'v') + "\"") + "\n" + rec("next");
      std::istringstream in(text);
      std::vector<std::string> keys;
      mllog::for_each_record(in, [&](const mllog::LogRecord& r) {
        keys.push_back(r.key);
        if (r.key == "split") CHECK(r.value.get<std::string>().size() == value);
        CHECK(r.line == keys.size() + 1);
      });
      CHECK(keys == std::vector<std::string>{"split", "next"});
    }
  }
}

TEST_CASE("bad JSON is an error naming the line, and parsing goes on") {
  std::string text = rec("a") + "\n" + ":::MLLOG {\"time_ms\": 1, \"key\": \"b\" \"value\": 1}\n" +
                     rec("c") + "\n";
  Parsed p = parse(text);
  REQUIRE(p.records.size() == 2);
  REQUIRE(p.errors.size() == 1);
  CHECK(p.errors[0].line == 2);
  CHECK(p.errors[0].index == 1);
  CHECK(p.errors[0].message.find("Expecting ',' delimiter") != std::string::npos);
  CHECK(p.errors[0].message.find("column 36 of the record") != std::string::npos);
  CHECK_FALSE(p.errors[0].official_checker_crashes);
}

TEST_CASE("without an error handler the first bad line throws with the source and line") {
  std::string text = rec("a") + "\n\n" + ":::MLLOG {\"time_ms\": 1,}\n";
  try {
    mllog::for_each_record_in(
        text, [](const mllog::LogRecord&) {}, {}, "result_0.txt");
    FAIL("no exception");
  } catch (const mllog::LogParseError& e) {
    CHECK(std::string(e.what()).rfind("result_0.txt:3: invalid JSON", 0) == 0);
    CHECK(e.error().line == 3);
  }
}

TEST_CASE("missing fields and non-object records are errors the official checker crashes on") {
  Parsed p = parse(
      ":::MLLOG {\"key\": \"a\", \"value\": 1, \"metadata\": {}}\n"
      ":::MLLOG {\"time_ms\": 1, \"value\": 1, \"metadata\": {}}\n"
      ":::MLLOG {\"time_ms\": 1, \"key\": \"a\", \"metadata\": {}}\n"
      ":::MLLOG {\"time_ms\": 1, \"key\": \"a\", \"value\": 1}\n"
      ":::MLLOG [1, 2]\n"
      ":::MLLOG \"text\"\n");
  REQUIRE(p.errors.size() == 6);
  CHECK(p.errors[0].message == "missing field \"time_ms\"");
  CHECK(p.errors[1].message == "missing field \"key\"");
  CHECK(p.errors[2].message == "missing field \"value\"");
  CHECK(p.errors[3].message == "missing field \"metadata\"");
  CHECK(p.errors[4].message == "the record is an array, not a JSON object");
  CHECK(p.errors[5].message == "the record is a string, not a JSON object");
  for (const auto& e : p.errors) CHECK(e.official_checker_crashes);
  CHECK(p.errors[5].line == 6);
}

TEST_CASE("event_type and namespace are optional, as for the official parser") {
  Parsed p = parse(":::MLLOG {\"time_ms\": 5, \"key\": \"k\", \"value\": 1, \"metadata\": {}}\n");
  REQUIRE(p.records.size() == 1);
  CHECK(p.records[0].event_type.empty());
  CHECK(p.records[0].time_ms == 5);
}

TEST_CASE("time_ms goes through Python's float(): numbers, bools and numeric strings") {
  Parsed p =
      parse(rec("a", "1", "{}", "1.5e3") + "\n" + rec("b", "1", "{}", "\"  2_000.25 \"") + "\n" +
            rec("c", "1", "{}", "true") + "\n" + rec("d", "1", "{}", "\"-Infinity\"") + "\n" +
            rec("e", "1", "{}", "\"12abc\"") + "\n" + rec("f", "1", "{}", "null") + "\n" +
            rec("g", "1", "{}", "1" + std::string(400, '0')) + "\n" + rec("h", "1", "{}", "1e400") +
            "\n");
  REQUIRE(p.records.size() == 5);
  CHECK(p.records[0].timestamp == 1500.0);
  CHECK(p.records[0].time_ms == 1500);
  CHECK(p.records[1].timestamp == 2000.25);
  CHECK(p.records[2].timestamp == 1.0);
  CHECK(std::isinf(p.records[3].timestamp));
  CHECK(p.records[3].time_ms == 0);
  CHECK(std::isinf(p.records[4].timestamp));  // a float literal overflows to inf without error
  REQUIRE(p.errors.size() == 3);
  CHECK(p.errors[0].message == "time_ms \"12abc\" is not a number");
  CHECK_FALSE(p.errors[0].official_checker_crashes);  // ValueError: a listed parse error
  CHECK(p.errors[1].official_checker_crashes);        // TypeError
  CHECK(p.errors[2].message == "time_ms is an integer too large for a float");
  CHECK(p.errors[2].official_checker_crashes);  // OverflowError
}

TEST_CASE("Python's JSON dialect: NaN, Infinity, big integers, duplicate keys, lone surrogates") {
  Parsed p =
      parse(rec("a", "[NaN, Infinity, -Infinity, 123456789012345678901234567890, -0.0, 1E2]") +
            "\n" + rec("b", "{\"x\": 1, \"x\": 2}", "{\"m\": 1, \"m\": \"last\"}") + "\n" +
            rec("c", "\"\\ud800 \\ud83d\\ude00 \\u00e9\"") + "\n");
  REQUIRE(p.errors.empty());
  const auto& v = p.records[0].value;
  CHECK(std::isnan(v[0].get<double>()));
  CHECK(v[1].get<double>() == HUGE_VAL);
  CHECK(v[2].get<double>() == -HUGE_VAL);
  CHECK(v[3].get<double>() == 123456789012345678901234567890.0);
  CHECK(std::signbit(v[4].get<double>()));
  CHECK(v[5].get<double>() == 100.0);
  CHECK(p.records[1].value["x"] == 2);
  CHECK(p.records[1].metadata["m"] == "last");
  CHECK(p.records[2].value.get<std::string>() == "\xed\xa0\x80 \xf0\x9f\x98\x80 \xc3\xa9");
  CHECK(p.value_texts[1] == "{\"x\": 1, \"x\": 2}");
}

TEST_CASE("bytes are Latin-1 characters: invalid UTF-8 and binary inside strings are accepted") {
  std::string text = rec("a", "\"caf\xc3\xa9 \xff\xfe\x80\"") + "\n";
  Parsed p = parse(text);
  REQUIRE(p.errors.empty());
  const std::string& s = p.records[0].value.get_ref<const std::string&>();
  CHECK(s == "caf\xc3\x83\xc2\xa9 \xc3\xbf\xc3\xbe\xc2\x80");
  CHECK(mllog::to_file_bytes(s) == "caf\xc3\xa9 \xff\xfe\x80");
}

TEST_CASE("control characters inside strings and bad escapes are JSON errors") {
  Parsed p = parse(rec("a", std::string("\"tab\there\"")) + "\n" + rec("b", "\"\\x\"") + "\n" +
                   rec("c", "\"\\u12g4\"") + "\n" + rec("d", "[1,]") + "\n" + rec("e", "01") +
                   "\n" + rec("f", "1.") + "\n" + rec("g", "nul") + "\n" + rec("h", "-") + "\n");
  CHECK(p.records.empty());
  REQUIRE(p.errors.size() == 8);
  CHECK(p.errors[0].message.find("Invalid control character") != std::string::npos);
  CHECK(p.errors[1].message.find("Invalid \\escape") != std::string::npos);
  CHECK(p.errors[2].message.find("Invalid \\uXXXX escape") != std::string::npos);
  for (const auto& e : p.errors) CHECK_FALSE(e.official_checker_crashes);
}

TEST_CASE("integers past Python's 4300-digit limit are parse errors") {
  Parsed ok = parse(rec("a", std::string(4300, '7')) + "\n");
  CHECK(ok.errors.empty());
  Parsed bad = parse(rec("a", "-" + std::string(4301, '7')) + "\n");
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors[0].message.find("4300-digit limit") != std::string::npos);
  CHECK_FALSE(bad.errors[0].official_checker_crashes);
}

TEST_CASE(
    "nesting beyond Python's recursion limit is a crash-class error, never a stack overflow") {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  Parsed ok = parse(rec("a", nested(pyjson::max_depth - 1)) + "\n");
  CHECK(ok.errors.empty());
  Parsed deep = parse(rec("a", nested(pyjson::max_depth)) + "\n" + rec("b", nested(200000)) + "\n");
  REQUIRE(deep.errors.size() == 2);
  CHECK(deep.errors[0].official_checker_crashes);
  CHECK(deep.errors[1].message.find("RecursionError") != std::string::npos);
}

TEST_CASE(
    "trailing Python whitespace is stripped before the JSON is read, other junk is extra data") {
  Parsed p = parse(rec("a") + " \t\x1c\x85\xa0\n" + rec("b") + " x\n" + ":::MLLOG \x0c" +
                   rec("c").substr(9) + "\n" + ":::MLLOG   \n");
  REQUIRE(p.records.size() == 1);
  CHECK(p.records[0].key == "a");
  REQUIRE(p.errors.size() == 3);
  CHECK(p.errors[0].message.find("Extra data") != std::string::npos);
  CHECK(p.errors[1].message.find("Expecting value") != std::string::npos);
  CHECK(p.errors[2].message == "nothing follows \":::MLLOG\"");
  CHECK(p.errors[2].line == 4);
}

TEST_CASE("non-string keys are kept as JSON text and flagged") {
  Parsed p = parse(
      ":::MLLOG {\"time_ms\": 1, \"key\": [\"run_start\"], \"value\": 1, \"metadata\": {}}\n");
  REQUIRE(p.records.size() == 1);
  CHECK_FALSE(p.records[0].key_is_string);
  CHECK(p.records[0].key == "[\"run_start\"]");
}

TEST_CASE("empty input, binary garbage and a missing file") {
  CHECK(parse("").stats.records == 0);
  std::string binary;
  for (int i = 0; i < 100000; ++i) binary.push_back(static_cast<char>((i * 7919) & 0xFF));
  Parsed p = parse(binary);
  CHECK(p.records.empty());
  CHECK(p.stats.bytes == binary.size());
  CHECK_THROWS_WITH(mllog::for_each_record(std::filesystem::path("/nonexistent/result_0.txt"),
                                           [](const mllog::LogRecord&) {}),
                    Catch::Contains("/nonexistent/result_0.txt: cannot open"));
}

TEST_CASE("a 48 MiB log without MLLOG lines streams in bounded memory") {
  ScratchDir scratch;
  auto path = scratch.file("no_mllog.txt");
  std::size_t expected_lines = 0;
  {
    std::ofstream out(path, std::ios::binary);
    std::string line =
        "epoch 3 step 1000 loss 2.013 throughput 5421.7 seq/s lr 0.000425 :::MLLOG_LOOKALIKE\n";
    std::string block;
    while (block.size() < (1u << 20)) block += line;
    for (int i = 0; i < 48; ++i) out << block;
    out << std::string(8u << 20, 'z');  // and a final 8 MiB line with no newline at all
    expected_lines = 48 * (block.size() / line.size()) + 1;
  }
  PeakRss peak;
  mllog::ParseStats stats =
      mllog::for_each_record(path, [](const mllog::LogRecord&) { FAIL("no record expected"); });
  long growth_mib = peak.growth_mib();
  CHECK(stats.records == 0);
  CHECK(stats.bytes == std::filesystem::file_size(path));
  CHECK(stats.lines == expected_lines);
  check_rss_growth(growth_mib, 24);
}

TEST_CASE(
    "a record longer than the limit is an error naming its line, not an allocation of its size") {
  ScratchDir scratch;
  auto path = scratch.file("huge_record.txt");
  {
    std::ofstream out(path, std::ios::binary);
    out << rec("first") << "\n";
    out << ":::MLLOG {\"time_ms\": 1, \"key\": \"k\", \"value\": \"";
    std::string block(1u << 20, 'v');
    for (std::size_t i = 0; i < (mllog::max_record_bytes >> 20) + 4; ++i) out << block;
    out << "\", \"metadata\": {}}\n" << rec("last") << "\n";
  }
  std::vector<std::string> keys;
  std::vector<mllog::ParseError> errors;
  PeakRss peak;
  mllog::for_each_record(
      path, [&](const mllog::LogRecord& r) { keys.push_back(r.key); },
      [&](const mllog::ParseError& e) { errors.push_back(e); });
  long growth_mib = peak.growth_mib();
  CHECK(keys == std::vector<std::string>{"first", "last"});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].line == 2);
  CHECK(errors[0].message.find("MiB limit") != std::string::npos);
  check_rss_growth(growth_mib, 3 * static_cast<long>(mllog::max_record_bytes >> 20));
}

TEST_CASE("canonical form: Python == on decoded JSON values") {
  using pyjson::canonical;
  CHECK(canonical("1") == canonical("1.0"));
  CHECK(canonical("1") == canonical("true"));
  CHECK(canonical("0") == canonical("-0.0"));
  CHECK(canonical("100") == canonical("1e2"));
  // json.loads returns one shared float for every NaN literal, and list.count matches it by
  // identity: two NaN values are "the same value" to the checker, and only to each other.
  CHECK(canonical("[NaN, 1]") == canonical("[NaN, 1.0]"));
  CHECK(canonical("{\"b\": NaN, \"a\": 1}") == canonical("{\"a\": true, \"b\": NaN}"));
  for (const char* other : {"Infinity", "-Infinity", "0", "null", "\"NaN\"", "1e999", "[NaN]"})
    CHECK(canonical("NaN") != canonical(other));
  CHECK(canonical("{\"a\": 1, \"b\": [2, \"x\"]}") ==
        canonical("{\"b\": [2.0, \"x\"], \"a\": true}"));
  CHECK(canonical("{\"a\": 1, \"a\": 2}") == canonical("{\"a\": 2}"));
  CHECK(canonical("18446744073709551616") != canonical("18446744073709551617"));
  CHECK(canonical("18446744073709551616") == canonical("1.8446744073709552e19"));
  CHECK(canonical("100000000000000000000000") != canonical("1e23"));  // 1e23 is not exactly 10**23
  CHECK(canonical("\"1\"") != canonical("1"));
  CHECK(canonical("null") != canonical("0"));
  CHECK(canonical("[1, 2]") != canonical("[2, 1]"));
  CHECK(canonical("Infinity") != canonical("1e308"));
  CHECK(canonical("\"\\u00e9\"") !=
        canonical("\"\xc3\xa9\""));  // an escape versus two Latin-1 bytes
}

TEST_CASE("float_from_string follows Python's float()") {
  using pyjson::float_from_string;
  CHECK(float_from_string("1_000") == 1000.0);
  CHECK(float_from_string(" \t12.5e1\n") == 125.0);
  CHECK(float_from_string(".5") == 0.5);
  CHECK(float_from_string("5.") == 5.0);
  CHECK(float_from_string("-iNfInItY") == -HUGE_VAL);
  CHECK(std::isnan(*float_from_string("nan")));
  CHECK(float_from_string("\xc2\xa0"
                          "7\xe2\x80\x83") == 7.0);  // NBSP and EM SPACE around
  CHECK_FALSE(float_from_string("1__0"));
  CHECK_FALSE(float_from_string("_1"));
  CHECK_FALSE(float_from_string("1_"));
  CHECK_FALSE(float_from_string("1e"));
  CHECK_FALSE(float_from_string("."));
  CHECK_FALSE(float_from_string(""));
  CHECK_FALSE(float_from_string("0x10"));
  CHECK_FALSE(float_from_string("1 2"));
}

TEST_CASE("the vector token scans agree with the portable one at every offset and length") {
  using Code = mllog::detail::ScanCode;
  std::vector<Code> codes = {Code::avx2, Code::avx512};
  codes.resize(static_cast<std::size_t>(mllog::detail::best_scan_code()));  // those the CPU runs
  // Bytes drawn from the ones the scan tests for, so tokens, look-alikes, '\n' and '\r' fall at
  // every position of a 32-byte block and across the ends of the vector loop.
  const std::string alphabet = ":::MLLOG \n\r:M x";
  std::uint32_t state = 12345;
  const auto next = [&] {
    state = state * 1103515245u + 12345u;
    return state >> 16;
  };
  for (int round = 0; round < 3000; ++round) {
    std::string text(next() % 400, 'a');
    for (char& c : text) c = (next() % 4 == 0) ? alphabet[next() % alphabet.size()] : 'a';
    if (!text.empty() && next() % 2) {
      std::size_t at = next() % text.size();
      text.replace(at, std::min<std::size_t>(9, text.size() - at), ":::MLLOG ");
    }
    for (std::size_t from : {std::size_t{0}, std::size_t{1}, std::size_t{5}}) {
      if (from > text.size()) continue;
      const char* b = text.data() + from;
      const char* e = text.data() + text.size();
      const mllog::TokenScan portable = mllog::detail::scan_to_token_portable(b, e);
      INFO("round " << round << " from " << from << " text size " << text.size());
      for (Code code : codes) {
        const mllog::TokenScan fast = mllog::detail::scan_to_token_with(code, b, e);
        INFO("code " << static_cast<int>(code));
        REQUIRE(fast.token == portable.token);
        REQUIRE(fast.newlines == portable.newlines);
        REQUIRE(fast.has_cr == portable.has_cr);
      }
      const char* stop = portable.token ? portable.token : e;
      REQUIRE(portable.newlines == static_cast<std::size_t>(std::count(b, stop, '\n')));
      REQUIRE(portable.has_cr == (std::find(b, stop, '\r') != stop));
      const std::string_view rest(b, static_cast<std::size_t>(e - b));
      const auto expected = rest.find(":::MLLOG ");
      REQUIRE(portable.token == (expected == std::string_view::npos ? nullptr : b + expected));
    }
  }
  if (codes.size() < 2) WARN("this CPU runs " << codes.size() << " of the 2 vector scans");
}

TEST_CASE("newline counts stay exact past 255 blocks of eight bytes") {
  const std::string text(std::size_t{255} * 8 * 3 + 5, '\n');
  const mllog::TokenScan scan =
      mllog::detail::scan_to_token_portable(text.data(), text.data() + text.size());
  CHECK(scan.newlines == text.size());
  CHECK(scan.token == nullptr);
  CHECK(!scan.has_cr);
}
