// systems/*.json: the shipped systems validate, and every kind of mistake is reported with the
// file and the JSON path of the field.
#include <catch2/catch.hpp>

#include <fstream>

#include "harness/config/system_config.h"
#include "tests/common/shared_fixtures.h"

namespace {

using mlbert::harness::load_system;
using mlbert::harness::parse_system;
using mlbert::harness::SystemConfigError;
using nlohmann::json;

json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return json::parse(in);
}

std::filesystem::path systems_dir() {
  return mlbert::test::source_dir() / "systems";
}

// The message of the error parse_system throws for `root` (fails the test if none is thrown).
std::string error_of(const json& root, const std::string& origin = "systems/test.json") {
  try {
    parse_system(root, origin);
  } catch (const SystemConfigError& e) {
    return e.what();
  }
  FAIL("parse_system accepted an invalid system");
  return {};
}

}  // namespace

TEST_CASE("every shipped system file validates", "[system]") {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(systems_dir())) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path());
    const auto system = load_system(entry.path().string());
    CHECK(system.name == entry.path().stem().string());
    CHECK(system.run.global_batch_size == system.run.per_rank_batch * system.topology.world_size() *
                                              system.run.gradient_accumulation);
    ++count;
  }
  CHECK(count >= 6);
}

TEST_CASE("the shipped systems have the published shapes and hyperparameters", "[system]") {
  const auto dgx1 = load_system("dgxa100_1x8", systems_dir());
  CHECK(dgx1.topology.world_size() == 8);
  CHECK(dgx1.run.global_batch_size == 448);
  CHECK(dgx1.topology.nics.size() == 8);
  CHECK(dgx1.run.optimizer.kind == mlbert::harness::OptimizerKind::lamb);
  CHECK(dgx1.run.division == "closed");

  const auto dgx128 = load_system("dgxa100_128x8", systems_dir());
  CHECK(dgx128.topology.world_size() == 1024);
  CHECK(dgx128.topology.nics.size() == 8);

  const auto paper = load_system("samsung_dgxa100_128x8", systems_dir());
  CHECK(paper.topology.world_size() == 1024);
  CHECK(paper.topology.nics.size() == 4);
  CHECK(paper.run.global_batch_size == 16384);
  CHECK(paper.run.division == "open");
  CHECK(paper.run.optimizer.kind == mlbert::harness::OptimizerKind::adamw);
  CHECK(paper.run.optimizer.learning_rate == Approx(3.9299e-4).epsilon(1e-4));
  CHECK(paper.run.optimizer.beta1 == Approx(0.80036).epsilon(1e-4));
  CHECK(paper.run.optimizer.beta2 == Approx(0.81747).epsilon(1e-4));
  CHECK(paper.run.optimizer.epsilon == 1e-9);
  CHECK(paper.run.optimizer.weight_decay == Approx(2.886e-3).epsilon(1e-3));
  CHECK(paper.run.lr_schedule.warmup_steps == 82);
  CHECK(paper.run.lr_schedule.start_warmup_step == -16);
  CHECK(paper.run.lr_schedule.decay_steps == 179);
  CHECK(paper.run.lr_schedule.end_learning_rate == Approx(4.945e-5).epsilon(1e-3));
  CHECK(paper.run.stratified_quotas == std::vector<int>{6, 3, 2, 5});
  CHECK(paper.run.load_balancing == mlbert::harness::LoadBalancing::node_exchange);
  CHECK(paper.run.clipping == mlbert::harness::ClippingMode::bucket_before_allreduce);
  CHECK(paper.run.loss_scale.initial == 131072.0);

  const auto n171 = load_system("samsung_dgxa100_171x8", systems_dir());
  CHECK(n171.topology.world_size() == 1368);

  const auto h200 = load_system("h200_1x1", systems_dir());
  CHECK(h200.topology.world_size() == 1);
  CHECK(h200.topology.accelerator.model.find("H200") != std::string::npos);
}

TEST_CASE("the MLPerf eval cadence follows floor(0.05*(230.23*GBS + 3e6), 25000)", "[system]") {
  using mlbert::harness::mlperf_eval_interval;
  for (int gbs : {256, 448, 1536, 2048}) CHECK(mlperf_eval_interval(gbs) == 150000);
  CHECK(mlperf_eval_interval(3072) == 175000);
  CHECK(mlperf_eval_interval(4096) == 175000);
  CHECK(mlperf_eval_interval(4608) == 200000);
  CHECK(mlperf_eval_interval(6144) == 200000);
  CHECK(mlperf_eval_interval(8192) == 225000);
  CHECK(mlperf_eval_interval(16384) == 325000);
}

