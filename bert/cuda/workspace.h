// The CUDA backend's scratch workspace: one device allocation, sized up front from the largest
// step (tokens, hidden, heads, masked positions, parameter chunks), that every op borrows for its
// temporaries (attention dQ accumulator, column-reduction partials, loss statistics...). Ops run in
// order on one stream, so they share the same bytes; the size is the maximum need of any op, not
// the sum. Pure host arithmetic, unit-tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bert/config.h"
#include "bert/model.h"

namespace mlbert::cuda {

constexpr size_t kWorkspaceAlignment = 256;
constexpr size_t align_up(size_t bytes, size_t alignment = kWorkspaceAlignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

struct WorkspaceLimits {
  int64_t max_tokens = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t intermediate = 0;
  int64_t max_loss_rows = 0;     // cross-entropy rows: masked positions (and sequences for NSP)
  int64_t max_linear_width = 0;  // widest linear output (the padded vocabulary for the decoder)
  int64_t max_linear_rows = 0;   // most rows of any linear layer (tokens)
  size_t parameter_elements = 0;
  size_t parameter_tensors = 0;
};

WorkspaceLimits workspace_limits_for(const bert::BertConfig& config,
                                     const bert::ModelLimits& limits);

struct WorkspaceNeed {
  std::string op;
  size_t bytes = 0;
};

// Bytes each op family needs at the limits; `sm_count` sizes the row-kernel partials.
std::vector<WorkspaceNeed> workspace_needs(const WorkspaceLimits& limits, int sm_count);
// The workspace to reserve: the largest need, aligned.
size_t workspace_bytes(const WorkspaceLimits& limits, int sm_count);

// Attention backward scratch: the fp32 dQ accumulator [tokens, heads, 64] then rowsum(dO*O)
// [heads, tokens], each 256-byte aligned.
size_t attention_backward_scratch_bytes(int64_t tokens, int64_t heads);

}  // namespace mlbert::cuda
