// bert_parity_compare: the command the parity script runs on freshly generated PyTorch dumps.
//   bert_parity_compare torch DUMP_DIR
//   bert_parity_compare encoder WEIGHTS.safetensors CONFIG.json BATCH.json HIDDEN.safetensors
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "tests/bert/parity_compare.h"

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "torch" && argc == 3) return mlbert::test::compare_torch_dump(argv[2], std::cout);
    if (mode == "encoder" && argc == 6) {
      return mlbert::test::compare_encoder(argv[2], argv[3], argv[4], argv[5], std::cout);
    }
    std::fprintf(stderr,
                 "usage: bert_parity_compare torch DIR | encoder WEIGHTS CONFIG BATCH HIDDEN\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bert_parity_compare: error: %s\n", e.what());
    return 2;
  }
}
