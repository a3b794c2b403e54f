// The audit commands on real MLPerf BERT submissions (../shared/fixtures/mlperf_logs, and
// mlperf_logs_early for v0.7 and v1.0): official scores from SCORES.tsv, RCP verdicts the official
// rcp_checker gives, the real system descriptions, and packages assembled in a temp folder from the
// published logs.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/package/package.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/package/score.h"
#include "mlperf_logging/package/system_desc.h"
#include "tests/common/shared_fixtures.h"
#include "tests/mlperf_logging/audit_synthetic.h"

namespace lg = mlbert::logging;
namespace fs = std::filesystem;
using mlbert::test::TempDir;

namespace {

fs::path logs_dir() {
  return mlbert::test::fixtures_dir() / "mlperf_logs";
}
fs::path early_logs_dir() {
  return mlbert::test::fixtures_dir() / "mlperf_logs_early";
}

// The fixture folder a system path "v0.7/NVIDIA/x" lies in.
fs::path fixture_dir_of(const std::string& system) {
  return system.starts_with("v0.7/") || system.starts_with("v1.0/") ? early_logs_dir() : logs_dir();
}

// "v3.0/NVIDIA/x" -> "3.0.0"
std::string ruleset_of(const std::string& system) {
  return system.substr(1, 3) + ".0";
}

// A package <tmp>/<org> from one fixture system: its system.json as systems/<system>.json, its
// logs as results/<system>/bert/, and a stand-in implementation folder.
fs::path assemble_package(const fs::path& tmp, const std::string& fixture_system) {
  const fs::path source = fixture_dir_of(fixture_system) / fixture_system;
  const fs::path org = tmp / "org";
  const std::string system = source.filename().string();
  fs::create_directories(org / "systems");
  fs::copy_file(source / "system.json", org / "systems" / (system + ".json"));
  fs::create_directories(org / "results" / system / "bert");
  for (const auto& file : lg::find_result_files(source)) {
    fs::copy_file(file, org / "results" / system / "bert" / file.filename());
  }
  mlbert::test::write_text(org / "benchmarks/bert/implementations/pytorch/run_and_time.sh",
                           "#!/bin/bash\n");
  fs::permissions(org, fs::perms::owner_all, fs::perm_options::add);
  for (const auto& entry : fs::recursive_directory_iterator(org)) {
    fs::permissions(entry.path(), fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::add);
  }
  return org;
}

}  // namespace

TEST_CASE("scores of the fixture systems equal the official SCORES.tsv", "[fixtures][score]") {
  int systems = 0, scored = 0;
  for (const fs::path& dir : {logs_dir(), early_logs_dir()}) {
    std::ifstream in(dir / "SCORES.tsv");
    REQUIRE(in);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const auto tab = line.find('\t');
      const std::string system = line.substr(0, tab);
      const std::string expected = line.substr(tab + 1);
      INFO(system);
      const auto score = lg::score_system(dir / system, {ruleset_of(system), true});
      if (expected == "NONE") {
        CHECK_FALSE(score.score.has_value());
      } else {
        REQUIRE(score.score.has_value());
        CHECK(mlbert::mllog::python_float_repr(*score.score) == expected);
        ++scored;
      }
      ++systems;
    }
  }
  CHECK(systems == 10);
  CHECK(scored >= 7);
}

TEST_CASE("v0.7 NVIDIA drops its one run below the 0.712 target, Supermicro v1.0 has no score",
          "[fixtures][score]") {
  const auto nvidia =
      lg::score_system(early_logs_dir() / "v0.7/NVIDIA/dgx2h_ngc20.06_pytorch", {"0.7.0", true});
  CHECK(nvidia.dropped == 1);
  CHECK(nvidia.runs[1].reason.find("0.712") != std::string::npos);
  const auto supermicro =
      lg::score_system(early_logs_dir() / "v1.0/Supermicro/as-2124gq-nart+", {"1.0.0", true});
  CHECK(supermicro.dropped == 10);
  CHECK_FALSE(supermicro.score);
  // Under 5.1.0 no BERT run counts, and the notes say why.
  const auto later =
      lg::score_system(early_logs_dir() / "v1.0/NVIDIA/dgxa100_ngc21.05_pytorch", {"5.1.0", true});
  CHECK_FALSE(later.score);
  CHECK(later.dropped == 10);
  REQUIRE_FALSE(later.notes.empty());
  CHECK(later.notes[0].find("bert is not a benchmark of training ruleset 5.1.0") !=
        std::string::npos);
}

TEST_CASE("the v1.1 NVIDIA system has no score: today's checker fails all ten logs",
          "[fixtures][score]") {
  const auto score =
      lg::score_system(logs_dir() / "v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch", {"1.1.0", true});
  CHECK(score.dropped == 10);
  for (const auto& run : score.runs) {
    CHECK(run.reason.find("weights_initialization") != std::string::npos);
  }
}

