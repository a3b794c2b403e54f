// `mlbert train`, `mlbert launch`, `mlbert preflight`, `mlbert bind` and `mlbert demo`: the "train" group of the help
// (`mlbert simulate` joins it from simulate/cli.cc).
#include "harness/cli/cli.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>

#include "common/atomic_file.h"
#include "harness/launch/demo.h"
#include "harness/launch/job.h"
#include "harness/launch/job_preflight.h"
#include "harness/launch/launcher.h"
#include "harness/comm/mpi_communicator.h"
#include "harness/train/run_guard.h"
#include "harness/config/system_config.h"
#include "harness/train/trainer.h"
#include "common/cli.h"

namespace mlbert::harness {
namespace {

// ---- mlbert train

void register_train(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<TrainOptions>();
  auto seed = std::make_shared<std::int64_t>(-1);
  auto run_index = std::make_shared<int>(-1);
  auto max_steps = std::make_shared<std::int64_t>(-1);
  auto backend = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  auto no_progress_thread = std::make_shared<bool>(false);
  auto progress_display = std::make_shared<std::string>("auto");
  CLI::App* train =
      app.add_subcommand("train", "one rank of BERT training in an MPI job (see `mlbert launch`)")
          ->group("train");
  train->add_option("--system", options->system, "system name (systems/<name>.json) or file")
      ->required();
  train->add_option("--data", options->data, "training shards: a directory of HDF5 files")
      ->required()
      ->check(cli::existing_directory());
  train->add_option("--eval-data", options->eval_data, "the eval set: an HDF5 file or directory")
      ->required()
      ->check(cli::existing_path());
  train->add_option("--init-checkpoint", options->init_checkpoint,
                    "initial weights (mlbert/HF safetensors or the TF bundle model.ckpt-28252)");
  train->add_option("--seed", *seed, "random seed (default: the system's, else random)");
  train->add_option("--vocab", options->vocab, "vocab.txt (default <data>/vocab.txt when needed)")
      ->check(cli::existing_file());
  train->add_option("--results", options->results_dir, "result root (default results)");
  train->add_option("--run-index", *run_index,
                    "write result_<N>.txt (default: the first N no finished or live run has)");
  train->add_option("--backend", *backend, "cpu or cuda (default: the system's run.backend)");
  train->add_option("--max-steps", *max_steps, "override run.max_steps");
  train->add_option("--systems-dir", options->systems_dir, "where system names are looked up")
      ->check(cli::existing_directory());
  train->add_flag("--quiet", *quiet, "rank 0 writes the MLLOG lines to the result file only");
  train->add_flag("--no-progress-thread", *no_progress_thread,
                  "no MPI progress thread (communication does not overlap backward)");
  train
      ->add_option("--progress", *progress_display,
                   "rank 0's live progress on stderr: tty (one rewriting line), lines (one per "
                   "eval), off; default auto: tty on a terminal, else lines")
      ->check(CLI::IsMember({"auto", "tty", "lines", "off"}));
  train->add_option("--dump-dir", options->dump_dir, "tests: dump averaged gradients and weights");
  train->add_option("--dump-steps", options->dump_steps, "tests: how many steps to dump");
  train->callback([=, &exit_code] {
    TrainOptions o = *options;
    if (*seed >= 0) o.seed = *seed;
    if (*run_index >= 0) o.run_index = *run_index;
    if (*max_steps >= 0) o.max_steps = *max_steps;
    if (!backend->empty()) o.backend = *backend;
    o.log_stdout = !*quiet;
    o.progress = *no_progress_thread ? MpiProgress::none : MpiProgress::thread;
    o.progress_display = parse_progress_display(*progress_display);
    // Before MPI starts its threads: only the run guard's thread may take termination signals.
    RunGuard::block_termination_signals();
    select_gpu_before_mpi(o);
    MpiRuntime runtime(nullptr, nullptr);
    exit_code = run_training(o, runtime);
  });
  cli::set_example(*train,
                       "mpirun -np 2 mlbert train --system cpu_demo --data prep/train "
                       "--eval-data prep/eval.hdf5");
}

// ---- mlbert launch

[[noreturn]] void exec_or_throw(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(args[0], args.data());
  throw std::runtime_error(argv[0] + ": cannot execute: " + std::strerror(errno));
}

// --data and --eval-data given after `--` (the form before they were launch's own options) move
// to the job; every other word stays a training argument.
void take_data_arguments(std::vector<std::string>& train_args, JobOptions& job) {
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < train_args.size(); ++i) {
    const bool has_value = i + 1 < train_args.size();
    if (train_args[i] == "--data" && has_value) job.data = train_args[++i];
    else if (train_args[i] == "--eval-data" && has_value) job.eval_data = train_args[++i];
    else rest.push_back(train_args[i]);
  }
  train_args = rest;
}

std::filesystem::path absolute_or_empty(const std::filesystem::path& p) {
  return p.empty() ? p : std::filesystem::absolute(p).lexically_normal();
}

struct LaunchCommand {
  LaunchOptions launch;
  JobOptions job;
  std::string system, scheduler = "mpirun", engine;
  std::filesystem::path systems_dir, script;
  bool dry_run = false;
};

int run_launch(LaunchCommand c) {
  JobOptions& job = c.job;
  if (c.launch.mlbert.empty()) c.launch.mlbert = mlbert_executable();
  const SystemConfig config =
      load_system(c.system, c.systems_dir.empty() ? default_systems_dir() : c.systems_dir);
  take_data_arguments(c.launch.train_args, job);
  job.scheduler = c.scheduler == "slurm" ? Scheduler::slurm : Scheduler::mpirun;
  // --container without --engine: what each scheduler runs images with on a cluster.
  if (!c.engine.empty()) job.engine = parse_engine(c.engine);
  else if (!job.image.empty()) job.engine = job.scheduler == Scheduler::slurm ? Engine::pyxis : Engine::apptainer;
  job.launch = c.launch;
  job.system_file = absolute_or_empty(config.path);
  job.data = absolute_or_empty(job.data);
  job.eval_data = absolute_or_empty(job.eval_data);
  job.checkpoint = absolute_or_empty(job.checkpoint);
  job.results = absolute_or_empty(job.results);
  const std::string text = job_script(config, job);
  if (c.dry_run) {
    std::cout << text;
    return 0;
  }
  std::filesystem::path path = c.script;
  if (path.empty())
    path = job.results / config.name / ("launch_" + std::to_string(std::time(nullptr)) + ".sh");
  std::filesystem::create_directories(path.parent_path());
  std::filesystem::create_directories(job.results / config.name);
  files::write_file_atomically(path, text);
  const bool slurm = job.scheduler == Scheduler::slurm;
  std::cerr << "mlbert launch: wrote " << path.string() << "; "
            << (slurm ? "submitting it with sbatch" : "running it") << "\n";
  exec_or_throw(slurm ? std::vector<std::string>{"sbatch", path.string()}
                      : std::vector<std::string>{"bash", path.string()});
}

void register_launch(CLI::App& app, int& exit_code) {
  auto c = std::make_shared<LaunchCommand>();
  c->job.runs = 1;
  c->job.results = "results";
  CLI::App* launch =
      app.add_subcommand("launch",
                         "start `mlbert train` on every GPU of a system (mpirun or Slurm)")
          ->group("train");
  launch->add_option("--system", c->system, "system name (systems/<name>.json) or file")->required();
  launch->add_option("--systems-dir", c->systems_dir,
                     "where system names are looked up (default ./systems, else the installed "
                     "<bin>/../systems)")
      ->check(cli::existing_directory());
  launch->add_option("--data", c->job.data, "training shards (a folder, with its length index)");
  launch->add_option("--eval-data", c->job.eval_data, "the eval set");
  launch->add_option("--init-checkpoint", c->job.checkpoint, "initial weights");
  launch->add_option("--results", c->job.results,
                     "result root: logs, the job script, Slurm's output (default results)");
  launch->add_option("--runs", c->job.runs, "training runs, each with a fresh seed (default 1)")
      ->check(CLI::Range(1, 1000));
  launch->add_option("--scheduler", c->scheduler, "mpirun (default) or slurm")
      ->check(CLI::IsMember({"mpirun", "slurm"}));
  launch->add_option("--engine", c->engine, "none, pyxis, apptainer, docker or podman");
  launch->add_option("--image,--container", c->job.image,
                     "the image (default engine: pyxis under Slurm, apptainer under mpirun)");
  launch->add_flag("--dry-run", c->dry_run, "print the job script, start nothing");
  launch->add_option("--hostfile", c->launch.hostfile,
                     "mpirun hostfile (default ${MLBERT_HOSTFILE})");
  launch->add_option("--mlbert", c->launch.mlbert,
                     "the mlbert binary as the nodes see it (default: this binary)");
  launch->add_option("--time", c->launch.time_limit, "Slurm time limit (default 01:00:00)");
  launch->add_option("--partition", c->launch.partition, "Slurm partition");
  launch->add_option("--account", c->launch.account, "Slurm account");
  launch->add_option("--script", c->script,
                     "where to write the job script (default <results>/<system>/launch_<time>.sh)");
  launch->add_flag("--allow-run-as-root", c->launch.allow_run_as_root, "pass Open MPI's root flag");
  launch->add_flag("--oversubscribe", c->launch.oversubscribe,
                   "more ranks than cores (tests, demo)");
  launch->add_flag("--best-effort", c->launch.bind_best_effort,
                   "bind what this machine has (small machines, the demo system)");
  launch->add_option("train_args", c->launch.train_args, "more arguments of `mlbert train`, after --");
  c->launch.mlbert = "";
  launch->callback([c, &exit_code] { exit_code = run_launch(*c); });
  cli::set_example(*launch,
                       "mlbert launch --system dgxa100_128x8 --scheduler slurm --runs 10 --dry-run "
                       "--data /data/train --eval-data /data/eval.hdf5");
}

// ---- mlbert preflight

void register_preflight(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<JobPreflightOptions>();
  CLI::App* preflight =
      app.add_subcommand("preflight",
                         "a job's checks on every node: GPUs, NICs, data, allreduce")
          ->group("train");
  preflight->add_option("--system", o->system, "system name or file")->required();
  preflight->add_option("--systems-dir", o->systems_dir, "where system names are looked up");
  preflight->add_option("--data", o->data, "training shards")->required();
  preflight->add_option("--eval-data", o->eval_data, "the eval set")->required();
  preflight->callback([o, &exit_code] {
    JobPreflightOptions options = *o;
    if (options.systems_dir.empty()) options.systems_dir = default_systems_dir();
    exit_code = run_job_preflight(options);
  });
  cli::set_example(*preflight, "mpirun -np 2 mlbert preflight --system cpu_demo --data prep/train "
                               "--eval-data prep/eval.hdf5");
}

// ---- mlbert bind

// Binds this process to `cpus` and its memory to `numa_node`, or explains why not.
std::string apply_binding(const RankBinding& binding, bool membind) {
  std::string problems;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof(allowed), &allowed);
  cpu_set_t set;
  CPU_ZERO(&set);
  int usable = 0;
  for (int cpu : binding.cpus) {
    if (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed)) {
      CPU_SET(cpu, &set);
      ++usable;
    }
  }
  if (usable != static_cast<int>(binding.cpus.size()))
    problems += "cpus " + cpu_list_string(binding.cpus) + " are not all available here; ";
  if (usable > 0 && sched_setaffinity(0, sizeof(set), &set) != 0)
    problems += std::string("sched_setaffinity: ") + std::strerror(errno) + "; ";
  if (membind) {
    constexpr int kMpolBind = 2;  // MPOL_BIND of <numaif.h>, without a libnuma dependency
    unsigned long mask[16] = {};
    if (binding.numa_node >= static_cast<int>(sizeof(mask) * 8)) {
      problems += "NUMA node " + std::to_string(binding.numa_node) + " out of range; ";
    } else {
      mask[binding.numa_node / 64] |= 1UL << (binding.numa_node % 64);
      if (::syscall(SYS_set_mempolicy, kMpolBind, mask, sizeof(mask) * 8) != 0)
        problems += "memory binding to NUMA node " + std::to_string(binding.numa_node) + ": " +
                    std::strerror(errno) + "; ";
    }
  }
  return problems;
}

