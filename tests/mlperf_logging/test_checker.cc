// Each rule kind of the official checker, on the compliant example log and targeted edits of it:
// REQ counts, CHECK, POST/enqueue, ATLEAST_ONE_CHECK, END, overwritable messages, warnings.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "mlperf_logging/rules/bert_tensors.h"
#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/example_log.h"
#include "mlperf_logging/rules/rules.h"
#include "mlperf_logging/rules/rulesets.h"
#include "tests/mlperf_logging/log_edit.h"

namespace mllog = mlbert::mllog;
using mlbert::test::drop_key;
using mlbert::test::duplicate_key;
using mlbert::test::edit_key;
using mlbert::test::insert_after;
using mlbert::test::move_after;
using mlbert::test::set_field;

namespace {

std::string example(const std::string& ruleset, const std::string& division = "closed") {
  mllog::ExampleLogOptions options;
  options.ruleset = ruleset;
  options.division = division;
  return mllog::example_bert_log(options);
}

mllog::CheckResult check(const std::string& log, const std::string& ruleset, bool werror = false,
                         bool quiet = false) {
  mllog::CheckOptions options;
  options.ruleset = ruleset;
  options.werror = werror;
  options.quiet = quiet;
  return mllog::check_log_text(log, options, "result_0.txt");
}

// The rules that reported errors, one per line, for readable failures.
std::string error_rules(const mllog::CheckResult& r) {
  std::string out;
  for (const auto& m : r.messages)
    if (m.level == mllog::CheckMessage::Level::error) out += m.rule + " | " + m.text + "\n";
  return out;
}

bool has_error(const mllog::CheckResult& r, const std::string& rule) {
  for (const auto& m : r.messages)
    if (m.level == mllog::CheckMessage::Level::error && m.rule == rule) return true;
  return false;
}

std::string record(const std::string& key, const std::string& value,
                   const std::string& metadata = "{}", long long time_ms = 1700000000500) {
  return ":::MLLOG {\"namespace\": \"\", \"time_ms\": " + std::to_string(time_ms) +
         ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"" + key + "\", \"value\": " + value +
         ", \"metadata\": " + metadata + "}";
}

}  // namespace

TEST_CASE("the compliant example log passes every BERT ruleset in both divisions") {
  REQUIRE(mllog::bert_rulesets().size() == 10);
  for (const std::string& ruleset : mllog::bert_rulesets()) {
    for (const char* division : {"closed", "open"}) {
      INFO(ruleset << " " << division);
      auto r = check(example(ruleset, division), ruleset);
      INFO(mllog::format_result(r));
      CHECK(r.success);
      CHECK(r.messages.empty());
      CHECK(r.benchmark == "bert");
      CHECK(r.division == division);
    }
  }
}

TEST_CASE("the config queue runs common, then the division's common, then its bert rules") {
  auto closed = check(example("4.0.0", "closed"), "4.0.0");
  CHECK(closed.configs == std::vector<std::string>{"training_4.0.0/common.yaml",
                                                   "training_4.0.0/closed_common.yaml",
                                                   "training_4.0.0/closed_bert.yaml"});
  // 1.1.0's open_common enqueues the 1.0.0 open_bert file, as the official one does.
  auto open = check(example("1.1.0", "open"), "1.1.0");
  CHECK(open.configs == std::vector<std::string>{"training_1.1.0/common.yaml",
                                                 "training_1.1.0/open_common.yaml",
                                                 "training_1.0.0/open_bert.yaml"});
}

TEST_CASE("EXACTLY_ONE: a missing key fails in the config that requires it") {
  auto r = check(drop_key(example("4.0.0"), "opt_lamb_beta_1"), "4.0.0");
  CHECK_FALSE(r.success);
  CHECK(has_error(r, "closed_bert:opt_lamb_beta_1"));
  // Open BERT has no hyperparameter rules.
  CHECK(check(drop_key(example("4.0.0", "open"), "opt_lamb_beta_1"), "4.0.0").success);
  // The epsilon key changed name in 2.1.0.
  CHECK(check(drop_key(example("2.0.0"), "opt_epsilon"), "2.0.0").success == false);
  CHECK(check(drop_key(example("2.1.0"), "opt_lamb_epsilon"), "2.1.0").success == false);
}

