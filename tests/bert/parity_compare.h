// Comparisons of mlbert's model against dumps made by PyTorch/transformers (tests/parity).
#pragma once
#include <filesystem>
#include <ostream>

#include "bert/ops.h"

namespace mlbert::test {

// Losses to 1e-5 relative, every gradient to 1e-4 relative norm error, final hidden states to
// 1e-4 relative norm error, with the model's Q, K and V laid out as `qkv` says. Returns 0 when
// everything matches, 1 otherwise (details on `log`).
int compare_torch_dump(const std::filesystem::path& dir, std::ostream& log,
                       bert::QkvLayout qkv = bert::QkvLayout::separate);

// Encoder-only weights (HF BertModel safetensors + config.json): final hidden states of the batch
// against the reference, max abs error <= 1e-4 * max(1, max |reference|).
int compare_encoder(const std::filesystem::path& weights, const std::filesystem::path& config_json,
                    const std::filesystem::path& batch_json,
                    const std::filesystem::path& hidden_safetensors, std::ostream& log);

}  // namespace mlbert::test