void register_bind(CLI::App& app, int& exit_code) {
  auto system = std::make_shared<std::string>();
  auto systems_dir = std::make_shared<std::filesystem::path>("systems");
  auto local_rank = std::make_shared<int>(-1);
  auto dry_run = std::make_shared<bool>(false);
  auto best_effort = std::make_shared<bool>(false);
  auto command = std::make_shared<std::vector<std::string>>();
  CLI::App* bind =
      app.add_subcommand("bind", "bind this rank to its GPU's CPUs, NUMA memory and NIC, then run")
          ->group("train");
  bind->add_option("--system", *system, "system name or file")->required();
  bind->add_option("--systems-dir", *systems_dir, "where system names are looked up")
      ->check(cli::existing_directory());
  bind->add_option("--local-rank", *local_rank, "default: from the launcher's environment");
  bind->add_flag("--dry-run", *dry_run, "print the binding and the command, run nothing");
  bind->add_flag("--best-effort", *best_effort,
                 "bind what this machine has instead of failing (the demo on small machines)");
  bind->add_option("command", *command, "the command to run, after --")->required();
  bind->callback([=, &exit_code] {
    const SystemConfig config = load_system(*system, *systems_dir);
    int local = *local_rank;
    if (local < 0) {
      const auto from_env = local_rank_from_environment();
      if (!from_env)
        throw std::runtime_error(
            "bind: no local rank in the environment (OMPI_COMM_WORLD_LOCAL_RANK, "
            "SLURM_LOCALID, ...); pass --local-rank");
      local = *from_env;
    }
    const auto bindings = rank_bindings(config);
    if (local >= static_cast<int>(bindings.size()))
      throw std::runtime_error("bind: local rank " + std::to_string(local) + " but system " +
                               config.name + " has " + std::to_string(bindings.size()) +
                               " ranks per node");
    const RankBinding& b = bindings[local];
    const auto env = b.environment();
    if (*dry_run) {
      std::cout << "local rank " << local << ": cpus " << cpu_list_string(b.cpus) << ", NUMA node "
                << b.numa_node << "\n";
      for (const auto& [k, v] : env) std::cout << "  " << k << "=" << v << "\n";
      std::cout << "  exec";
      for (const auto& word : *command) std::cout << " " << shell_quote(word);
      std::cout << "\n";
      exit_code = 0;
      return;
    }
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    // NUMA binding is skipped on single-node-NUMA machines only when best effort was asked for.
    const std::string problems =
        apply_binding(b, config.topology.cpu.numa_nodes > 1 || !*best_effort);
    if (!problems.empty()) {
      if (!*best_effort)
        throw std::runtime_error("bind: local rank " + std::to_string(local) + ": " + problems +
                                 "(run on the system's nodes, or pass --best-effort)");
      std::fprintf(stderr, "mlbert bind: local rank %d: %s bound what exists\n", local,
                   problems.c_str());
    }
    exec_or_throw(*command);
  });
  cli::set_example(*bind,
                       "mlbert bind --system dgxa100_128x8 --local-rank 5 --dry-run -- nvidia-smi");
}

// ---- mlbert demo

void register_demo(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<DemoOptions>();
  CLI::App* demo =
      app.add_subcommand("demo", "the whole job on this CPU: corpus, prep, 2-rank training, audit")
          ->group("train");
  demo->add_option("--runs", options->runs, "training runs (10 gives a scorable result directory)")
      ->check(CLI::Range(1, 100));
  demo->add_option("--results", options->results_dir, "result root (default results)");
  demo->add_option("--systems-dir", options->systems_dir, "where the demo system is found")
      ->check(cli::existing_directory());
  demo->add_option("--system", options->system, "the demo system (default cpu_demo)");
  demo->add_option("--seed", options->seed, "first run's seed (default: random)");
  demo->add_flag("--replace", options->replace,
                 "remove the earlier runs' result logs first (default: number the new runs after "
                 "them)");
  demo->callback([=, &exit_code] { exit_code = run_demo(*options); });
  cli::set_example(*demo, "mlbert demo --runs 10");
}

}  // namespace

void register_cli(CLI::App& app, int& exit_code) {
  register_train(app, exit_code);
  register_launch(app, exit_code);
  register_preflight(app, exit_code);
  register_bind(app, exit_code);
  register_demo(app, exit_code);
}

}  // namespace mlbert::harness