TEST_CASE("RCP verdicts on the fixture systems are the official ones", "[fixtures][rcp]") {
  struct Case {
    const char* system;
    const char* ruleset;
    bool train_samples;
    bool passed;
    const char* message;
  };
  // From mlperf_logging 4.1.59 rcp_checker.check_directory(..., rcp_pass='pruned_rcps').
  const Case cases[] = {
      {"v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch", "1.1.0", false, false, "RCP found"},
      {"v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch", "1.1.0", true, true, "RCP found"},
      {"v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch", "3.0.0", false, true, "RCP found"},
      {"v4.0/NVIDIA/h200_ngc23.09_pytorch", "4.0.0", false, true, "RCP Interpolation"},
      {"v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch", "2.0.0", true, false,
       "RCP found"},
      {"v1.1/Graphcore/ipu-pod16-POPART-open", "1.1.0", false, false, "RCP found"},
      {"v1.0/NVIDIA/dgxa100_ngc21.05_pytorch", "1.0.0", false, false, "RCP Interpolation"},
      {"v1.0/NVIDIA/dgxa100_ngc21.05_pytorch", "1.0.0", true, true, "RCP Interpolation"},
      {"v1.0/Supermicro/as-2124gq-nart+", "1.0.0", false, false, "Insufficient convergence"},
  };
  for (const auto& c : cases) {
    INFO(c.system << " train_samples=" << c.train_samples);
    lg::RcpOptions options;
    options.ruleset = c.ruleset;
    options.bert_train_samples = c.train_samples;
    const auto result = lg::check_rcp_directory(fixture_dir_of(c.system) / c.system, options);
    CHECK(result.passed == c.passed);
    CHECK(result.message == c.message);
  }
  // The v3.0 run that aborted counts as infinitely slow and is the one olympic scoring drops.
  lg::RcpOptions options;
  options.ruleset = "3.0.0";
  const auto v3 =
      lg::check_rcp_directory(logs_dir() / "v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch", options);
  CHECK_FALSE(v3.runs[4].converged);
  CHECK(*v3.submission_mean == 2877120.0);
  // 0.7.0 had no RCPs: the check says so instead of judging.
  options.ruleset = "0.7.0";
  CHECK_THROWS_WITH(
      lg::check_rcp_directory(early_logs_dir() / "v0.7/NVIDIA/dgx2h_ngc20.06_pytorch", options),
      Catch::Contains("ruleset 0.7.0 has no RCPs"));
}

TEST_CASE("the real system descriptions pass before 4.0.0 and fail its status rule after",
          "[fixtures][system]") {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(mlbert::test::fixtures_dir() / "systems"))
    files.push_back(entry.path());
  for (const fs::path& dir : {logs_dir(), early_logs_dir()}) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.path().filename() == "system.json") files.push_back(entry.path());
    }
  }
  REQUIRE(files.size() == 12);
  for (const auto& file : files) {
    INFO(file);
    for (const char* ruleset : {"0.7.0", "1.0.0", "3.1.0"})
      CHECK(lg::check_system_desc_file(file, ruleset).valid);
    const auto v4 = lg::check_system_desc_file(file, "4.0.0");
    CHECK_FALSE(v4.valid);
    REQUIRE(v4.findings.size() == 1);
    CHECK(v4.findings[0].field == "status");
  }
}

TEST_CASE("a package from the v3.0 NVIDIA logs passes with its one aborted run tolerated",
          "[fixtures][package]") {
  TempDir tmp;
  const fs::path org = assemble_package(tmp.path(), "v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch");
  lg::PackageOptions options;
  options.ruleset = "3.0.0";
  const auto result = lg::check_package(org, options);
  for (const auto& f : result.findings) UNSCOPED_INFO(f.where.string() << ": " << f.text);
  CHECK(result.passed);
  REQUIRE(result.benchmarks.size() == 1);
  CHECK(result.benchmarks[0].failed_compliance == 1);
  CHECK(result.benchmarks[0].seeds_ok == true);
  CHECK(result.benchmarks[0].rcp_ok == true);
}

