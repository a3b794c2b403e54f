// CudaOps construction on any machine: a clear error without a device (the CI case), a working
// backend with one, and the precision names the harness passes through.
#include <catch2/catch.hpp>

#include "bert/config.h"
#include "bert/cuda/cuda_ops.h"
#include "bert/cuda/types.h"
#include "bert/model.h"

namespace cuda = mlbert::cuda;

TEST_CASE("make_cuda_ops: precision names are fp16/bf16 and anything else is rejected by name") {
  CHECK(cuda::parse_compute_type("bf16") == cuda::ComputeType::bf16);
  CHECK(cuda::parse_compute_type("fp16") == cuda::ComputeType::f16);
  CHECK(cuda::parse_compute_type("float16") == cuda::ComputeType::f16);
  const auto config = mlbert::bert::BertConfig::preset("tiny");
  mlbert::bert::ModelLimits limits;
  limits.max_tokens = 64;
  limits.max_sequences = 2;
  limits.max_masked = 8;
  CHECK_THROWS_WITH(cuda::make_cuda_ops(config, limits, "fp8"), Catch::Contains("'fp8'"));
}

TEST_CASE("CudaOps: without a device construction fails with the device count, with one it runs") {
  const auto config = mlbert::bert::BertConfig::preset("tiny");
  mlbert::bert::ModelLimits limits;
  limits.max_tokens = 64;
  limits.max_sequences = 2;
  limits.max_masked = 8;
  if (cuda::cuda_device_count() == 0) {
    CHECK_THROWS_WITH(cuda::make_cuda_ops(config, limits, "bf16"),
                      Catch::Contains("no CUDA device 0 (found 0)"));
  } else {
    auto ops = cuda::make_cuda_ops(config, limits, "bf16");
    CHECK(ops->compute_dtype() == mlbert::bert::DType::bf16);
    CHECK(ops->name().find("bf16") != std::string::npos);
    CHECK(ops->workspace_bytes() > 0);
  }
}
