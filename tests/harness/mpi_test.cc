// Multi-rank runs of `mlbert train` under mpirun (oversubscribed on small machines):
//  - 1 rank vs 2 and 4 ranks at the same global batch with after-allreduce clipping: the averaged
//    gradients and the weights after each of 3 steps equal the single-rank run's (1e-5);
//  - bad system files, missing data and a wrong world size fail before init_start, clearly.
// Faults during a run (killed, stalled ranks, unreadable data, a full disk) are fault_test.cc's.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/harness/train_job.h"

using namespace mlbert::test;

namespace {

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  INFO(path);
  REQUIRE(in);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// ||a - b|| / ||b|| and max |a - b|.
std::pair<double, double> compare(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, norm = 0, max_abs = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    diff += d * d;
    norm += static_cast<double>(b[i]) * b[i];
    max_abs = std::max(max_abs, std::abs(d));
  }
  return {norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff), max_abs};
}

}  // namespace

TEST_CASE("1 rank vs 2 and 4 ranks: averaged gradients and weights after 3 steps are equal",
          "[mpi]") {
  const TestData data = test_data();
  const int steps = 3;
  std::map<int, fs::path> dumps;
  for (int ranks : {1, 2, 4}) {
    // The same global batch of 16: 1 x 4 x 4 accumulation, 2 x 4 x 2, 4 x 4 x 1.
    const fs::path system = write_system("equal_" + std::to_string(ranks), ranks, 4, 4 / ranks,
                                         "after-allreduce", "none");
    const fs::path out = work_root() / ("equal_" + std::to_string(ranks));
    fs::remove_all(out);
    dumps[ranks] = out / "dump";
    const auto [status, output] = run_command(train_command(
        ranks, system, data, out / "results",
        "--seed 42 --max-steps 3 --dump-steps 3 --dump-dir " + dumps[ranks].string()));
    INFO(output);
    REQUIRE(status == 3);  // 3 steps cannot reach the target: "not converged"
  }
  for (int k = 1; k <= steps; ++k) {
    const std::string step = "step_" + std::to_string(k);
    const auto grad_1 = read_floats(dumps[1] / (step + ".grad"));
    const auto master_1 = read_floats(dumps[1] / (step + ".master"));
    double grad_norm = 0;
    for (float g : grad_1) grad_norm += static_cast<double>(g) * g;
    CHECK(std::sqrt(grad_norm) > 1e-3);  // a real gradient, not zeros
    if (k > 1)
      CHECK(compare(master_1, read_floats(dumps[1] / ("step_" + std::to_string(k - 1) + ".master")))
                .second > 1e-5);
    for (int ranks : {2, 4}) {
      INFO(ranks << " ranks, " << step);
      const auto [grad_rel, grad_abs] =
          compare(read_floats(dumps[ranks] / (step + ".grad")), grad_1);
      const auto [master_rel, master_abs] =
          compare(read_floats(dumps[ranks] / (step + ".master")), master_1);
      CHECK(grad_rel < 1e-5);
      CHECK(master_abs < 1e-5);
      CHECK(master_rel < 1e-5);
    }
  }
}

TEST_CASE("a wrong world size, missing data or a bad system fail before init_start",
          "[mpi][errors]") {
  const TestData data = test_data();
  const fs::path out = work_root() / "preflight";
  fs::remove_all(out);
  const fs::path four = write_system("four_ranks", 4, 4, 1, "after-allreduce", "none");
  {
    const auto [status, output] = run_command(train_command(2, four, data, out / "results", ""));
    INFO(output);
    CHECK(status != 0);
    CHECK_THAT(output,
               Catch::Contains("system four_ranks has 4 ranks (1 nodes x 4) but this job has 2"));
    CHECK_FALSE(fs::exists(out / "results/four_ranks"));  // no log, not even an empty one
  }
  const fs::path two = write_system("two_ranks", 2, 4, 1, "after-allreduce", "none");
  {
    TestData missing = data;
    missing.train = out / "no_such_dir";
    const auto [status, output] = run_command(train_command(2, two, missing, out / "results", ""));
    INFO(output);
    CHECK(status != 0);
    CHECK_THAT(output, Catch::Contains("no_such_dir: does not exist"));
    CHECK_FALSE(fs::exists(out / "results/two_ranks/bert/result_0.txt"));
  }
  {
    json broken = demo_system();
    broken["run"]["optimizer"].erase("learning_rate");
    const fs::path path = out / "broken.json";
    fs::create_directories(out);
    std::ofstream(path) << broken.dump();
    const auto [status, output] = run_command(train_command(2, path, data, out / "results", ""));
    INFO(output);
    CHECK(status != 0);
    CHECK_THAT(output, Catch::Contains("broken.json: run.optimizer.learning_rate: missing"));
    // Rank 0 reports; the other rank stays quiet.
    CHECK(output.find("run.optimizer.learning_rate") ==
          output.rfind("run.optimizer.learning_rate"));
  }
  {
    const fs::path path = out / "not_json.json";
    std::ofstream(path) << "{ \"submitter\": ";
    const auto [status, output] = run_command(train_command(2, path, data, out / "results", ""));
    INFO(output);
    CHECK(status != 0);
    CHECK_THAT(output, Catch::Contains("not_json.json: not valid JSON"));
  }
}
