// RCP check: Student t values against scipy, the bisection, pruning and interpolation on hand-made
// reference sets, the project's RCP table against official figures, and every verdict branch on
// synthetic result directories.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <vector>

#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/rcp/stats.h"
#include "mlperf_logging/rcp/table.h"
#include "mlperf_logging/rules/rulesets.h"
#include "tests/common/file_size_limit.h"
#include "tests/mlperf_logging/audit_synthetic.h"

namespace lg = mlbert::logging;
using mlbert::test::SyntheticRun;
using mlbert::test::TempDir;

namespace {

bool close_rel(double a, double b, double rtol) {
  if (a == b) return true;
  return std::fabs(a - b) <= rtol * std::max(std::fabs(a), std::fabs(b));
}

// A reference with 20 runs at `mean` (constant runs: stdev 0, so min mean == mean).
lg::RcpReference flat(double bs, double mean) {
  return {"ref_" + std::to_string(static_cast<int>(bs)), bs, std::vector<double>(20, mean)};
}

std::vector<double> batch_sizes(const std::vector<lg::RcpPoint>& points) {
  std::vector<double> out;
  for (const auto& p : points) out.push_back(p.batch_size);
  return out;
}

std::vector<SyntheticRun> runs_at(int batch_size, double samples,
                                  const std::string& ruleset = "4.1.0") {
  std::vector<SyntheticRun> runs(10);
  for (int i = 0; i < 10; ++i) {
    runs[i].ruleset = ruleset;
    runs[i].global_batch_size = batch_size;
    runs[i].samples_to_converge = samples * (1.0 + 0.002 * (i - 4.5));
    runs[i].seed = 100 + i;
  }
  return runs;
}

lg::RcpResult check(const std::filesystem::path& dir, const std::string& ruleset = "4.1.0",
                    bool bypass = false) {
  lg::RcpOptions options;
  options.ruleset = ruleset;
  options.bypass = bypass;
  return lg::check_rcp_directory(dir, options);
}

}  // namespace

TEST_CASE("Student t CDF matches scipy.stats.t.cdf to 1e-12 relative", "[rcp][stats]") {
  // (t, dof, scipy.stats.t.cdf(t, dof)) from scipy 1.17.1.
  struct Case {
    double t, dof, cdf;
  };
  const Case cases[] = {
      {-40, 24, 8.805768184537416e-24},
      {-6.5, 24, 5.049080704650212e-07},
      {-3.2, 26, 0.0018013738511451526},
      {-1.711, 24, 0.04998895408220822},
      {-1.0, 1, 0.25000000000000006},
      {-0.5, 3, 0.3257239824240755},
      {0.0, 10, 0.5},
      {0.25, 2.5, 0.5891596994373484},
      {1.5, 27, 0.9273909556075015},
      {2.0, 100, 0.9758939106344332},
      {3.0, 5, 0.9849503760512687},
      {12.0, 8, 0.9999989280666262},
      {-2.5, 1000, 0.0062892839005454036},
      {-25, 30, 6.045911190643518e-22},
      {0.8, 0.7, 0.6940939497235424},
  };
  for (const auto& c : cases) {
    INFO("t=" << c.t << " dof=" << c.dof);
    CHECK(close_rel(lg::student_t_cdf(c.t, c.dof), c.cdf, 1e-12));
    CHECK(close_rel(lg::student_t_sf(-c.t, c.dof), c.cdf, 1e-12));
  }
}

