// The 398 TensorFlow tensor names of BERT-large that closed-division logs must name once each in
// `weights_initialization` records (rulesets 1.1.0 to 2.1.0), in the order of the official rule
// file.
#pragma once
#include <string>
#include <vector>

namespace mlbert::mllog {
// embeddings (5), 24 encoder layers x 16, pooler (2), masked-LM head (5), next-sentence head (2).
const std::vector<std::string>& bert_weight_tensor_names();
}  // namespace mlbert::mllog
