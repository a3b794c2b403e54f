// Real published BERT logs (../shared/fixtures/mlperf_logs) get the official checker's verdicts
// from EXPECTED.tsv, through the library and through the `mlbert check` command line.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "mlperf_logging/bert_tensors.h"
#include "mlperf_logging/checker.h"
#include "tests/common/shared_fixtures.h"

namespace mllog = mlbert::mllog;

namespace {

struct Expected {
  std::string log, ruleset, verdict;
};

std::vector<Expected> expected_verdicts() {
  auto tsv = mlbert::test::fixtures_dir() / "mlperf_logs" / "EXPECTED.tsv";
  std::ifstream in(tsv);
  REQUIRE(in.good());
  std::vector<Expected> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Expected e;
    std::getline(fields, e.log, '\t');
    std::getline(fields, e.ruleset, '\t');
    std::getline(fields, e.verdict, '\t');
    rows.push_back(e);
  }
  return rows;
}

}  // namespace

TEST_CASE("every fixture log gets the official verdict from EXPECTED.tsv") {
  auto rows = expected_verdicts();
  REQUIRE(rows.size() >= 60);
  int failed = 0, succeeded = 0;
  for (const auto& row : rows) {
    mllog::CheckOptions options;
    options.ruleset = row.ruleset;
    auto result = mllog::check_log(mlbert::test::fixtures_dir() / "mlperf_logs" / row.log, options);
    INFO(row.log << " (" << row.ruleset << ")\n" << mllog::format_result(result));
    CHECK((result.success ? "SUCCESS" : "FAILED") == row.verdict);
    (result.success ? succeeded : failed)++;
    CHECK(result.benchmark == "bert");
  }
  // The set is not one-sided: both verdicts occur.
  CHECK(failed >= 10);
  CHECK(succeeded >= 40);
}

TEST_CASE("mlbert check prints the official verdicts and exits 1 when any log fails") {
  std::map<std::string, std::vector<Expected>> by_ruleset;
  for (const auto& row : expected_verdicts()) by_ruleset[row.ruleset].push_back(row);
  const auto binary = mlbert::test::binary_dir() / "bin" / "mlbert";
  REQUIRE(std::filesystem::exists(binary));
  for (const auto& [ruleset, rows] : by_ruleset) {
    std::string command = binary.string() + " check --ruleset " + ruleset;
    bool any_failed = false;
    for (const auto& row : rows) {
      command += " '" + (mlbert::test::fixtures_dir() / "mlperf_logs" / row.log).string() + "'";
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
      std::string path = (mlbert::test::fixtures_dir() / "mlperf_logs" / row.log).string();
      std::string expected_line =
          (row.verdict == "SUCCESS" ? "SUCCESS " : "FAILED  ") + path + "\n";
      INFO(row.log);
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
