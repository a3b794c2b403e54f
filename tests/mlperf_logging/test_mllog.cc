// The MLLOG emitter writes the official Python mllog's bytes: json.dumps spacing, ensure_ascii
// escapes, float repr with its exponent thresholds, key order, metadata merge and warnings.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mlperf_logging/log/mllog.h"
#include "tests/common/file_size_limit.h"

namespace mllog = mlbert::mllog;
using mllog::Json;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh directory for one test's files, removed with everything in it when the test ends.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("mlbert_logging_check_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::filesystem::path file(const std::string& name) const { return path / name; }
};

// Logger options for a file sink (no stdout), with the rank settings given.
mllog::LoggerOptions to_file(const std::filesystem::path& path, int rank = 0,
                             bool rank0_only = false) {
  mllog::LoggerOptions options;
  options.file = path;
  options.to_stdout = false;
  options.rank = rank;
  options.rank0_only = rank0_only;
  return options;
}

mllog::EventOptions at_time(std::int64_t time_ms) {
  mllog::EventOptions options;
  options.time_ms = time_ms;
  return options;
}

}  // namespace

TEST_CASE("float repr matches CPython around the exponent thresholds 1e-4 and 1e16") {
  CHECK(mllog::python_float_repr(1e-06) == "1e-06");
  CHECK(mllog::python_float_repr(0.0001) == "0.0001");
  CHECK(mllog::python_float_repr(0.00001) == "1e-05");
  CHECK(mllog::python_float_repr(0.00012) == "0.00012");
  CHECK(mllog::python_float_repr(0.000123456789) == "0.000123456789");
  CHECK(mllog::python_float_repr(9.999999999999999e-05) == "9.999999999999999e-05");
  CHECK(mllog::python_float_repr(1e15) == "1000000000000000.0");
  CHECK(mllog::python_float_repr(9999999999999998.0) == "9999999999999998.0");
  CHECK(mllog::python_float_repr(1e16) == "1e+16");
  CHECK(mllog::python_float_repr(12345678901234567.0) == "1.2345678901234568e+16");
  CHECK(mllog::python_float_repr(1234567890123456.7) == "1234567890123456.8");
  CHECK(mllog::python_float_repr(123456789012345680.0) == "1.2345678901234568e+17");
  CHECK(mllog::python_float_repr(1e17) == "1e+17");
  CHECK(mllog::python_float_repr(1e22) == "1e+22");
  CHECK(mllog::python_float_repr(1.5e300) == "1.5e+300");
  CHECK(mllog::python_float_repr(-1.5e-7) == "-1.5e-07");
}

TEST_CASE(
    "float repr prints shortest round-trip digits, integral floats with .0, and signed zero") {
  CHECK(mllog::python_float_repr(0.00039299421615882676) == "0.00039299421615882676");
  CHECK(mllog::python_float_repr(1271.0) == "1271.0");
  CHECK(mllog::python_float_repr(3.0) == "3.0");
  CHECK(mllog::python_float_repr(100000.0) == "100000.0");
  CHECK(mllog::python_float_repr(9007199254740992.0) == "9007199254740992.0");
  CHECK(mllog::python_float_repr(0.1) == "0.1");
  CHECK(mllog::python_float_repr(0.1 + 0.2) == "0.30000000000000004");
  CHECK(mllog::python_float_repr(1.0 / 3.0) == "0.3333333333333333");
  CHECK(mllog::python_float_repr(0.72) == "0.72");
  CHECK(mllog::python_float_repr(123.456) == "123.456");
  CHECK(mllog::python_float_repr(0.0) == "0.0");
  CHECK(mllog::python_float_repr(-0.0) == "-0.0");
  CHECK(mllog::python_float_repr(5e-324) == "5e-324");
  CHECK(mllog::python_float_repr(2.2250738585072014e-308) == "2.2250738585072014e-308");
  CHECK(mllog::python_float_repr(1.7976931348623157e308) == "1.7976931348623157e+308");
  CHECK(mllog::python_float_repr(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(mllog::python_float_repr(std::nan("")) == "nan");
}

TEST_CASE("float repr round-trips every double it prints") {
  // A sweep over magnitudes and mantissas: the text must parse back to the same double.
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 20000; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    double x;
    std::uint64_t bits = state & 0x7FEFFFFFFFFFFFFFull;  // finite
    std::memcpy(&x, &bits, sizeof x);
    std::string text = mllog::python_float_repr(x);
    REQUIRE(std::strtod(text.c_str(), nullptr) == x);
  }
}

TEST_CASE("json dumps uses Python's separators, literals and ensure_ascii escapes") {
  Json value = Json::object();
  value["a"] =
      Json::array({1, 2.5, nullptr, true,
                   "x\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" + std::string(1, '\0') + "\x7f\"\\\n/"});
  value["b"] = Json::object();
  value["c"] = Json::array();
  CHECK(
      mllog::python_json_dumps(value) ==
      R"({"a": [1, 2.5, null, true, "x\u00e9\u20ac\ud83d\ude00\u0000\u007f\"\\\n/"], "b": {}, "c": []})");
  CHECK(mllog::python_json_dumps(Json(std::numeric_limits<double>::infinity())) == "Infinity");
  CHECK(mllog::python_json_dumps(Json(-std::numeric_limits<double>::infinity())) == "-Infinity");
  CHECK(mllog::python_json_dumps(Json(std::nan(""))) == "NaN");
  CHECK(mllog::python_json_dumps(Json(-0.0)) == "-0.0");
  CHECK(mllog::python_json_dumps(Json(18446744073709551615ull)) == "18446744073709551615");
  CHECK(mllog::python_json_dumps(Json(-9223372036854775807LL - 1)) == "-9223372036854775808");
  CHECK(mllog::python_json_dumps(Json("\b\f\r\t\x01\x1f")) == R"("\b\f\r\t\u0001\u001f")");
  // A byte that is not UTF-8 stands for its Latin-1 character.
  CHECK(mllog::python_json_dumps(Json(std::string("\xff"))) == R"("\u00ff")");
}