TEST_CASE("a missing official field is named with the file", "[system][errors]") {
  json root = read_json(systems_dir() / "dgxa100_1x8.json");
  root.erase("host_memory_capacity");
  const std::string message = error_of(root, "systems/broken.json");
  CHECK_THAT(message, Catch::Contains("systems/broken.json: host_memory_capacity: missing"));
}

TEST_CASE("a misspelled official field is named beside the field it misses", "[system][errors]") {
  json root = read_json(systems_dir() / "dgxa100_1x8.json");
  root["host_memory_capacty"] = root["host_memory_capacity"];
  root.erase("host_memory_capacity");
  root["an_unrelated_note"] = "kept, and named nowhere";
  const std::string message = error_of(root, "systems/broken.json");
  CHECK_THAT(message, Catch::Contains("host_memory_capacity: missing (an official system-description "
                                      "field); the file has \"host_memory_capacty\", which looks "
                                      "like a misspelling of it"));
  CHECK_THAT(message, !Catch::Contains("an_unrelated_note"));
}

TEST_CASE("wrong types and values name the JSON path of the field", "[system][errors]") {
  json root = read_json(systems_dir() / "dgxa100_1x8.json");
  root["run"]["optimizer"]["beta1"] = "0.9";
  root["topology"]["nodes"] = 1.5;
  root["other_software_stack"] = "cuda 12";
  const std::string message = error_of(root);
  CHECK_THAT(message, Catch::Contains("run.optimizer.beta1: must be a number"));
  CHECK_THAT(message, Catch::Contains("topology.nodes: must be an integer"));
  CHECK_THAT(message, Catch::Contains("other_software_stack: must be an object"));
  CHECK_THAT(message, Catch::Contains("3 problems"));
}

TEST_CASE("the hyperparameters of the optimizer must all be present", "[system][errors]") {
  json root = read_json(systems_dir() / "samsung_dgxa100_128x8.json");
  root["run"]["optimizer"].erase("epsilon");
  root["run"]["optimizer"].erase("weight_decay");
  const std::string message = error_of(root);
  CHECK_THAT(message, Catch::Contains("run.optimizer.epsilon: missing"));
  CHECK_THAT(message, Catch::Contains("run.optimizer.weight_decay: missing"));
}

TEST_CASE("the global batch must equal per-rank batch x ranks x accumulation", "[system][errors]") {
  json root = read_json(systems_dir() / "dgxa100_128x8.json");
  root["run"]["global_batch_size"] = 4096;
  CHECK_THAT(error_of(root),
             Catch::Contains("run.global_batch_size: 4096 but per_rank_batch x "
                             "ranks x gradient_accumulation = 3 x 1024 x 1 = 3072"));
}

TEST_CASE("ranks must equal nodes x GPUs of the official fields", "[system][errors]") {
  json root = read_json(systems_dir() / "dgxa100_128x8.json");
  root["number_of_nodes"] = "64";
  CHECK_THAT(error_of(root), Catch::Contains("number_of_nodes: \"64\" but topology.nodes is 128"));
  root = read_json(systems_dir() / "dgxa100_128x8.json");
  root["accelerators_per_node"] = "4";
  CHECK_THAT(error_of(root),
             Catch::Contains("accelerators_per_node: \"4\" but topology.ranks_per_node is 8"));
}

TEST_CASE("affinity entries must name known NICs and NUMA nodes", "[system][errors]") {
  json root = read_json(systems_dir() / "samsung_dgxa100_128x8.json");
  root["topology"]["local_ranks"][3]["nic"] = "mlx5_9";
  root["topology"]["local_ranks"][5]["numa_node"] = 8;
  const std::string message = error_of(root);
  CHECK_THAT(message, Catch::Contains(
                          "topology.local_ranks[3].nic: \"mlx5_9\" is not one of topology.nics"));
  CHECK_THAT(message, Catch::Contains("topology.local_ranks[5].numa_node: must be in 0..7"));
}

TEST_CASE("stratified quotas must cover the per-rank batch", "[system][errors]") {
  json root = read_json(systems_dir() / "samsung_dgxa100_128x8.json");
  root["run"]["sampler"]["quotas"] = {6, 3, 2, 4};
  CHECK_THAT(error_of(root),
             Catch::Contains("run.sampler.quotas: sum to 15 but per_rank_batch is 16"));
}

TEST_CASE("closed division forbids the open techniques", "[system][errors]") {
  json root = read_json(systems_dir() / "samsung_dgxa100_128x8.json");
  root["division"] = "closed";
  root["run"]["division"] = "closed";
  const std::string message = error_of(root);
  CHECK_THAT(message, Catch::Contains("run.optimizer.name: must be \"lamb\""));
  CHECK_THAT(message, Catch::Contains("run.clipping.mode: must be \"after-allreduce\""));
  CHECK_THAT(message, Catch::Contains("run.sampler.name: must be \"random\""));
}

