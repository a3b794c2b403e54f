// The precision names the harness passes through to CudaOps (host logic, any machine). Building the
// backend with and without a device is cuda_ops_device_test's, which reports the case this machine
// cannot run as skipped.
#include <catch2/catch.hpp>

#include <string>

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

TEST_CASE("attention dropout bits: each mode's name reads back, anything else is named") {
  for (const auto mode :
       {cuda::AttentionDropoutBits::drawn_twice, cuda::AttentionDropoutBits::forward_keeps,
        cuda::AttentionDropoutBits::kernel_keeps})
    CHECK(cuda::parse_attention_dropout_bits(cuda::attention_dropout_bits_name(mode)) == mode);
  CHECK(std::string(cuda::attention_dropout_bits_name(
            cuda::CudaOpsOptions{}.attention_dropout_bits)) == "kernel-keeps");
  CHECK_THROWS_WITH(cuda::parse_attention_dropout_bits("both"),
                    Catch::Contains("'both'") && Catch::Contains("kernel-keeps"));
}
