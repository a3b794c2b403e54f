// `mlbert launch` and `mlbert bind`: turning a system's topology into processes (the job script
// around them is job.h's).
//
// Design choice: the scheduler (mpirun or Slurm's srun) starts one identical command per GPU, and
// the per-rank differences (CPU cores, NUMA memory, NIC) are applied by `mlbert bind`, which each
// rank runs first: it reads its local rank from the launcher's environment, binds itself, sets
// NCCL_IB_HCA / UCX_NET_DEVICES, and exec()s the training command. So one line serves 1 or 1,024
// GPUs, and the binding table is a pure function of the system file that tests can check.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/config/system_config.h"

namespace mlbert::harness {

enum class Scheduler { mpirun, slurm };

// What one local rank (= one GPU of a node) is bound to.
struct RankBinding {
  int local_rank = 0;
  int device = 0;  // CUDA device ordinal (= local rank); -1 on CPU systems
  int numa_node = 0;
  std::vector<int> cpus;   // logical CPUs: physical cores, then their SMT siblings
  std::string nic;         // verbs device for NCCL_IB_HCA, empty if none
  std::string ucx_device;  // "mlx5_0:1" for UCX_NET_DEVICES, empty if none
  int omp_threads = 1;     // physical cores of this rank
  // Environment the rank runs with (NCCL_IB_HCA, UCX_NET_DEVICES, OMP_NUM_THREADS, MLBERT_DEVICE).
  std::map<std::string, std::string> environment() const;
};

struct LaunchOptions {
  std::string mlbert = "mlbert";        // the binary as the compute nodes see it
  std::string system_arg;               // how ranks name the system file (path on the nodes)
  std::string hostfile;                 // mpirun with several nodes; default "${MLBERT_HOSTFILE}"
  std::string time_limit = "01:00:00";  // Slurm
  std::string partition;                // Slurm, optional
  std::string account;                  // Slurm, optional
  bool allow_run_as_root = false;             // Open MPI refuses root without it
  bool oversubscribe = false;                 // more ranks than cores (CI, the demo)
  bool bind_best_effort = false;              // `mlbert bind --best-effort` (small machines)
  std::vector<std::string> train_args;        // everything after `--`
};

// The binding of every local rank of one node.
std::vector<RankBinding> rank_bindings(const SystemConfig& system);

// Compresses {0,1,2,3,8} to "0-3,8".
std::string cpu_list_string(const std::vector<int>& cpus);

// The argument vector of the mpirun command (argv[0] = "mpirun").
std::vector<std::string> mpirun_argv(const SystemConfig& system, const LaunchOptions& options);

// mpirun_argv quoted for a POSIX shell, one option group per line with `\` continuations.
std::string mpirun_command(const SystemConfig& system, const LaunchOptions& options);

// The local rank from the launcher's environment (Open MPI, Slurm, MPICH/Hydra, PMIx), or nullopt.
std::optional<int> local_rank_from_environment();

// Quotes one word for a POSIX shell (only when needed).
std::string shell_quote(const std::string& word);

// The mlbert binary for launch lines and child ranks: the front end that exec'd this process
// (MLBERT_EXE, set by `mlbert` when it hands a subcommand to mlbert-core), else this executable.
std::string mlbert_executable();

// Where system names are looked up when no --systems-dir is given: ./systems when it exists,
// else <dir of this executable>/../systems (an installed tree, e.g. the image's /opt/mlbert),
// else ./systems (so the error names the usual place).
std::filesystem::path default_systems_dir();

}  // namespace mlbert::harness
