// `mlbert check`: the compliance checker on the command line. Files are checked in parallel (one
// per worker thread) and reported in the order given; exit status 0 when every log passes, 1 when
// any fails, 2 when a file cannot be read.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlperf_logging/checker.h"
#include "mlperf_logging/example_log.h"
#include "mlperf_logging/rules.h"

namespace mlbert::logging {
namespace {

struct CheckArgs {
  std::string usage = "training";
  std::string ruleset;
  bool werror = false;
  bool quiet = false;
  bool print_rules = false;
  bool print_example = false;
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

int run_check(const CheckArgs& args) {
  if (args.print_rules) {
    std::printf("%s\n", rules_as_json(args.ruleset).dump(2).c_str());
    return 0;
  }
  if (args.print_example) {
    mllog::ExampleLogOptions example;
    example.ruleset = args.ruleset;
    example.division = args.division;
    std::fputs(mllog::example_bert_log(example).c_str(), stdout);
    return 0;
  }
  if (args.logs.empty()) throw CLI::ValidationError("LOG", "at least one log file is required");
  mllog::CheckOptions options;
  options.usage = args.usage;
  options.ruleset = args.ruleset;
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
        outcomes[i].result = mllog::check_log(args.logs[i], options);
      } catch (const std::exception& e) {
        outcomes[i].io_error = e.what();
      }
    }
  };
  // Options are validated once up front so a bad ruleset is a usage error, not N failures.
  mllog::check_log_text("", options);
  unsigned jobs = args.jobs ? args.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min<unsigned>(jobs, static_cast<unsigned>(args.logs.size()));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();

  int status = 0;
  std::size_t passed = 0;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].result) {
      std::printf("ERROR   %s\n  %s\n", args.logs[i].c_str(), outcomes[i].io_error.c_str());
      status = 2;
      continue;
    }
    const auto& result = *outcomes[i].result;
    std::fputs(mllog::format_result(result, !args.quiet).c_str(), stdout);
    if (result.success) {
      ++passed;
    } else if (status == 0) {
      status = 1;
    }
  }
  if (args.logs.size() > 1)
    std::printf("%zu of %zu logs pass (ruleset %s)\n", passed, args.logs.size(),
                args.ruleset.c_str());
  return status;
}

}  // namespace

void register_check_cli(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* check = app.add_subcommand(
      "check", "Check MLPerf Training BERT result logs against the official compliance rules");
  check->add_option("--usage", args->usage, "Rules family (only 'training')")
      ->check(CLI::IsMember({"training"}))
      ->capture_default_str();
  check->add_option("--ruleset", args->ruleset, "Ruleset version")
      ->required()
      ->check(CLI::IsMember(mllog::supported_rulesets()));
  check->add_flag("--werror", args->werror, "Treat warnings as errors");
  check->add_flag("--quiet", args->quiet, "Suppress warnings (no effect with --werror)");
  check->add_flag("--print-rules", args->print_rules,
                  "Print the ruleset's BERT rules (with their Python sources) as JSON and exit");
  check->add_flag("--print-example", args->print_example,
                  "Print a compliant example BERT log for the ruleset and --division, and exit");
  check->add_option("--division", args->division, "Division of --print-example")
      ->check(CLI::IsMember({"closed", "open"}))
      ->capture_default_str();
  check->add_option("-j,--jobs", args->jobs, "Logs checked in parallel (default: one per CPU)");
  check->add_option("LOG", args->logs, "Result logs (result_N.txt)");
  check->callback([args, &exit_code] { exit_code = run_check(*args); });
}

}  // namespace mlbert::logging