TEST_CASE("format_line writes the fields in mllog's order with its spacing") {
  Json metadata = {{"file", "run_pretraining.py"}, {"lineno", 873}};
  metadata["epoch_num"] = 150000;
  CHECK(mllog::format_line("", 1634509551057, mllog::EventType::point_in_time,
                           mllog::key::eval_accuracy, 0.7206, metadata) ==
        R"(:::MLLOG {"namespace": "", "time_ms": 1634509551057, "event_type": "POINT_IN_TIME", )"
        R"("key": "eval_accuracy", "value": 0.7206, "metadata": {"file": "run_pretraining.py", )"
        R"("lineno": 873, "epoch_num": 150000}})");
  CHECK(mllog::format_line("worker0", 5, mllog::EventType::interval_start, mllog::key::block_start,
                           nullptr, Json::object()) ==
        R"(:::MLLOG {"namespace": "worker0", "time_ms": 5, "event_type": "INTERVAL_START", )"
        R"("key": "block_start", "value": null, "metadata": {}})");
  CHECK(mllog::format_line("", 7, mllog::EventType::interval_end, mllog::key::opt_lamb_epsilon,
                           1e-06, Json::object())
            .find(R"("event_type": "INTERVAL_END", "key": "opt_lamb_epsilon", "value": 1e-06)") !=
        std::string::npos);
}

TEST_CASE(
    "Logger writes file and lineno of the call site, then the caller's metadata in its order") {
  ScratchDir scratch;
  auto path = scratch.file("order.log");
  mllog::Logger logger(to_file(path));
  mllog::EventOptions at = at_time(42);
  Json metadata = Json::object();
  metadata["first_epoch_num"] = 0;
  metadata["epoch_count"] = 150000;
  const int line = __LINE__ + 1;
  logger.log(mllog::EventType::interval_start, mllog::key::block_start, nullptr, metadata, at);
  std::string expected =
      R"(:::MLLOG {"namespace": "", "time_ms": 42, "event_type": "INTERVAL_START", )"
      R"("key": "block_start", "value": null, "metadata": {"file": ")" +
      std::string(__FILE__) + R"(", "lineno": )" + std::to_string(line) +
      R"(, "first_epoch_num": 0, "epoch_count": 150000}})" + "\n";
  CHECK(slurp(path) == expected);
}

TEST_CASE("Logger trims root_dir from the file name and appends to an existing file") {
  ScratchDir scratch;
  auto path = scratch.file("root.log");
  { std::ofstream(path) << "framework chatter\n"; }
  std::string root = std::filesystem::path(__FILE__).parent_path().string();
  mllog::LoggerOptions options = to_file(path);
  options.root_dir = root;
  mllog::Logger logger(options);
  logger.event(mllog::key::cache_clear, true);
  std::string text = slurp(path);
  CHECK(text.rfind("framework chatter\n", 0) == 0);
  CHECK(text.find(R"("metadata": {"file": "test_mllog.cc", "lineno": )") != std::string::npos);
}

