// `mlbert check`: the compliance checker on the command line. Files are checked in parallel (one
// per worker thread) and reported in the order given; exit status 0 when every log passes, 1 when
// any fails, 2 when a file cannot be read. Without --ruleset each log's ruleset is the round in its
// path, else the newest ruleset with BERT with a warning (ruleset_choice.h, the rule of every audit
// command); what was inferred is reported once for the whole command.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/visible_text.h"
#include "mlperf_logging/cli/cli.h"
#include "mlperf_logging/cli/ruleset_choice.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/example_log.h"
#include "mlperf_logging/rules/rules.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
// advise.cc: the advisories of the logs, printed after the verdicts.
void print_log_advice(const std::vector<std::string>& logs,
                      const std::vector<std::string>& rulesets);

namespace {

struct CheckArgs {
  std::string usage = "training";
  std::string ruleset;
  bool werror = false;
  bool quiet = false;
  bool verbose = false;
  bool print_rules = false;
  bool print_example = false;
  bool advise = false;
  std::string division = "closed";
  unsigned jobs = 0;
  std::vector<std::string> logs;
};

// The rule tables as JSON, with each expression's Python source: what `check` enforces, readable.
nlohmann::ordered_json rules_as_json(const std::string& ruleset) {
  nlohmann::ordered_json out;
  out["ruleset"] = ruleset;
  out["configs"] = nlohmann::ordered_json::array();
  for (const auto& config : mllog::rules::bert_configs(ruleset)) {
    nlohmann::ordered_json c;
    c["name"] = config.name;
    if (!config.begin_source.empty()) c["BEGIN"] = config.begin_source;
    c["keys"] = nlohmann::ordered_json::array();
    for (const auto& rule : config.keys) {
      nlohmann::ordered_json k;
      k["NAME"] = rule.name;
      if (!rule.req.empty()) k["REQ"] = rule.req;
      if (!rule.checks.empty()) {
        k["CHECK"] = nlohmann::ordered_json::array();
        for (const auto& check : rule.checks) k["CHECK"].push_back(check.source);
      }
      if (!rule.post_source.empty()) k["POST"] = rule.post_source;
      if (rule.atleast_one_check) k["ATLEAST_ONE_CHECK"] = rule.atleast_one_check->source;
      c["keys"].push_back(std::move(k));
    }
    if (!config.end_source.empty()) c["END"] = config.end_source;
    out["configs"].push_back(std::move(c));
  }
  return out;
}

// The ruleset of each log (ruleset_choice.h), said once on stderr.
RulesetChoice choose_log_rulesets(const CheckArgs& args) {
  RulesetChoice choice = choose_rulesets(args.ruleset, args.logs, "log");
  print_ruleset_note("mlbert check", choice, args.verbose);
  return choice;
}

// A log without MLLOG lines fails every requirement; the official checker lists "No log lines
// detected" after the missing keys, where the cause is easy to miss. `check` names it first.
mllog::CheckResult cause_first(mllog::CheckResult result) {
  std::stable_partition(result.messages.begin(), result.messages.end(),
                        [](const mllog::CheckMessage& m) { return m.rule == "log:records"; });
  return result;
}

// --print-rules and --print-example without --ruleset: the newest with BERT, said once.
std::string single_ruleset(const CheckArgs& args) {
  if (!args.ruleset.empty()) return args.ruleset;
  const std::string newest(mllog::newest_bert_ruleset());
  std::fprintf(stderr, "mlbert check: ruleset %s, the newest with BERT (--ruleset overrides)\n",
               newest.c_str());
  return newest;
}

// "N of M logs pass (rulesets ...)", the rulesets used oldest first: the order of the ruleset list.
void print_pass_count(std::size_t passed, const std::vector<std::string>& rulesets) {
  std::string names;
  std::size_t used = 0;
  for (const auto& r : mllog::supported_rulesets()) {
    if (std::find(rulesets.begin(), rulesets.end(), r) == rulesets.end()) continue;
    names += (names.empty() ? "" : ", ") + r;
    ++used;
  }
  std::printf("%zu of %zu logs pass (ruleset%s %s)\n", passed, rulesets.size(),
              used > 1 ? "s" : "", names.c_str());
}

// After the verdicts, so the cause stands next to the failures: logs without a round in their path
// that failed were checked against the default ruleset.
void warn_failed_on_default(std::size_t failed) {
  const bool one = failed == 1;
  std::fprintf(stderr,
               "mlbert check: %zu failing log%s had no round in %s path and %s checked against "
               "%s, the newest ruleset with BERT: pass --ruleset if %s from another round\n",
               failed, one ? "" : "s", one ? "its" : "their", one ? "was" : "were",
               default_ruleset().c_str(), one ? "it is" : "they are");
}

int run_check(const CheckArgs& args) {
  if (args.print_rules) {
    std::printf("%s\n", rules_as_json(single_ruleset(args)).dump(2).c_str());
    return 0;
  }
  if (args.print_example) {
    mllog::ExampleLogOptions example;
    example.ruleset = single_ruleset(args);
    example.division = args.division;
    std::fputs(mllog::example_bert_log(example).c_str(), stdout);
    return 0;
  }
  if (args.logs.empty()) throw CLI::ValidationError("LOG", "at least one log file is required");
  const RulesetChoice choice = choose_log_rulesets(args);
  const std::vector<std::string>& rulesets = choice.rulesets;
  mllog::CheckOptions options;
  options.usage = args.usage;
  options.werror = args.werror;
  options.quiet = args.quiet;

  struct Outcome {
    std::optional<mllog::CheckResult> result;
    std::string io_error;
  };
  std::vector<Outcome> outcomes(args.logs.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < args.logs.size(); i = next++) {
      try {
        mllog::CheckOptions log_options = options;
        log_options.ruleset = rulesets[i];
        outcomes[i].result = mllog::check_log(args.logs[i], log_options);
      } catch (const std::exception& e) {
        outcomes[i].io_error = e.what();
      }
    }
  };
  // Options are validated once up front so a bad ruleset is a usage error, not N failures.
  for (const auto& ruleset : std::set<std::string>(rulesets.begin(), rulesets.end())) {
    options.ruleset = ruleset;
    mllog::check_log_text("", options);
  }
  unsigned jobs = args.jobs ? args.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min<unsigned>(jobs, static_cast<unsigned>(args.logs.size()));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();

