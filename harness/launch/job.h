// The one job writer of `mlbert launch` and `mlbert reproduce`: a bash script that checks the
// machine before anything trains, then runs N trainings with fresh seeds, checks each log, and
// scores the folder at the end.
//
// Design choice: every command that runs in the image names the image's paths, and the host's
// folders are mounted on fixed ones (/mlbert-system, /data, /eval, /checkpoint, /results), so the
// logs land on the host in <results>/<system>/bert; a preflight failure exits before the first
// run, and a run that fails or is killed is logged as aborted and the loop goes on, so one bad
// run never costs the other nine.
#pragma once

#include <filesystem>
#include <string>

#include "harness/config/system_config.h"
#include "harness/launch/launcher.h"

namespace mlbert::harness {

// Where the ranks run: on the host, or in an image started by Slurm's pyxis/enroot, Apptainer,
// Docker or Podman (the last two on one node, mpirun inside the container).
enum class Engine { none, pyxis, apptainer, docker, podman };
Engine parse_engine(const std::string& name);  // throws naming the accepted names
const char* to_string(Engine);

struct JobOptions {
  Scheduler scheduler = Scheduler::mpirun;
  Engine engine = Engine::none;
  std::string image;  // required unless engine none
  int runs = 10;
  // Host paths (absolute in the script): the system file, training shards, eval set, optional
  // initial checkpoint, and the result root (logs go to <results>/<system>/bert/result_<i>.txt).
  std::filesystem::path system_file, data, eval_data, checkpoint, results;
  // Scheduler details and extra `mlbert train` arguments (time, partition, hostfile, ...).
  LaunchOptions launch;
};

// Throws std::invalid_argument naming the option when the combination cannot be written (no
// image for an engine, docker/podman on several nodes, a path Slurm's #SBATCH lines cannot hold).
void check_job_options(const SystemConfig& system, const JobOptions& options);

// The whole script (check_job_options first).
std::string job_script(const SystemConfig& system, const JobOptions& options);

}  // namespace mlbert::harness