TEST_CASE("regularized incomplete beta matches scipy.special.betainc", "[rcp][stats]") {
  struct Case {
    double a, b, x, value;
  };
  const Case cases[] = {
      {0.5, 12.0, 0.3, 0.9962251034199274},    {12.0, 0.5, 0.95, 0.2721705888293583},
      {2.0, 3.0, 0.4, 0.5247999999999999},     {13.0, 0.5, 0.01, 1.5570564839558925e-27},
      {0.5, 0.5, 0.5, 0.5000000000000001},     {5.0, 5.0, 0.999, 0.9999999999998744},
      {100.0, 0.5, 0.999, 0.6550435163244294},
  };
  for (const auto& c : cases) {
    INFO("a=" << c.a << " b=" << c.b << " x=" << c.x);
    CHECK(close_rel(lg::regularized_incomplete_beta(c.a, c.b, c.x), c.value, 1e-12));
  }
  CHECK(lg::regularized_incomplete_beta(2, 3, 0) == 0.0);
  CHECK(lg::regularized_incomplete_beta(2, 3, 1) == 1.0);
  CHECK_THROWS(lg::regularized_incomplete_beta(0, 3, 0.5));
}

TEST_CASE("pooled t-test matches scipy ttest_ind_from_stats(equal_var=True)", "[rcp][stats]") {
  // scipy.stats.ttest_ind_from_stats(2.6e6, 150000, 18, 2.76e6, 150000, 8)
  const lg::TTest test = lg::pooled_t_test(2.6e6, 150000, 18, 2.76e6, 150000, 8);
  CHECK(test.dof == 24);
  CHECK(close_rel(test.t, -2.5102865297687558, 1e-13));
  CHECK(close_rel(test.p_two_sided, 0.019208878845757206, 1e-12));
  // One-sided as the RCP checker converts it: P(T <= t).
  CHECK(close_rel(lg::rcp_one_sided_p_value(test), 0.009604439422878603, 1e-12));
  CHECK(close_rel(lg::rcp_one_sided_p_value(lg::pooled_t_test(3, 1, 10, 2, 1, 10)),
                  lg::student_t_cdf(std::sqrt(5.0), 18), 1e-12));
}

TEST_CASE("the bisection stops where the one-sided p-value crosses alpha", "[rcp][stats]") {
  const double mean = 2'764'498.6666666665;
  const double stdev = 166'119.3;
  const double min_mean = lg::min_acceptable_mean(mean, stdev, 18, 8);
  CHECK(min_mean < mean);
  auto p_at = [&](double m) {
    return lg::rcp_one_sided_p_value(lg::pooled_t_test(m, stdev, 18, mean, stdev, 8));
  };
  CHECK(p_at(min_mean - 1e-3) <= 0.05);
  CHECK(p_at(min_mean + 1e-3) > 0.05);
  // A reference without spread accepts nothing faster than its mean.
  CHECK(lg::min_acceptable_mean(mean, 0.0, 18, 8) == mean);
}

TEST_CASE("RCP statistics use the olympic mean and the population stdev", "[rcp][stats]") {
  std::vector<double> sorted = {1, 2, 3, 4, 100};
  CHECK(lg::rcp_olympic_mean(sorted, 1) == 3.0);
  CHECK(std::isnan(lg::rcp_olympic_mean(std::vector<double>{1, 2}, 1)));
  const std::vector<double> values = {2, 4, 4, 4, 5, 5, 7, 9};
  CHECK(lg::population_stdev(values) == 2.0);
  // Python's round() rounds the binary value: 2.0005 is stored above the tie, 0.1235 below it.
  CHECK(lg::round_to_3_decimals(2.0005) == 2.001);
  CHECK(lg::round_to_3_decimals(0.1235) == 0.123);
  CHECK(lg::round_to_3_decimals(2850000.0) == 2850000.0);
}

TEST_CASE("pruning drops batch sizes below the fastest and points above their neighbours' line",
          "[rcp][pruning]") {
  // 100 converges slower than 200 (the fastest): dropped. Then one left-to-right pass: 300 lies
  // below the 200..400 line and stays; 400 lies above the 300..500 line and goes.
  lg::RcpCatalog catalog("hand-made",
                         {flat(500, 12), flat(100, 10), flat(300, 9), flat(200, 8), flat(400, 20)});
  CHECK(batch_sizes(catalog.points(lg::RcpPass::full)) ==
        std::vector<double>{100, 200, 300, 400, 500});
  CHECK(batch_sizes(catalog.points(lg::RcpPass::pruned)) == std::vector<double>{200, 300, 500});
}

