// bench_check: `mlbert check` against the official checker (`python -m
// mlperf_logging.compliance_checker`, the pinned package) on the same logs in one run.
//
// For every log it prints the official checker's time and mlbert's two ways: as the command a user
// types (process start included: the official one pays for the interpreter and its imports;
// `mlbert`, which checks in its own process, for little; `mlbert-core`, the binary the other
// subcommands run in, is timed beside it to show what loading CUDA, NCCL, MPI, HDF5 and OpenBLAS
// would add) and in-process (the official ComplianceChecker.check_file in a warm
// interpreter against mlperf_logging::check_log): the ratio of the second pair is the strict one.
// CPU time (user + system) is reported beside wall time, as it stays meaningful on a busy machine.
// Then it times whole 10-run result folders, and, with --big-gib N, streams an N GiB file without
// MLLOG lines through both tools (peak memory included).
//
//   bench_check --python VENV/bin/python [--bin DIR] [--logs DIR] [--reps N] [--big-gib N]
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlperf_logging/rules/checker.h"

extern char** environ;

namespace fs = std::filesystem;
namespace mllog = mlbert::mllog;

namespace {

struct Run {
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // user + system time of the child
  int status = 0;
  long max_rss_kib = 0;
  std::string output;
};

// Runs argv with stdout captured (to a temp file) and stderr discarded; wall time and peak RSS.
Run run_process(const std::vector<std::string>& argv, bool capture = false) {
  char out_path[] = "/tmp/bench_check_outXXXXXX";
  int out_fd = mkstemp(out_path);
  if (out_fd < 0) throw std::runtime_error("mkstemp failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0)
    throw std::runtime_error("cannot run " + argv[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  Run run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.max_rss_kib = usage.ru_maxrss;
  run.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  posix_spawn_file_actions_destroy(&actions);
  if (capture) {
    std::ifstream in(out_path);
    std::stringstream ss;
    ss << in.rdbuf();
    run.output = ss.str();
  }
  close(out_fd);
  unlink(out_path);
  return run;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double wall = 0, cpu = 0;  // medians, seconds
};

Timing time_command(const std::vector<std::string>& argv, int reps) {
  std::vector<double> wall, cpu;
  for (int i = 0; i < reps; ++i) {
    Run r = run_process(argv);
    wall.push_back(r.seconds);
    cpu.push_back(r.cpu_seconds);
  }
  return {median(wall), median(cpu)};
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The official checker timed in one warm interpreter: median CPU seconds per log, its verdict,
// median wall seconds.
const char* kPythonTimer = R"(
import json, logging, sys, time
logging.disable(logging.CRITICAL)
from mlperf_logging.compliance_checker import mlp_compliance as mc
reps = int(sys.argv[1]); out = {}
for arg in sys.argv[2:]:
    ruleset, path = arg.split(':', 1)
    cpu, wall = [], []
    for _ in range(reps):
        mc.enqueued_configs.clear()
        checker = mc.make_checker('training', ruleset, False, False)
        start, start_cpu = time.perf_counter(), time.process_time()
        ok = checker.check_file(path, 'training_%s/common.yaml' % ruleset)
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    cpu.sort()
    wall.sort()
    out[path] = [cpu[len(cpu) // 2], bool(ok), wall[len(wall) // 2]]
print(json.dumps(out))
)";

struct Log {
  fs::path path;
  fs::path root;  // the fixture folder whose EXPECTED.tsv names it
  std::string ruleset;
  std::string expected;
};

std::vector<Log> fixture_logs(const fs::path& logs_dir) {
  std::ifstream tsv(logs_dir / "EXPECTED.tsv");
  if (!tsv) throw std::runtime_error((logs_dir / "EXPECTED.tsv").string() + ": cannot open");
  std::vector<Log> logs;
  for (std::string line; std::getline(tsv, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Log log;
    std::string rel;
    std::getline(fields, rel, '\t');
    std::getline(fields, log.ruleset, '\t');
    std::getline(fields, log.expected, '\t');
    log.path = logs_dir / rel;
    log.root = logs_dir;
    logs.push_back(log);
  }
  std::sort(logs.begin(), logs.end(), [](const Log& a, const Log& b) { return a.path < b.path; });
  return logs;
}

std::size_t count_lines(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return static_cast<std::size_t>(
      std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

struct Options {
  std::string python;
  fs::path bin;
  std::vector<fs::path> logs_dirs;
  int reps = 5;
  double big_gib = 0;
};

// The command line; nullopt after printing the usage.
std::optional<Options> parse_options(int argc, char** argv) {
  Options o;
  o.python = std::getenv("MLBERT_PYTHON") ? std::getenv("MLBERT_PYTHON") : "";
  o.bin = fs::canonical("/proc/self/exe").parent_path();
  const fs::path fixtures = fs::path(MLBERT_SOURCE_DIR) / ".." / "shared" / "fixtures";
  o.logs_dirs = {fixtures / "mlperf_logs", fixtures / "mlperf_logs_early"};
  bool logs_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--python") {
      o.python = next();
    } else if (a == "--bin") {
      o.bin = next();
    } else if (a == "--logs") {  // repeatable; replaces the two fixture folders
      if (!logs_given) o.logs_dirs.clear();
      logs_given = true;
      o.logs_dirs.push_back(next());
    } else if (a == "--reps") {
      o.reps = std::stoi(next());
    } else if (a == "--big-gib") {
      o.big_gib = std::stod(next());
    } else {
      std::fprintf(
          stderr,
          "usage: bench_check --python PY [--bin DIR] [--logs DIR]... [--reps N] [--big-gib N]\n");
      return std::nullopt;
    }
  }
  if (o.python.empty()) {
    std::fprintf(stderr,
                 "bench_check: --python (or MLBERT_PYTHON) must name a Python with mlperf-logging "
                 "installed\n");
    return std::nullopt;
  }
  return o;
}

// One row a log: the official checker and mlbert, as commands and in-process. Returns the number
// of verdicts that differ.
int per_log_table(const Options& o, const std::vector<Log>& logs, const nlohmann::json& official) {
  const fs::path mlbert = o.bin / "mlbert", core = o.bin / "mlbert-core";
  std::printf("%-62s %6s %7s | %17s %17s %8s | %9s %9s | %6s %6s\n", "", "", "", "official command",
              "mlbert command", "core", "official", "check_log", "cmd", "call");
  std::printf("%-62s %6s %7s | %8s %8s %8s %8s %8s | %9s %9s | %6s %6s\n", "log", "lines",
              "verdict", "wall", "cpu", "wall", "cpu", "wall", "cpu", "cpu", "cpu x", "cpu x");
  double worst_cmd = 1e300, worst_call = 1e300, worst_cmd_wall = 1e300;
  int mismatches = 0;
  for (const auto& log : logs) {
    mllog::CheckOptions options;
    options.ruleset = log.ruleset;
    std::vector<double> inproc;
    bool success = false;
    for (int i = 0; i < std::max(o.reps, 5); ++i) {
      double start = thread_cpu_seconds();
      success = mllog::check_log(log.path, options).success;
      inproc.push_back(thread_cpu_seconds() - start);
    }
    double ours_call = median(inproc);
    Timing core_cmd =
        time_command({core.string(), "check", "--ruleset", log.ruleset, log.path.string()}, o.reps);
    Timing mlbert_cmd = time_command(
        {mlbert.string(), "check", "--ruleset", log.ruleset, log.path.string()}, o.reps);
    Timing theirs_cmd =
        time_command({o.python, "-m", "mlperf_logging.compliance_checker", "--usage", "training",
                      "--ruleset", log.ruleset, "--log_output", "/dev/null", log.path.string()},
                     o.reps);
    double theirs_call = official[log.path.string()][0].get<double>();
    bool theirs_ok = official[log.path.string()][1].get<bool>();
    if (theirs_ok != success) ++mismatches;
    // A child's CPU time is counted in clock ticks at worst; never divide by less than 0.1 ms.
    double cmd_ratio = theirs_cmd.cpu / std::max(mlbert_cmd.cpu, 1e-4);
    worst_cmd = std::min(worst_cmd, cmd_ratio);
    worst_cmd_wall = std::min(worst_cmd_wall, theirs_cmd.wall / mlbert_cmd.wall);
    worst_call = std::min(worst_call, theirs_call / ours_call);
    std::string name = fs::relative(log.path, log.root).string();
    std::printf(
        "%-62s %6zu %7s | %6.0fms %6.0fms %6.1fms %6.1fms %6.0fms | %7.1fms %7.3fms | %5.0fx "
        "%5.0fx%s\n",
        name.c_str(), count_lines(log.path), success ? "SUCCESS" : "FAILED", theirs_cmd.wall * 1e3,
        theirs_cmd.cpu * 1e3, mlbert_cmd.wall * 1e3, mlbert_cmd.cpu * 1e3, core_cmd.wall * 1e3,
        theirs_call * 1e3, ours_call * 1e3, cmd_ratio, theirs_call / ours_call,
        theirs_ok == success ? "" : "  VERDICT DIFFERS");
  }
  std::printf(
      "\nlowest per-file ratio (CPU time): %.0fx official command / mlbert command, %.0fx "
      "in-process (target >= 50x); lowest wall-clock command ratio %.0fx; verdict differences: "
      "%d\n\n",
      worst_cmd, worst_call, worst_cmd_wall, mismatches);
  return mismatches;
}

// Whole result folders, as `mlbert check` is used on a submission.
void folder_table(const Options& o, const std::vector<Log>& logs, const nlohmann::json& official) {
  std::map<fs::path, std::vector<const Log*>> folders;
  for (const auto& log : logs) folders[log.path.parent_path()].push_back(&log);
  std::printf("%-62s %5s | %12s | %10s %12s | %6s\n", "result folder (all its logs in one command)",
              "logs", "official", "mlbert-core", "mlbert", "ratio");
  std::printf("%-62s %5s | %12s | %10s %12s | %6s\n", "", "", "(cpu, calls)", "(wall)", "(wall)",
              "");
  double slowest_folder = 0;
  for (const auto& [folder, members] : folders) {
    std::vector<std::string> args = {(o.bin / "mlbert").string(), "check", "--ruleset",
                                     members.front()->ruleset};
    double official_sum = 0;
    for (const Log* m : members) {
      args.push_back(m->path.string());
      official_sum += official[m->path.string()][0].get<double>();
    }
    Timing ours = time_command(args, o.reps);
    args[0] = (o.bin / "mlbert-core").string();
    Timing ours_core = time_command(args, o.reps);
    slowest_folder = std::max(slowest_folder, ours.wall);
    std::printf("%-62s %5zu | %10.1fms | %8.1fms %10.2fms | %5.0fx\n",
                fs::relative(folder, members.front()->root).string().c_str(), members.size(),
                official_sum * 1e3, ours_core.wall * 1e3, ours.wall * 1e3,
                official_sum / ours.wall);
  }
  std::printf(
      "\nslowest 10-run folder: %.1f ms wall with mlbert check (target < 50 ms); official: its "
      "in-process check_file CPU times summed (no interpreter start)\n",
      slowest_folder * 1e3);
}

// A file of `gib` GiB without MLLOG lines through both commands (peak memory included).
void big_file(const Options& o) {
  fs::path big = fs::temp_directory_path() / "bench_check_no_mllog.txt";
  {
    std::ofstream out(big, std::ios::binary);
    std::string line = "[1,3]<stderr>: step 1234 loss 1.9876 lr 0.000425 throughput 5432.1 seq/s\n";
    std::string block;
    while (block.size() < (1u << 20)) block += line;
    auto blocks = static_cast<long>(o.big_gib * 1024);
    for (long i = 0; i < blocks; ++i)
      out.write(block.data(), static_cast<std::streamsize>(block.size()));
  }
  double gib = static_cast<double>(fs::file_size(big)) / (1u << 30);
  Run ours =
      run_process({(o.bin / "mlbert").string(), "check", "--ruleset", "4.0.0", big.string()});
  Run theirs =
      run_process({o.python, "-m", "mlperf_logging.compliance_checker", "--usage", "training",
                   "--ruleset", "4.0.0", "--log_output", "/dev/null", big.string()});
  std::printf(
      "\n%.2f GiB without MLLOG lines: official command %.1f s, %ld MiB peak; mlbert check "
      "%.2f s (%.0f MiB/s), %ld MiB peak; ratio %.0fx\n",
      gib, theirs.seconds, theirs.max_rss_kib / 1024, ours.seconds, gib * 1024 / ours.seconds,
      ours.max_rss_kib / 1024, theirs.seconds / ours.seconds);
  fs::remove(big);
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> o = parse_options(argc, argv);
  if (!o) return 2;
  std::vector<Log> logs;
  std::string sources;
  for (const auto& dir : o->logs_dirs) {
    auto found = fixture_logs(dir);
    logs.insert(logs.end(), found.begin(), found.end());
    sources += (sources.empty() ? "" : ", ") + dir.string();
  }
  std::printf(
      "bench_check: %zu logs from %s; mlbert and mlbert-core from %s; official: %s -m "
      "mlperf_logging.compliance_checker; medians of %d runs\n"
      "cpu = user + system time (robust on a shared machine); wall = elapsed time\n\n",
      logs.size(), sources.c_str(), o->bin.string().c_str(), o->python.c_str(), o->reps);

  // Official in-process times, all logs in one interpreter.
  std::vector<std::string> timer = {o->python, "-c", kPythonTimer, std::to_string(o->reps)};
  for (const auto& log : logs) timer.push_back(log.ruleset + ":" + log.path.string());
  const nlohmann::json official = nlohmann::json::parse(run_process(timer, true).output);

  const int mismatches = per_log_table(*o, logs, official);
  folder_table(*o, logs, official);
  if (o->big_gib > 0) big_file(*o);
  return mismatches == 0 ? 0 : 1;
}