TEST_CASE(
    "EXACTLY_ONE repeated with equal values is a warning, --werror fails it, --quiet hides it") {
  // 1 and 1.0 are equal values in Python.
  std::string log = duplicate_key(example("3.0.0"), "global_batch_size", [](const std::string& l) {
    return set_field(l, "value", "448.0");
  });
  auto r = check(log, "3.0.0");
  INFO(mllog::format_result(r));
  CHECK(r.success);
  REQUIRE(r.warning_count() == 1);
  CHECK(r.messages[0].rule == "closed_bert:global_batch_size");
  CHECK(r.messages[0].text.find("but found 2") != std::string::npos);
  auto strict = check(log, "3.0.0", /*werror=*/true);
  CHECK_FALSE(strict.success);
  CHECK(has_error(strict, "closed_bert:global_batch_size"));
  auto quiet = check(log, "3.0.0", false, /*quiet=*/true);
  CHECK(quiet.success);
  CHECK(quiet.messages.empty());
}

TEST_CASE("EXACTLY_ONE repeated with different values fails, big integers compared exactly") {
  std::string log = duplicate_key(example("4.1.0"), "train_samples", [](const std::string& l) {
    return set_field(l, "value", "156725654");
  });
  auto r = check(log, "4.1.0");
  CHECK_FALSE(r.success);
  CHECK(has_error(r, "common:train_samples"));
  auto big = [](const std::string& v) {
    return [v](const std::string& l) { return set_field(l, "value", v); };
  };
  std::string same = edit_key(duplicate_key(example("4.1.0"), "train_samples"), "train_samples",
                              big("18446744073709551616"));
  std::string differ = edit_key(edit_key(duplicate_key(example("4.1.0"), "train_samples"),
                                         "train_samples", big("18446744073709551616"), 0),
                                "train_samples", big("18446744073709551617"), 1);
  CHECK(check(same, "4.1.0").success);
  CHECK_FALSE(check(differ, "4.1.0").success);
}

TEST_CASE("AT_LEAST_ONE: a log without eval_accuracy fails") {
  auto r = check(drop_key(example("5.0.0"), "eval_accuracy"), "5.0.0");
  CHECK_FALSE(r.success);
  CHECK(has_error(r, "closed_bert:eval_accuracy"));
  CHECK_FALSE(check(drop_key(example("5.0.0"), "cache_clear"), "5.0.0").success);
}

TEST_CASE(
    "AT_LEAST_ONE_OR: epoch records may replace block records, but one of each pair is required") {
  auto to_epoch = [](const std::string& from, const std::string& to) {
    return [from, to](const std::string& l) {
      std::string out = l;
      out.replace(out.find(from), from.size(), to);
      return out;
    };
  };
  std::string log = example("2.1.0");
  log = edit_key(log, "block_start", to_epoch("\"block_start\"", "\"epoch_start\""));
  log = edit_key(log, "block_stop", to_epoch("\"block_stop\"", "\"epoch_stop\""));
  log = edit_key(log, "epoch_start", [](const std::string& l) {
    return set_field(l, "metadata", "{\"epoch_num\": 1}}");
  });
  log = edit_key(log, "epoch_stop", [](const std::string& l) {
    return set_field(l, "metadata", "{\"epoch_num\": 1}}");
  });
  auto epochs = check(log, "2.1.0");
  INFO(error_rules(epochs));
  CHECK(epochs.success);
  auto neither = check(drop_key(drop_key(example("2.1.0"), "block_start"), "eval_start"), "2.1.0");
  CHECK_FALSE(neither.success);
  bool group_message = false;
  for (const auto& m : neither.messages)
    group_message = group_message ||
                    m.text == "Required AT_LEAST_ONE occurrence of 'block_start' or 'eval_start'";
  CHECK(group_message);
}

