// The precision names the harness passes through to CudaOps (host logic, any machine). Building the
// backend with and without a device is cuda_ops_device_test's, which reports the case this machine
// cannot run as skipped.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "bert/config.h"
#include "bert/cuda/cuda_ops.h"
#include "bert/cuda/dropout_bits.h"
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

TEST_CASE("attention dropout bits: the buffer's size per mode, refused past 4 GiB when sized") {
  using cuda::AttentionDropoutBits;
  // 16 sequences of 512 tokens, 16 heads: the keep layout's bytes in both keeping modes.
  const uint64_t layout = cuda::attention_keep_bytes(16 * 512, 16, 16, 512);
  CHECK(layout > 0);
  CHECK(cuda::attention_saved_bytes(AttentionDropoutBits::drawn_twice, 16 * 512, 16, 16, 512) == 0);
  CHECK(cuda::attention_saved_bytes(AttentionDropoutBits::forward_keeps, 16 * 512, 16, 16, 512) ==
        layout);
  CHECK(cuda::attention_saved_bytes(AttentionDropoutBits::kernel_keeps, 16 * 512, 16, 16, 512) ==
        layout);
  CHECK(cuda::attention_saved_bytes(AttentionDropoutBits::kernel_keeps, 0, 16, 16, 512) == 0);
  // 8,192 sequences of 512 tokens need more than the kernels' 32-bit byte offsets reach.
  REQUIRE(cuda::attention_keep_bytes(8192 * 512, 8192, 16, 512) > UINT32_MAX);
  CHECK_THROWS_WITH(
      cuda::attention_saved_bytes(AttentionDropoutBits::kernel_keeps, 8192 * 512, 8192, 16, 512),
      Catch::Contains("4194304 tokens") && Catch::Contains("4 GiB") &&
          Catch::Contains("drawn-twice"));
  CHECK(cuda::attention_saved_bytes(AttentionDropoutBits::drawn_twice, 8192 * 512, 8192, 16, 512) ==
        0);
}

TEST_CASE("attention kernels: each choice's name reads back, the default is the 64-row kernels") {
  for (const auto kernels : {cuda::AttentionKernels::classic, cuda::AttentionKernels::fa2,
                             cuda::AttentionKernels::automatic})
    CHECK(cuda::parse_attention_kernels(cuda::attention_kernels_name(kernels)) == kernels);
  CHECK(std::string(cuda::attention_kernels_name(cuda::CudaOpsOptions{}.attention_kernels)) ==
        "classic");
  CHECK_FALSE(cuda::CudaOpsOptions{}.attention_deterministic_dq);
  CHECK_THROWS_WITH(cuda::parse_attention_kernels("fa3"),
                    Catch::Contains("'fa3'") && Catch::Contains("classic, fa2 or auto"));
}

TEST_CASE(
    "attention kernels: auto keeps the 64-row kernels for sequences that fit one 64-row tile") {
  using cuda::AttentionKernels;
  CHECK_FALSE(cuda::attention_uses_fa2(AttentionKernels::automatic, 64));
  CHECK(cuda::attention_uses_fa2(AttentionKernels::automatic, 65));
  CHECK(cuda::attention_uses_fa2(AttentionKernels::automatic, 512));
  CHECK(cuda::attention_uses_fa2(AttentionKernels::fa2, 1));
  CHECK_FALSE(cuda::attention_uses_fa2(AttentionKernels::classic, 512));
}

TEST_CASE(
    "attention deterministic dQ: one accumulator plane per 128-key block, refused on the "
    "64-row kernels") {
  using cuda::AttentionKernels;
  const size_t plane = size_t{8192} * 16 * 64;
  CHECK(cuda::attention_dq_accum_floats(AttentionKernels::classic, false, 8192, 16, 512) == plane);
  CHECK(cuda::attention_dq_accum_floats(AttentionKernels::fa2, false, 8192, 16, 512) == plane);
  CHECK(cuda::attention_dq_accum_floats(AttentionKernels::fa2, true, 8192, 16, 512) == 4 * plane);
  CHECK(cuda::attention_dq_accum_floats(AttentionKernels::fa2, true, 8192, 16, 129) == 2 * plane);
  CHECK_THROWS_WITH(cuda::attention_dq_accum_floats(AttentionKernels::automatic, true, 100, 16, 40),
                    Catch::Contains("deterministic dQ") && Catch::Contains("max_seqlen 40"));
  // CudaOps refuses the option before it looks for a device.
  cuda::CudaOpsOptions options;
  options.attention_deterministic_dq = true;
  options.attention_kernels = AttentionKernels::automatic;
  CHECK_THROWS_AS(cuda::CudaOps(options), std::invalid_argument);
  CHECK_THROWS_WITH(cuda::CudaOps(options), Catch::Contains("attention_kernels fa2 (got auto)"));
}
