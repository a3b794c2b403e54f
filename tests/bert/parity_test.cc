// The committed PyTorch dumps (tests/parity/data/bert), compared on every run.
#include <catch2/catch.hpp>

#include <sstream>

#include "tests/bert/parity_compare.h"
#include "tests/common/shared_fixtures.h"

TEST_CASE("losses, every gradient and hidden states match PyTorch BertForPreTraining") {
  std::ostringstream log;
  const int status = mlbert::test::compare_torch_dump(
      mlbert::test::source_dir() / "tests/parity/data/bert/torch_small", log);
  INFO(log.str());
  CHECK(status == 0);
}

TEST_CASE("with the fused QKV layout the model matches PyTorch BertForPreTraining as closely") {
  std::ostringstream log;
  const int status = mlbert::test::compare_torch_dump(
      mlbert::test::source_dir() / "tests/parity/data/bert/torch_small", log,
      mlbert::bert::QkvLayout::fused);
  INFO(log.str());
  CHECK(status == 0);
}