TEST_CASE("pruning is one pass: a removal does not re-examine the point to its left",
          "[rcp][pruning]") {
  // 200 sits below the 100..300 line and stays. 300 is above 200..400 and goes. Against its new
  // neighbour 400, 200 would now lie above the 100..400 line, but the official pass has moved on.
  lg::RcpCatalog catalog("hand-made", {flat(100, 1), flat(200, 2.5), flat(300, 4.5), flat(400, 5)});
  CHECK(batch_sizes(catalog.points(lg::RcpPass::pruned)) == std::vector<double>{100, 200, 400});
}

TEST_CASE("the envelope re-examines the point left of a removal (mlcommons/logging#368)",
          "[rcp][pruning]") {
  // The points of the test above: after 300 goes, 200 lies above the 100..400 line and goes too.
  lg::RcpCatalog catalog("hand-made", {flat(100, 1), flat(200, 2.5), flat(300, 4.5), flat(400, 5)});
  CHECK(batch_sizes(catalog.points(lg::RcpPass::envelope)) == std::vector<double>{100, 400});
  // Below the fastest point nothing is kept, as in the official step 1; a point on a segment
  // stays, as the official comparison is strict.
  lg::RcpCatalog flat_line("hand-made", {flat(50, 3), flat(100, 1), flat(200, 2), flat(300, 3)});
  CHECK(batch_sizes(flat_line.points(lg::RcpPass::envelope)) ==
        std::vector<double>{100, 200, 300});
}

TEST_CASE("interpolation is linear in mean and stdev and runs its own bisection",
          "[rcp][interpolation]") {
  std::vector<double> low_runs, high_runs;
  for (int i = 0; i < 20; ++i) {
    low_runs.push_back(1000 + 10 * i);
    high_runs.push_back(2000 + 30 * i);
  }
  lg::RcpCatalog catalog("hand-made", {{"low", 100, low_runs}, {"high", 300, high_runs}});
  const auto low = *catalog.find(100, lg::RcpPass::full);
  const auto high = *catalog.find(300, lg::RcpPass::full);
  const lg::RcpPoint mid = catalog.interpolate(150, low, high);
  CHECK(mid.interpolated);
  CHECK(mid.name == "bert_interp_150");
  CHECK(close_rel(mid.mean, low.mean + (high.mean - low.mean) * 0.25, 1e-15));
  CHECK(close_rel(mid.stdev, low.stdev + (high.stdev - low.stdev) * 0.25, 1e-15));
  // An interpolated point assumes 20 reference runs, not the 18 of the olympic mean.
  CHECK(mid.min_mean == lg::min_acceptable_mean(mid.mean, mid.stdev, 20, 8));
  CHECK(mid.max_speedup == mid.mean / mid.min_mean);
  CHECK(catalog.nearest_below(150, lg::RcpPass::full)->batch_size == 100);
  CHECK(catalog.nearest_above(150, lg::RcpPass::full)->batch_size == 300);
  CHECK_FALSE(catalog.nearest_above(300, lg::RcpPass::full).has_value());
}

