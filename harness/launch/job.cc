// The job script of `mlbert launch` and `mlbert reproduce` (see job.h).
#include "harness/launch/job.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace mlbert::harness {
namespace {

namespace fs = std::filesystem;

// Where the image sees what the host mounts (engine none: the host paths themselves).
struct ImagePaths {
  std::string system, data, eval, checkpoint, results;
};

bool in_image(Engine e) { return e != Engine::none; }

ImagePaths image_paths(const JobOptions& o) {
  if (!in_image(o.engine))
    return {o.system_file.string(), o.data.string(), o.eval_data.string(), o.checkpoint.string(),
            o.results.string()};
  return {"/mlbert-system/" + o.system_file.filename().string(), "/data",
          "/eval/" + o.eval_data.filename().string(),
          o.checkpoint.empty() ? "" : "/checkpoint/" + o.checkpoint.filename().string(),
          "/results"};
}

// host:image pairs of the folders the image mounts.
std::vector<std::pair<std::string, std::string>> mounts(const JobOptions& o) {
  std::vector<std::pair<std::string, std::string>> m = {
      {o.system_file.parent_path().string(), "/mlbert-system"},
      {o.data.string(), "/data"},
      {o.eval_data.parent_path().string(), "/eval"},
      {o.results.string(), "/results"}};
  if (!o.checkpoint.empty()) m.emplace_back(o.checkpoint.parent_path().string(), "/checkpoint");
  return m;
}

std::string quoted_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + shell_quote(w);
  return out;
}

// The words that start one process in the image: apptainer exec / docker|podman run.
std::vector<std::string> engine_prefix(const SystemConfig& system, const JobOptions& o) {
  const bool gpu = system.topology.accelerator.kind == "gpu";
  std::vector<std::string> w;
  if (o.engine == Engine::apptainer) {
    w = {"apptainer", "exec"};
    if (gpu) w.push_back("--nv");
    for (const auto& [host, image] : mounts(o)) w.insert(w.end(), {"--bind", host + ":" + image});
  } else if (o.engine == Engine::docker || o.engine == Engine::podman) {
    w = {o.engine == Engine::docker ? "docker" : "podman", "run", "--rm", "--ipc=host",
         "--network=host"};
    if (gpu) w.insert(w.end(), {"--gpus", "all"});
    for (const auto& [host, image] : mounts(o)) w.insert(w.end(), {"-v", host + ":" + image});
  } else {
    return w;
  }
  w.push_back(o.image);
  return w;
}

// The launcher's words before the rank command: srun (pyxis mounts as its options) or mpirun.
std::vector<std::string> launcher_words(const SystemConfig& system, const JobOptions& o) {
  if (o.scheduler == Scheduler::slurm && o.engine != Engine::docker && o.engine != Engine::podman) {
    // --kill-on-bad-exit: a rank that dies takes the step down instead of leaving the others
    // waiting, so the loop sees the run fail and goes on.
    std::vector<std::string> w = {"srun", "--mpi=pmix", "--cpu-bind=none", "--kill-on-bad-exit=1"};
    if (o.engine == Engine::pyxis) {
      w.push_back("--container-image=" + o.image);
      std::string m;
      for (const auto& [host, image] : mounts(o)) m += (m.empty() ? "" : ",") + host + ":" + image;
      w.push_back("--container-mounts=" + m);
    }
    return w;
  }
  LaunchOptions l = o.launch;
  l.train_args.clear();
  auto argv = mpirun_argv(system, l);
  // mpirun_argv ends with the rank command; keep mpirun's own options only.
  const auto bind = std::find(argv.begin(), argv.end(), "bind");
  return {argv.begin(), bind - 1};
}

// One process in the image: pyxis needs a one-task srun step, the others start the image.
std::vector<std::string> single_prefix(const SystemConfig& system, const JobOptions& o) {
  if (o.engine != Engine::pyxis) return engine_prefix(system, o);
  std::vector<std::string> w = {"srun", "--nodes=1", "--ntasks=1", "--container-image=" + o.image};
  std::string m;
  for (const auto& [host, image] : mounts(o)) m += (m.empty() ? "" : ",") + host + ":" + image;
  w.push_back("--container-mounts=" + m);
  return w;
}

std::vector<std::string> bind_words(const ImagePaths& p, const JobOptions& o) {
  std::vector<std::string> w = {"mlbert_exe", "bind", "--system", p.system};
  if (o.launch.bind_best_effort) w.push_back("--best-effort");
  w.push_back("--");
  return w;
}

