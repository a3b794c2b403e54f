// libFuzzer target: arbitrary bytes as a systems/<name>.json through load_system (JSON parsing,
// every field check, the official system-description check, the cross-field rules), then what
// `mlbert launch` and `mlbert bind` derive from an accepted system. A file gives a
// SystemConfigError or a system the launcher can use: the batch arithmetic holds, the eval
// interval is positive, and every local rank is bound to at least one existing CPU.
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "harness/launch/job.h"
#include "harness/launch/launcher.h"
#include "harness/config/system_config.h"
#include "tests/fuzz/fuzz_scratch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlbert::harness;
  const auto path = mlbert::fuzz::scratch_dir() / "fuzz_system.json";
  mlbert::fuzz::write_file(path, data, size);
  std::optional<SystemConfig> system;
  try {
    system = load_system(path.string());
  } catch (const SystemConfigError&) {
    return 0;
  }
  const Topology& t = system->topology;
  const RunSpec& run = system->run;
  if (t.world_size() < 1 || static_cast<int>(t.local_ranks.size()) != t.ranks_per_node)
    std::abort();
  if (run.global_batch_size !=
      static_cast<int64_t>(run.per_rank_batch) * t.world_size() * run.gradient_accumulation)
    std::abort();
  if (eval_interval(run) <= 0) std::abort();
  const int64_t cpus =
      static_cast<int64_t>(t.cpu.sockets) * t.cpu.cores_per_socket * t.cpu.threads_per_core;
  const auto bindings = rank_bindings(*system);
  if (static_cast<int>(bindings.size()) != t.ranks_per_node) std::abort();
  for (const RankBinding& b : bindings) {
    if (b.cpus.empty() || b.omp_threads < 1) std::abort();
    for (int cpu : b.cpus)
      if (cpu < 0 || cpu >= cpus) std::abort();
  }
  LaunchOptions options;
  options.train_args = {"--data", "/data/train"};
  (void)mpirun_command(*system, options);
  JobOptions job;
  job.scheduler = Scheduler::slurm;
  job.system_file = "/systems/fuzz.json";
  job.data = "/data/train";
  job.eval_data = "/data/eval.hdf5";
  job.results = "/results";
  job.launch = options;
  (void)job_script(*system, job);
  return 0;
}
