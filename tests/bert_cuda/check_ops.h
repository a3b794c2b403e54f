// Device check entry points (bert_cuda_check): per-op comparisons and the whole-model comparison
// of CudaOps against the CPU reference backend, as named cases so the driver can print every row
// as it is produced, survive a failing case and rerun one case alone.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bert/cpu/cpu_ops.h"
#include "bert/cuda/cuda_ops.h"
#include "tests/bert_cuda/check_util.h"

namespace mlbert::cuda::check {

// One op's comparison: fresh random inputs drawn from case_seed(seed, name), one row per output.
struct CheckCase {
  std::string name;
  std::function<std::vector<CheckRow>(bert::CpuOps& cpu, CudaOps& gpu, uint64_t seed)> run;
};

// The inputs of a case depend on the run's seed and the case's name only (not on which other
// cases ran before it).
uint64_t case_seed(uint64_t seed, const std::string& name);

// Every op of the contract, each at the shapes of BERT-large (and its edge cases).
std::vector<CheckCase> op_cases();

// BERT-large forward + backward on a small variable-length batch with dropout, CPU (f32, on the
// GPU's rounded weights) against CUDA in `dtype`: losses, accuracy counts, per-tensor gradient
// norms, the whole gradient's direction, no device allocation in a second step, and evaluation
// (forward without dropout: summed losses and hit counts) on a smaller batch.
std::vector<CheckRow> check_model(bert::DType dtype, uint64_t seed);

}  // namespace mlbert::cuda::check
