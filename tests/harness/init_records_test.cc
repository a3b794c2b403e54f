// The init-phase records the trainer logs by ruleset (rulesets.h, bert_init_records) are the ones
// the official BERT compliance configs of that ruleset require.
#include <catch2/catch.hpp>

#include <algorithm>

#include "mlperf_logging/rules/rules.h"
#include "mlperf_logging/rules/rulesets.h"

namespace {

namespace rules = mlbert::mllog::rules;

const rules::Config& config_named(const std::vector<rules::Config>& configs,
                                  const std::string& suffix) {
  const auto it = std::find_if(configs.begin(), configs.end(), [&](const rules::Config& c) {
    return c.name.size() >= suffix.size() &&
           c.name.compare(c.name.size() - suffix.size(), suffix.size(), suffix) == 0;
  });
  REQUIRE(it != configs.end());
  return *it;
}

bool requires_key(const rules::Config& config, std::string_view key) {
  return std::any_of(config.keys.begin(), config.keys.end(), [&](const rules::KeyRule& k) {
    return k.name == key && k.req != "OPTIONAL" && !k.req.empty();
  });
}

}  // namespace

TEST_CASE("the ruleset-dependent init records are those the official BERT configs require",
          "[rulesets]") {
  for (const std::string& ruleset : mlbert::mllog::bert_rulesets()) {
    INFO("ruleset " << ruleset);
    const mlbert::mllog::BertInitRecords records = mlbert::mllog::bert_init_records(ruleset);
    const auto& configs = rules::bert_configs(ruleset);
    const rules::Config& common = config_named(configs, "/common.yaml");
    const rules::Config& closed_bert = config_named(configs, "/closed_bert.yaml");
    CHECK(requires_key(common, "submission_org") == records.submission_org_and_platform);
    CHECK(requires_key(common, "submission_platform") == records.submission_org_and_platform);
    CHECK(requires_key(common, "submission_status") == records.submission_status);
    CHECK(requires_key(closed_bert, records.lamb_epsilon_key));
    CHECK_FALSE(requires_key(closed_bert, records.lamb_epsilon_key == "opt_epsilon"
                                              ? "opt_lamb_epsilon"
                                              : "opt_epsilon"));
    CHECK(requires_key(closed_bert, "weights_initialization") == records.weights_initialization);
  }
  CHECK_THROWS_WITH(mlbert::mllog::bert_init_records("5.1.0"),
                    Catch::Contains("bert is not a benchmark of training ruleset 5.1.0"));
}
