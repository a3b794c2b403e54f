// `mlbert report` as an auditor signs it off: the RCP-normalized headline beside the raw score,
// the hyperparameters and seeds with repeats marked, every log's SHA-256, the advisories, and the
// CSV/JSON exports with the official summarizer's columns.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "mlperf_logging/log/sha256.h"
#include "mlperf_logging/report/html_parts.h"
#include "mlperf_logging/report/report.h"
#include "tests/mlperf_logging/audit_synthetic.h"

namespace lg = mlbert::logging;
namespace fs = std::filesystem;
using mlbert::test::TempDir;

namespace {

// Ten closed 4.1.0 runs at GBS 4608 converging at `samples` (about), in <tmp>/v4.1/org/<name>.
fs::path write_system(const TempDir& tmp, const std::string& name, double samples,
                      const std::string& division = "closed") {
  const fs::path dir = tmp.path() / "v4.1" / "org" / name;
  auto runs = mlbert::test::ten_good_runs("4.1.0", division);
  for (std::size_t i = 0; i < runs.size(); ++i)
    runs[i].samples_to_converge = samples * (1.0 + 0.002 * (static_cast<double>(i) - 4.5));
  mlbert::test::write_results(dir, runs);
  mlbert::test::write_text(dir / "system.json",
                           mlbert::test::synthetic_system_json(name, division, "4.1.0"));
  return dir;
}

lg::SystemReport report_of(const fs::path& dir) {
  lg::ReportInput input;
  input.dir = dir;
  return lg::read_system_report(input);
}

}  // namespace

TEST_CASE("the headline of a closed result faster than the RCP mean is the normalized score",
          "[report][headline]") {
  TempDir tmp;
  // 2,750,000 samples: within the 4608 RCP's speedup, faster than its mean 2,798,080.
  const lg::SystemReport report = report_of(write_system(tmp, "fast", 2'750'000));
  REQUIRE(report.rcp);
  REQUIRE(report.rcp->passed);
  REQUIRE(report.rcp->scaling_factor > 1.0);
  const lg::ScoreHeadline headline = lg::score_headline(report);
  REQUIRE(headline.raw);
  REQUIRE(headline.normalized);
  CHECK(*headline.raw == *report.score->score);  // no scaling.json in the folder
  CHECK(headline.factor == report.rcp->scaling_factor);
  CHECK(*headline.normalized == *headline.raw * headline.factor);

  const std::string html = lg::render_report_html({report}, {});
  namespace rp = lg::report;
  CHECK(html.find("<b>" + rp::fixed(*headline.normalized, 4) + "</b>") != std::string::npos);
  CHECK(html.find("<td class=\"num\">" + rp::fixed(*headline.raw, 4) + "</td>") !=
        std::string::npos);
  CHECK(html.find("Score " + rp::fixed(*headline.normalized, 4) + " min (raw olympic mean " +
                  rp::fixed(*headline.raw, 4) + " min)") != std::string::npos);

  const nlohmann::ordered_json rows = lg::summary_rows({report});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["bert"].get<double>() == *headline.normalized);
  CHECK(rows[0]["bert:rcp_scaling_factor"].get<double>() == headline.factor);
  CHECK(rows[0]["bert:RCP"] == "Pass");
  CHECK(rows[0]["bert:GBS"].get<double>() == 4608);
}

TEST_CASE("open results, slower results and failed RCP checks are not normalized, and say why",
          "[report][headline]") {
  TempDir tmp;
  const auto open = lg::score_headline(report_of(write_system(tmp, "open", 2'750'000, "open")));
  CHECK(open.factor == 1.0);
  CHECK(*open.normalized == *open.raw);
  CHECK_THAT(open.basis, Catch::Contains("closed results only"));
  const auto slow = lg::score_headline(report_of(write_system(tmp, "slow", 2'900'000)));
  CHECK(slow.factor == 1.0);
  CHECK_THAT(slow.basis, Catch::Contains("no faster than the RCP mean"));
  const auto too_fast = lg::score_headline(report_of(write_system(tmp, "too_fast", 2'000'000)));
  CHECK(too_fast.factor == 1.0);
  CHECK_THAT(too_fast.basis, Catch::Contains("did not pass"));
}

TEST_CASE("the page shows every run's seed, marks a repeated one, and every log's SHA-256",
          "[report][audit]") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "v4.1" / "org" / "sys";
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");
  runs[6].seed = runs[1].seed;
  mlbert::test::write_results(dir, runs);
  const lg::SystemReport report = report_of(dir);
  const std::string html = lg::render_report_html({report}, {});
  CHECK(html.find(">also result_6</span>") != std::string::npos);
  CHECK(html.find(">also result_1</span>") != std::string::npos);
  CHECK(html.find("2 seeds are logged by more than one run.") != std::string::npos);
  CHECK(html.find("<td>opt_lamb_beta_1</td><td>0.62 (every run)</td>") != std::string::npos);
  const std::string json = lg::summary_json({report});
  for (const auto& file : lg::find_result_files(dir)) {
    const std::string sha = lg::sha256_file_hex(file);
    CHECK(html.find("<td class=\"hash\">" + sha + "</td>") != std::string::npos);
    CHECK(json.find("\"sha256\": \"" + sha + "\"") != std::string::npos);
  }
  // The advisories card names the seed-repeat advisory with its file and line.
  CHECK(html.find("seed-repeat</span> <b>result_6.txt line ") != std::string::npos);
}

TEST_CASE("the CSV has the summarizer's columns and quotes cells as pandas does",
          "[report][export]") {
  TempDir tmp;
  const fs::path dir = write_system(tmp, "sys", 2'900'000);
  auto description = nlohmann::json::parse(mlbert::test::read_text(dir / "system.json"));
  description["hw_notes"] = "8 GPUs, 2 CPUs";
  description["sw_notes"] = "say \"hi\"";
  mlbert::test::write_text(dir / "system.json", description.dump());
  const std::string csv = lg::summary_csv({report_of(dir)});
  const auto lines = std::vector<std::string>{csv.substr(0, csv.find('\n')),
                                              csv.substr(csv.find('\n') + 1)};
  CHECK(lines[0] ==
        "division,availability,submitter,system,number_of_nodes,host_processor_model_name,"
        "host_processors_count,accelerator_model_name,accelerators_count,framework,notes,"
        "private_id,bert,bert:time_to_train,bert:Energy,bert:GBS,bert:samples_to_converge,"
        "bert:RCP,bert:rcp_scaling_factor,details_url,code_url");
  CHECK_THAT(lines[1], Catch::StartsWith("closed,Available on-premise,mlbert,sys,1,Synthetic CPU,"
                                         "2,Synthetic GPU,8,mlbert,\"8 GPUs, 2 CPUs;say \"\"hi\"\"\",,"));
  CHECK_THAT(lines[1], Catch::EndsWith(
                           ",,10.45,10.45,,4608.0,2900000.0,Pass,1.0,"
                           "https://github.com/mlcommons/training_results_v4.1/blob/main/mlbert/"
                           "systems/sys.json,https://github.com/mlcommons/training_results_v4.1/"
                           "blob/master/mlbert/benchmarks\n"));
}