TEST_CASE("the RCP table maps every BERT ruleset to the official data set", "[rcp][table]") {
  CHECK(lg::bert_rcp_set("3.1.0").data_ruleset == "2.1.0");
  CHECK(lg::bert_rcp_set("4.0.0").data_ruleset == "2.1.0");
  CHECK(lg::bert_rcp_set("5.0.0").data_ruleset == "4.1.0");
  CHECK(lg::bert_rcp_set("1.0.0").records.size() == 8);
  CHECK(lg::bert_rcp_set("2.0.0").records.size() == 13);
  CHECK_THROWS_AS(lg::bert_rcp_set("0.7.0"), std::invalid_argument);
  // The rulesets with RCPs are the rows of the one ruleset list that say so.
  std::vector<std::string> listed, tabled;
  for (const auto& row : mlbert::mllog::training_rulesets())
    if (row.bert_rcps) listed.emplace_back(row.name);
  for (auto ruleset : lg::bert_rcp_rulesets()) tabled.emplace_back(ruleset);
  CHECK(tabled == listed);
  for (auto ruleset : lg::bert_rcp_rulesets()) {
    for (const auto& record : lg::bert_rcp_set(ruleset).records) {
      INFO(ruleset << " " << record.name);
      CHECK(record.samples_to_converge.size() >= 20);
      CHECK(record.name == "bert_ref_" + std::to_string(record.batch_size));
    }
  }
  // Official figures (mlperf_logging 4.1.59 RCP_Checker, ruleset 2.1.0, bert_ref_3072).
  lg::RcpCatalog catalog("2.1.0");
  const auto ref = *catalog.find(3072, lg::RcpPass::full);
  CHECK(ref.mean == 2764498.6666666665);
  CHECK(close_rel(ref.min_mean, 2643732.3832027484, 1e-12));
  CHECK_FALSE(catalog.find(3072, lg::RcpPass::pruned).has_value());  // pruned in 2.1.0
  CHECK(catalog.find(4608, lg::RcpPass::pruned).has_value());
}

TEST_CASE("rcp: a submission slower than the minimum passes at an exact batch size",
          "[rcp][check]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path(), runs_at(4608, 2'900'000));
  const auto result = check(tmp.path());
  CHECK(result.passed);
  CHECK(result.verdict == lg::RcpVerdict::pass);
  CHECK(result.message == "RCP found");
  CHECK(result.reference->name == "bert_ref_4608");
  CHECK(result.scaling_factor == 1.0);
  CHECK(result.problems.empty());
}

namespace {
// Options that write scaling.json, for results at 4,608 between the minimum and the RCP mean.
lg::RcpOptions writing_scaling() {
  lg::RcpOptions options;
  options.ruleset = "4.1.0";
  options.write_scaling = true;
  return options;
}
}  // namespace

TEST_CASE("rcp: converging faster than the mean but within the speedup scales the score",
          "[rcp][check]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path(), runs_at(4608, 2'750'000));
  const auto result = lg::check_rcp_directory(tmp.path(), writing_scaling());
  CHECK(result.passed);
  REQUIRE(result.submission_mean);
  CHECK(result.scaling_factor == result.reference->mean / *result.submission_mean);
  CHECK(result.scaling_factor > 1.0);
  REQUIRE(std::filesystem::exists(tmp.path() / "scaling.json"));
  const auto scaling = lg::read_json_file(tmp.path() / "scaling.json");
  CHECK(scaling["scaling_factor"].get<double>() == result.scaling_factor);
}

TEST_CASE("rcp: a scaling.json that cannot be written whole is an error and leaves no file",
          "[rcp][check]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path(), runs_at(4608, 2'750'000));
  std::string error;
  try {
    const mlbert::test::FileSizeLimit limit(10);  // {"scaling_factor": 1.0...} is ~30 bytes
    lg::check_rcp_directory(tmp.path(), writing_scaling());
  } catch (const lg::AuditError& e) {
    error = e.what();
  }
  CHECK_THAT(error, Catch::Contains("scaling.json") && Catch::Contains("File too large"));
  for (const auto& entry : std::filesystem::directory_iterator(tmp.path()))
    CHECK_THAT(entry.path().filename().string(), Catch::StartsWith("result_"));
}

TEST_CASE("rcp: converging faster than the minimum acceptable mean fails, bypass lets it pass",
          "[rcp][check]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path(), runs_at(4608, 2'300'000));
  const auto failed = check(tmp.path());
  CHECK_FALSE(failed.passed);
  CHECK(failed.verdict == lg::RcpVerdict::fail);
  CHECK(failed.message == "RCP found");
  const auto bypassed = check(tmp.path(), "4.1.0", true);
  CHECK(bypassed.passed);
  CHECK(bypassed.bypassed);
  CHECK(bypassed.message == "RCP found passed using rcp_bypass");
}

