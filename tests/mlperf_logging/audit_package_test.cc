// Package check on synthetic packages: a good one passes, and each rule the official checker
// enforces (result count, compliance with one tolerated failure, seeds, RCP, system description)
// and each layout rule mlbert adds fails it with a finding naming the file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/package/package.h"
#include "tests/mlperf_logging/audit_synthetic.h"

namespace lg = mlbert::logging;
namespace fs = std::filesystem;
using mlbert::test::SyntheticRun;
using mlbert::test::TempDir;

namespace {

lg::PackageResult check_org(const fs::path& org, const std::string& ruleset = "4.1.0") {
  lg::PackageOptions options;
  options.ruleset = ruleset;
  return lg::check_package(org, options);
}

// True when some finding of `level` is about `where` (a suffix of its path) and mentions `text`.
bool found(const lg::PackageResult& result, lg::PackageFinding::Level level,
           const std::string& where, const std::string& text) {
  for (const auto& f : result.findings) {
    const std::string path = f.where.generic_string();
    if (f.level == level && path.size() >= where.size() &&
        path.compare(path.size() - where.size(), where.size(), where) == 0 &&
        f.text.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

constexpr auto kError = lg::PackageFinding::Level::error;
constexpr auto kWarning = lg::PackageFinding::Level::warning;

}  // namespace

TEST_CASE("a complete synthetic closed package passes", "[package]") {
  for (const std::string ruleset : {"2.0.0", "3.0.0", "4.1.0", "5.0.0"}) {
    INFO(ruleset);
    TempDir tmp;
    const fs::path org = tmp.path() / "mlbert";
    mlbert::test::write_package(org, "sys1", "closed", ruleset,
                                mlbert::test::ten_good_runs(ruleset, "closed"));
    const auto result = check_org(org, ruleset);
    for (const auto& f : result.findings) UNSCOPED_INFO(f.where.string() << ": " << f.text);
    CHECK(result.passed);
    CHECK(result.error_count() == 0);
    REQUIRE(result.benchmarks.size() == 1);
    CHECK(result.benchmarks[0].division == "closed");
    CHECK(result.benchmarks[0].seeds_ok == true);
    CHECK(result.benchmarks[0].rcp_ok == true);
  }
}

TEST_CASE("nine result files fail the package", "[package]") {
  TempDir tmp;
  const fs::path org = tmp.path() / "mlbert";
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");
  runs.pop_back();
  mlbert::test::write_package(org, "sys1", "closed", "4.1.0", runs);
  const auto result = check_org(org);
  CHECK_FALSE(result.passed);
  CHECK_FALSE(result.official_passed());
  CHECK(result.official_stop.empty());
  CHECK(found(result, kError, "results/sys1/bert", "found 9 result_*.txt files, expected 10"));
}

TEST_CASE("one non-compliant run is accepted, two are not", "[package]") {
  TempDir one, two;
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");
  runs[6].final_accuracy = 0.65;
  mlbert::test::write_package(one.path(), "sys1", "closed", "4.1.0", runs);
  const auto tolerated = check_org(one.path());
  CHECK(tolerated.passed);
  CHECK(found(tolerated, kWarning, "results/sys1/bert/result_6.txt", "compliance check FAILED"));
  CHECK(found(tolerated, kWarning, "results/sys1/bert", "accepted under olympic scoring"));

  runs[8].final_accuracy = 0.65;
  mlbert::test::write_package(two.path(), "sys1", "closed", "4.1.0", runs);
  const auto rejected = check_org(two.path());
  CHECK_FALSE(rejected.passed);
  CHECK(found(rejected, kError, "results/sys1/bert/result_8.txt", "closed_bert:eval_accuracy"));
  CHECK(found(rejected, kError, "results/sys1/bert", "2 files do not comply"));
}

TEST_CASE("closed division: a repeated seed from the same source line fails, open does not care",
          "[package][seeds]") {
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");
  runs[4].seed = runs[1].seed;
  TempDir closed;
  mlbert::test::write_package(closed.path(), "sys1", "closed", "4.1.0", runs);
  const auto result = check_org(closed.path());
  CHECK_FALSE(result.passed);
  CHECK(found(result, kError, "result_4.txt",
              "the same seed from the same source line as result_1.txt"));
  // The same seed from another line is allowed.
  runs[4].seed_lineno = 43;
  TempDir other_line;
  mlbert::test::write_package(other_line.path(), "sys1", "closed", "4.1.0", runs);
  CHECK(check_org(other_line.path()).passed);
  // And the open division has no seed rule.
  for (auto& run : runs) run.division = "open";
  runs[4].seed_lineno = 42;
  TempDir open;
  mlbert::test::write_package(open.path(), "sys1", "open", "4.1.0", runs);
  const auto open_result = check_org(open.path());
  CHECK(open_result.passed);
  CHECK_FALSE(open_result.benchmarks[0].seeds_ok.has_value());
}

TEST_CASE("closed division: a run without a seed fails, the bypass file lifts it",
          "[package][seeds]") {
  TempDir tmp;
  mlbert::test::write_package(tmp.path(), "sys1", "closed", "4.1.0",
                              mlbert::test::ten_good_runs("4.1.0", "closed"));
  const fs::path log = tmp.path() / "results/sys1/bert/result_3.txt";
  std::string text = mlbert::test::read_text(log);
  const auto begin = text.find("\"key\":\"seed\"");
  REQUIRE(begin != std::string::npos);
  const auto line_start = text.rfind('\n', begin) + 1;
  text.erase(line_start, text.find('\n', begin) + 1 - line_start);
  mlbert::test::write_text(log, text);
  const auto result = check_org(tmp.path());
  CHECK_FALSE(result.passed);
  CHECK(found(result, kError, "result_3.txt", "logs no seed"));

  // The official parser of bypass files compares whole lines, newline included.
  mlbert::test::write_text(tmp.path() / "results/sys1/bert/package_checker_params",
                           "seed-checker-bypass\n");
  const auto with_newline = check_org(tmp.path());
  CHECK_FALSE(with_newline.passed);
  CHECK(found(with_newline, kWarning, "package_checker_params", "ends with a newline"));
  mlbert::test::write_text(tmp.path() / "results/sys1/bert/package_checker_params",
                           "seed-checker-bypass");
  CHECK(check_org(tmp.path()).passed);
  // A folder of that name (fuzz_mllog_package: the read of a folder threw out of the checker),
  // in the benchmark folder or the system's: an error naming it, not a crash.
  for (const char* where : {"results/sys1/bert", "results/sys1"}) {
    INFO(where);
    fs::remove(tmp.path() / "results/sys1/bert/package_checker_params");
    fs::create_directories(tmp.path() / where / "package_checker_params");
    const auto folder = check_org(tmp.path());
    CHECK_FALSE(folder.passed);
    CHECK(found(folder, kError, "package_checker_params", "package_checker_params is not a file"));
    fs::remove_all(tmp.path() / where / "package_checker_params");
  }
}

TEST_CASE("closed division: converging too fast fails the RCP check, open division skips it",
          "[package][rcp]") {
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");
  for (auto& run : runs) run.samples_to_converge = 2'000'000;
  TempDir closed;
  mlbert::test::write_package(closed.path(), "sys1", "closed", "4.1.0", runs);
  const auto result = check_org(closed.path());
  CHECK_FALSE(result.passed);
  CHECK(found(result, kError, "results/sys1/bert", "RCP test failed: RCP found"));
  lg::PackageOptions bypass;
  bypass.ruleset = "4.1.0";
  bypass.rcp_bypass = true;
  CHECK(lg::check_package(closed.path(), bypass).passed);

  for (auto& run : runs) run.division = "open";
  TempDir open;
  mlbert::test::write_package(open.path(), "sys1", "open", "4.1.0", runs);
  CHECK(check_org(open.path()).passed);
}

TEST_CASE("an invalid system description fails the package", "[package][system]") {
  TempDir tmp;
  mlbert::test::write_package(tmp.path(), "sys1", "closed", "4.1.0",
                              mlbert::test::ten_good_runs("4.1.0", "closed"));
  std::string desc = mlbert::test::read_text(tmp.path() / "systems/sys1.json");
  desc.replace(desc.find("Available on-premise"), 20, "onprem");
  mlbert::test::write_text(tmp.path() / "systems/sys1.json", desc);
  const auto result = check_org(tmp.path());
  CHECK_FALSE(result.passed);
  CHECK(found(result, kError, "systems/sys1.json", "field 'status'"));
  mlbert::test::write_text(tmp.path() / "systems/sys1.json", "{\"division\": ");
  CHECK(found(check_org(tmp.path()), kError, "systems/sys1.json", "malformed JSON"));
}

TEST_CASE("layout: a missing system description or no BERT results fail", "[package][layout]") {
  TempDir tmp;
  mlbert::test::write_package(tmp.path(), "sys1", "closed", "4.1.0",
                              mlbert::test::ten_good_runs("4.1.0", "closed"));
  fs::remove(tmp.path() / "systems/sys1.json");
  const auto result = check_org(tmp.path());
  CHECK_FALSE(result.passed);
  CHECK(found(result, kError, "results/sys1/bert", "no system description systems/sys1.json"));
  // The official checker opens systems/sys1.json for the division and stops there.
  CHECK(result.official_stop.find("systems/sys1.json") != std::string::npos);

  TempDir no_bert;
  mlbert::test::write_package(no_bert.path(), "sys1", "closed", "4.1.0", {});
  fs::remove_all(no_bert.path() / "results/sys1/bert");
  fs::create_directories(no_bert.path() / "results/sys1/resnet");
  const auto skipped = check_org(no_bert.path());
  CHECK_FALSE(skipped.passed);
  CHECK(found(skipped, kWarning, "results/sys1/resnet", "mlbert checks BERT only"));
  CHECK(found(skipped, kError, "results", "no BERT results"));
  // Only mlbert's [layout] error: the official checker passes an empty package.
  CHECK(skipped.official_passed());
  CHECK(skipped.official_stop.empty());
}

TEST_CASE(
    "a package without an implementation folder passes with a [layout] warning, as the "
    "official checker has no such rule (1.0.0 included)",
    "[package][layout]") {
  for (const std::string ruleset : {"1.0.0", "4.1.0"}) {
    INFO(ruleset);
    TempDir tmp;
    auto runs = mlbert::test::ten_good_runs(ruleset, "closed");
    if (ruleset == "1.0.0") {
      // 1.0.0's RCPs interpolate to a slower mean at 4608 than later rounds' do.
      for (auto& run : runs) run.samples_to_converge += 300'000;
    }
    mlbert::test::write_package(tmp.path(), "sys1", "closed", ruleset, runs);
    fs::remove_all(tmp.path() / "benchmarks");
    const auto result = check_org(tmp.path(), ruleset);
    for (const auto& f : result.findings) UNSCOPED_INFO(f.where.string() << ": " << f.text);
    CHECK(result.passed);
    CHECK(result.official_passed());
    CHECK(found(result, kWarning, "benchmarks/bert/implementations", "[layout] no implementation"));
  }
}

TEST_CASE("power logs need one folder per run with consistent node counts", "[package][power]") {
  TempDir tmp;
  mlbert::test::write_package(tmp.path(), "sys1", "closed", "4.1.0",
                              mlbert::test::ten_good_runs("4.1.0", "closed"));
  const fs::path power = tmp.path() / "results/sys1/bert/power";
  for (int i = 0; i < 10; ++i) {
    const fs::path run = power / ("result_" + std::to_string(i));
    mlbert::test::write_text(run / "node_0.txt", "");
    mlbert::test::write_text(run / "node_1.txt", "");
    mlbert::test::write_text(run / "sw_0.txt", "");
  }
  CHECK(check_org(tmp.path()).passed);
  fs::remove(power / "result_2/node_1.txt");
  const auto one = check_org(tmp.path());
  CHECK(one.passed);  // one bad run is tolerated like a non-compliant one
  CHECK(found(one, kWarning, "power/result_2", "inconsistent number of node power files"));
  fs::remove_all(power / "result_5");
  const auto two = check_org(tmp.path());
  CHECK_FALSE(two.passed);
  CHECK(found(two, kWarning, "power/result_5", "does not contain the power result"));
}

TEST_CASE("package rejects a missing folder and rulesets without BERT rules",
          "[package][bad-input]") {
  TempDir tmp;
  CHECK_THROWS_AS(check_org(tmp.path() / "absent"), lg::AuditError);
  CHECK_THROWS_AS(check_org(tmp.path(), "6.0.0"), lg::AuditError);
  const auto empty = check_org(tmp.path());  // an empty folder is a package with everything missing
  CHECK_FALSE(empty.passed);
  CHECK(found(empty, kError, "systems", "no systems/ folder"));
  CHECK(found(empty, kError, "results", "no results/ folder"));
}

TEST_CASE("a 0.7.0 closed package has no seed or RCP check, 1.0.0 and later do", "[package]") {
  // Every run logs the same seed from the same line and converges far faster than any RCP.
  auto runs = mlbert::test::ten_good_runs("0.7.0", "closed");
  for (auto& run : runs) {
    run.seed = 7;
    run.samples_to_converge = 1'000'000;
  }
  TempDir early, later;
  mlbert::test::write_package(early.path(), "sys1", "closed", "0.7.0", runs);
  const auto result = check_org(early.path(), "0.7.0");
  for (const auto& f : result.findings) UNSCOPED_INFO(f.where.string() << ": " << f.text);
  CHECK(result.passed);
  REQUIRE(result.benchmarks.size() == 1);
  CHECK_FALSE(result.benchmarks[0].seeds_ok.has_value());
  CHECK_FALSE(result.benchmarks[0].rcp_ok.has_value());
  CHECK(found(result, lg::PackageFinding::Level::info, "results/sys1/bert",
              "no seed or RCP check for ruleset 0.7.0"));
  for (auto& run : runs) run.ruleset = "1.0.0";
  mlbert::test::write_package(later.path(), "sys1", "closed", "1.0.0", runs);
  const auto judged = check_org(later.path(), "1.0.0");
  CHECK_FALSE(judged.passed);
  CHECK(judged.benchmarks[0].seeds_ok == false);
  CHECK(judged.benchmarks[0].rcp_ok == false);
}

TEST_CASE("a 0.7.0 package judges no system description but needs its division", "[package]") {
  TempDir tmp;
  mlbert::test::write_package(tmp.path(), "sys1", "closed", "0.7.0",
                              mlbert::test::ten_good_runs("0.7.0", "closed"));
  const fs::path desc = tmp.path() / "systems" / "sys1.json";
  auto description = lg::read_json_file(desc);
  description.erase("cooling");
  description["status"] = "whatever";
  mlbert::test::write_text(desc, description.dump());
  const auto lenient = check_org(tmp.path(), "0.7.0");
  CHECK(lenient.passed);
  CHECK(found(lenient, kWarning, "systems/sys1.json", "not judged in ruleset 0.7.0 packages"));
  CHECK_FALSE(check_org(tmp.path(), "1.0.0").passed);
  description.erase("division");
  mlbert::test::write_text(desc, description.dump());
  const auto no_division = check_org(tmp.path(), "0.7.0");
  CHECK_FALSE(no_division.passed);
  CHECK(found(no_division, kError, "results/sys1/bert", "has no readable division field"));
}

TEST_CASE("a BERT package under 5.1.0 fails: the round has no BERT to check", "[package]") {
  TempDir tmp;
  mlbert::test::write_package(tmp.path(), "sys1", "closed", "5.1.0",
                              mlbert::test::ten_good_runs("5.0.0", "closed"));
  const auto result = check_org(tmp.path(), "5.1.0");
  for (const auto& f : result.findings) UNSCOPED_INFO(f.where.string() << ": " << f.text);
  CHECK_FALSE(result.passed);
  CHECK(result.benchmarks.empty());
  CHECK(result.error_count() == 1);
  CHECK(found(result, kWarning, "results/sys1/bert", "skipping benchmark 'bert', as officially"));
  CHECK(found(result, kError, "results",
              "[layout] bert is not a benchmark of training ruleset 5.1.0"));
}