void write_header(std::ostream& s, const SystemConfig& system, const JobOptions& o) {
  const Topology& t = system.topology;
  s << "#!/bin/bash\n";
  if (o.scheduler == Scheduler::slurm) {
    int cpus = 1;
    for (const auto& b : rank_bindings(system)) cpus = std::max(cpus, static_cast<int>(b.cpus.size()));
    s << "#SBATCH --job-name=mlbert_" << system.name << "\n#SBATCH --nodes=" << t.nodes
      << "\n#SBATCH --ntasks-per-node=" << t.ranks_per_node << "\n";
    if (t.accelerator.kind == "gpu") s << "#SBATCH --gpus-per-node=" << t.ranks_per_node << "\n";
    s << "#SBATCH --cpus-per-task=" << cpus << "\n#SBATCH --exclusive\n#SBATCH --time="
      << o.launch.time_limit << "\n";
    if (!o.launch.partition.empty()) s << "#SBATCH --partition=" << o.launch.partition << "\n";
    if (!o.launch.account.empty()) s << "#SBATCH --account=" << o.launch.account << "\n";
    s << "#SBATCH --output=" << (o.results / system.name / "slurm-%j.out").string() << "\n";
  }
  s << "# per local rank (set by mlbert bind):\n";
  for (const auto& b : rank_bindings(system)) {
    s << "#   local rank " << b.local_rank << ": cpus " << cpu_list_string(b.cpus) << ", NUMA node "
      << b.numa_node << (b.device >= 0 ? ", GPU " + std::to_string(b.device) : "")
      << (b.nic.empty() ? "" : ", NIC " + b.nic) << "\n";
  }
  s << "# mlbert job for system " << system.name << " (" << t.nodes << " x " << t.ranks_per_node
    << " ranks): preflight, " << o.runs << (o.runs == 1 ? " run" : " runs")
    << " with fresh seeds, `mlbert check` after each,\n"
    << "# then score, rcp and report. Engine: " << to_string(o.engine)
    << (o.image.empty() ? "" : ", image " + o.image) << ".\n";
  s << "set -uo pipefail\n\n";
  s << "readonly RUNS=" << o.runs << "\n";
  s << "readonly HOST_RESULTS=" << shell_quote(o.results.string()) << "\n";
  s << "readonly HOST_RESULT_DIR=\"${HOST_RESULTS}\"/" << shell_quote(system.name + "/bert") << "\n";
  s << "readonly SUMMARY=\"${HOST_RESULTS}\"/" << shell_quote(system.name + "/job_summary.txt")
    << "\n";
  s << "mkdir -p \"${HOST_RESULT_DIR}\" || exit 2\n";
  if (o.scheduler == Scheduler::mpirun && t.nodes > 1 && o.launch.hostfile.empty())
    s << ": \"${MLBERT_HOSTFILE:?set MLBERT_HOSTFILE to the hostfile of the " << t.nodes
      << " nodes of the job}\"\n";
  s << "\n";
  s << "note() { printf '%s %s\\n' \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\" \"$*\" | tee -a "
       "\"${SUMMARY}\"; }\n";
  // A signal to the job's process group (Ctrl-C, a job control's TERM, a closed terminal) also
  // reaches the ranks, which end their run with run_stop "aborted". bash runs a trap only once
  // the command it waits for has ended, so the job lets the run finish its log, then stops
  // instead of going on to the next run and the scoring.
  s << "interrupted=0\n"
       "trap 'interrupted=2' INT\ntrap 'interrupted=15' TERM\ntrap 'interrupted=1' HUP\n"
       "stop_if_interrupted() {\n"
       "  [ \"${interrupted}\" -eq 0 ] && return\n"
       "  note \"interrupted by SIG$(kill -l \"${interrupted}\") $1: no further runs, no scoring\"\n"
       "  exit $((128 + interrupted))\n"
       "}\n";
}

}  // namespace

Engine parse_engine(const std::string& name) {
  for (Engine e : {Engine::none, Engine::pyxis, Engine::apptainer, Engine::docker, Engine::podman})
    if (name == to_string(e)) return e;
  throw std::invalid_argument("--engine " + name +
                              ": not one of none, pyxis, apptainer, docker, podman");
}

const char* to_string(Engine e) {
  switch (e) {
    case Engine::none: return "none";
    case Engine::pyxis: return "pyxis";
    case Engine::apptainer: return "apptainer";
    case Engine::docker: return "docker";
    case Engine::podman: return "podman";
  }
  return "none";
}

void check_job_options(const SystemConfig& system, const JobOptions& o) {
  const auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (o.runs < 1) bad("--runs " + std::to_string(o.runs) + ": at least 1 run");
  if (o.data.empty()) bad("--data: missing (the training shards the runs read)");
  if (o.eval_data.empty()) bad("--eval-data: missing (the eval set the runs read)");
  if (o.results.empty()) bad("--results: missing");
  if (in_image(o.engine) && o.image.empty())
    bad(std::string("--image: missing (--engine ") + to_string(o.engine) + " runs an image)");
  if (o.engine == Engine::pyxis && o.scheduler != Scheduler::slurm)
    bad("--engine pyxis: pyxis is a Slurm plugin; use --scheduler slurm");
  if ((o.engine == Engine::docker || o.engine == Engine::podman) && system.topology.nodes > 1)
    bad(std::string("--engine ") + to_string(o.engine) + ": one node only, and system " +
        system.name + " has " + std::to_string(system.topology.nodes) +
        " (use pyxis or apptainer)");
  // #SBATCH lines are read by sbatch, not a shell: a path there cannot be quoted.
  if (o.scheduler == Scheduler::slurm &&
      o.results.string().find_first_of(" \t\n'\"\\$`") != std::string::npos)
    bad("--results " + o.results.string() +
        ": Slurm's #SBATCH --output cannot hold spaces or quotes; choose another folder");
  for (const auto* p : {&o.system_file, &o.data, &o.eval_data, &o.results})
    if (!p->is_absolute()) bad(p->string() + ": the job needs absolute paths");
}

