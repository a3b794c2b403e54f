// `mlbert check`: the compliance checker on the command line. Files are checked in parallel (one
// per worker thread) and reported in the order given; exit status 0 when every log passes, 1 when
// any fails, 2 when a file cannot be read. Without --ruleset each log's ruleset is the round in its
// path (as `mlbert score` infers it), else the newest ruleset with BERT; what was inferred is
// reported once for the whole command.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/visible_text.h"
#include "mlperf_logging/cli/cli.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/example_log.h"
#include "mlperf_logging/rules/rules.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

struct CheckArgs {
  std::string usage = "training";
  std::string ruleset;
  bool werror = false;
  bool quiet = false;
  bool verbose = false;
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

// The ruleset of each log: --ruleset, else the round in its path, else the newest with BERT. Says
// on stderr, once, what was inferred (with --verbose, for each log).
std::vector<std::string> choose_rulesets(const CheckArgs& args) {
  if (!args.ruleset.empty()) return std::vector<std::string>(args.logs.size(), args.ruleset);
  std::vector<std::string> rulesets;
  std::map<std::string, std::size_t> from_path;
  std::size_t defaulted = 0;
  const std::string newest(mllog::newest_bert_ruleset());
  for (const auto& log : args.logs) {
    const auto inferred = ruleset_from_path(log);
    rulesets.push_back(inferred ? *inferred : newest);
    if (inferred) {
      ++from_path[*inferred];
      if (!mllog::is_supported_ruleset(*inferred))
        throw AuditError(log + ": the round in its path means ruleset " + *inferred +
                         ", which mlbert does not know; pass --ruleset");
    } else {
      ++defaulted;
    }
    if (args.verbose)
      std::fprintf(stderr, "mlbert check: %s: ruleset %s (%s)\n", log.c_str(),
                   rulesets.back().c_str(),
                   inferred ? "from the round in its path" : "the newest with BERT");
  }
  std::string note;
  for (const auto& [ruleset, count] : from_path) {
    note += (note.empty() ? "" : ", ") + ruleset;
    if (from_path.size() > 1 || defaulted > 0)
      note += " (" + std::to_string(count) + (count == 1 ? " log)" : " logs)");
  }
  if (!note.empty())
    note = (from_path.size() > 1 ? "rulesets " : "ruleset ") + note + " from the round in the path";
  if (defaulted > 0) {
    note += (note.empty() ? "" : "; ") + std::string("ruleset ") + newest +
            ", the newest with BERT, for " +
            (defaulted == args.logs.size() ? std::string(defaulted == 1 ? "the log" : "every log")
                                           : std::to_string(defaulted) + " without a round");
  }
  std::fprintf(stderr, "mlbert check: %s (--ruleset overrides%s)\n", note.c_str(),
               args.verbose || args.logs.size() == 1 ? "" : "; -v lists each log");
  return rulesets;
}

// --print-rules and --print-example without --ruleset: the newest with BERT, said once.
std::string single_ruleset(const CheckArgs& args) {
  if (!args.ruleset.empty()) return args.ruleset;
  const std::string newest(mllog::newest_bert_ruleset());
  std::fprintf(stderr, "mlbert check: ruleset %s, the newest with BERT (--ruleset overrides)\n",
               newest.c_str());
  return newest;
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
  const std::vector<std::string> rulesets = choose_rulesets(args);
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
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].result) {
      std::printf("ERROR   %s\n  %s\n", text::visible(args.logs[i]).c_str(),
                  text::visible(outcomes[i].io_error).c_str());
      status = 2;
      continue;
    }
    const auto& result = *outcomes[i].result;
    const std::string verdict = mllog::format_result(result, !args.quiet);
    std::fwrite(verdict.data(), 1, verdict.size(), stdout);
    if (result.success) {
      ++passed;
    } else if (status == 0) {
      status = 1;
    }
  }
  if (args.logs.size() > 1) {
    // The rulesets used, oldest first: the order of the ruleset list.
    std::string names;
    std::size_t used = 0;
    for (const auto& r : mllog::supported_rulesets()) {
      if (std::find(rulesets.begin(), rulesets.end(), r) == rulesets.end()) continue;
      names += (names.empty() ? "" : ", ") + r;
      ++used;
    }
    std::printf("%zu of %zu logs pass (ruleset%s %s)\n", passed, args.logs.size(),
                used > 1 ? "s" : "", names.c_str());
  }
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
  check->add_flag("--quiet", args->quiet, "Suppress warnings (no effect with --werror)");
  check->add_flag("--print-rules", args->print_rules,
                  "Print the ruleset's BERT rules (with their Python sources) as JSON and exit");
  check->add_flag("--print-example", args->print_example,
                  "Print a compliant example BERT log for the ruleset and --division, and exit");
  check->add_option("--division", args->division, "Division of --print-example")
      ->check(CLI::IsMember({"closed", "open"}))
      ->capture_default_str();
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
