// `mlbert reproduce plan` on every published folder of the fixtures, and on bad input: the system
// file carries exactly what the logs state (read here by a plain line scan, not the plan's
// reader), every field names its source, and a result that cannot be reproduced says why.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "harness/config/system_config.h"
#include "harness/reproduce/plan.h"
#include "harness/reproduce/published_runs.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace mlbert::harness::reproduce;

namespace {

fs::path fixtures() { return fs::path(MLBERT_SHARED_DIR) / "fixtures"; }

std::vector<fs::path> published_folders() {
  std::vector<fs::path> folders;
  for (const char* root : {"mlperf_logs", "mlperf_logs_early"})
    for (const auto& e : fs::recursive_directory_iterator(fixtures() / root))
      if (e.path().filename() == "system.json") folders.push_back(e.path().parent_path());
  std::sort(folders.begin(), folders.end());
  return folders;
}

// The first value of every key in a log, by a plain scan of its MLLOG lines.
std::map<std::string, json> logged_values(const fs::path& log) {
  std::map<std::string, json> values;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.rfind(":::MLLOG ");
    if (at == std::string::npos) continue;
    const json record = json::parse(line.substr(at + 9), nullptr, false);
    if (record.is_discarded() || !record.contains("key")) continue;
    const std::string key = record["key"].get<std::string>();
    if (key == "run_start") break;  // configuration is logged before the run
    values.emplace(key, record["value"]);
  }
  return values;
}

// Log key -> system-file path, as the MLPerf names map onto mlbert's run fields.
const std::map<std::string, std::string> kCarried = {
    {"global_batch_size", "/run/global_batch_size"},
    {"gradient_accumulation_steps", "/run/gradient_accumulation"},
    {"opt_gradient_accumulation_steps", "/run/gradient_accumulation"},
    {"opt_base_learning_rate", "/run/optimizer/learning_rate"},
    {"opt_lamb_beta_1", "/run/optimizer/beta1"},
    {"opt_lamb_beta_2", "/run/optimizer/beta2"},
    {"opt_lamb_weight_decay_rate", "/run/optimizer/weight_decay"},
    {"opt_lamb_learning_rate_decay_poly_power", "/run/lr_schedule/poly_power"},
    {"opt_learning_rate_warmup_steps", "/run/lr_schedule/warmup_steps"},
    {"start_warmup_step", "/run/lr_schedule/start_warmup_step"},
    {"opt_learning_rate_training_steps", "/run/lr_schedule/training_steps"},
    {"max_sequence_length", "/run/max_seq_length"},
    {"max_predictions_per_seq", "/run/max_predictions_per_seq"},
    {"eval_samples", "/run/eval/eval_samples"},
};

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(MLBERT_BINARY_DIR) / "test-work" / "reproduce" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void copy_with(const fs::path& from, const fs::path& to, const std::string& find,
               const std::string& replace, std::size_t keep_lines = 0) {
  std::ifstream in(from);
  std::ofstream out(to);
  std::string line;
  for (std::size_t n = 0; std::getline(in, line); ++n) {
    if (keep_lines && n >= keep_lines) break;
    if (const auto at = line.find(find); !find.empty() && at != std::string::npos)
      line.replace(at, find.size(), replace);
    out << line << "\n";
  }
}

}  // namespace

TEST_CASE("plan on every published fixture folder carries exactly the logged hyperparameters") {
  const auto folders = published_folders();
  REQUIRE(folders.size() >= 10);
  std::set<std::string> refused;
  for (const fs::path& dir : folders) {
    INFO(dir.string());
    const ReproductionPlan plan = make_plan(read_published_runs(dir), dir / "system.json");
    for (const auto& f : plan.fields) CHECK_FALSE(f.source.empty());
    CHECK(plan.spread.samples.size() == read_published_runs(dir).runs.size());
    if (plan.refusal) {
      CHECK(plan.system.is_null());
      refused.insert(dir.filename().string());
      continue;
    }
    // What harness trains from is what the plan wrote, and its logs go where the published ones
    // stand: results/<published system>/bert.
    CHECK(mlbert::harness::parse_system(plan.system, "system.json").name ==
          (dir.filename() == "bert" ? dir.parent_path() : dir).filename().string());
    for (const auto& [key, value] : logged_values(dir / "result_0.txt")) {
      const auto carried = kCarried.find(key);
      if (carried == kCarried.end()) continue;
      INFO(key);
      const json& planned = plan.system.at(json::json_pointer(carried->second));
      CHECK(planned.get<double>() == value.get<double>());
    }
  }
  // The IPU and TPU results (mlbert runs on GPUs and CPUs), and NVIDIA's v3.0 schedule, whose
  // logged warmup (200,330 steps from step -200,000) is longer than its 700 training steps.
  CHECK(refused == std::set<std::string>{"ipu-pod16-POPART-open", "tpu-v3-32-TF2.0",
                                         "dgxh100_n8_ngc23.04_pytorch"});
}

TEST_CASE("plan names why an IPU result cannot be reproduced") {
  const fs::path dir = fixtures() / "mlperf_logs/v1.1/Graphcore/ipu-pod16-POPART-open";
  const ReproductionPlan plan = make_plan(read_published_runs(dir), dir / "system.json");
  REQUIRE(plan.refusal);
  CHECK_THAT(*plan.refusal, Catch::Contains("Graphcore IPU GC200") &&
                                Catch::Contains("accelerator_model_name"));
}