TEST_CASE(
    "CHECK: init records after run_start and a run_start before init_stop fail, naming the line") {
  auto late = check(move_after(example("4.0.0"), "init_start", "run_start"), "4.0.0");
  CHECK_FALSE(late.success);
  CHECK(has_error(late, "common:init_start"));
  bool named = false;
  for (const auto& m : late.messages) {
    if (m.rule != "common:init_start") continue;
    CHECK(m.line > 400);
    CHECK(m.record.find("\"key\": \"init_start\"") != std::string::npos);
    named = named || m.text.rfind("CHECK failed: not s['run_started']", 0) == 0;
  }
  CHECK(named);
  auto early = check(move_after(example("4.0.0"), "run_start", "eval_samples"), "4.0.0");
  CHECK(has_error(early, "common:run_start"));
}

TEST_CASE("the init window is 30 minutes closed and 240 open from 2.0.0, 30 for both in 1.1.0") {
  auto slow_init = [](const std::string& log) {
    return edit_key(log, "init_stop",
                    [](const std::string& l) { return set_field(l, "time_ms", "1700002700000"); });
  };
  for (const char* ruleset : {"2.0.0", "3.1.0", "5.0.0"}) {
    INFO(ruleset);
    CHECK_FALSE(check(slow_init(example(ruleset, "closed")), ruleset).success);
    CHECK(check(slow_init(example(ruleset, "open")), ruleset).success);
  }
  CHECK_FALSE(check(slow_init(example("1.1.0", "open")), "1.1.0").success);
  // From 2.0.0 the window is set by submission_division: logged after init_stop, the window is 0.
  std::string late_division =
      move_after(example("4.0.0", "open"), "submission_division", "init_stop");
  auto r = check(late_division, "4.0.0");
  CHECK_FALSE(r.success);
  CHECK(has_error(r, "common:init_stop"));
  CHECK(check(move_after(example("1.1.0", "open"), "submission_division", "init_stop"), "1.1.0")
            .success);
}

TEST_CASE(
    "ATLEAST_ONE_CHECK: closed needs an accuracy from 0.720 up to but excluding 1.0, open only "
    "below 1.0") {
  auto low = [](const std::string& log) {
    return edit_key(log, "eval_accuracy",
                    [](const std::string& l) { return set_field(l, "value", "0.7199"); });
  };
  auto r = check(low(example("3.0.0")), "3.0.0");
  CHECK_FALSE(r.success);
  CHECK(has_error(r, "closed_bert:eval_accuracy"));
  CHECK(check(low(example("3.0.0", "open")), "3.0.0").success);
  auto perfect = [](const std::string& log) {
    return edit_key(log, "eval_accuracy",
                    [](const std::string& l) { return set_field(l, "value", "1.0"); });
  };
  CHECK_FALSE(check(perfect(example("3.0.0", "open")), "3.0.0").success);
  // One record in range is enough, wherever it is.
  CHECK(check(edit_key(
                  low(example("3.0.0")), "eval_accuracy",
                  [](const std::string& l) { return set_field(l, "value", "0.72"); }, 1),
              "3.0.0")
            .success);
}

TEST_CASE("a Python exception in ATLEAST_ONE_CHECK is a FAILED verdict like the official crash") {
  std::string log = edit_key(
      example("4.0.0"), "eval_accuracy",
      [](const std::string& l) { return set_field(l, "value", "\"0.75\""); }, 2);
  auto r = check(log, "4.0.0");
  CHECK_FALSE(r.success);
  CHECK(r.official_checker_crashes);
  // Only once the bert config runs: without a benchmark there is no ATLEAST_ONE_CHECK.
  auto no_bench = check(drop_key(log, "submission_benchmark"), "4.0.0");
  CHECK_FALSE(no_bench.official_checker_crashes);
}

