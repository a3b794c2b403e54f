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
      if (const auto at = line.find(find); at != std::string::npos)
        line.replace(at, find.size(), replace);
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
  const fs::path changed =
      edited_copy(kSamsung20, "lr", "\"value\": 0.00039299421615882676", "\"value\": 0.0005");
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

namespace {

const fs::path kH200 = kLogs / "v4.0/NVIDIA/h200_ngc23.09_pytorch";

// A copy of a system description with one field set.
fs::path described_as(const std::string& name, const std::string& field, const std::string& value) {
  nlohmann::json system;
  std::ifstream(kH200 / "system.json") >> system;
  system[field] = value;
  const fs::path file =
      fs::path(MLBERT_BINARY_DIR) / "test-work/reproduce-compare" / (name + ".json");
  fs::create_directories(file.parent_path());
  std::ofstream(file) << system.dump(4);
  return file;
}

}  // namespace

// Expected figures from the logs by hand (a Python reading of the ten logs): init_start to
// init_stop, run_start to the last block_stop less the eval_start..eval_stop spans, the spans
// summed.
TEST_CASE("phase times are the medians of the runs' init, training and eval") {
  const Comparison c = compare_results(kH200, kH200, "4.0.0", 0.05);
  const PhaseMedians& p = c.published.phases;
  CHECK(p.runs == 10);
  REQUIRE(p.init);
  CHECK(*p.init == Approx(41.186).margin(1e-6));
  REQUIRE(p.training);
  CHECK(*p.training == Approx(299.2025).margin(1e-6));
  REQUIRE(p.eval);
  CHECK(*p.eval == Approx(20.232).margin(1e-6));
  const nlohmann::json j = comparison_json(c);
  CHECK(j["phase_ratios"]["training"].get<double>() == Approx(1.0));
  CHECK(j["published"]["phases_median"]["eval_seconds"].get<double>() == Approx(20.232));
  CHECK_THAT(format_comparison(c),
             Catch::Contains("  training: reproduced 299.2 s, published 299.2 s, ratio 1.000"));
}

TEST_CASE("logs that time no evaluation give no training or eval phase") {
  const Comparison c = compare_results(kSamsung20, kSamsung20, "2.0.0", 0.05);
  CHECK_FALSE(c.published.phases.training);
  CHECK_FALSE(c.published.phases.eval);
  CHECK_THAT(format_comparison(c),
             Catch::Contains("  eval: reproduced not timed, published not timed"));
}

TEST_CASE("another accelerator model is reported and does not fail the comparison") {
  const fs::path h100 = described_as("h100", "accelerator_model_name", "NVIDIA H100-SXM5-80GB");
  const Comparison c = compare_results(kH200, kH200, "4.0.0", 0.05, h100);
  REQUIRE(c.system_differing.size() == 1);
  CHECK(c.system_differing.front().field == "accelerator_model_name");
  CHECK(c.system_differing.front().reproduced == "NVIDIA H100-SXM5-80GB");
  CHECK(c.system_differing.front().published == "NVIDIA H200-SXM5-141GB");
  CHECK_FALSE(c.system_differing.front().fails);
  CHECK(c.reproduced_verdict);
  CHECK_THAT(format_comparison(c),
             Catch::Contains("accelerator_model_name: reproduced NVIDIA H100"));
}

TEST_CASE("another accelerator count fails the comparison, naming the field") {
  const fs::path four = described_as("four", "accelerators_per_node", "4");
  const Comparison c = compare_results(kH200, kH200, "4.0.0", 0.05, four);
  REQUIRE(c.system_differing.size() == 1);
  CHECK(c.system_differing.front().fails);
  CHECK_FALSE(c.reproduced_verdict);
  CHECK_THAT(c.verdict,
             Catch::StartsWith(
                 "not reproduced: accelerators_per_node differs (4 reproduced, 8 published"));
}

TEST_CASE("a side without a system description is named, its fields not compared") {
  const fs::path logs_only = edited_copy(kH200, "logs-only", "", "");
  fs::remove(logs_only / "system.json");
  const Comparison c = compare_results(logs_only, kH200, "4.0.0", 0.05);
  CHECK(c.system_differing.empty());
  CHECK_THAT(c.system_note, Catch::Contains("no system description for the reproduced runs"));
}

TEST_CASE("the report section carries the scores, runs, phases and differing fields") {
  const fs::path h100 = described_as("h100-section", "accelerator_model_name", "H100");
  const mlbert::logging::ComparisonSection s =
      comparison_section(compare_results(kSamsung20, kSamsung11, "2.0.0", 0.05));
  CHECK_FALSE(s.reproduced);
  CHECK_THAT(s.verdict, Catch::StartsWith("not reproduced: time to train 0."));
  REQUIRE(s.tables.size() == 5);
  CHECK(s.tables[0].rows.at(0).at(3).rfind("0.", 0) == 0);  // the ratio of the scores
  CHECK(s.tables[1].rows.size() == 11);                     // ten runs and the RCP tests
  CHECK(s.tables[2].rows.at(1).at(1) == "not timed");
  const mlbert::logging::ComparisonSection same =
      comparison_section(compare_results(kH200, kH200, "4.0.0", 0.05, h100));
  CHECK(same.tables[2].rows.at(0) == std::vector<std::string>{"init", "41.2 s", "41.2 s", "1.000"});
  REQUIRE(same.tables[4].rows.size() == 1);
  CHECK(same.tables[4].rows[0] == std::vector<std::string>{"accelerator_model_name", "H100",
                                                           "NVIDIA H200-SXM5-141GB", "reported"});
}

TEST_CASE("a changed software version is named as its other_software_stack entry") {
  nlohmann::json reproduced, published;
  std::ifstream(kH200 / "system.json") >> published;
  reproduced = published;
  reproduced["other_software_stack"]["nccl_version"] = "2.21.5";
  const auto differing = differing_system_fields(reproduced, published);
  REQUIRE(differing.size() == 1);
  CHECK(differing[0].field == "other_software_stack.nccl_version");
  CHECK(differing[0].reproduced == "2.21.5");
  CHECK(differing[0].published == "2.18.5");
  CHECK_FALSE(differing[0].fails);
}
