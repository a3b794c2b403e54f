// `mlbert preflight`: what a job checks on every node before its first run, so a cluster without
// its GPUs, NICs or data fails in seconds with the reason instead of at the first step.
//
// Design choice: it runs under the job's own launcher and binding, as the ranks will; one rank
// per node checks the node (accelerators, NICs, data with its length index and every shard's
// content hash), every rank joins the allreduce that measures the fabric (through the gradients'
// communicator: NCCL on each rank's GPU for a CUDA system, MPI on host memory otherwise), and all
// ranks exit with the same status (4 when anything failed), which the job script turns into "no
// run started".
#pragma once

#include <filesystem>
#include <string>

namespace mlbert::harness {

struct JobPreflightOptions {
  std::string system;
  std::filesystem::path systems_dir;
  std::filesystem::path data, eval_data;
};

// Prints one line per check ("preflight: <check>: PASS|FAIL ..."); returns 0 or 4.
int run_job_preflight(const JobPreflightOptions& options);

}  // namespace mlbert::harness
