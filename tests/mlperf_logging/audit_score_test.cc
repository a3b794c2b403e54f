// Scoring: the olympic mean and its drop rule on hand-made timings, then whole result directories
// of synthetic logs (compliant, one and two failing runs, non-converged open-division runs,
// scaling).
#include <catch2/catch.hpp>

#include <filesystem>
#include <vector>

#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/package/score.h"
#include "tests/mlperf_logging/audit_synthetic.h"

namespace lg = mlbert::logging;
using mlbert::test::SyntheticRun;
using mlbert::test::TempDir;

TEST_CASE("olympic mean of 10 runs drops the fastest and the slowest", "[score][olympic]") {
  const std::vector<double> minutes = {5.5, 5.1, 5.9, 5.3, 9.0, 5.2, 5.4, 4.0, 5.6, 5.8};
  const auto score = lg::olympic_average(minutes, 0, 1);
  REQUIRE(score);
  // Middle eight in sorted order: 5.1 5.2 5.3 5.4 5.5 5.6 5.8 5.9.
  CHECK(*score == (((((((5.1 + 5.2) + 5.3) + 5.4) + 5.5) + 5.6) + 5.8) + 5.9) / 8);
}

TEST_CASE("with one run already dropped only the fastest of the nine goes", "[score][olympic]") {
  const std::vector<double> nine = {5.5, 5.1, 5.9, 5.3, 5.2, 5.4, 4.0, 5.6, 5.8};
  const auto score = lg::olympic_average(nine, 1, 1);
  REQUIRE(score);
  CHECK(*score == (((((((5.1 + 5.2) + 5.3) + 5.4) + 5.5) + 5.6) + 5.8) + 5.9) / 8);
}

TEST_CASE("olympic mean of too few runs is no score", "[score][olympic]") {
  CHECK(lg::olympic_average({3.0, 1.0, 2.0}, 0, 1) == 2.0);
  CHECK_FALSE(lg::olympic_average({1.0, 2.0}, 0, 1).has_value());
  CHECK(lg::olympic_average({1.0, 2.0}, 1, 1) == 2.0);  // one failed run of three: drop the fastest
  CHECK_FALSE(lg::olympic_average({}, 0, 1).has_value());
}

TEST_CASE("olympic_kept names the runs the olympic mean averages", "[score][olympic]") {
  const std::vector<double> minutes = {5.5, 5.1, 5.9, 5.3, 9.0, 5.2, 5.4, 4.0, 5.6, 5.8};
  // Fastest (index 7, 4.0) and slowest (index 4, 9.0) dropped; the rest fastest first.
  CHECK(lg::olympic_kept(minutes, 0, 1) == std::vector<std::size_t>{1, 5, 3, 6, 0, 8, 9, 2});
  // One run already failed: only the fastest of the nine goes.
  const std::vector<double> nine = {5.5, 5.1, 4.0, 5.3};
  CHECK(lg::olympic_kept(nine, 1, 1) == std::vector<std::size_t>{1, 3, 0});
  CHECK(lg::olympic_kept({1.0, 2.0}, 0, 1).empty());
}

TEST_CASE("score of ten compliant synthetic runs is the olympic mean of their minutes",
          "[score][dir]") {
  for (const std::string ruleset : {"0.7.0", "1.0.0", "2.1.0", "3.1.0", "4.1.0", "5.0.0"}) {
    INFO("ruleset " << ruleset);
    TempDir tmp;
    mlbert::test::write_results(tmp.path(), mlbert::test::ten_good_runs(ruleset, "closed"));
    const auto score = lg::score_system(tmp.path(), {ruleset, true});
    CHECK(score.dropped == 0);
    REQUIRE(score.score);
    // Minutes 10.0 .. 10.9: the middle eight average 10.45.
    CHECK(*score.score == Approx(10.45).epsilon(1e-12));
    for (const auto& run : score.runs) CHECK(run.counted);
  }
}

TEST_CASE("one non-compliant run is dropped with the fastest, two mean no score", "[score][dir]") {
  TempDir one, two;
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");
  runs[2].final_accuracy = 0.70;  // closed BERT needs one eval at >= 0.720
  runs[2].status = "aborted";
  mlbert::test::write_results(one.path(), runs);
  const auto score = lg::score_system(one.path(), {"4.1.0", true});
  CHECK(score.dropped == 1);
  CHECK_FALSE(score.runs[2].counted);
  CHECK(score.runs[2].reason.find("Compliance check failed") == 0);
  REQUIRE(score.score);
  // runs[2] had 10.0 min (the fastest); without it 10.1 .. 10.9, drop 10.1: mean of 10.2 .. 10.9.
  CHECK(*score.score == Approx(10.55).epsilon(1e-12));

  runs[5].final_accuracy = 0.5;
  mlbert::test::write_results(two.path(), runs);
  const auto none = lg::score_system(two.path(), {"4.1.0", true});
  CHECK(none.dropped == 2);
  CHECK_FALSE(none.score.has_value());
}

