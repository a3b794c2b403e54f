// `mlbert compliance_checker LOG [--usage training] [--ruleset R] [--config C] [--werror] [--quiet]
// [--log_output FILE]`: the official `python -m mlperf_logging.compliance_checker` command line
// over `mlbert check`'s engine. Its lines ("INFO - Running compliance on file: LOG", one "INFO -
// Compliance checks: CONFIG" per config run, the messages in one WARNING record separated by
// dashes, then "ERROR - FAILED" or "INFO - SUCCESS"), its stdout line "** Logging output also at
// FILE" and its exit status (1 when the log fails). The messages are mlbert's own words. Without
// --ruleset the ruleset follows mlbert's one rule (the round in the path, else the newest with BERT
// and a warning) instead of the official default, a ruleset without BERT.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <regex>
#include <string>

#include "common/input_file.h"
#include "common/cli.h"
#include "mlperf_logging/cli/official_tool.h"
#include "mlperf_logging/cli/ruleset_choice.h"
#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging::official {
namespace {

struct ComplianceArgs {
  std::string log;
  std::string usage = "training";
  std::string ruleset;
  std::string config;
  bool werror = false;
  bool quiet = false;
  std::string log_output = "compliance_checker.log";
};

const std::string kSeparator = "\n------------------------------\n";

std::string message_text(const mllog::CheckMessage& message) {
  std::string text = message.rule;
  if (message.line) text += " line " + std::to_string(message.line);
  text += ": " + message.text;
  if (!message.record.empty()) text += "\n" + message.record;
  return text;
}

std::string chosen_ruleset(const ComplianceArgs& args, OfficialLog& log) {
  if (!args.ruleset.empty()) return args.ruleset;
  const RulesetChoice choice = choose_rulesets("", {args.log}, "log");
  const std::string note =
      "mlbert: " + choice.note + " (no --ruleset: the official default has no BERT rules)";
  choice.note_is_warning ? log.warning(note) : log.info(note);
  return choice.rulesets.front();
}

int finish(bool success, OfficialLog& log) {
  if (!success) log.error("FAILED");
  std::printf("** Logging output also at %s\n", log.file().c_str());
  std::fflush(stdout);
  if (success) log.info("SUCCESS");
  return success ? 0 : 1;
}

int check(const ComplianceArgs& args, OfficialLog& log) {
  const std::string ruleset = chosen_ruleset(args, log);
  log.info("Running compliance on file: " + args.log);
  if (const std::string reason = files::unreadable_reason(args.log); !reason.empty())
    throw OfficialStop(args.log + ": " + reason);
  if (!mllog::is_supported_ruleset(ruleset)) {
    // 0.6.0 and 6.x: the official checker fails a BERT log on its benchmark.
    log.warning(" " + mllog::bert_absence(ruleset));
    return finish(false, log);
  }
  mllog::CheckOptions options;
  options.usage = args.usage;
  options.ruleset = ruleset;
  options.werror = args.werror;
  options.quiet = args.quiet;
  const mllog::CheckResult result = mllog::check_log(args.log, options);
  for (const auto& config : result.configs) log.info(" Compliance checks: " + config);
  std::string messages;
  for (const auto& message : result.messages) {
    if (message.level == mllog::CheckMessage::Level::warning && args.quiet && !args.werror)
      continue;
    messages += (messages.empty() ? "" : kSeparator) + message_text(message);
  }
  if (!messages.empty()) log.warning(" " + messages);
  return finish(result.success, log);
}

// --config names the YAML the official checker starts from. mlbert's rules are compiled in, so only
// a ruleset's own common.yaml can be honoured; without --ruleset it names the ruleset.
void apply_config(ComplianceArgs& args) {
  if (args.config.empty()) return;
  static const std::regex kOwnConfig(R"(training_(\d+\.\d+\.\d+)/common\.yaml)");
  std::smatch m;
  const bool own = std::regex_match(args.config, m, kOwnConfig) &&
                   (args.ruleset.empty() || m[1].str() == args.ruleset);
  if (!own) {
    throw CLI::ValidationError(
        "--config", "'" + args.config + "': mlbert's rules are compiled in; only a ruleset's own " +
                        "training_<ruleset>/common.yaml can be used");
  }
  args.ruleset = m[1].str();
}

}  // namespace

void register_compliance_checker(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ComplianceArgs>();
  CLI::App* cmd = app.add_subcommand("compliance_checker",
                                     "mlperf_logging.compliance_checker, same arguments")
                      ->group("official");
  cli::set_example(*cmd, "mlbert compliance_checker --usage training --ruleset 4.1.0 result_0.txt");
  cmd->add_option("filename", args->log, "the file to check for compliance")->required();
  cmd->add_option("--usage", args->usage, "what WG do the benchmarks come from")
      ->check(CLI::IsMember({"training", "hpc"}))
      ->capture_default_str();
  cmd->add_option("--ruleset", args->ruleset,
                  "what version of rules to check the log against (default: the round in the "
                  "path, else the newest with BERT, with a warning)")
      ->check(CLI::IsMember(official_rulesets()));
  cmd->add_option("--config", args->config,
                  "mlperf logging config; only the default {usage}_{ruleset}/common.yaml");
  cmd->add_flag("--werror", args->werror, "Treat warnings as errors");
  cmd->add_flag("--quiet", args->quiet, "Suppress warnings. Does nothing if --werror is set");
  cmd->add_option("--log_output", args->log_output, "where to store compliance checker output log")
      ->capture_default_str();
  cmd->callback([args, &exit_code] {
    check_usage("compliance_checker", args->usage);
    apply_config(*args);
    exit_code = run_official("compliance_checker", args->log_output,
                             [&](OfficialLog& log) { return check(*args, log); });
  });
}

}  // namespace mlbert::logging::official
