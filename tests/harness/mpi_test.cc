// Multi-rank runs of `mlbert train` under mpirun (oversubscribed on small machines):
//  - 1 rank vs 2 and 4 ranks at the same global batch with after-allreduce clipping: the averaged
//    gradients and the weights after each of 3 steps equal the single-rank run's (1e-5);
//  - a rank killed mid-run ends the job within 30 s, every rank non-zero, the log ending in
//    run_stop "aborted"; a hung rank is caught by the watchdog the same way;
//  - bad system files, missing data and a wrong world size fail before init_start, clearly.
// The data is a small demo corpus prepared once into the build tree.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/common/shared_fixtures.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

fs::path mlbert_bin() {
  return mlbert::test::binary_dir() / "bin" / "mlbert";
}
fs::path work_root() {
  return mlbert::test::binary_dir() / "test-work" / "harness";
}

// Runs a shell command; returns (exit status, combined output).
std::pair<int, std::string> run_command(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output};
}

std::string mpirun(int ranks) {
  return "mpirun --allow-run-as-root --oversubscribe --bind-to none -np " + std::to_string(ranks) +
         " -x OMP_NUM_THREADS=1 ";
}

// A small demo corpus, prepared once (into a temporary name, then renamed, so concurrent test
// processes never see half of it).
struct TestData {
  fs::path train, eval;
};

TestData test_data() {
  const fs::path root = work_root() / "data";
  TestData data{root / "train", root / "eval.hdf5"};
  if (fs::exists(root / "READY")) return data;
  const fs::path tmp = work_root() / ("data.tmp." + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const std::string m = mlbert_bin().string();
  const std::string prep_args =
      " --max-seq-length 128 --max-predictions-per-seq 20 --progress never";
  for (const std::string& command :
       {m + " data demo-corpus --output " + (tmp / "corpus").string() +
            " --documents 600 --eval-documents 60 --parts 2",
        m + " data prep --vocab " + (tmp / "corpus/vocab.txt").string() + " --input " +
            (tmp / "corpus/part-00000-of-00002.txt").string() + " " +
            (tmp / "corpus/part-00001-of-00002.txt").string() + " --output " +
            (tmp / "train").string() + " --dupe-factor 2" + prep_args,
        m + " data prep --vocab " + (tmp / "corpus/vocab.txt").string() + " --input " +
            (tmp / "corpus/eval.txt").string() + " --output " + (tmp / "eval_source").string() +
            " --dupe-factor 2" + prep_args,
        m + " data eval-set --input " + (tmp / "eval_source/eval.txt.hdf5").string() +
            " --output " + (tmp / "eval.hdf5").string() +
            " --count 64 --max-seq-length 128 --max-predictions-per-seq 20"}) {
    const auto [status, output] = run_command(command);
    INFO(command << "\n" << output);
    REQUIRE(status == 0);
  }
  fs::copy_file(tmp / "corpus/vocab.txt", tmp / "train/vocab.txt");
  std::ofstream(tmp / "READY") << "ok\n";
  std::error_code ec;
  fs::rename(tmp, root, ec);  // another process may have won the race: use its copy
  if (ec) fs::remove_all(tmp);
  return data;
}

json demo_system() {
  std::ifstream in(mlbert::test::source_dir() / "systems" / "cpu_demo.json");
  REQUIRE(in);
  return json::parse(in);
}

// A one-node CPU system with `ranks` ranks, derived from cpu_demo for these tests.
fs::path write_system(const std::string& name, int ranks, int per_rank_batch, int accumulation,
                      const std::string& clipping, const std::string& balancing,
                      double watchdog_seconds = 20, std::int64_t max_steps = 1000) {
  json s = demo_system();
  s["system_name"] = name;
  s["topology"]["ranks_per_node"] = ranks;
  s["topology"]["cpu"]["cores_per_socket"] = std::max(ranks, 2);
  s["topology"]["local_ranks"] = json::array();
  for (int r = 0; r < ranks; ++r) s["topology"]["local_ranks"].push_back({{"numa_node", 0}});
  json& run = s["run"];
  run["per_rank_batch"] = per_rank_batch;
  run["gradient_accumulation"] = accumulation;
  run["global_batch_size"] = per_rank_batch * accumulation * ranks;
  run["clipping"] = {{"mode", clipping}, {"max_norm", 1.0}};
  run["load_balancing"] = balancing;
  run["sampler"] = {{"name", "random"}};
  run["max_seq_length"] = 128;
  run["max_predictions_per_seq"] = 20;
  run["eval"] = {{"cadence", 1000000}, {"eval_samples", 64}, {"batch_size", 16}};
  run["watchdog_seconds"] = watchdog_seconds;
  run["max_steps"] = max_steps;
  run["lr_schedule"]["training_steps"] = std::max<std::int64_t>(max_steps, 10);
  run["warmup_iterations"] = 0;
  const fs::path path = work_root() / "systems" / (name + ".json");
  fs::create_directories(path.parent_path());
  std::ofstream(path) << s.dump(2);
  return path;
}

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

std::string last_mllog_line(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find(":::MLLOG") != std::string::npos) last = line;
  return last;
}