TEST_CASE("an open-division run that did not converge still counts when its log is compliant",
          "[score][dir]") {
  TempDir tmp;
  auto runs = mlbert::test::ten_good_runs("4.1.0", "open");
  runs[4].status = "aborted";
  runs[4].final_accuracy = 0.6;
  mlbert::test::write_results(tmp.path(), runs);
  const auto score = lg::score_system(tmp.path(), {"4.1.0", true});
  CHECK(score.dropped == 0);
  CHECK(score.runs[4].counted);
  CHECK(score.runs[4].run_stop_status == "aborted");
  REQUIRE(score.score);
  bool flagged = false;
  for (const auto& note : score.notes) flagged |= note.find("result_4.txt counts although") == 0;
  CHECK(flagged);
}

TEST_CASE("scaling.json multiplies the score, malformed scaling.json is an error", "[score][dir]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path() / "bert", mlbert::test::ten_good_runs("4.1.0", "closed"));
  mlbert::test::write_text(tmp.path() / "bert" / "scaling.json", R"({"scaling_factor": 1.25})");
  // The system folder holding bert/ is accepted too.
  const auto scaled = lg::score_system(tmp.path(), {"4.1.0", true});
  CHECK(scaled.dir == tmp.path() / "bert");
  CHECK(scaled.scaling_factor == 1.25);
  CHECK(*scaled.score == Approx(10.45 * 1.25).epsilon(1e-12));
  const auto unscaled = lg::score_system(tmp.path(), {"4.1.0", false});
  CHECK(*unscaled.score == Approx(10.45).epsilon(1e-12));
  mlbert::test::write_text(tmp.path() / "bert" / "scaling.json", R"({"factor": 2})");
  CHECK_THROWS_WITH(lg::score_system(tmp.path(), {"4.1.0", true}),
                    Catch::Contains("scaling_factor"));
}

TEST_CASE("score rejects missing directories, empty ones and unknown rulesets",
          "[score][bad-input]") {
  TempDir tmp;
  CHECK_THROWS_AS(lg::score_system(tmp.path() / "absent", {"4.1.0", true}), lg::AuditError);
  CHECK_THROWS_WITH(lg::score_system(tmp.path(), {"4.1.0", true}),
                    Catch::Contains("no result_*.txt"));
  mlbert::test::write_results(tmp.path(), mlbert::test::ten_good_runs("4.1.0", "closed"));
  CHECK_THROWS_AS(lg::score_system(tmp.path(), {"6.0.0", true}), lg::AuditError);
  CHECK_THROWS_AS(lg::score_system(tmp.path(), {"four", true}), lg::AuditError);
}

TEST_CASE("empty, binary and truncated logs are dropped runs, never a crash",
          "[score][bad-input]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path(), mlbert::test::ten_good_runs("4.1.0", "closed"));
  mlbert::test::write_text(tmp.path() / "result_1.txt", "");
  const auto one_bad = lg::score_system(tmp.path(), {"4.1.0", true});
  CHECK(one_bad.dropped == 1);
  CHECK(one_bad.score.has_value());
  std::string binary(4096, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>((i * 131) & 0xff);
  mlbert::test::write_text(tmp.path() / "result_2.txt", binary);
  std::string truncated = mlbert::test::read_text(tmp.path() / "result_3.txt");
  mlbert::test::write_text(tmp.path() / "result_3.txt", truncated.substr(0, truncated.size() / 2));
  const auto bad = lg::score_system(tmp.path(), {"4.1.0", true});
  CHECK(bad.dropped == 3);
  CHECK_FALSE(bad.score.has_value());
}

TEST_CASE("the ruleset of a published results tree comes from its round", "[score][ruleset]") {
  CHECK(lg::ruleset_from_path("/data/training_results_v3.0/NVIDIA/results/x/bert") == "3.0.0");
  CHECK(lg::ruleset_from_path("fixtures/mlperf_logs/v1.1/Samsung/sys") == "1.1.0");
  CHECK(lg::ruleset_from_path("training_results_v0.7/Google/results/tpu/bert") == "0.7.0");
  CHECK(lg::ruleset_from_path("fixtures/mlperf_logs_early/v1.0/NVIDIA/sys") == "1.0.0");
  CHECK_FALSE(lg::ruleset_from_path("/data/results/x").has_value());
}

TEST_CASE("under 5.1.0 no BERT run counts: no score, and a note that says why", "[score][dir]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path(), mlbert::test::ten_good_runs("5.0.0", "closed"));
  const auto score = lg::score_system(tmp.path(), {"5.1.0", true});
  CHECK_FALSE(score.score);
  CHECK(score.dropped == 10);
  for (const auto& run : score.runs)
    CHECK(run.reason.find("bert is not a benchmark of training ruleset 5.1.0") !=
          std::string::npos);
  REQUIRE_FALSE(score.notes.empty());
  CHECK(score.notes[0].find("bert is not a benchmark") == 0);
  CHECK_THROWS_WITH(lg::score_system(tmp.path(), {"6.0.0", true}),
                    Catch::Contains("has no BERT compliance rules"));
}