TEST_CASE("closed_bert's eval_accuracy rule overwrites common's messages for that key") {
  std::string log = edit_key(
      example("1.1.0"), "eval_accuracy",
      [](const std::string& l) { return set_field(l, "metadata", "{\"file\": \"x\"}}"); }, 0);
  auto r = check(log, "1.1.0");
  CHECK_FALSE(r.success);
  CHECK(has_error(r, "closed_bert:eval_accuracy"));
  CHECK_FALSE(has_error(r, "common:eval_accuracy"));
  // Without a benchmark the bert config never runs, and common's message stays.
  auto stays = check(drop_key(log, "submission_benchmark"), "1.1.0");
  CHECK(has_error(stays, "common:eval_accuracy"));
  // 4.0.0's common accepts samples_count instead of epoch_num; closed_bert does not.
  std::string samples_only = edit_key(example("4.0.0"), "eval_accuracy", [](const std::string& l) {
    return set_field(l, "metadata", "{\"samples_count\": 150000}}");
  });
  auto closed = check(samples_only, "4.0.0");
  CHECK(has_error(closed, "closed_bert:eval_accuracy"));
  CHECK_FALSE(has_error(closed, "common:eval_accuracy"));
}

TEST_CASE("weights_initialization: the 398 BERT tensors exactly once, closed 1.1.0 to 2.1.0 only") {
  REQUIRE(mllog::bert_weight_tensor_names().size() == 398);
  for (const char* ruleset : {"1.1.0", "2.0.0", "2.1.0"}) {
    INFO(ruleset);
    std::string log = example(ruleset);
    auto missing = check(
        edit_key(
            log, "weights_initialization", [](const std::string&) { return std::string("x"); }, 17),
        ruleset);
    CHECK_FALSE(missing.success);
    CHECK(has_error(missing, "closed_bert:END"));
    auto repeated =
        check(duplicate_key(
                  edit_key(log, "weights_initialization", [](const std::string& l) { return l; }),
                  "weights_initialization",
                  [](const std::string& l) {
                    return l.find("layer_7/output/dense/bias") != std::string::npos ? l : "";
                  }),
              ruleset);
    CHECK_FALSE(repeated.success);
    auto no_tensor = check(
        edit_key(
            log, "weights_initialization",
            [](const std::string& l) { return set_field(l, "metadata", "{\"lineno\": 3}}"); }, 0),
        ruleset);
    CHECK(has_error(no_tensor, "closed_bert:weights_initialization"));
    CHECK(check(drop_key(log, "weights_initialization"), ruleset).success == false);
    CHECK(check(drop_key(example(ruleset, "open"), "weights_initialization"), ruleset).success);
  }
  CHECK(check(drop_key(example("3.0.0"), "weights_initialization"), "3.0.0").success);
}

TEST_CASE("submission keys run CHECK and POST once: a second division value is not enqueued") {
  std::string log =
      duplicate_key(example("4.0.0"), "submission_division",
                    [](const std::string& l) { return set_field(l, "value", "\"open\""); });
  auto r = check(log, "4.0.0");
  CHECK_FALSE(r.success);
  CHECK(has_error(r, "common:submission_division"));
  CHECK(r.configs == std::vector<std::string>{"training_4.0.0/common.yaml",
                                              "training_4.0.0/closed_common.yaml",
                                              "training_4.0.0/closed_bert.yaml"});
}

TEST_CASE("keys outside every rule are allowed, non-string keys are skipped") {
  std::string log =
      insert_after(example("4.1.0"), "run_start", record("tracked_stats", "{\"loss\": 2.1}"));
  log = insert_after(log, "run_start",
                     ":::MLLOG {\"time_ms\": 1, \"key\": 7, \"value\": 1, \"metadata\": null}");
  log = insert_after(
      log, "run_start",
      ":::MLLOG {\"time_ms\": 1, \"key\": [\"run_start\"], \"value\": 1, \"metadata\": 1}");
  CHECK(check(log, "4.1.0").success);
}

