// The 398 TensorFlow tensor names of BERT-large that closed-division logs must name once each in
// `weights_initialization` records (rulesets 1.1.0 to 2.1.0), in the order of the official rule
// file.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert::mllog {
// embeddings (5), 24 encoder layers x 16, pooler (2), masked-LM head (5), next-sentence head (2).
const std::vector<std::string>& bert_weight_tensor_names();
// The position of `name` in bert_weight_tensor_names(), by a hash lookup (a log of rulesets
// 1.1.0-2.1.0 names all 398, so a scan per record would cost 398 x 398 / 2 comparisons a log).
std::optional<std::size_t> bert_weight_tensor_index(std::string_view name);
}  // namespace mlbert::mllog
