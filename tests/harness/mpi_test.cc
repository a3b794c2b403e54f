// Multi-rank runs of `mlbert train` under mpirun (oversubscribed on small machines):
//  - 1 rank vs 2 and 4 ranks at the same global batch with after-allreduce clipping: the averaged
//    gradients and the weights after each of 3 steps equal the single-rank run's (1e-5);
//  - bad system files, missing data and a wrong world size fail before init_start, clearly.
// Faults during a run (killed, stalled ranks, unreadable data, a full disk) are fault_test.cc's.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

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
    CHECK_THAT(output, Catch::Contains("no_such_dir: no such directory"));
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

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The result log's structure: every record's event type and key, in order.
std::vector<std::string> record_keys(const fs::path& log) {
  std::vector<std::string> keys;
  for (const std::string& line : lines_of(read_file(log))) {
    const json record = json::parse(line.substr(line.find(":::MLLOG ") + 9));
    keys.push_back(record["event_type"].get<std::string>() + " " +
                   record["key"].get<std::string>());
  }
  return keys;
}

}  // namespace

TEST_CASE(
    "rank 0's progress goes to stderr with one line per eval on a pipe while stdout and the "
    "result log stay MLLOG only",
    "[mpi][progress]") {
  const TestData data = test_data();
  fs::path system = write_system("progress2", 2, 8, 1, "after-allreduce", "none", 60, 12);
  {
    json s = json::parse(read_file(system));
    s["run"]["eval"]["cadence"] = 64;  // every 4 steps of 16: evals at steps 4, 8, 12
    s["run"]["target_accuracy"] = 0.99;
    std::ofstream(system) << s.dump(2);
  }
  const fs::path out = work_root() / "progress";
  fs::remove_all(out);
  fs::create_directories(out);
  const fs::path log = out / "results" / "progress2" / "bert" / "result_0.txt";

  // Without --quiet: rank 0 prints the MLLOG lines to stdout as well. stderr is a file: "auto"
  // chooses plain lines.
  std::string command = train_command(2, system, data, out / "results", "--run-index 0 --seed 7");
  command.replace(command.find(" train --quiet "), std::string(" train --quiet ").size(),
                  " train ");
  command = "(" + command + " > " + (out / "stdout.txt").string() + " 2> " +
            (out / "stderr.txt").string() + ")";
  auto [status, output] = run_command(command);
  INFO(command << "\n" << output << read_file(out / "stderr.txt"));
  REQUIRE(status == 3);  // max_steps before the (unreachable) target

  const std::string log_text = read_file(log);
  for (const std::string& line : lines_of(log_text)) CHECK(line.rfind(":::MLLOG {", 0) == 0);
  CHECK(log_text.find("mlbert train") == std::string::npos);
  // stdout is the result log, line for line: nothing else is printed there.
  CHECK(read_file(out / "stdout.txt") == log_text);

  const std::string err = read_file(out / "stderr.txt");
  CHECK(err.find('\r') == std::string::npos);
  CHECK(err.find('\033') == std::string::npos);
  CHECK(err.find(":::MLLOG") == std::string::npos);
  std::vector<std::string> progress;
  for (const std::string& line : lines_of(err))
    if (line.rfind("mlbert train: ", 0) == 0) progress.push_back(line);
  REQUIRE(progress.size() == 4);  // three evals and the stop
  const std::regex eval_line(
      R"(mlbert train: eval [1-3] at step (4|8|12), (64|128|192) samples: accuracy 0\.[0-9]{4} )"
      R"(\(target 0\.990\), [0-9.]+ seq/s, [0-9.]+ s since run_start, (ETA .+|target beyond max_steps))");
  for (int i = 0; i < 3; ++i) {
    INFO(progress[i]);
    CHECK(std::regex_match(progress[i], eval_line));
  }
  CHECK(progress[3].rfind("mlbert train: stopped before the target at step 12, 192 samples", 0) ==
        0);
  const auto keys_lines = record_keys(log);

  // --progress tty through the same pipe: the rewriting line, and the same result log structure.
  fs::remove(log);
  command =
      "(" +
      train_command(2, system, data, out / "results", "--run-index 0 --seed 7 --progress tty") +
      " 2> " + (out / "stderr_tty.txt").string() + ")";
  std::tie(status, output) = run_command(command);
  INFO(command << "\n" << output);
  REQUIRE(status == 3);
  const std::string tty = read_file(out / "stderr_tty.txt");
  CHECK(tty.find("\r\033[Kstep ") != std::string::npos);
  CHECK(tty.find("step 12/12 | 192 samples |") != std::string::npos);
  CHECK(record_keys(log) == keys_lines);
  CHECK(read_file(log).find("step ") == std::string::npos);
}
