// The advisory audit on the published BERT logs (../shared/fixtures): no advisory on any folder
// whose logs the official checker passes, and on the ones it fails exactly the advisories that
// explain what the official tools leave unsaid.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "mlperf_logging/advise/advise.h"
#include "tests/common/shared_fixtures.h"

namespace lg = mlbert::logging;
namespace fs = std::filesystem;

namespace {

struct FixtureFolder {
  fs::path dir;
  std::string ruleset;
  bool all_pass = true;  // every log SUCCESS for the official checker (EXPECTED.tsv)
};

// The system folders of both fixture trees with their ruleset and official verdicts.
std::map<std::string, FixtureFolder> fixture_folders() {
  std::map<std::string, FixtureFolder> folders;
  for (const char* tree : {"mlperf_logs", "mlperf_logs_early"}) {
    const fs::path root = mlbert::test::fixtures_dir() / tree;
    std::ifstream in(root / "EXPECTED.tsv");
    REQUIRE(in);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      std::string log, ruleset, verdict;
      fields >> log >> ruleset >> verdict;
      const std::string system = fs::path(log).parent_path().string();
      FixtureFolder& folder = folders[system];
      folder.dir = root / system;
      folder.ruleset = ruleset;
      folder.all_pass = folder.all_pass && verdict == "SUCCESS";
    }
  }
  return folders;
}

std::map<std::string, int> rules_of(const lg::FolderAdvice& advice) {
  std::map<std::string, int> rules;
  for (const auto& a : advice.report.advisories) ++rules[a.rule];
  return rules;
}

}  // namespace

TEST_CASE("no advisory on a published folder whose logs all pass the official checker",
          "[advise][fixtures]") {
  std::size_t checked = 0;
  for (const auto& [system, folder] : fixture_folders()) {
    if (!folder.all_pass) continue;
    INFO(system);
    const lg::FolderAdvice advice = lg::advise_result_folder(folder.dir, folder.ruleset);
    for (const auto& a : advice.report.advisories) UNSCOPED_INFO(lg::format_advisory(a));
    CHECK(advice.report.advisories.empty());
    CHECK(advice.runs.size() == 10);
    ++checked;
  }
  CHECK(checked == 6);  // Google v0.7, NVIDIA v1.0, Graphcore and Samsung v1.1, Samsung v2.0, v4.0
}

TEST_CASE("the published folders the official checker fails get only the advisories that say why",
          "[advise][fixtures]") {
  // v1.1 NVIDIA fails on the weights_initialization lines today's checker requires, one v0.7
  // NVIDIA and one v3.0 NVIDIA log fail compliance: nothing the advisories look for. Supermicro
  // v1.0: every log names NVIDIA as the org and a placeholder platform, and two runs (result_1,
  // result_9) are the same record for record but the seed: their accuracy never left 0.056.
  const std::map<std::string, std::map<std::string, int>> expected = {
      {"v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch", {}},
      {"v0.7/NVIDIA/dgx2h_ngc20.06_pytorch", {}},
      {"v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch", {}},
      {"v1.0/Supermicro/as-2124gq-nart+", {{"org-platform", 20}, {"identical-runs", 1}}},
  };
  std::size_t checked = 0;
  for (const auto& [system, folder] : fixture_folders()) {
    if (folder.all_pass) continue;
    INFO(system);
    REQUIRE(expected.count(system) == 1);
    CHECK(rules_of(lg::advise_result_folder(folder.dir, folder.ruleset)) == expected.at(system));
    ++checked;
  }
  CHECK(checked == expected.size());
}