std::string job_script(const SystemConfig& system, const JobOptions& o) {
  check_job_options(system, o);
  const ImagePaths p = image_paths(o);
  const std::string mlbert = in_image(o.engine) ? "mlbert" : o.launch.mlbert;
  std::ostringstream s;
  write_header(s, system, o);
  const auto launcher = launcher_words(system, o);
  const auto engine = engine_prefix(system, o);
  const bool engine_outside = o.engine == Engine::docker || o.engine == Engine::podman;
  // docker/podman start mpirun inside the one container; the others start each rank's image.
  const std::string ranks_prefix = engine_outside
                                       ? quoted_words(engine) + " " + quoted_words(launcher)
                                       : quoted_words(launcher) +
                                             (engine.empty() ? "" : " " + quoted_words(engine));
  auto replace_exe = [&](std::vector<std::string> w) {
    for (auto& word : w)
      if (word == "mlbert_exe") word = mlbert;
    return quoted_words(w);
  };
  s << "# One process in the image (or on the host): the checks and the scoring.\n";
  const auto one = single_prefix(system, o);
  s << "single() { " << (one.empty() ? "" : quoted_words(one) + " ") << shell_quote(mlbert)
    << " \"$@\"; }\n";
  s << "# Every rank: bound to its cores, GPU and NIC, then the command.\n";
  s << "ranks() { " << ranks_prefix << " " << replace_exe(bind_words(p, o)) << " "
    << shell_quote(mlbert) << " \"$@\"; }\n\n";
  s << "note \"preflight: " << system.name << "\"\n";
  s << "if ! ranks preflight --system " << shell_quote(p.system) << " --data "
    << shell_quote(p.data) << " --eval-data " << shell_quote(p.eval) << "; then\n"
    << "  stop_if_interrupted \"in the preflight\"\n"
    << "  note \"preflight FAILED: no run started\"\n  exit 4\nfi\n\n";
  std::vector<std::string> train = {"train", "--system", p.system, "--data", p.data, "--eval-data",
                                    p.eval, "--results", p.results, "--quiet"};
  if (!p.checkpoint.empty()) train.insert(train.end(), {"--init-checkpoint", p.checkpoint});
  train.insert(train.end(), o.launch.train_args.begin(), o.launch.train_args.end());
  const std::string image_log = p.results + "/" + system.name + "/bert/result_";
  s << "aborted=()\nunchecked=()\n";
  s << "for ((i = 0; i < RUNS; i++)); do\n";
  s << "  stop_if_interrupted \"before run ${i}\"\n";
  s << "  seed=$(( $(od -An -N4 -tu4 /dev/urandom) % 1000000000 ))\n";
  s << "  note \"run ${i}: seed ${seed}\"\n";
  s << "  ranks " << quoted_words(train) << " --run-index \"${i}\" --seed \"${seed}\"\n";
  s << "  status=$?\n";
  s << "  stop_if_interrupted \"in run ${i} (exit status ${status})\"\n";
  s << "  if [ \"${status}\" -ne 0 ]; then\n"
    << "    note \"run ${i}: aborted (exit status ${status})\"\n    aborted+=(\"${i}\")\n  fi\n";
  s << "  if [ -f \"${HOST_RESULT_DIR}/result_${i}.txt\" ] && single check --ruleset "
    << shell_quote(system.run.ruleset) << " " << shell_quote(image_log) << "\"${i}.txt\"; then\n"
    << "    note \"run ${i}: mlbert check passed\"\n"
    << "  else\n    note \"run ${i}: mlbert check FAILED (or no log)\"\n    unchecked+=(\"${i}\")\n"
    << "  fi\ndone\n\n";
  const std::string image_dir = p.results + "/" + system.name + "/bert";
  const std::string ruleset = " --ruleset " + shell_quote(system.run.ruleset) + " ";
  s << "single score" << ruleset << shell_quote(image_dir) << " | tee -a \"${SUMMARY}\"\n";
  s << "single rcp" << ruleset << shell_quote(image_dir) << " | tee -a \"${SUMMARY}\"\n";
  s << "single report" << ruleset << shell_quote(image_dir) << " --out "
    << shell_quote(p.results + "/" + system.name + "/report.html") << " | tee -a \"${SUMMARY}\"\n";
  s << "stop_if_interrupted \"in the scoring\"\n";
  s << "note \"summary: ${RUNS} runs; aborted: ${aborted[*]:-none}; check failed: "
       "${unchecked[*]:-none}\"\n";
  s << "[ \"${#aborted[@]}\" -eq 0 ] && [ \"${#unchecked[@]}\" -eq 0 ]\n";
  return s.str();
}

}  // namespace mlbert::harness
