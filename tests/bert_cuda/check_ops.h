// Device check entry points (bert_cuda_check): per-op comparisons and the whole-model comparison
// of CudaOps against the CPU reference backend.
#pragma once

#include <random>
#include <vector>

#include "bert/cpu/cpu_ops.h"
#include "bert/cuda/cuda_ops.h"
#include "tests/bert_cuda/check_util.h"

namespace mlbert::cuda::check {

// Every op of the contract, on fresh random inputs drawn from `rng`; one row per output tensor.
std::vector<CheckRow> check_ops(bert::CpuOps& cpu, CudaOps& gpu, std::mt19937_64& rng, bool quick);

// BERT-large forward + backward on a small variable-length batch with dropout, CPU (f32, on the
// GPU's rounded weights) against CUDA in `dtype`: losses, accuracy counts, per-tensor gradient
// norms, the whole gradient's direction, and no device allocation in a second step.
std::vector<CheckRow> check_model(bert::DType dtype, std::mt19937_64& rng, bool quick);

}  // namespace mlbert::cuda::check
