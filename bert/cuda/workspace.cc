// Workspace sizing (see workspace.h).
#include "bert/cuda/workspace.h"

#include <algorithm>
#include <stdexcept>

#include "bert/cuda/attention.h"
#include "bert/cuda/cross_entropy.h"
#include "bert/cuda/elementwise.h"
#include "bert/cuda/launch_config.h"
#include "bert/cuda/layer_norm_layout.h"
#include "bert/cuda/multi_tensor.h"
#include "bert/cuda/optimizer.h"
#include "bert/parameters.h"

namespace mlbert::cuda {

WorkspaceLimits workspace_limits_for(const bert::BertConfig& config,
                                     const bert::ModelLimits& limits) {
  WorkspaceLimits w;
  w.max_tokens = static_cast<int64_t>(limits.max_tokens);
  w.hidden = config.hidden_size;
  w.heads = config.num_attention_heads;
  w.intermediate = config.intermediate_size;
  w.max_loss_rows = static_cast<int64_t>(std::max(limits.max_masked, limits.max_sequences));
  w.max_linear_width =
      std::max({config.padded_vocab_size(), config.intermediate_size, config.hidden_size});
  w.max_linear_rows = w.max_tokens;
  for (const bert::ParameterInfo& info : bert::bert_parameter_layout(config)) {
    w.parameter_elements += info.numel;
    w.parameter_tensors += 1;
  }
  return w;
}

size_t attention_backward_scratch_bytes(int64_t tokens, int64_t heads) {
  const size_t dq =
      static_cast<size_t>(tokens) * static_cast<size_t>(heads) * kAttentionHeadDim * sizeof(float);
  const size_t d = static_cast<size_t>(tokens) * static_cast<size_t>(heads) * sizeof(float);
  return align_up(dq) + align_up(d);
}

std::vector<WorkspaceNeed> workspace_needs(const WorkspaceLimits& w, int sm_count) {
  if (w.max_tokens <= 0 || w.hidden <= 0)
    throw std::invalid_argument("workspace: max_tokens and hidden must be positive");
  std::vector<WorkspaceNeed> needs;
  needs.push_back({"attention_backward", attention_backward_scratch_bytes(w.max_tokens, w.heads)});
  // Row kernels run on up to max_tokens rows (fewer for the MLM head): size for the most blocks.
  packs_per_lane_for_width(w.hidden);  // rejects a width the row kernels cannot hold
  const auto partials = [&](int sums) {
    return align_up(static_cast<size_t>(max_row_blocks(w.max_tokens, sm_count)) *
                    static_cast<size_t>(w.hidden) * static_cast<size_t>(sums) * sizeof(float));
  };
  needs.push_back({"layer_norm_backward", partials(3)});
  const LayerNormStreamLayout stream =
      layer_norm_stream_layout(w.max_tokens, w.hidden, sm_count * kStreamBlocksPerSm);
  needs.push_back({"layer_norm_backward (streaming)",
                   align_up(static_cast<size_t>(stream.blocks) * kStreamSums *
                            static_cast<size_t>(w.hidden) * sizeof(float))});
  needs.push_back({"embedding_backward", partials(2)});
  // Linear backward: the bias gradient from the BGRAD epilogue, and (fallback) column-sum partials.
  const int64_t width = std::max(w.max_linear_width, w.hidden);
  needs.push_back({"linear_backward", align_up(static_cast<size_t>(width) * sizeof(float)) +
                                          align_up(column_sum_workspace_bytes(
                                              std::max<int64_t>(w.max_linear_rows, 1), width))});
  needs.push_back({"cross_entropy",
                   align_up(cross_entropy_workspace_bytes(std::max<int64_t>(w.max_loss_rows, 1)))});
  const size_t chunks = w.parameter_elements / kDefaultChunkElements + w.parameter_tensors + 1;
  needs.push_back({"l2_norm", align_up(l2_norm_workspace_bytes(static_cast<uint32_t>(chunks)))});
  needs.push_back(
      {"lamb_update", align_up(lamb_workspace_bytes(static_cast<uint32_t>(chunks),
                                                    static_cast<uint32_t>(w.parameter_tensors)))});
  return needs;
}

size_t workspace_bytes(const WorkspaceLimits& limits, int sm_count) {
  size_t bytes = 0;
  for (const WorkspaceNeed& need : workspace_needs(limits, sm_count))
    bytes = std::max(bytes, need.bytes);
  return align_up(bytes);
}

}  // namespace mlbert::cuda
