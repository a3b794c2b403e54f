// bert_parity_compare: the command the parity script runs on freshly generated PyTorch dumps.
//   bert_parity_compare torch DUMP_DIR
//   bert_parity_compare encoder WEIGHTS.safetensors CONFIG.json BATCH.json HIDDEN.safetensors
//   bert_parity_compare tf-values PREFIX: every tensor of a TF bundle as mlbert reads it (float32),
//     one JSON object {name: {"dtype": ..., "values": [...]}} on stdout
#include <nlohmann/json.hpp>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "bert/checkpoint/tf_bundle.h"
#include "tests/bert/parity_compare.h"

namespace {
int print_tf_values(const std::string& prefix) {
  const mlbert::bert::TfBundleReader reader(prefix);
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& entry : reader.entries()) {
    if (entry.sliced || entry.dtype == static_cast<int>(mlbert::bert::TfDataType::string)) continue;
    out[entry.name] = {{"dtype", mlbert::bert::tf_dtype_name(entry.dtype)},
                       {"values", reader.read_f32(entry)}};
  }
  std::cout << out.dump() << "\n";
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "torch" && argc == 3) return mlbert::test::compare_torch_dump(argv[2], std::cout);
    if (mode == "tf-values" && argc == 3) return print_tf_values(argv[2]);
    if (mode == "encoder" && argc == 6) {
      return mlbert::test::compare_encoder(argv[2], argv[3], argv[4], argv[5], std::cout);
    }
    std::fprintf(stderr,
                 "usage: bert_parity_compare torch DIR | encoder WEIGHTS CONFIG BATCH HIDDEN | "
                 "tf-values PREFIX\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bert_parity_compare: error: %s\n", e.what());
    return 2;
  }
}
