// `mlbert train`: one rank of a data-parallel MLPerf BERT run, from the system file to run_stop.
//
// Design choice: everything that can be wrong with the inputs (system file, world size, data,
// eval set, checkpoint, output file) is checked on every rank BEFORE `init_start` and agreed on
// with one collective, so a bad run fails fast on all ranks with one message and never leaves a
// half-written result log; after `run_start`, any failure (an MPI error, a signal from the
// launcher, the watchdog) ends with `run_stop` status "aborted" in rank 0's log and a non-zero
// exit on every rank.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "harness/comm/mpi_communicator.h"
#include "harness/train/progress.h"

namespace mlbert::harness {

struct TrainOptions {
  std::string system;  // name (looked up in systems_dir) or path
  std::filesystem::path systems_dir = "systems";
  std::filesystem::path data;             // training shards (a directory or one file)
  std::filesystem::path eval_data;        // the eval set (a file or a directory of shards)
  std::filesystem::path init_checkpoint;  // optional; random init from the seed otherwise
  std::filesystem::path vocab;            // optional; default <data>/vocab.txt when needed
  std::optional<std::int64_t> seed;       // default: the system's run.seed, else random
  std::filesystem::path results_dir = "results";
  std::optional<int> run_index;           // result_<N>.txt; default: the first free N
  std::optional<std::string> backend;     // "cpu" or "cuda": overrides run.backend
  std::optional<std::int64_t> max_steps;  // overrides run.max_steps
  bool log_stdout = true;                 // rank 0 also prints the MLLOG lines
  MpiProgress progress = MpiProgress::thread;
  ProgressDisplay progress_display = ProgressDisplay::automatic;  // rank 0's live progress, stderr
  // Tests: rank 0 writes the averaged gradient and the weights after each of the first
  // dump_steps steps to <dump_dir>/step_<k>.grad / .master (raw little-endian f32).
  std::filesystem::path dump_dir;
  int dump_steps = 0;
};

// Exit statuses of `mlbert train` besides 0 (target reached).
inline constexpr int kExitNotConverged = 3;  // max steps or samples without reaching the target
inline constexpr int kExitAborted = 4;       // a failure after init_start (logged as aborted)
inline constexpr int kExitWatchdog = 5;      // no progress within the watchdog limit

// With the CUDA backend (the system's run.backend or --backend), makes this rank's GPU current
// before MPI starts: a CUDA-aware MPI sets up CUDA in MPI_Init on the current device, which is
// device 0 for every rank of a node otherwise (8 contexts and their memory on one GPU). Does
// nothing without CUDA, without a GPU, or when the system cannot be read (run_training then says
// why, with the rank).
void select_gpu_before_mpi(const TrainOptions& options);

// Runs one rank. Returns the exit status; throws (a clear message) for problems found before
// init_start. Ranks other than 0 return 2 without a message in that case (rank 0 prints it).
int run_training(const TrainOptions& options, MpiRuntime& runtime);

}  // namespace mlbert::harness