TEST_CASE("Logger warns like mllog about overridden and non-dictionary metadata") {
  ScratchDir scratch;
  auto path = scratch.file("warn.log");
  mllog::Logger logger(to_file(path));
  logger.log(mllog::EventType::point_in_time, "k", 1, {{"lineno", 7}}, at_time(1));
  const int second = __LINE__ + 1;
  logger.log(mllog::EventType::point_in_time, "k", 2, Json::array({1}), at_time(2));
  const int third = __LINE__ + 1;
  logger.log(mllog::EventType::point_in_time, "k", 3, Json::object(), at_time(3));
  const std::string file = __FILE__;
  const std::string head = R"(:::MLLOG {"namespace": "", "time_ms": )";
  const std::string mid = R"(, "event_type": "POINT_IN_TIME", "key": "k", "value": )";
  const std::string meta = R"(, "metadata": {"file": ")" + file + R"(", "lineno": )";
  CHECK(slurp(path) == "\nMetadata fields overridden: lineno\n" + head + "1" + mid + "1" + meta +
                           "7}}\n" + "\nMetadata is not dictionary, ignored.\n" + head + "2" + mid +
                           "2" + meta + std::to_string(second) + "}}\n" + head + "3" + mid + "3" +
                           meta + std::to_string(third) + "}}\n");
}

TEST_CASE("Logger with rank0_only writes nothing on other ranks") {
  ScratchDir scratch;
  auto path = scratch.file("rank1.log");
  mllog::Logger logger(to_file(path, 1, true));
  CHECK_FALSE(logger.enabled());
  logger.event(mllog::key::run_start, nullptr);
  CHECK_FALSE(std::filesystem::exists(path));
  logger.reconfigure(to_file(path, 0, true));
  CHECK(logger.enabled());
  logger.event(mllog::key::run_start, nullptr);
  CHECK(slurp(path).find("run_start") != std::string::npos);
}

TEST_CASE("Logger's file sink fails a write it cannot complete, naming the file and the reason") {
  ScratchDir scratch;
  auto path = scratch.file("limited.log");
  mllog::Logger logger(to_file(path));
  logger.event(mllog::key::run_start, nullptr);
  const auto before = slurp(path).size();
  mlbert::test::FileSizeLimit limit(before + 100);  // a disk that fills during the next line
  CHECK_THROWS_WITH(logger.event(mllog::key::tracked_stats, std::string(300, 'x')),
                    Catch::Contains("mllog: " + path.string() + ": cannot write it: File too large"));
}

TEST_CASE("Logger lines from many threads never interleave") {
  ScratchDir scratch;
  auto path = scratch.file("threads.log");
  mllog::Logger logger(to_file(path));
  const int threads = 4, per_thread = 500;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&logger, t] {
      for (int i = 0; i < per_thread; ++i)
        logger.event(mllog::key::tracked_stats, std::string(200, static_cast<char>('a' + t)),
                     {{"step", i}});
    });
  }
  for (auto& w : workers) w.join();
  std::istringstream lines(slurp(path));
  std::set<std::pair<char, int>> seen;
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    REQUIRE(line.rfind(":::MLLOG {", 0) == 0);
    auto value_at = line.find(R"("value": ")") + 10;
    char c = line[value_at];
    REQUIRE(line.substr(value_at, 200) == std::string(200, c));
    auto step = std::stoi(line.substr(line.find(R"("step": )") + 8));
    seen.insert({c, step});
  }
  CHECK(count == threads * per_thread);
  CHECK(seen.size() == static_cast<std::size_t>(threads * per_thread));
}

TEST_CASE("the key constants spell the official names") {
  CHECK(mllog::key::run_start == "run_start");
  CHECK(mllog::key::opt_lamb_epsilon == "opt_lamb_epsilon");
  CHECK(mllog::key::opt_epsilon == "opt_epsilon");
  CHECK(mllog::key::weights_initialization == "weights_initialization");
  CHECK(mllog::key::submission_division == "submission_division");
  CHECK(mllog::key::opt_learning_rate_training_steps == "opt_learning_rate_training_steps");
  CHECK(mllog::constants::interval_start == "INTERVAL_START");
  CHECK(mllog::meta::samples_count == "samples_count");
}