TEST_CASE("packages from real logs fail for the official reasons", "[fixtures][package]") {
  {
    // v4.0 under 4.0.0: "onprem" is no longer a valid status.
    TempDir tmp;
    const fs::path org = assemble_package(tmp.path(), "v4.0/NVIDIA/h200_ngc23.09_pytorch");
    lg::PackageOptions options;
    options.ruleset = "4.0.0";
    const auto result = lg::check_package(org, options);
    CHECK_FALSE(result.passed);
    CHECK(result.error_count() == 1);
    CHECK(result.findings[0].text.find("field 'status'") != std::string::npos);
    CHECK(result.benchmarks[0].rcp_message == "RCP Interpolation");
  }
  {
    // v1.1 NVIDIA under 1.1.0: ten logs without weights_initialization records.
    TempDir tmp;
    const fs::path org = assemble_package(tmp.path(), "v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch");
    lg::PackageOptions options;
    options.ruleset = "1.1.0";
    options.rcp_bert_train_samples = true;
    const auto result = lg::check_package(org, options);
    CHECK_FALSE(result.passed);
    CHECK(result.benchmarks[0].failed_compliance == 10);
  }
}

TEST_CASE("a 0.7.0 package: compliance only, no seed, RCP or system-description verdict",
          "[fixtures][package]") {
  TempDir tmp;
  const fs::path org = assemble_package(tmp.path(), "v0.7/NVIDIA/dgx2h_ngc20.06_pytorch");
  // A system description that 1.0.0 and later reject: 0.7.0 packages do not judge it.
  const fs::path desc = org / "systems" / "dgx2h_ngc20.06_pytorch.json";
  auto description = lg::read_json_file(desc);
  description.erase("cooling");
  mlbert::test::write_text(desc, description.dump(2));
  lg::PackageOptions options;
  options.ruleset = "0.7.0";
  const auto result = lg::check_package(org, options);
  for (const auto& f : result.findings) UNSCOPED_INFO(f.where.string() << ": " << f.text);
  CHECK(result.passed);
  REQUIRE(result.benchmarks.size() == 1);
  CHECK(result.benchmarks[0].division == "closed");
  CHECK(result.benchmarks[0].failed_compliance == 1);  // result_1, below 0.712
  CHECK_FALSE(result.benchmarks[0].seeds_ok.has_value());
  CHECK_FALSE(result.benchmarks[0].rcp_ok.has_value());
  bool cooling_noted = false;
  for (const auto& f : result.findings)
    cooling_noted = cooling_noted || (f.level == lg::PackageFinding::Level::warning &&
                                      f.text.find("cooling") != std::string::npos);
  CHECK(cooling_noted);
  // The same package under 1.0.0: the description is judged and fails.
  options.ruleset = "1.0.0";
  CHECK_FALSE(lg::check_package(org, options).passed);
  // Without a division field the official checker cannot go on.
  description.erase("division");
  mlbert::test::write_text(desc, description.dump(2));
  options.ruleset = "0.7.0";
  CHECK_FALSE(lg::check_package(org, options).passed);
}

TEST_CASE("a 1.0.0 package from the v1.0 NVIDIA logs passes with train_samples, as officially",
          "[fixtures][package]") {
  TempDir tmp;
  const fs::path org = assemble_package(tmp.path(), "v1.0/NVIDIA/dgxa100_ngc21.05_pytorch");
  lg::PackageOptions options;
  options.ruleset = "1.0.0";
  const auto by_eval = lg::check_package(org, options);
  CHECK_FALSE(by_eval.passed);
  CHECK(by_eval.benchmarks[0].rcp_ok == false);
  options.rcp_bert_train_samples = true;
  const auto result = lg::check_package(org, options);
  for (const auto& f : result.findings) UNSCOPED_INFO(f.where.string() << ": " << f.text);
  CHECK(result.passed);
  CHECK(result.benchmarks[0].seeds_ok == true);
  CHECK(result.benchmarks[0].rcp_ok == true);
  CHECK(result.benchmarks[0].rcp_message == "RCP Interpolation");
}

TEST_CASE("a BERT package under 5.1.0 fails: bert is not a benchmark of that round",
          "[fixtures][package]") {
  TempDir tmp;
  const fs::path org = assemble_package(tmp.path(), "v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch");
  auto description = lg::read_json_file(org / "systems" / "dgxh100_n8_ngc23.04_pytorch.json");
  description["status"] = "Available on-premise";
  mlbert::test::write_text(org / "systems" / "dgxh100_n8_ngc23.04_pytorch.json",
                           description.dump(2));
  lg::PackageOptions options;
  options.ruleset = "5.1.0";
  const auto result = lg::check_package(org, options);
  for (const auto& f : result.findings) UNSCOPED_INFO(f.where.string() << ": " << f.text);
  CHECK_FALSE(result.passed);
  CHECK(result.benchmarks.empty());
  REQUIRE(result.error_count() == 1);
  bool said = false;
  for (const auto& f : result.findings)
    said = said || (f.level == lg::PackageFinding::Level::error &&
                    f.text.find("[layout] bert is not a benchmark of training ruleset 5.1.0") == 0);
  CHECK(said);
}