  int status = 0;
  std::size_t passed = 0;
  std::size_t failed_on_default = 0;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].result) {
      std::printf("ERROR   %s\n  %s\n", text::visible(args.logs[i]).c_str(),
                  text::visible(outcomes[i].io_error).c_str());
      status = 2;
      continue;
    }
    const auto& result = *outcomes[i].result;
    const std::string verdict = mllog::format_result(cause_first(result), !args.quiet);
    std::fwrite(verdict.data(), 1, verdict.size(), stdout);
    if (result.success) {
      ++passed;
    } else {
      if (status == 0) status = 1;
      if (choice.from_default[i]) ++failed_on_default;
    }
  }
  if (args.logs.size() > 1) print_pass_count(passed, rulesets);
  if (failed_on_default > 0) warn_failed_on_default(failed_on_default);
  if (args.advise) print_log_advice(args.logs, rulesets);
  return status;
}

}  // namespace

void register_check_cli(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* check = app.add_subcommand("check", "compliance of result logs with the official rules")
                        ->group("audit");
  check->add_option("--usage", args->usage, "Rules family (only 'training')")
      ->check(CLI::IsMember({"training"}))
      ->capture_default_str();
  check
      ->add_option("--ruleset", args->ruleset,
                   "Ruleset version (default: the round in each log's path, e.g. v4.0 -> 4.0.0, "
                   "else the newest with BERT)")
      ->check(CLI::IsMember(mllog::supported_rulesets()));
  check->add_flag("--werror", args->werror, "Treat warnings as errors");
  check->add_flag("-q,--quiet", args->quiet, "Suppress warnings (no effect with --werror)");
  check->add_flag("--print-rules", args->print_rules,
                  "Print the ruleset's BERT rules (with their Python sources) as JSON and exit");
  check->add_flag("--print-example", args->print_example,
                  "Print a compliant example BERT log for the ruleset and --division, and exit");
  check->add_option("--division", args->division, "Division of --print-example")
      ->check(CLI::IsMember({"closed", "open"}))
      ->capture_default_str();
  check->add_flag("--advise", args->advise,
                  "After the verdicts, the advisories the official checker misses (eval schedule, "
                  "org/platform, seeds, identical runs, run_stop, clock; see `mlbert audit`); the "
                  "exit status stays the verdicts'");
  check->add_option("-j,--jobs", args->jobs, "Logs checked in parallel (default: one per CPU)");
  check->add_flag("-v,--verbose", args->verbose, "Say which ruleset each log is checked against");
  check->add_option("LOG", args->logs, "Result logs (result_N.txt)")->check(cli::existing_file());
  check->callback([args, &exit_code] { exit_code = run_check(*args); });
  cli::set_example(*check,
                   "mlbert check training_results_v4.0/Org/results/system/bert/result_*.txt");
}

std::vector<std::string> rulesets_by_version() {
  return mllog::supported_rulesets();
}

std::string newest_bert_ruleset() {
  return std::string(mllog::newest_bert_ruleset());
}

}  // namespace mlbert::logging
