// Launch lines and per-rank bindings derived from a system's topology.
#include "harness/launch/launcher.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace mlbert::harness {

std::map<std::string, std::string> RankBinding::environment() const {
  std::map<std::string, std::string> env;
  env["OMP_NUM_THREADS"] = std::to_string(omp_threads);
  if (device >= 0) env["MLBERT_DEVICE"] = std::to_string(device);
  if (!nic.empty()) {
    env["NCCL_IB_HCA"] = "=" + nic;  // "=" makes NCCL match the name exactly, not as a prefix
    env["UCX_NET_DEVICES"] = ucx_device;
  }
  return env;
}

std::vector<RankBinding> rank_bindings(const SystemConfig& system) {
  const Topology& t = system.topology;
  const int physical_cores = t.cpu.sockets * t.cpu.cores_per_socket;
  const int cores_per_numa = physical_cores / std::max(t.cpu.numa_nodes, 1);

  // Ranks that share a NUMA node split its cores evenly, in local-rank order.
  std::map<int, std::vector<int>> ranks_of_numa;
  for (int r = 0; r < t.ranks_per_node; ++r)
    ranks_of_numa[t.local_ranks.at(r).numa_node].push_back(r);

  std::vector<RankBinding> bindings;
  for (int r = 0; r < t.ranks_per_node; ++r) {
    const LocalRankAffinity& affinity = t.local_ranks.at(r);
    const auto& sharers = ranks_of_numa[affinity.numa_node];
    const int share = static_cast<int>(sharers.size());
    const int position =
        static_cast<int>(std::find(sharers.begin(), sharers.end(), r) - sharers.begin());
    int cores_each = cores_per_numa / share;
    int first = affinity.numa_node * cores_per_numa + position * cores_each;
    if (cores_each == 0) {
      // More ranks on the NUMA node than it has cores (an oversubscribed machine, such as a
      // test box running 4 ranks on 2 cores): each rank takes one of its cores in turn, and
      // ranks that land on the same core share it.
      cores_each = 1;
      first = affinity.numa_node * cores_per_numa + position % std::max(cores_per_numa, 1);
      first = std::min(first, physical_cores - 1);
    }

    RankBinding b;
    b.local_rank = r;
    b.device = t.accelerator.kind == "gpu" ? r : -1;
    b.numa_node = affinity.numa_node;
    // Linux numbers SMT siblings after all physical cores (cpu c and c + physical_cores).
    for (int thread = 0; thread < t.cpu.threads_per_core; ++thread)
      for (int c = first; c < first + cores_each; ++c)
        b.cpus.push_back(c + thread * physical_cores);
    b.omp_threads = cores_each;
    b.nic = affinity.nic;
    if (!b.nic.empty()) {
      const auto nic = std::find_if(t.nics.begin(), t.nics.end(),
                                    [&](const NicSpec& n) { return n.name == b.nic; });
      b.ucx_device = b.nic + ":" + std::to_string(nic == t.nics.end() ? 1 : nic->port);
    }
    bindings.push_back(std::move(b));
  }
  return bindings;
}

std::string cpu_list_string(const std::vector<int>& cpus) {
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(sorted[i]);
    if (j > i) out += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

std::string shell_quote(const std::string& word) {
  if (word.empty()) return "''";
  const bool safe = std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string("_-./:=,@%+").find(c) != std::string::npos;
  });
  // ${VAR} references stay expandable: double quotes keep the expansion, not word splitting.
  if (word.rfind("${", 0) == 0 && word.back() == '}' &&
      word.find_first_of("\"\\`") == std::string::npos)
    return "\"" + word + "\"";
  if (safe) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

std::string system_argument(const SystemConfig& system, const LaunchOptions& options) {
  return options.system_arg.empty() ? system.path.string() : options.system_arg;
}

