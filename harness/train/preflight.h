// The preflight of one `mlbert train` rank: everything about its inputs checked before
// init_start, and the one collective that makes all ranks fail together (trainer.h says why).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "bert/config.h"
#include "data_prep/hdf5_io.h"
#include "harness/comm/communicator.h"
#include "harness/config/system_config.h"
#include "harness/data/training_data.h"
#include "harness/train/result_log.h"
#include "harness/train/trainer.h"

namespace mlbert::harness {

// What the preflight found and opened: all a rank trains with that does not need the backend.
struct Prepared {
  SystemConfig system;
  bert::BertConfig config;
  std::string backend;
  TrainingDataset data;
  EvalShare eval;
  data::ReadOptions read_options;
  std::filesystem::path init_checkpoint;  // the checkpoint file, when --init-checkpoint is given
  std::optional<ResultLogFile> log_file;  // rank 0: claimed, written from init_start on
  std::int64_t max_steps = 0;
};

// Checks and opens this rank's inputs; throws a clear message for the first problem.
Prepared preflight(const TrainOptions& options, int rank, int world);

// Every rank reports its preflight problem (`error`, empty when none); all fail together with the
// first one's message.
class PreflightFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
void agree_on_preflight(Communicator& world, const std::string& error);

}  // namespace mlbert::harness
