// `mlbert launch`: the generated mpirun lines and per-rank bindings for the
// 1,024-GPU systems (8 NICs per node for NVIDIA's DGX A100, 4 for the paper's system).
#include <catch2/catch.hpp>

#include <algorithm>

#include "harness/launch/launcher.h"
#include "tests/common/shared_fixtures.h"

namespace {

using namespace mlbert::harness;

SystemConfig system_named(const std::string& name) {
  return load_system(name, mlbert::test::source_dir() / "systems");
}

// The index of `word` in argv, or -1.
long index_of(const std::vector<std::string>& argv, const std::string& word, long from = 0) {
  const auto it = std::find(argv.begin() + from, argv.end(), word);
  return it == argv.end() ? -1 : static_cast<long>(it - argv.begin());
}

}  // namespace

TEST_CASE("cpu lists compress into ranges", "[launch]") {
  CHECK(cpu_list_string({0, 1, 2, 3, 8}) == "0-3,8");
  CHECK(cpu_list_string({5}) == "5");
  CHECK(cpu_list_string({64, 65, 0, 1}) == "0-1,64-65");
  CHECK(cpu_list_string({}) == "");
}

TEST_CASE("DGX A100: each GPU gets its own NIC and half the cores of its NUMA node", "[launch]") {
  const auto bindings = rank_bindings(system_named("dgxa100_128x8"));
  REQUIRE(bindings.size() == 8);
  // 2 x 64 cores in 8 NUMA nodes: 16 cores per node, two GPUs per node share them.
  CHECK(bindings[0].numa_node == 3);
  CHECK(cpu_list_string(bindings[0].cpus) == "48-55,176-183");
  CHECK(cpu_list_string(bindings[1].cpus) == "56-63,184-191");
  CHECK(bindings[0].omp_threads == 8);
  const std::vector<std::string> expected_nics = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3",
                                                  "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"};
  for (int r = 0; r < 8; ++r) {
    CHECK(bindings[r].nic == expected_nics[r]);
    CHECK(bindings[r].ucx_device == expected_nics[r] + ":1");
    CHECK(bindings[r].device == r);
    const auto env = bindings[r].environment();
    CHECK(env.at("NCCL_IB_HCA") == "=" + expected_nics[r]);
    CHECK(env.at("UCX_NET_DEVICES") == expected_nics[r] + ":1");
    CHECK(env.at("MLBERT_DEVICE") == std::to_string(r));
  }
  // No two ranks share a CPU.
  std::vector<int> all;
  for (const auto& b : bindings) all.insert(all.end(), b.cpus.begin(), b.cpus.end());
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
}

TEST_CASE("more ranks than cores: each rank gets a core in turn and one thread", "[launch]") {
  // Found by fuzz_harness_system: 2 ranks on 1 core got an empty CPU list and 0 threads.
  SystemConfig system = system_named("cpu_demo");
  system.topology.cpu.sockets = 1;
  system.topology.cpu.cores_per_socket = 1;
  system.topology.cpu.threads_per_core = 1;
  system.topology.cpu.numa_nodes = 1;
  REQUIRE(system.topology.ranks_per_node == 2);
  for (const RankBinding& b : rank_bindings(system)) {
    CHECK(cpu_list_string(b.cpus) == "0");
    CHECK(b.omp_threads == 1);
  }
  system.topology.cpu.cores_per_socket = 3;  // 4 ranks on 3 cores: 0, 1, 2, then 0 again
  system.topology.ranks_per_node = 4;
  system.topology.local_ranks.resize(4, system.topology.local_ranks[0]);
  const auto four = rank_bindings(system);
  REQUIRE(four.size() == 4);
  CHECK(cpu_list_string(four[0].cpus) == "0");
  CHECK(cpu_list_string(four[2].cpus) == "2");
  CHECK(cpu_list_string(four[3].cpus) == "0");
}

TEST_CASE("the paper's system: 4 NICs, each shared by a GPU pair, rank i on NUMA node i",
          "[launch]") {
  const auto bindings = rank_bindings(system_named("samsung_dgxa100_128x8"));
  REQUIRE(bindings.size() == 8);
  // The published binding: numactl --physcpubind=8i..8i+7,64+8i..64+8i+7 --membind=i.
  for (int r = 0; r < 8; ++r) {
    CHECK(bindings[r].numa_node == r);
    CHECK(cpu_list_string(bindings[r].cpus) ==
          std::to_string(8 * r) + "-" + std::to_string(8 * r + 7) + "," +
              std::to_string(64 + 8 * r) + "-" + std::to_string(64 + 8 * r + 7));
  }
  const std::vector<std::string> nic_of_pair = {"mlx5_1", "mlx5_0", "mlx5_5", "mlx5_2"};
  for (int r = 0; r < 8; ++r) CHECK(bindings[r].nic == nic_of_pair[r / 2]);
}

TEST_CASE("mpirun line for 1,024 GPUs: one rank per GPU, 8 per node, bind per rank", "[launch]") {
  for (const std::string name : {"dgxa100_128x8", "samsung_dgxa100_128x8"}) {
    INFO(name);
    const auto system = system_named(name);
    LaunchOptions options;
    options.system_arg = "systems/" + name + ".json";
    options.train_args = {"--data", "/data/train", "--eval-data", "/data/eval.hdf5", "--seed", "7"};
    const auto argv = mpirun_argv(system, options);
    REQUIRE(argv.front() == "mpirun");
    const long np = index_of(argv, "-np");
    REQUIRE(np > 0);
    CHECK(argv[np + 1] == "1024");
    CHECK(argv[index_of(argv, "--map-by") + 1] == "ppr:8:node");
    CHECK(argv[index_of(argv, "--bind-to") + 1] == "none");
    CHECK(argv[index_of(argv, "--hostfile") + 1] == "${MLBERT_HOSTFILE}");
    CHECK(index_of(argv, "OMP_NUM_THREADS=8") > 0);
    // The rank command: mlbert bind --system S -- mlbert train --system S <args>.
    const long bind = index_of(argv, "bind");
    REQUIRE(bind > 0);
    CHECK(argv[bind - 1] == "mlbert");
    CHECK(argv[bind + 1] == "--system");
    CHECK(argv[bind + 2] == options.system_arg);
    CHECK(argv[bind + 3] == "--");
    CHECK(argv[bind + 4] == "mlbert");
    CHECK(argv[bind + 5] == "train");
    CHECK(argv[bind + 7] == options.system_arg);
    CHECK(argv.back() == "7");
    const std::string line = mpirun_command(system, options);
    CHECK_THAT(line, Catch::Contains("--hostfile \"${MLBERT_HOSTFILE}\""));
    CHECK_THAT(line, Catch::Contains("--map-by ppr:8:node"));
  }
  LaunchOptions options;
  CHECK(mpirun_argv(system_named("samsung_dgxa100_171x8"), options)[2] == "1368");
}

TEST_CASE("single-node systems need no hostfile", "[launch]") {
  const auto argv = mpirun_argv(system_named("dgxa100_1x8"), LaunchOptions{});
  CHECK(index_of(argv, "--hostfile") == -1);
  CHECK(argv[index_of(argv, "-np") + 1] == "8");
}

TEST_CASE("shell quoting keeps words intact", "[launch]") {
  CHECK(shell_quote("plain-word_1.json") == "plain-word_1.json");
  CHECK(shell_quote("two words") == "'two words'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("${MLBERT_HOSTFILE}") == "\"${MLBERT_HOSTFILE}\"");
}
