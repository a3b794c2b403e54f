// The parameter names against the official MLPerf logging rules (reads ../shared).
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>

#include "bert/config.h"
#include "bert/parameters.h"
#include "tests/common/shared_fixtures.h"

using namespace mlbert::bert;

TEST_CASE("the 398 TF names equal the weights_initialization list of the MLPerf rules") {
  const auto rules =
      mlbert::test::shared_dir() / "reference/mlperf_logging_rules/training_2.1.0/closed_bert.yaml";
  std::ifstream in(rules);
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string> expected;
  const std::regex quoted("\"((bert|cls)/[^\"]+)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), quoted);
       it != std::sregex_iterator(); ++it)
    expected.insert((*it)[1]);
  std::set<std::string> ours;
  for (const auto& info : bert_parameter_layout(BertConfig::preset("bert-large")))
    ours.insert(info.name);
  CHECK(expected.size() == 398);
  CHECK(ours == expected);
}
