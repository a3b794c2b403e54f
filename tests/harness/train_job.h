// What the multi-rank tests share: a small prepared data set, system files derived from
// cpu_demo, and `mlbert train` jobs under mpirun that the test can observe and always clean up.
#pragma once

#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/atomic_file.h"
#include "tests/common/process_temp_dir.h"
#include "tests/common/shared_fixtures.h"

extern char** environ;

namespace mlbert::test {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

inline fs::path mlbert_bin() {
  return mlbert::test::binary_dir() / "bin" / "mlbert";
}
inline fs::path work_root() {
  return mlbert::test::binary_dir() / "test-work" / "harness";
}

// Runs a shell command; returns (exit status, combined output).
inline std::pair<int, std::string> run_command(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output};
}

// Open MPI's session directory (under $TMPDIR) and its shared-memory segments (in /dev/shm) are
// removed by the processes that made them, so each job these tests kill left ~8 MB in /tmp and a
// segment per rank in /dev/shm (a `make test` left ~60 of each). Every mpirun these tests start,
// directly or through `mlbert demo`, inherits this process's environment: both go to one folder of
// this process, removed when it exits. A caller's own setting of either is kept.
struct MpiScratch {
  ProcessTempDir dir{"mlbert_mpi_"};
  MpiScratch() {
    bool used = false;
    for (const char* name : {"OMPI_MCA_orte_tmpdir_base", "OMPI_MCA_btl_vader_backing_directory"})
      if (!std::getenv(name)) {
        used = true;
        ::setenv(name, dir.path.c_str(), 1);
      }
    std::error_code ec;
    if (used) fs::create_directories(dir.path, ec);
  }
};
inline const MpiScratch mpi_scratch;

inline std::string mpirun(int ranks) {
  return "mpirun --allow-run-as-root --oversubscribe --bind-to none -np " + std::to_string(ranks) +
         " -x OMP_NUM_THREADS=1 ";
}

// A small demo corpus, prepared once (into a temporary name, then renamed, so concurrent test
// processes never see half of it).
struct TestData {
  fs::path train, eval;
};

inline TestData test_data() {
  const fs::path root = work_root() / "data";
  TestData data{root / "train", root / "eval.hdf5"};
  if (fs::exists(root / "READY") && fs::exists(data.train / "lengths.index")) return data;
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
  if (!fs::exists(data.train / "lengths.index")) fs::remove_all(root);  // from before the index
  fs::rename(tmp, root, ec);  // another process may have won the race: use its copy
  if (ec) fs::remove_all(tmp);
  return data;
}

inline json demo_system() {
  std::ifstream in(mlbert::test::source_dir() / "systems" / "cpu_demo.json");
  REQUIRE(in);
  return json::parse(in);
}

// A one-node CPU system with `ranks` ranks, derived from cpu_demo for these tests.
inline fs::path write_system(const std::string& name, int ranks, int per_rank_batch,
                             int accumulation, const std::string& clipping,
                             const std::string& balancing, double watchdog_seconds = 20,
                             std::int64_t max_steps = 1000, std::int64_t eval_cadence = 1000000) {
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
  run["eval"] = {{"cadence", eval_cadence}, {"eval_samples", 64}, {"batch_size", 16}};
  run["watchdog_seconds"] = watchdog_seconds;
  run["max_steps"] = max_steps;
  run["lr_schedule"]["training_steps"] = std::max<std::int64_t>(max_steps, 10);
  run["warmup_iterations"] = 0;
  const fs::path path = work_root() / "systems" / (name + ".json");
  fs::create_directories(path.parent_path());
  std::ofstream(path) << s.dump(2);
  return path;
}

inline std::string last_mllog_line(const fs::path& log) {
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
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = 0;
  bool exited_ = false;
};

// A /proc file's text, or "" when the process has gone (reading it may then fail midway).
using files::read_proc_file;

// The pid of the process of MPI rank `rank` running `mlbert train`, or 0.
inline pid_t find_rank(int rank) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return 0;
  pid_t found = 0;
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  while (dirent* entry = ::readdir(proc)) {
    const pid_t pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    const std::string args = read_proc_file("/proc/" + std::string(entry->d_name) + "/cmdline");
    if (args.find("train") == std::string::npos || args.find("mlbert") == std::string::npos)
      continue;
    if (args.find(work_root().string()) == std::string::npos) continue;
    std::string env = read_proc_file("/proc/" + std::string(entry->d_name) + "/environ");
    std::replace(env.begin(), env.end(), '\0', '\n');
    if (("\n" + env).find("\n" + wanted + "\n") != std::string::npos) {
      found = pid;
      break;
    }
  }
  ::closedir(proc);
  return found;
}

inline bool wait_for_text(const fs::path& file, const std::string& text, double seconds) {
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

inline std::string train_command(int ranks, const fs::path& system, const TestData& data,
                                 const fs::path& results, const std::string& extra) {
  return mpirun(ranks) + mlbert_bin().string() + " train --quiet --system " + system.string() +
         " --data " + data.train.string() + " --eval-data " + data.eval.string() + " --results " +
         results.string() + " " + extra;
}

}  // namespace mlbert::test