TEST_CASE("an unknown enum value lists the accepted ones", "[system][errors]") {
  json root = read_json(systems_dir() / "dgxa100_1x8.json");
  root["run"]["load_balancing"] = "node-swap";
  CHECK_THAT(error_of(root),
             Catch::Contains("run.load_balancing: \"node-swap\" is not one of \"none\", "
                             "\"global-exchange\", \"node-exchange\", \"global-deal\""));
}

TEST_CASE("load_balancing global-deal is read, and kept in the closed division", "[system]") {
  json root = read_json(systems_dir() / "dgxa100_1x8.json");  // closed, random sampler
  root["run"]["load_balancing"] = "global-deal";
  const auto config = mlbert::harness::parse_system(root, "deal.json");
  CHECK(config.run.load_balancing == mlbert::harness::LoadBalancing::global_deal);
  CHECK(std::string(to_string(config.run.load_balancing)) == "global-deal");
}

TEST_CASE("status values follow the ruleset", "[system][errors]") {
  json root = read_json(systems_dir() / "dgxa100_1x8.json");  // ruleset 4.1.0
  root["status"] = "onprem";
  const std::string message = error_of(root);
  CHECK_THAT(message, Catch::Contains("status: "));
  CHECK_THAT(message, Catch::Contains("onprem"));
  CHECK_THAT(message, Catch::Contains("(MLPerf system description check, ruleset 4.1.0)"));
}

TEST_CASE("bad files are named in the error", "[system][errors]") {
  const auto dir = std::filesystem::temp_directory_path() / "mlbert_harness_system_test";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "truncated.json") << "{\"submitter\": \"x\", "; }
  CHECK_THROWS_WITH(load_system((dir / "truncated.json").string()),
                    Catch::Contains("truncated.json: not valid JSON"));
  // A number past double is nlohmann's out_of_range, not its parse_error (found by
  // fuzz_harness_system: it ended the process through std::terminate).
  { std::ofstream(dir / "overflow.json") << "{\"number_of_nodes\": 1e706}"; }
  CHECK_THROWS_WITH(load_system((dir / "overflow.json").string()),
                    Catch::Contains("overflow.json: not valid JSON") &&
                        Catch::Contains("number overflow parsing '1e706'"));
  CHECK_THROWS_WITH(
      load_system("no_such_system", systems_dir()),
      Catch::Contains("no_such_system.json: cannot open system file: no such file (known systems: "));
  // A folder opens as a stream on Linux; its first read would throw from inside the JSON parser
  // with no file named.
  std::filesystem::create_directories(dir / "folder.json");
  CHECK_THROWS_WITH(
      load_system((dir / "folder.json").string()),
      Catch::EndsWith("folder.json: cannot open system file: is a directory, not a file"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("run.ruleset is a round with BERT, and only 1.1.0 to 2.1.0 need the bert-large tensors",
          "[system][errors]") {
  json root = read_json(systems_dir() / "cpu_demo.json");  // preset "tiny"
  for (const char* ruleset : {"0.7.0", "1.0.0", "3.0.0", "5.0.0"}) {
    INFO(ruleset);
    root["run"]["ruleset"] = ruleset;
    CHECK(parse_system(root, "systems/test.json").run.ruleset == ruleset);
  }
  root["run"]["ruleset"] = "2.0.0";
  CHECK_THAT(error_of(root), Catch::Contains("run.ruleset: 2.0.0 requires weights_initialization"));
  // 5.1.0 has compliance rules only to fail BERT logs: no system trains for it.
  root["run"]["ruleset"] = "5.1.0";
  const std::string message = error_of(root);
  CHECK_THAT(message, Catch::Contains("run.ruleset: \"5.1.0\" is not one of"));
  CHECK_THAT(message, Catch::Contains("\"0.7.0\""));
  CHECK_THAT(message, Catch::Contains("\"5.0.0\""));
}

TEST_CASE("run.result_name names the results folder, and only a plain folder name is taken",
          "[system]") {
  json root = read_json(systems_dir() / "dgxa100_1x8.json");
  CHECK(parse_system(root, "plan/system.json").name == "system");
  root["run"]["result_name"] = "dgxa100_ngc22.09_pytorch";
  CHECK(parse_system(root, "plan/system.json").name == "dgxa100_ngc22.09_pytorch");
  for (const char* bad : {"../elsewhere", "a b", "", ".."}) {
    INFO(bad);
    root["run"]["result_name"] = bad;
    CHECK_THAT(error_of(root), Catch::Contains("run.result_name: \"" + std::string(bad) +
                                               "\" must be a folder name"));
  }
}