TEST_CASE("plan names why NVIDIA's v3.0 schedule cannot be trained") {
  const fs::path dir = fixtures() / "mlperf_logs/v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch";
  const ReproductionPlan plan = make_plan(read_published_runs(dir), dir / "system.json");
  REQUIRE(plan.refusal);
  CHECK_THAT(*plan.refusal, Catch::Contains("run.lr_schedule.decay_steps"));
}

TEST_CASE("plan names packed rows as a substitution when d_batch_size does not give the batch") {
  const fs::path dir = fixtures() / "mlperf_logs/v4.0/NVIDIA/h200_ngc23.09_pytorch";
  const ReproductionPlan plan = make_plan(read_published_runs(dir), dir / "system.json");
  REQUIRE_FALSE(plan.refusal);
  bool packed = false;
  for (const auto& d : plan.differences) packed |= d.published.find("packed") != std::string::npos;
  CHECK(packed);
  CHECK(plan.system["run"]["per_rank_batch"] == 768 / 8);
}

TEST_CASE("plan states the published spread of samples to converge") {
  const fs::path dir = fixtures() / "mlperf_logs/v4.0/NVIDIA/h200_ngc23.09_pytorch";
  const ReproductionPlan plan = make_plan(read_published_runs(dir), dir / "system.json");
  REQUIRE(plan.spread.samples.size() == 10);
  CHECK(plan.spread.min <= plan.spread.median);
  CHECK(plan.spread.median <= plan.spread.max);
  CHECK(plan.spread.min > 1000000);
}

TEST_CASE("bad result folders are refused with the file and field named") {
  const fs::path nvidia = fixtures() / "mlperf_logs/v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch";
  const fs::path nvidia_1x8 = fixtures() / "mlperf_logs_early/v1.0/NVIDIA/dgxa100_ngc21.05_pytorch";
  SECTION("no logs") {
    const fs::path dir = scratch("empty");
    CHECK_THROWS_WITH(read_published_runs(dir), Catch::Contains("result_*.txt: none"));
  }
  SECTION("logs of another benchmark") {
    const fs::path dir = scratch("other_benchmark");
    copy_with(nvidia / "result_0.txt", dir / "result_0.txt", "\"value\": \"bert\"",
              "\"value\": \"resnet\"");
    CHECK_THROWS_WITH(read_published_runs(dir),
                      Catch::Contains("result_0.txt:") && Catch::Contains("submission_benchmark"));
  }
  SECTION("mixed systems") {
    const fs::path dir = scratch("mixed");
    fs::copy_file(nvidia / "result_0.txt", dir / "result_0.txt");
    fs::copy_file(nvidia_1x8 / "result_1.txt", dir / "result_1.txt");
    CHECK_THROWS_WITH(read_published_runs(dir),
                      Catch::Contains("result_1.txt:") && Catch::Contains("submission_platform"));
  }
  SECTION("a truncated log") {
    const fs::path dir = scratch("truncated");
    fs::copy_file(nvidia / "result_0.txt", dir / "result_0.txt");
    copy_with(nvidia / "result_1.txt", dir / "result_1.txt", "", "", 110);  // run_start at 94
    CHECK_THROWS_WITH(read_published_runs(dir),
                      Catch::Contains("result_1.txt") && Catch::Contains("run_stop"));
  }
  SECTION("runs that disagree on a hyperparameter") {
    const fs::path dir = scratch("disagree");
    fs::copy_file(nvidia / "result_0.txt", dir / "result_0.txt");
    copy_with(nvidia / "result_1.txt", dir / "result_1.txt", "\"value\": 0.0015",
              "\"value\": 0.0016");
    CHECK_THROWS_WITH(read_published_runs(dir),
                      Catch::Contains("result_1.txt:") && Catch::Contains("opt_base_learning_rate"));
  }
  SECTION("a system file with an unknown key") {
    const fs::path dir = scratch("unknown_key");
    fs::copy_file(nvidia / "result_0.txt", dir / "result_0.txt");
    json system = json::parse(std::ifstream(fs::path(MLBERT_SOURCE_DIR) / "systems/dgxa100_1x8.json"));
    system["run"]["learning_rate_typo"] = 1;
    std::ofstream(dir / "system.json") << system.dump(2);
    CHECK_THROWS_WITH(make_plan(read_published_runs(dir), dir / "system.json"),
                      Catch::Contains("system.json") && Catch::Contains("run.learning_rate_typo"));
  }
}

TEST_CASE("write_plan writes the whole plan or leaves the folder as it was") {
  const fs::path dir = fixtures() / "mlperf_logs/v4.0/NVIDIA/h200_ngc23.09_pytorch";
  const ReproductionPlan plan = make_plan(read_published_runs(dir), dir / "system.json");
  const fs::path work = scratch("write");
  write_plan(plan, work / "plan");
  for (const char* name : {"system.json", "plan.json", "README.md"})
    CHECK(fs::is_regular_file(work / "plan" / name));
  const json written = json::parse(std::ifstream(work / "plan" / "plan.json"));
  CHECK(written["reproducible"] == true);
  CHECK(written["fields"].size() == plan.fields.size());
  // A second plan into the same folder is refused, the first left whole, no staging left behind.
  CHECK_THROWS_WITH(write_plan(plan, work / "plan"), Catch::Contains("not an empty folder"));
  CHECK(fs::is_regular_file(work / "plan" / "system.json"));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(work)) ++entries;
  CHECK(entries == 1);
}