TEST_CASE("submission_status up to 4.0.0, org and platform up to 4.1.0") {
  CHECK_FALSE(check(drop_key(example("4.0.0"), "submission_status"), "4.0.0").success);
  CHECK(check(drop_key(example("4.1.0"), "submission_status"), "4.1.0").success);
  CHECK_FALSE(check(drop_key(example("4.1.0"), "submission_org"), "4.1.0").success);
  CHECK(check(drop_key(example("5.0.0"), "submission_org"), "5.0.0").success == true);
  auto bad_status = edit_key(example("2.0.0"), "submission_status", [](const std::string& l) {
    return set_field(l, "value", "\"available\"");
  });
  CHECK(has_error(check(bad_status, "2.0.0"), "common:submission_status"));
}

TEST_CASE("block and eval metadata: epoch fields, step_num in 3.1.0, samples_count from 4.0.0") {
  auto samples_only = [](const std::string& log, const std::string& key) {
    return edit_key(log, key, [](const std::string& l) {
      return set_field(l, "metadata", "{\"samples_count\": 5}}");
    });
  };
  CHECK(check(samples_only(example("4.0.0", "open"), "block_start"), "4.0.0").success);
  CHECK_FALSE(check(samples_only(example("3.1.0", "open"), "block_start"), "3.1.0").success);
  CHECK(check(edit_key(example("3.1.0", "open"), "block_start",
                       [](const std::string& l) {
                         return set_field(l, "metadata", "{\"step_num\": 0}}");
                       }),
              "3.1.0")
            .success);
  CHECK_FALSE(check(edit_key(example("3.1.0", "open"), "block_start",
                             [](const std::string& l) {
                               return set_field(l, "metadata", "{\"step_num\": -1}}");
                             }),
                    "3.1.0")
                  .success);
  // epoch_count must be a positive number; a string raises TypeError inside the CHECK.
  auto zero = edit_key(
      example("3.0.0"), "block_start",
      [](const std::string& l) { return set_field(l, "epoch_count", "0"); }, 0);
  CHECK(has_error(check(zero, "3.0.0"), "common:block_start"));
  auto text = edit_key(
      example("3.0.0"), "block_start",
      [](const std::string& l) { return set_field(l, "epoch_count", "\"5\""); }, 0);
  auto r = check(text, "3.0.0");
  CHECK(has_error(r, "common:block_start"));
  CHECK_FALSE(r.official_checker_crashes);
}

TEST_CASE("other benchmarks, unknown divisions and empty logs are FAILED with a reason") {
  auto resnet =
      check(edit_key(example("4.0.0"), "submission_benchmark",
                     [](const std::string& l) { return set_field(l, "value", "\"resnet\""); }),
            "4.0.0");
  CHECK_FALSE(resnet.success);
  CHECK(has_error(resnet, "closed_resnet:config"));
  auto division =
      check(edit_key(example("4.0.0"), "submission_division",
                     [](const std::string& l) { return set_field(l, "value", "\"closed \""); }),
            "4.0.0");
  CHECK_FALSE(division.success);
  CHECK(division.official_checker_crashes);
  auto empty = check("", "4.0.0");
  CHECK_FALSE(empty.success);
  CHECK(has_error(empty, "log:records"));
}

TEST_CASE("a parse error fails the log and the other checks still report") {
  std::string log = insert_after(drop_key(example("4.0.0"), "seed"), "run_start",
                                 ":::MLLOG {\"time_ms\": 1, \"key\"");
  log = drop_key(log, "opt_lamb_beta_2");
  auto r = check(log, "4.0.0");
  CHECK_FALSE(r.success);
  CHECK(has_error(r, "log:parse"));
  CHECK(has_error(r, "closed_bert:opt_lamb_beta_2"));
  CHECK_FALSE(r.official_checker_crashes);
}