// A job started in its own process group so the test can always clean it up.
class Job {
 public:
  Job(const std::string& command, const fs::path& output) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
    REQUIRE(posix_spawn(&pid_, "/bin/sh", &actions, &attributes, const_cast<char**>(argv),
                        environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  ~Job() {
    ::killpg(pid_, SIGKILL);
    if (!exited_) ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  // Waits up to `seconds`; returns the exit status, or nullopt on timeout.
  std::optional<int> wait_for(double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      int status = 0;
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = 0;
  bool exited_ = false;
};

// The pid of the process of MPI rank `rank` running `mlbert train`, or 0.
pid_t find_rank(int rank) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return 0;
  pid_t found = 0;
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  while (dirent* entry = ::readdir(proc)) {
    const pid_t pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::ifstream cmdline("/proc/" + std::string(entry->d_name) + "/cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (args.find("train") == std::string::npos || args.find("mlbert") == std::string::npos)
      continue;
    if (args.find(work_root().string()) == std::string::npos) continue;
    std::ifstream environ_file("/proc/" + std::string(entry->d_name) + "/environ");
    std::string env((std::istreambuf_iterator<char>(environ_file)),
                    std::istreambuf_iterator<char>());
    std::replace(env.begin(), env.end(), '\0', '\n');
    if (("\n" + env).find("\n" + wanted + "\n") != std::string::npos) {
      found = pid;
      break;
    }
  }
  ::closedir(proc);
  return found;
}

bool wait_for_text(const fs::path& file, const std::string& text, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    std::ifstream in(file);
    std::stringstream content;
    content << in.rdbuf();
    if (content.str().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

std::string train_command(int ranks, const fs::path& system, const TestData& data,
                          const fs::path& results, const std::string& extra) {
  return mpirun(ranks) + mlbert_bin().string() + " train --quiet --system " + system.string() +
         " --data " + data.train.string() + " --eval-data " + data.eval.string() + " --results " +
         results.string() + " " + extra;
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

TEST_CASE("killing one rank mid-run ends every rank non-zero within 30 s, logged as aborted",
          "[mpi][abort]") {
  const TestData data = test_data();
  const fs::path system =
      write_system("kill", 2, 4, 1, "bucket-before-allreduce", "node-exchange", 20);
  const fs::path out = work_root() / "kill";
  fs::remove_all(out);
  fs::create_directories(out);
  const fs::path log = out / "results/kill/bert/result_0.txt";
  Job job(train_command(2, system, data, out / "results", "--seed 7 --run-index 0"),
          out / "job.out");
  REQUIRE(wait_for_text(log, "\"block_start\"", 60));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // well inside the step loop
  const pid_t victim = find_rank(1);
  REQUIRE(victim > 0);
  REQUIRE(::kill(victim, SIGKILL) == 0);
  const auto killed_at = Clock::now();
  const auto status = job.wait_for(30);
  const double elapsed = std::chrono::duration<double>(Clock::now() - killed_at).count();
  std::ifstream job_output(out / "job.out");
  INFO(std::string((std::istreambuf_iterator<char>(job_output)), std::istreambuf_iterator<char>()));
  REQUIRE(status.has_value());
  CHECK(*status != 0);
  CHECK(elapsed < 30);
  CHECK(find_rank(0) == 0);  // rank 0 is gone too
  const std::string last = last_mllog_line(log);
  CHECK_THAT(last, Catch::Contains("\"key\": \"run_stop\""));
  CHECK_THAT(last, Catch::Contains("\"status\": \"aborted\""));
}

TEST_CASE("a hung rank is caught by the watchdog: every rank non-zero, logged as aborted",
          "[mpi][abort]") {
  const TestData data = test_data();
  const double watchdog = 8;
  const fs::path system = write_system("hang", 2, 4, 1, "after-allreduce", "none", watchdog);
  const fs::path out = work_root() / "hang";
  fs::remove_all(out);
  fs::create_directories(out);
  const fs::path log = out / "results/hang/bert/result_0.txt";
  Job job(train_command(2, system, data, out / "results", "--seed 8 --run-index 0"),
          out / "job.out");
  REQUIRE(wait_for_text(log, "\"block_start\"", 60));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const pid_t victim = find_rank(1);
  REQUIRE(victim > 0);
  REQUIRE(::kill(victim, SIGSTOP) == 0);  // alive but making no progress
  const auto stopped_at = Clock::now();
  const auto status = job.wait_for(watchdog + 20);
  const double elapsed = std::chrono::duration<double>(Clock::now() - stopped_at).count();
  ::kill(victim, SIGKILL);
  std::ifstream job_output(out / "job.out");
  const std::string output((std::istreambuf_iterator<char>(job_output)),
                           std::istreambuf_iterator<char>());
  INFO(output);
  REQUIRE(status.has_value());
  CHECK(*status != 0);
  CHECK(elapsed >= watchdog - 1);
  CHECK(elapsed < watchdog + 20);
  CHECK_THAT(output, Catch::Contains("watchdog"));
  const std::string last = last_mllog_line(log);
  CHECK_THAT(last, Catch::Contains("\"key\": \"run_stop\""));
  CHECK_THAT(last, Catch::Contains("\"status\": \"aborted\""));
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