TEST_CASE("rcp: a batch size between references is judged against their interpolation",
          "[rcp][check]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path(), runs_at(768, 2'500'000));
  const auto result = check(tmp.path(), "4.0.0");
  CHECK(result.passed);
  CHECK(result.message == "RCP Interpolation");
  CHECK(result.reference->name == "bert_interp_768");
  CHECK(result.reference->interpolated);
}

TEST_CASE("rcp: above the largest reference the RCP is missing, below the smallest, slower passes",
          "[rcp][check]") {
  TempDir above, below_slow, below_fast;
  mlbert::test::write_results(above.path(), runs_at(32768, 6'000'000));
  const auto missing = check(above.path());
  CHECK_FALSE(missing.passed);
  CHECK(missing.verdict == lg::RcpVerdict::missing);
  CHECK(missing.message == "Missing RCP, please submit RCP with BS = 32768");

  mlbert::test::write_results(below_slow.path(), runs_at(128, 2'600'000));
  const auto slow = check(below_slow.path());
  CHECK(slow.passed);
  CHECK(slow.message == "RCP not found but slower convergence on smaller batch size");
  CHECK(slow.reference->name == "bert_ref_448");  // the smallest kept after pruning

  mlbert::test::write_results(below_fast.path(), runs_at(128, 1'500'000));
  const auto fast = check(below_fast.path());
  CHECK_FALSE(fast.passed);
  CHECK(fast.verdict == lg::RcpVerdict::missing);
}

TEST_CASE("rcp: one run that did not converge is tolerated, two are not", "[rcp][check]") {
  TempDir one, two;
  auto runs = runs_at(4608, 2'900'000);
  runs[3].status = "aborted";
  mlbert::test::write_results(one.path(), runs);
  const auto tolerated = check(one.path());
  CHECK(tolerated.passed);
  CHECK_FALSE(tolerated.runs[3].converged);
  CHECK(tolerated.runs[3].samples_to_converge == 1e9);

  runs[7].status = "aborted";
  mlbert::test::write_results(two.path(), runs);
  const auto insufficient = check(two.path());
  CHECK_FALSE(insufficient.passed);
  CHECK(insufficient.message == "Insufficient convergence");
}

TEST_CASE("rcp: unusable logs name the file, line and field", "[rcp][check][bad-input]") {
  TempDir mixed, malformed;
  auto runs = runs_at(4608, 2'900'000);
  runs[5].global_batch_size = 3072;
  mlbert::test::write_results(mixed.path(), runs);
  const auto mismatch = check(mixed.path());
  CHECK_FALSE(mismatch.passed);
  CHECK(mismatch.verdict == lg::RcpVerdict::error);
  CHECK(mismatch.message == "Could not detect global_batch_size");
  REQUIRE(mismatch.problems.size() == 1);
  CHECK(mismatch.problems[0].find("result_5.txt: global_batch_size 3072 differs from 4608") !=
        std::string::npos);

  // A batch size that is not a number is named as such, not as differing from itself.
  TempDir not_a_number;
  mlbert::test::write_results(not_a_number.path(), runs_at(4608, 2'900'000));
  std::string log = mlbert::test::read_text(not_a_number.path() / "result_0.txt");
  const auto value = log.find("4608", log.find("\"global_batch_size\""));
  REQUIRE(value != std::string::npos);
  log.replace(value, 4, "NaN");
  mlbert::test::write_text(not_a_number.path() / "result_0.txt", log);
  const auto nan = check(not_a_number.path());
  CHECK(nan.verdict == lg::RcpVerdict::error);
  REQUIRE(nan.problems.size() == 1);
  CHECK(nan.problems[0].find("result_0.txt: global_batch_size nan is not a batch size") !=
        std::string::npos);

  mlbert::test::write_results(malformed.path(), runs_at(4608, 2'900'000));
  std::string text = mlbert::test::read_text(malformed.path() / "result_2.txt");
  const auto pos = text.find("\"epoch_num\"", text.find("\"eval_accuracy\""));
  text.replace(pos, 11, "\"epoch_nom\"");
  mlbert::test::write_text(malformed.path() / "result_2.txt", text);
  const auto bad = check(malformed.path());
  CHECK(bad.verdict == lg::RcpVerdict::error);
  REQUIRE_FALSE(bad.problems.empty());
  CHECK(bad.problems[0].find("result_2.txt:") != std::string::npos);
  CHECK(bad.problems[0].find("metadata.epoch_num") != std::string::npos);

  // A key that is not a string is quoted as it stands (it was a json type_error out of the check).
  text = mlbert::test::read_text(malformed.path() / "result_3.txt");
  text.insert(text.find(":::MLLOG"), R"(:::MLLOG {"namespace": "", "time_ms": 1, )"
                                     R"("event_type": "POINT_IN_TIME", "key": 7, )"
                                     R"("value": "eval_accuracy", "metadata": {}})"
                                     "\n");
  mlbert::test::write_text(malformed.path() / "result_3.txt", text);
  const auto numeric_key = check(malformed.path());
  CHECK(numeric_key.verdict == lg::RcpVerdict::error);
  CHECK(std::any_of(numeric_key.problems.begin(), numeric_key.problems.end(), [](const auto& p) {
    return p.find("result_3.txt:") != std::string::npos &&
           p.find("key '7' has no metadata.epoch_num") != std::string::npos;
  }));

  CHECK_THROWS_AS(check(mixed.path() / "absent"), lg::AuditError);
  TempDir empty;
  CHECK_THROWS_AS(check(empty.path()), lg::AuditError);
  CHECK_THROWS(check(mixed.path(), "0.7.0"));
}