TEST_CASE("check_log reads files and streams like text, and rejects unknown rulesets") {
  std::string log = example("3.1.0");
  std::istringstream in(log);
  mllog::CheckOptions options;
  options.ruleset = "3.1.0";
  auto from_stream = mllog::check_log(in, options, "s");
  CHECK(from_stream.success);
  CHECK(from_stream.records == check(log, "3.1.0").records);
  for (const char* unknown : {"6.0.0", "0.6.0", "9.9.9"}) {
    options.ruleset = unknown;
    CHECK_THROWS_AS(mllog::check_log_text(log, options), std::invalid_argument);
  }
  options.ruleset = "4.0.0";
  options.usage = "hpc";
  CHECK_THROWS_AS(mllog::check_log_text(log, options), std::invalid_argument);
  options.usage = "training";
  CHECK_THROWS_WITH(mllog::check_log(std::filesystem::path("/no/such/result_0.txt"), options),
                    Catch::Contains("/no/such/result_0.txt"));
}

TEST_CASE("the checker knows the rows of the ruleset list that have BERT rules, and only those") {
  std::vector<std::string> with_rules;
  for (const auto& row : mllog::training_rulesets()) {
    INFO(row.name);
    CHECK(mllog::rules::bert_configs(row.name).empty() == !row.bert_rules);
    CHECK(mllog::is_supported_ruleset(row.name) == row.bert_rules);
    if (row.bert_benchmark) CHECK(row.bert_rules);
    if (row.bert_rules) with_rules.emplace_back(row.name);
  }
  CHECK(mllog::supported_rulesets() == with_rules);
  CHECK(with_rules.front() == "0.7.0");
  CHECK(with_rules.back() == "5.1.0");
  CHECK(mllog::newest_bert_ruleset() == "5.0.0");
}

TEST_CASE("the ruleset list says what a BERT log of each ruleset holds, as the official YAML") {
  std::string org_platform, status, weights, epsilon, lamb_epsilon, alternative, availability;
  for (const auto& row : mllog::training_rulesets()) {
    if (!row.bert_rules) continue;
    const std::string name(row.name);
    if (row.submission_org_platform) org_platform += name + " ";
    if (row.submission_status) status += name + " ";
    if (row.weights_initialization) weights += name + " ";
    if (row.lamb_epsilon_key == "opt_epsilon") epsilon += name + " ";
    if (row.lamb_epsilon_key == "opt_lamb_epsilon") lamb_epsilon += name + " ";
    alternative += name + "=" + std::string(row.epoch_alternative) + " ";
    if (row.availability_status) availability += name + " ";
  }
  CHECK(org_platform == "0.7.0 1.0.0 1.1.0 2.0.0 2.1.0 3.0.0 3.1.0 4.0.0 4.1.0 5.1.0 ");
  CHECK(status == "0.7.0 1.0.0 1.1.0 2.0.0 2.1.0 3.0.0 3.1.0 4.0.0 ");
  CHECK(weights == "1.1.0 2.0.0 2.1.0 ");
  CHECK(epsilon == "0.7.0 1.0.0 1.1.0 2.0.0 ");
  CHECK(lamb_epsilon == "2.1.0 3.0.0 3.1.0 4.0.0 4.1.0 5.0.0 5.1.0 ");
  CHECK(alternative ==
        "0.7.0= 1.0.0= 1.1.0= 2.0.0= 2.1.0= 3.0.0= 3.1.0=step_num 4.0.0=samples_count "
        "4.1.0=samples_count 5.0.0=samples_count 5.1.0=samples_count ");
  CHECK(availability == "4.0.0 4.1.0 5.0.0 5.1.0 ");
  CHECK(&mllog::training_ruleset("4.1.0") == mllog::find_training_ruleset("4.1.0"));
  CHECK_THROWS_WITH(mllog::training_ruleset("9.9.9"),
                    Catch::Contains("'9.9.9' is not a training ruleset (known: 0.6.0, "));
}