// The command every rank runs: mlbert bind --system S -- mlbert train ...
std::vector<std::string> rank_command(const SystemConfig& system, const LaunchOptions& options) {
  std::vector<std::string> argv;
  const std::string system_arg = system_argument(system, options);
  for (const std::string& word :
       {options.mlbert, std::string("bind"), std::string("--system"), system_arg})
    argv.push_back(word);
  if (options.bind_best_effort) argv.push_back("--best-effort");
  argv.push_back("--");
  argv.push_back(options.mlbert);
  argv.push_back("train");
  // The training command names the same system unless the user already did.
  const bool has_system = std::find(options.train_args.begin(), options.train_args.end(),
                                    "--system") != options.train_args.end();
  if (!has_system) {
    argv.push_back("--system");
    argv.push_back(system_arg);
  }
  argv.insert(argv.end(), options.train_args.begin(), options.train_args.end());
  return argv;
}

int max_omp_threads(const SystemConfig& system) {
  int threads = 1;
  for (const auto& b : rank_bindings(system)) threads = std::max(threads, b.omp_threads);
  return threads;
}

}  // namespace

std::vector<std::string> mpirun_argv(const SystemConfig& system, const LaunchOptions& options) {
  const Topology& t = system.topology;
  std::vector<std::string> argv = {"mpirun"};
  if (options.allow_run_as_root) argv.push_back("--allow-run-as-root");
  if (options.oversubscribe) argv.push_back("--oversubscribe");
  argv.insert(argv.end(), {"-np", std::to_string(t.world_size())});
  if (t.nodes > 1) {
    argv.push_back("--hostfile");
    argv.push_back(options.hostfile.empty() ? "${MLBERT_HOSTFILE}" : options.hostfile);
  }
  // Ranks fill a node before the next (rank = node * ranks_per_node + local rank); binding is
  // done per rank by `mlbert bind`, so mpirun must not bind.
  argv.insert(argv.end(), {"--map-by", "ppr:" + std::to_string(t.ranks_per_node) + ":node",
                           "--bind-to", "none"});
  // Forwarded as set here; mpirun warns about an unset one on every launch, so those are left out.
  for (const char* var : {"PATH", "LD_LIBRARY_PATH"}) {
    if (std::getenv(var) == nullptr) continue;
    argv.push_back("-x");
    argv.push_back(var);
  }
  argv.push_back("-x");
  argv.push_back("OMP_NUM_THREADS=" + std::to_string(max_omp_threads(system)));
  const auto command = rank_command(system, options);
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::string mpirun_command(const SystemConfig& system, const LaunchOptions& options) {
  const auto argv = mpirun_argv(system, options);
  // One line per concern (hosts, placement, environment, bind, train) keeps a
  // 1,024-rank command readable.
  std::ostringstream out;
  bool first_export = true;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    const bool is_command_start = word == options.mlbert && i > 0 && argv[i - 1] != "--system";
    const bool new_line = i > 0 && (word == "--hostfile" || word == "--map-by" ||
                                    (word == "-x" && first_export) || is_command_start);
    if (word == "-x") first_export = false;
    if (i > 0) out << (new_line ? " \\\n    " : " ");
    out << shell_quote(word);
  }
  out << "\n";
  return out.str();
}

std::optional<int> local_rank_from_environment() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID",
                          "PMIX_LOCAL_RANK", "PALS_LOCAL_RANKID", "MV2_COMM_WORLD_LOCAL_RANK"}) {
    if (const char* value = std::getenv(var); value && *value) {
      char* end = nullptr;
      const long rank = std::strtol(value, &end, 10);
      if (end && *end == '\0' && rank >= 0 && rank < 1 << 20) return static_cast<int>(rank);
    }
  }
  return std::nullopt;
}

std::string mlbert_executable() {
  if (const char* front = std::getenv("MLBERT_EXE"); front && *front) return front;
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("mlbert") : path.string();
}

std::filesystem::path default_systems_dir() {
  std::error_code ec;
  if (std::filesystem::is_directory("systems", ec)) return "systems";
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = self.parent_path().parent_path() / "systems";
    if (std::filesystem::is_directory(installed, ec)) return installed;
  }
  return "systems";
}

}  // namespace mlbert::harness
