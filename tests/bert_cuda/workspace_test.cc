// Workspace sizing of the CUDA backend: the maximum need of any op at the limits, so one
// allocation up front serves every step.
#include <catch2/catch.hpp>

#include "bert/config.h"
#include "bert/cuda/workspace.h"
#include "bert/model.h"

namespace cuda = mlbert::cuda;

TEST_CASE(
    "BERT-large at 16 x 512 tokens: the attention backward's dQ accumulator is the largest need") {
  const auto config = mlbert::bert::BertConfig::preset("bert-large");
  mlbert::bert::ModelLimits limits;
  limits.max_tokens = 16 * 512;
  limits.max_sequences = 16;
  limits.max_masked = 16 * 76;
  const cuda::WorkspaceLimits w = cuda::workspace_limits_for(config, limits);
  CHECK(w.parameter_tensors == 398);
  CHECK(w.parameter_elements == 336232258);
  CHECK(w.max_linear_width == 30528);
  const size_t attention = cuda::attention_backward_scratch_bytes(8192, 16);
  CHECK(attention == size_t{8192} * 16 * 64 * 4 + size_t{8192} * 16 * 4);
  const size_t total = cuda::workspace_bytes(w, 132);
  CHECK(total == attention);
  for (const auto& need : cuda::workspace_needs(w, 132)) {
    INFO(need.op);
    CHECK(need.bytes <= total);
    CHECK(need.bytes % cuda::kWorkspaceAlignment == 0);
  }
}

TEST_CASE("tiny config: the workspace grows with the token limit and is never empty") {
  const auto config = mlbert::bert::BertConfig::preset("tiny");
  mlbert::bert::ModelLimits limits;
  limits.max_tokens = 256;
  limits.max_sequences = 4;
  limits.max_masked = 40;
  const size_t small = cuda::workspace_bytes(cuda::workspace_limits_for(config, limits), 8);
  limits.max_tokens = 4096;
  const size_t large = cuda::workspace_bytes(cuda::workspace_limits_for(config, limits), 8);
  CHECK(small > 0);
  CHECK(large > small);
  limits.max_tokens = 0;
  CHECK_THROWS_AS(cuda::workspace_bytes(cuda::workspace_limits_for(config, limits), 8),
                  std::invalid_argument);
}
