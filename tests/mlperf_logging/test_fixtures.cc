// Real published BERT logs (../shared/fixtures/mlperf_logs, and mlperf_logs_early for the rounds
// v0.7 and v1.0) get the official checker's verdicts from their EXPECTED.tsv, through the library
// and through the `mlbert check` command line; under 5.1.0, the first round without BERT, they
// fail.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "mlperf_logging/rules/bert_tensors.h"
#include "mlperf_logging/rules/checker.h"
#include "tests/common/shared_fixtures.h"

namespace mllog = mlbert::mllog;

namespace {

struct Expected {
  std::filesystem::path log;  // absolute
  std::string ruleset, verdict;
};

// The rows of <fixtures>/<folder>/EXPECTED.tsv.
std::vector<Expected> expected_verdicts(const std::string& folder) {
  const auto dir = mlbert::test::fixtures_dir() / folder;
  std::ifstream in(dir / "EXPECTED.tsv");
  REQUIRE(in.good());
  std::vector<Expected> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Expected e;
    std::string log;
    std::getline(fields, log, '\t');
    std::getline(fields, e.ruleset, '\t');
    std::getline(fields, e.verdict, '\t');
    e.log = dir / log;
    rows.push_back(e);
  }
  return rows;
}

// Both fixture sets: the rounds v1.1 to v4.0, then v0.7 and v1.0.
std::vector<Expected> all_expected_verdicts() {
  auto rows = expected_verdicts("mlperf_logs");
  REQUIRE(rows.size() >= 60);
  auto early = expected_verdicts("mlperf_logs_early");
  REQUIRE(early.size() >= 40);
  rows.insert(rows.end(), early.begin(), early.end());
  return rows;
}

}  // namespace

TEST_CASE("every fixture log gets the official verdict from EXPECTED.tsv") {
  auto rows = all_expected_verdicts();
  std::map<std::string, std::map<std::string, int>> verdicts;  // ruleset -> verdict -> logs
  for (const auto& row : rows) {
    mllog::CheckOptions options;
    options.ruleset = row.ruleset;
    auto result = mllog::check_log(row.log, options);
    INFO(row.log.string() << " (" << row.ruleset << ")\n" << mllog::format_result(result));
    CHECK((result.success ? "SUCCESS" : "FAILED") == row.verdict);
    ++verdicts[row.ruleset][result.success ? "SUCCESS" : "FAILED"];
    CHECK(result.benchmark == "bert");
  }
  // The set is not one-sided: both verdicts occur in both fixture sets.
  CHECK(verdicts["0.7.0"]["SUCCESS"] >= 10);
  CHECK(verdicts["0.7.0"]["FAILED"] >= 1);
  CHECK(verdicts["1.0.0"]["SUCCESS"] >= 10);
  CHECK(verdicts["1.0.0"]["FAILED"] >= 10);
  int failed = 0, succeeded = 0;
  for (const auto& [ruleset, counts] : verdicts) {
    failed += counts.count("FAILED") ? counts.at("FAILED") : 0;
    succeeded += counts.count("SUCCESS") ? counts.at("SUCCESS") : 0;
  }
  CHECK(failed >= 20);
  CHECK(succeeded >= 60);
}

TEST_CASE("under 5.1.0 every fixture log fails on submission_benchmark: BERT is not a benchmark") {
  int checked = 0;
  for (const auto& row : all_expected_verdicts()) {
    if (row.verdict != "SUCCESS") continue;
    mllog::CheckOptions options;
    options.ruleset = "5.1.0";
    auto result = mllog::check_log(row.log, options);
    INFO(row.log.string() << "\n" << mllog::format_result(result));
    CHECK_FALSE(result.success);
    CHECK_FALSE(result.official_checker_crashes);
    REQUIRE(result.division);
    bool named = false;
    for (const auto& m : result.messages) {
      named = named || (m.level == mllog::CheckMessage::Level::error &&
                        m.rule == *result.division + "_common:submission_benchmark" &&
                        m.text.find("bert is not a benchmark of training ruleset 5.1.0") !=
                            std::string::npos);
    }
    CHECK(named);
    ++checked;
  }
  CHECK(checked >= 60);
}

TEST_CASE("mlbert check prints the official verdicts and exits 1 when any log fails") {
  std::map<std::string, std::vector<Expected>> by_ruleset;
  for (const auto& row : all_expected_verdicts()) by_ruleset[row.ruleset].push_back(row);
  CHECK(by_ruleset.count("0.7.0") == 1);
  CHECK(by_ruleset.count("1.0.0") == 1);
  const auto binary = mlbert::test::binary_dir() / "bin" / "mlbert";
  REQUIRE(std::filesystem::exists(binary));
  for (const auto& [ruleset, rows] : by_ruleset) {
    std::string command = binary.string() + " check --ruleset " + ruleset;
    bool any_failed = false;
    for (const auto& row : rows) {
      command += " '" + row.log.string() + "'";
      any_failed = any_failed || row.verdict == "FAILED";
    }
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe);
    std::string output;
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
    int status = ::pclose(pipe);
    INFO(command);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == (any_failed ? 1 : 0));
    for (const auto& row : rows) {
      std::string expected_line =
          (row.verdict == "SUCCESS" ? "SUCCESS " : "FAILED  ") + row.log.string() + "\n";
      INFO(row.log.string());
      CHECK(output.find(expected_line) != std::string::npos);
    }
  }
}

TEST_CASE("the 398 tensor names are the official closed_bert.yaml list, in its order") {
  auto yaml = mlbert::test::shared_dir() / "reference" / "mlperf_logging_rules" / "training_1.1.0" /
              "closed_bert.yaml";
  std::ifstream in(yaml);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  std::regex quoted("\"((bert|cls)/[^\"]+)\"");
  std::vector<std::string> official;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), quoted); it != std::sregex_iterator();
       ++it)
    official.push_back((*it)[1]);
  CHECK(official == mllog::bert_weight_tensor_names());
}