TEST_CASE("0.7.0: a 20-minute init window for both divisions, 1.0.0 and 1.1.0 30 minutes") {
  auto init_minutes = [](const std::string& log, int minutes) {
    return edit_key(log, "init_stop", [minutes](const std::string& l) {
      return set_field(l, "time_ms", std::to_string(1700000000000LL + minutes * 60000LL));
    });
  };
  for (const char* division : {"closed", "open"}) {
    INFO(division);
    CHECK(check(init_minutes(example("0.7.0", division), 19), "0.7.0").success);
    auto late = check(init_minutes(example("0.7.0", division), 21), "0.7.0");
    CHECK_FALSE(late.success);
    CHECK(has_error(late, "common:init_stop"));
    for (const char* ruleset : {"1.0.0", "1.1.0"}) {
      CHECK(check(init_minutes(example(ruleset, division), 29), ruleset).success);
      CHECK_FALSE(check(init_minutes(example(ruleset, division), 31), ruleset).success);
    }
  }
}

TEST_CASE(
    "0.7.0 checks submission_benchmark in common too, gradient_accumulation_steps from 1.0.0") {
  auto upper = [](const std::string& log) {
    return edit_key(log, "submission_benchmark",
                    [](const std::string& l) { return set_field(l, "value", "\"BERT\""); });
  };
  // Without a division no division config runs, so only common can object to the benchmark.
  auto r070 = check(upper(drop_key(example("0.7.0"), "submission_division")), "0.7.0");
  INFO(error_rules(r070));
  CHECK(has_error(r070, "common:submission_benchmark"));
  auto r100 = check(upper(drop_key(example("1.0.0"), "submission_division")), "1.0.0");
  CHECK_FALSE(has_error(r100, "common:submission_benchmark"));
  // With a division, closed_common's rule for the key replaces common's message.
  auto closed = check(upper(example("0.7.0")), "0.7.0");
  CHECK(has_error(closed, "closed_common:submission_benchmark"));
  CHECK_FALSE(has_error(closed, "common:submission_benchmark"));
  // Twice in the log: EXACTLY_ONE counts it in common and in closed_common.
  auto twice = check(duplicate_key(example("0.7.0"), "submission_benchmark"), "0.7.0", true);
  CHECK(has_error(twice, "closed_common:submission_benchmark"));

  CHECK(check(drop_key(example("0.7.0"), "gradient_accumulation_steps"), "0.7.0").success);
  auto r = check(drop_key(example("1.0.0"), "gradient_accumulation_steps"), "1.0.0");
  CHECK(has_error(r, "closed_common:gradient_accumulation_steps"));
  CHECK(check(drop_key(example("1.0.0", "open"), "gradient_accumulation_steps"), "1.0.0").success);
  // Both early rounds name the LAMB epsilon opt_epsilon and need no weights_initialization.
  for (const char* ruleset : {"0.7.0", "1.0.0"}) {
    INFO(ruleset);
    CHECK(has_error(check(drop_key(example(ruleset), "opt_epsilon"), ruleset),
                    "closed_bert:opt_epsilon"));
    CHECK(check(drop_key(example(ruleset), "weights_initialization"), ruleset).success);
  }
}

TEST_CASE("0.7.0 targets: closed 0.712, or 0.706 from a global batch of 8192, open 0.712 too") {
  auto accuracy = [](const std::string& log, const std::string& value) {
    return edit_key(log, "eval_accuracy",
                    [value](const std::string& l) { return set_field(l, "value", value); });
  };
  auto batch = [](const std::string& log, const std::string& value) {
    return edit_key(log, "global_batch_size",
                    [value](const std::string& l) { return set_field(l, "value", value); });
  };
  const std::string closed = example("0.7.0");
  CHECK(check(accuracy(closed, "0.712"), "0.7.0").success);
  auto below = check(accuracy(closed, "0.7119"), "0.7.0");
  CHECK_FALSE(below.success);
  CHECK(has_error(below, "closed_bert:eval_accuracy"));
  CHECK(check(accuracy(batch(closed, "8191"), "0.712"), "0.7.0").success);
  CHECK_FALSE(check(accuracy(batch(closed, "8191"), "0.711"), "0.7.0").success);
  CHECK(check(accuracy(batch(closed, "8192"), "0.706"), "0.7.0").success);
  CHECK_FALSE(check(accuracy(batch(closed, "8192"), "0.7059"), "0.7.0").success);
  CHECK_FALSE(check(accuracy(closed, "1.0"), "0.7.0").success);
  // 1.0.0 asks 0.720 whatever the batch size.
  CHECK_FALSE(check(accuracy(batch(example("1.0.0"), "8192"), "0.719"), "1.0.0").success);
  CHECK(check(accuracy(example("1.0.0"), "0.72"), "1.0.0").success);

  const std::string open = example("0.7.0", "open");
  CHECK(check(accuracy(open, "0.712"), "0.7.0").success);
  CHECK_FALSE(check(accuracy(open, "0.7119"), "0.7.0").success);
  CHECK(check(accuracy(example("1.0.0", "open"), "0.5"), "1.0.0").success);
}

