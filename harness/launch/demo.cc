// `mlbert demo`: corpus -> shards -> N training runs on the system's ranks -> check, score,
// package.
#include "harness/launch/demo.h"

#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "common/atomic_file.h"
#include "common/elapsed.h"
#include "data_prep/demo_corpus.h"
#include "data_prep/eval_set.h"
#include "data_prep/prep_pipeline.h"
#include "data_prep/vocab.h"
#include "harness/launch/interrupt.h"
#include "harness/launch/launcher.h"
#include "harness/launch/run_numbering.h"
#include "harness/config/system_config.h"
#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/package/package.h"
#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/report/report.h"
#include "mlperf_logging/package/score.h"

namespace mlbert::harness {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How long a job may take to end by itself after this process was told to stop (a Ctrl-C reaches
// the ranks too) before the signal is passed on to mpirun.
constexpr double kInterruptGraceSeconds = 5.0;

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

// The corpus and prep parameters of the demo data; a stamp file records them so a second demo
// reuses the data only when it would be identical.
struct DemoData {
  fs::path root, corpus, train, eval_file;
};

std::string data_stamp(const RunSpec& run) {
  std::ostringstream s;
  const data::DemoCorpusOptions corpus;
  s << "demo corpus: documents " << corpus.train_documents << ", eval documents "
    << corpus.eval_documents << ", parts " << corpus.parts << ", seed " << corpus.seed
    << "; prep: max_seq_length " << run.max_seq_length << ", max_predictions_per_seq "
    << run.max_predictions_per_seq << ", dupe_factor 5, seed 12345; eval samples "
    << run.eval.eval_samples << "\n";
  return s.str();
}

DemoData prepare_data(const SystemConfig& system, const fs::path& results_dir) {
  const RunSpec& run = system.run;
  DemoData d;
  d.root = results_dir / "demo_data" / system.name;
  d.corpus = d.root / "corpus";
  d.train = d.root / "train";
  d.eval_file = d.root / "eval.hdf5";
  const fs::path stamp = d.root / "READY";
  const std::string expected = data_stamp(run);
  {
    std::ifstream in(stamp);
    std::stringstream have;
    have << in.rdbuf();
    if (in && have.str() == expected && fs::exists(d.eval_file) &&
        fs::exists(d.train / "vocab.txt")) {
      std::printf("[1/4] demo data: reusing %s (same corpus and prep parameters)\n",
                  d.root.c_str());
      return d;
    }
  }
  const auto start = Clock::now();
  fs::remove_all(d.root);
  fs::create_directories(d.root);
  const data::DemoCorpus corpus = data::generate_demo_corpus(data::DemoCorpusOptions{});
  const data::DemoCorpusFiles files = data::write_demo_corpus(corpus, d.corpus);
  const data::Vocab vocab = data::Vocab::load(files.vocab);

  data::PrepOptions prep;
  prep.inputs = files.parts;
  prep.output = d.train;
  prep.layout = data::Layout::kVarlen;
  prep.pretraining.max_seq_length = run.max_seq_length;
  prep.pretraining.max_predictions_per_seq = run.max_predictions_per_seq;
  prep.pretraining.dupe_factor = 5;
  prep.progress = 0;
  fs::create_directories(d.train);
  const data::PrepResult train = data::run_prep(prep, vocab);
  files::copy_file_atomically(files.vocab, d.train / "vocab.txt");

  // The eval set the MLPerf way: samples from the held-out text, then every (N/count)-th kept.
  prep.inputs = {files.eval};
  prep.output = d.root / "eval_source";
  fs::create_directories(prep.output);
  const data::PrepResult eval_source = data::run_prep(prep, vocab);
  data::ReadOptions read;
  read.vocab_size = vocab.size();
  read.format.max_seq_length = run.max_seq_length;
  read.format.max_predictions_per_seq = run.max_predictions_per_seq;
  const data::EvalSetResult eval = data::make_eval_set(
      eval_source.outputs, d.eval_file, data::Layout::kVarlen, run.eval.eval_samples, read);
  files::write_file_atomically(stamp, expected);  // last: the data above is complete
  std::printf(
      "[1/4] demo data: %zu-token vocab, %lld training samples in %zu shards, eval set of "
      "%lld samples (of %lld) -> %s (%s s)\n",
      corpus.vocab.size(), static_cast<long long>(train.samples), train.outputs.size(),
      static_cast<long long>(eval.picked), static_cast<long long>(eval.source_samples),
      d.root.c_str(), fixed(seconds_since(start), 1).c_str());
  return d;
}

// The executable `name` resolves to on PATH (as execvp would find it), or `name` itself.
std::string resolve_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return name;
}

// Runs argv with stdout and stderr to `output` (renamed into place when it ends); stderr (where rank
// 0's live progress and every rank's errors arrive through mpirun) also goes to this process's
// stderr as it comes, so the person watching sees the run move. Returns the exit status (128 +
// signal if killed). The child gets SIGTERM should this process die first, so a killed demo never
// leaves a training job running behind it (mpirun ends its ranks on SIGTERM). Under an
// InterruptScope a termination signal lets the job end (and log run_stop) before this returns.
int run_to_file(const std::vector<std::string>& argv, const fs::path& output) {
  files::AtomicFile out(output);
  const std::string program = resolve_on_path(argv[0]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    throw std::runtime_error(argv[0] + ": cannot start: " + std::strerror(errno));
  }
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::signal(SIGPIPE, SIG_DFL);  // ignored in the demo (InterruptScope); exec would keep that
    if (::getppid() != parent) ::_exit(127);  // the demo died before prctl took effect
    ::dup2(out.fd(), 1);
    ::dup2(err_pipe[1], 2);  // dup2 clears close-on-exec on the copies
    ::execv(program.c_str(), args.data());
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  char buffer[4096];
  std::optional<Clock::time_point> interrupted;
  bool passed_on = false;
  for (;;) {  // until every process holding the pipe (mpirun and the ranks) has closed it
    if (InterruptScope::received() != 0 && !passed_on) {
      // A signal to the whole group reached the job too; one to this process alone did not:
      // after a grace period it is passed on, as the job's end would otherwise never come.
      if (!interrupted) interrupted = Clock::now();
      if (seconds_since(*interrupted) > kInterruptGraceSeconds) {
        ::kill(pid, SIGTERM);
        passed_on = true;
      }
    }
    pollfd readable{err_pipe[0], POLLIN, 0};
    if (::poll(&readable, 1, 250) == 0) continue;
    const ssize_t n = ::read(err_pipe[0], buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    std::fwrite(buffer, 1, static_cast<std::size_t>(n), stderr);
    std::fflush(stderr);
    out.write(buffer, static_cast<std::size_t>(n));
  }
  ::close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.commit();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw std::runtime_error(argv[0] + ": cannot start it (Open MPI's mpirun is needed: " +
                             "scripts/deps.sh install); see " + output.string());
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// Holds `lock` exclusively for this process and the jobs it starts (the descriptor is inherited),
// so a second demo on the same results waits until every process of the first has ended.
void lock_demo_results(const fs::path& lock) {
  fs::create_directories(lock.parent_path());
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0644);  // kept open, inherited
  if (fd < 0)
    throw std::runtime_error(lock.string() +
                             ": cannot create the demo's lock file: " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return;
  if (errno != EWOULDBLOCK) return;  // no locks on this filesystem: nothing to wait for
  std::printf("mlbert demo: waiting for an earlier demo's processes on %s to end\n",
              lock.parent_path().c_str());
  std::fflush(stdout);
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
}

std::string tail_of(const fs::path& file, std::size_t lines) {
  std::ifstream in(file);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    out += "    " + all[i] + "\n";
  return out;
}

// What a result log says about its run.
struct RunSummary {
  std::string status = "(no run_stop)";
  double accuracy = 0;
  std::int64_t samples = 0;
  double seconds = 0;
};

RunSummary summarize_log(const fs::path& log) {
  RunSummary s;
  std::int64_t run_start = 0, run_stop = 0;
  mllog::for_each_record(
      log,
      [&](const mllog::LogRecord& r) {
        if (r.key == "run_start") run_start = r.time_ms;
        if (r.key == "run_stop") {
          run_stop = r.time_ms;
          if (r.metadata.contains("status") && r.metadata["status"].is_string())
            s.status = r.metadata["status"].get<std::string>();
        }
        if (r.key == "eval_accuracy" && r.value.is_number()) {
          s.accuracy = r.value.get<double>();
          if (r.metadata.contains("epoch_num") && r.metadata["epoch_num"].is_number_integer())
            s.samples = r.metadata["epoch_num"].get<std::int64_t>();
        }
      },
      [](const mllog::ParseError&) {});
  if (run_start && run_stop) s.seconds = (run_stop - run_start) / 1000.0;
  return s;
}

// <results>/package/<submitter>: the MLPerf submission layout around the demo's 10 result logs.
fs::path assemble_package(const SystemConfig& system, const fs::path& results_dir,
                          const std::vector<fs::path>& logs) {
  const fs::path org = results_dir / "package" / system.submitter();
  fs::remove_all(org);
  const fs::path systems = org / "systems";
  const fs::path implementation = org / "benchmarks" / "bert" / "implementations" / "mlbert";
  const fs::path results = org / "results" / system.name / "bert";
  for (const auto& dir : {systems, implementation, results}) fs::create_directories(dir);
  files::write_file_atomically(systems / (system.name + ".json"),
                               system.description.dump(4) + "\n");
  files::write_file_atomically(
      implementation / "README.md",
      "# mlbert\n\nThe implementation is the mlbert repository; these results come from\n"
      "`mlbert demo --runs " +
          std::to_string(logs.size()) + "` on system `" + system.name + "`.\n");
  // Named result_0.txt.. in the package whatever their numbers beside earlier runs' logs.
  for (std::size_t i = 0; i < logs.size(); ++i)
    files::copy_file_atomically(logs[i], results / ("result_" + std::to_string(i) + ".txt"));
  return org;
}

// The result logs of the demo's training runs, and how many runs failed.
struct TrainingRuns {
  std::vector<fs::path> logs;
  int failures = 0;
  int interrupted_by = 0;  // the termination signal that stopped the runs, or 0
};

// Runs `o.runs` trainings, each an mpirun of `mlbert bind ... -- mlbert train ...`, into
// `result_dir`, numbered after the earlier runs there (run_numbering.h).
TrainingRuns train_runs(const SystemConfig& system, const DemoData& data, const DemoOptions& o,
                        const fs::path& result_dir) {
  const RunNumbering numbering = number_new_runs(result_dir, o.replace);
  for (const auto& log : numbering.leftovers)
    std::printf("mlbert demo: removed %s, the partial log of a killed run\n", log.c_str());
  if (!numbering.removed.empty()) {
    std::printf("mlbert demo: --replace: removed %zu file(s) of earlier runs from %s:",
                numbering.removed.size(), result_dir.c_str());
    for (const auto& file : numbering.removed) std::printf(" %s", file.filename().c_str());
    std::printf("\n");
  }
  const int first = numbering.first;
  const InterruptScope interrupt_scope;
  std::mt19937_64 seeds(o.seed ? static_cast<std::uint64_t>(*o.seed) : std::random_device{}());
  TrainingRuns runs;
  for (int k = first; k < first + o.runs; ++k) {
    const std::int64_t seed =
        o.seed ? *o.seed + (k - first) : static_cast<std::int64_t>(seeds() % 1000000);
    LaunchOptions launch;
    launch.mlbert = mlbert_executable();
    launch.system_arg = system.path.string();
    launch.allow_run_as_root = ::geteuid() == 0;
    launch.oversubscribe = true;
    launch.bind_best_effort = true;
    launch.train_args = {
        "--data",    data.train.string(),    "--eval-data", data.eval_file.string(),
        "--results", o.results_dir.string(), "--run-index", std::to_string(k),
        "--seed",    std::to_string(seed),   "--quiet"};
    // Rank 0's stderr is a pipe under mpirun: tell it what the person at the other end has.
    launch.train_args.insert(launch.train_args.end(),
                             {"--progress", ::isatty(STDERR_FILENO) == 1 ? "tty" : "lines"});
    const auto argv = mpirun_argv(system, launch);
    const fs::path output = result_dir / ("train_" + std::to_string(k) + ".out");
    const fs::path log = result_dir / ("result_" + std::to_string(k) + ".txt");
    if (k == first) {
      std::printf("[2/4] training: %s", mpirun_command(system, launch).c_str());
    }
    const auto run_start = Clock::now();
    const int status = run_to_file(argv, output);
    const RunSummary summary = fs::exists(log) ? summarize_log(log) : RunSummary{};
    std::printf(
        "      run %d (seed %lld): %s, MLM accuracy %s at %lld samples, %s s from run_start "
        "to run_stop (%s s with init) -> %s\n",
        k, static_cast<long long>(seed), summary.status.c_str(), fixed(summary.accuracy, 4).c_str(),
        static_cast<long long>(summary.samples), fixed(summary.seconds, 1).c_str(),
        fixed(seconds_since(run_start), 1).c_str(), log.c_str());
    std::fflush(stdout);
    if (status != 0 || summary.status != "success") {
      ++runs.failures;
      std::printf("      run %d ended with exit status %d; the last lines of %s:\n%s", k, status,
                  output.c_str(), tail_of(output, 12).c_str());
    }
    if (fs::exists(log)) runs.logs.push_back(log);
    if ((runs.interrupted_by = InterruptScope::received()) != 0) break;
  }
  return runs;
}

// `mlbert check` of every log; returns how many failed.
int check_logs(const RunSpec& run, const std::vector<fs::path>& logs) {
  int failures = 0;
  std::printf("[3/4] check (ruleset %s):\n", run.ruleset.c_str());
  for (const auto& log : logs) {
    mllog::CheckOptions check;
    check.ruleset = run.ruleset;
    const mllog::CheckResult result = mllog::check_log(log, check);
    if (!result.success) {
      ++failures;
      std::printf("%s", mllog::format_result(result).c_str());
    } else {
      std::printf("      SUCCESS %s\n", log.c_str());
    }
  }
  return failures;
}

void print_score(const RunSpec& run, const fs::path& result_dir) {
  logging::ScoreOptions score_options;
  score_options.ruleset = run.ruleset;
  const logging::SystemScore score = logging::score_system(result_dir, score_options);
  if (score.score)
    std::printf("      %s: %s minutes (olympic mean of %zu runs)\n", result_dir.c_str(),
                fixed(*score.score, 4).c_str(), score.runs.size());
  else
    std::printf(
        "      %s: no score (MLPerf scores 10 runs: drop the fastest and slowest, average "
        "the rest)\n",
        result_dir.c_str());
  for (const auto& run_score : score.runs)
    if (run_score.minutes)
      std::printf("      %s: %s minutes\n", run_score.file.filename().c_str(),
                  fixed(*run_score.minutes, 4).c_str());
  for (const auto& note : score.notes) std::printf("      note: %s\n", note.c_str());
}

// The package check of the logs in the submission layout; returns whether it passed.
bool check_demo_package(const SystemConfig& system, const fs::path& results_dir,
                        const std::vector<fs::path>& logs) {
  const fs::path org = assemble_package(system, results_dir, logs);
  logging::PackageOptions package_options;
  package_options.ruleset = system.run.ruleset;
  const logging::PackageResult package = logging::check_package(org, package_options);
  std::printf("      package %s: %s\n", org.c_str(), package.passed ? "PASSED" : "FAILED");
  for (const auto& finding : package.findings)
    if (finding.level == logging::PackageFinding::Level::error) {
      std::printf("        %s: %s\n", finding.where.c_str(), finding.text.c_str());
    }
  return package.passed;
}

// The runs as an auditor sees them: the same page `mlbert report` writes.
void write_demo_report(const SystemConfig& system, const fs::path& results_dir,
                       const fs::path& result_dir) {
  logging::ReportInput input;
  input.dir = result_dir;
  input.ruleset = system.run.ruleset;
  input.target = system.run.target_accuracy;
  input.system_json = system.path;
  logging::ReportOptions report_options;
  report_options.title = "mlbert demo: " + system.name;
  report_options.generated_by = "Written by `mlbert demo` from its result logs.";
  const fs::path page = results_dir / system.name / "report.html";
  logging::write_report_file(
      page, logging::render_report_html({logging::read_system_report(input)}, report_options));
  std::printf("      report: %s\n", page.c_str());
}

}  // namespace

int run_demo(const DemoOptions& o) {
  const auto start = Clock::now();
  const SystemConfig system = load_system(o.system, o.systems_dir);
  const RunSpec& run = system.run;
  if (system.topology.nodes != 1)
    throw std::runtime_error(system.path.string() + ": the demo runs on this machine; system " +
                             system.name + " has " + std::to_string(system.topology.nodes) +
                             " nodes");
  std::printf(
      "mlbert demo: system %s: %d CPU ranks, model %s, %s + %s, %s clipping, target MLM "
      "accuracy %s (ruleset %s, %s division)\n",
      system.name.c_str(), system.topology.world_size(), run.model.preset.c_str(),
      to_string(run.sampler), to_string(run.load_balancing), to_string(run.clipping),
      fixed(run.target_accuracy, 3).c_str(), run.ruleset.c_str(), run.division.c_str());
  std::fflush(stdout);

  lock_demo_results(o.results_dir / ("." + system.name + ".demo-lock"));
  const DemoData data = prepare_data(system, o.results_dir);
  const fs::path result_dir = o.results_dir / system.name / "bert";
  const TrainingRuns runs = train_runs(system, data, o, result_dir);
  if (runs.interrupted_by != 0) {
    std::printf("mlbert demo: interrupted by SIG%s: the training job ended, %zu result log(s) in "
                "%s (an interrupted run's ends with run_stop \"aborted\"); no check, score or "
                "report\n",
                sigabbrev_np(runs.interrupted_by), runs.logs.size(), result_dir.c_str());
    return 128 + runs.interrupted_by;
  }
  const int check_failures = check_logs(run, runs.logs);
  std::printf("[4/4] score and report:\n");
  if (!runs.logs.empty()) print_score(run, result_dir);
  const bool package_passed =
      runs.logs.size() < 10 || check_demo_package(system, o.results_dir, runs.logs);
  if (!runs.logs.empty()) write_demo_report(system, o.results_dir, result_dir);
  std::printf(
      "mlbert demo: %zu run(s), %d reached the target, %d log(s) failed the check; result "
      "logs in %s; total %s s\n",
      runs.logs.size(), o.runs - runs.failures, check_failures, result_dir.c_str(),
      fixed(seconds_since(start), 1).c_str());
  return runs.failures == 0 && check_failures == 0 && package_passed ? 0 : 1;
}

}  // namespace mlbert::harness