TEST_CASE("rcp: a custom RCP file in the official layout replaces the table", "[rcp][check]") {
  TempDir tmp;
  mlbert::test::write_text(tmp.path() / "rcps.json",
                           R"({"bert_ref_4608": {"Benchmark": "bert", "BS": 4608,
      "Epochs to converge": [3000000, 3000000, 3000000, 3000000, 3000000]}})");
  const auto refs = lg::read_rcp_json(tmp.path() / "rcps.json");
  REQUIRE(refs.size() == 1);
  CHECK(refs[0].samples_to_converge.size() == 5);
  mlbert::test::write_results(tmp.path() / "results", runs_at(4608, 2'900'000));
  lg::RcpOptions options;
  options.ruleset = "4.1.0";
  options.custom_rcps = tmp.path() / "rcps.json";
  const auto result = lg::check_rcp_directory(tmp.path() / "results", options);
  CHECK_FALSE(result.passed);  // 2.9M is faster than a zero-spread 3.0M reference
  mlbert::test::write_text(tmp.path() / "bad.json", R"({"x": {"BS": "big"}})");
  CHECK_THROWS_WITH(lg::read_rcp_json(tmp.path() / "bad.json"),
                    Catch::Contains("record 'x'") && Catch::Contains("BS"));
  // A number past double is an AuditError naming the file, as a syntax error is.
  mlbert::test::write_text(tmp.path() / "overflow.json", R"({"x": {"BS": 1e999}})");
  CHECK_THROWS_WITH(lg::read_rcp_json(tmp.path() / "overflow.json"),
                    Catch::Contains("overflow.json: malformed JSON: number overflow parsing"));
}

TEST_CASE("0.7.0 had no RCPs: the check says so in words, other rulesets list the known ones",
          "[rcp][table]") {
  const std::string early = lg::bert_rcp_absence("0.7.0");
  CHECK(early.find("ruleset 0.7.0 has no RCPs") == 0);
  CHECK(early.find("began with ruleset 1.0.0") != std::string::npos);
  CHECK_THROWS_WITH(lg::RcpCatalog("0.7.0"), early);
  CHECK(lg::bert_rcp_absence("1.0.0").empty());
  CHECK(lg::bert_rcp_absence("5.1.0").empty());  // the official 5.1.0 folder still has them
  CHECK(lg::bert_rcp_absence("6.0.0").find("known: 1.0.0,") != std::string::npos);
}