TEST_CASE(
    "0.7.0: the target reads the batch size logged so far, none or a text stops the checker") {
  // global_batch_size after the evaluations: s['global_batch_size'] raises KeyError.
  auto late = check(move_after(example("0.7.0"), "global_batch_size", "run_stop"), "0.7.0");
  CHECK_FALSE(late.success);
  CHECK(late.official_checker_crashes);
  CHECK(check(move_after(example("1.0.0"), "global_batch_size", "run_stop"), "1.0.0").success);
  // A text batch size: '<' between str and int raises TypeError.
  auto text = check(edit_key(example("0.7.0"), "global_batch_size",
                             [](const std::string& l) { return set_field(l, "value", "\"448\""); }),
                    "0.7.0");
  CHECK(text.official_checker_crashes);
  // The open division never reads it.
  CHECK(check(move_after(example("0.7.0", "open"), "global_batch_size", "run_stop"), "0.7.0")
            .success);
}

TEST_CASE("5.1.0 fails a BERT log on submission_benchmark and says BERT is not a 5.1.0 benchmark") {
  // The 5.0.0 example plus the org and platform records 5.1.0 requires again.
  std::string log = example("4.1.0");
  for (const char* division : {"closed", "open"}) {
    INFO(division);
    auto r = check(edit_key(log, "submission_division",
                            [division](const std::string& l) {
                              return set_field(l, "value", "\"" + std::string(division) + "\"");
                            }),
                   "5.1.0");
    INFO(mllog::format_result(r));
    CHECK_FALSE(r.success);
    CHECK_FALSE(r.official_checker_crashes);
    REQUIRE(r.error_count() == 1);
    const auto& m = r.messages[0];
    CHECK(m.rule == std::string(division) + "_common:submission_benchmark");
    CHECK(m.line > 0);
    CHECK(m.text.find("bert is not a benchmark of training ruleset 5.1.0") != std::string::npos);
    CHECK(m.text.find("from 0.7.0 to 5.0.0") != std::string::npos);
    // 5.1.0 still ships the bert configs, and its division config enqueues them.
    CHECK(r.configs.back() == "training_5.1.0/" + std::string(division) + "_bert.yaml");
  }
  // 5.1.0 requires submission_org and submission_platform again (5.0.0 did not).
  auto no_org = check(drop_key(log, "submission_org"), "5.1.0");
  CHECK(has_error(no_org, "common:submission_org"));
  CHECK(check(drop_key(example("5.0.0"), "submission_org"), "5.0.0").success);
  // A benchmark of 5.1.0 is named as such: the rules of llama31_8b are not encoded here.
  auto llama =
      check(edit_key(log, "submission_benchmark",
                     [](const std::string& l) { return set_field(l, "value", "\"llama31_8b\""); }),
            "5.1.0");
  CHECK(has_error(llama, "closed_llama31_8b:config"));
  CHECK_FALSE(has_error(llama, "closed_common:submission_benchmark"));
  // There is no compliant BERT example log for 5.1.0.
  CHECK_THROWS_WITH(example("5.1.0"), Catch::Contains("bert is not a benchmark"));
}
