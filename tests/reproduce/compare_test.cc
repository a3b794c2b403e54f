// `mlbert reproduce compare`: the verdict needs the same logged hyperparameters on both sides and
// official scores within the tolerance; a changed hyperparameter is named.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "harness/reproduce/compare.h"

namespace fs = std::filesystem;
using namespace mlbert::harness::reproduce;

namespace {

const fs::path kLogs = fs::path(MLBERT_SHARED_DIR) / "fixtures/mlperf_logs";
const fs::path kSamsung20 = kLogs / "v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch";
const fs::path kSamsung11 = kLogs / "v1.1/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch";

// A copy of `from` with `find` replaced by `replace` on every line of every log.
fs::path edited_copy(const fs::path& from, const std::string& name, const std::string& find,
                     const std::string& replace) {
  const fs::path to = fs::path(MLBERT_BINARY_DIR) / "test-work/reproduce-compare" / name;
  fs::remove_all(to);
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) {
    std::ifstream in(e.path());
    std::ofstream out(to / e.path().filename());
    std::string line;
    while (std::getline(in, line)) {
      if (const auto at = line.find(find); at != std::string::npos) line.replace(at, find.size(), replace);
      out << line << "\n";
    }
  }
  return to;
}

}  // namespace

TEST_CASE("a result compared with itself is reproduced, ratio 1") {
  const Comparison c = compare_results(kSamsung20, kSamsung20, "2.0.0", 0.05);
  REQUIRE(c.ratio);
  CHECK(*c.ratio == Approx(1.0));
  CHECK(c.differing.empty());
  CHECK(c.reproduced_verdict);
  CHECK(c.verdict == "reproduced");
}

TEST_CASE("the same hyperparameters 11% faster are outside 5% and inside 15%") {
  const Comparison tight = compare_results(kSamsung20, kSamsung11, "2.0.0", 0.05);
  CHECK(tight.differing.empty());
  REQUIRE(tight.ratio);
  CHECK(*tight.ratio < 0.95);
  CHECK_FALSE(tight.reproduced_verdict);
  CHECK_THAT(tight.verdict, Catch::Contains("outside the tolerance of 5"));
  CHECK(compare_results(kSamsung20, kSamsung11, "2.0.0", 0.15).reproduced_verdict);
}

TEST_CASE("a changed hyperparameter is named and fails the comparison") {
  const fs::path changed = edited_copy(kSamsung20, "lr", "\"value\": 0.00039299421615882676",
                                       "\"value\": 0.0005");
  const Comparison c = compare_results(changed, kSamsung20, "2.0.0", 0.05);
  REQUIRE(c.differing.size() == 1);
  CHECK(c.differing.front().key == "opt_base_learning_rate");
  CHECK_FALSE(c.reproduced_verdict);
  CHECK_THAT(c.verdict, Catch::Contains("opt_base_learning_rate differs"));
  CHECK_THAT(format_comparison(c), Catch::Contains("opt_base_learning_rate: reproduced 0.0005"));
}

TEST_CASE("the tolerance is a fraction or a percentage") {
  CHECK(parse_tolerance("5%") == Approx(0.05));
  CHECK(parse_tolerance("0.1") == Approx(0.1));
  CHECK_THROWS_WITH(parse_tolerance("five"), Catch::Contains("--tolerance five"));
  CHECK_THROWS_WITH(parse_tolerance("5%%"), Catch::Contains("--tolerance 5%%"));
}
