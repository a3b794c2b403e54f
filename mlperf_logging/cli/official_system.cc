// `mlbert system_desc_checker FILE USAGE RULESET [--werror] [--quiet] [--log_output FILE]`: the
// official `python -m mlperf_logging.system_desc_checker` command line over `mlbert
// system-check`'s engine. Its verdict line ("INFO -   System description checker passed for NAME"
// or "ERROR -   System description checker failed for NAME : [reasons]", the reasons as the
// official list prints them), its stdout line and its exit status: 0 whatever the verdict, 1 where
// the official tool stops with a Python exception (malformed JSON, a non-string value it joins).
// --werror and --quiet are accepted and, as officially, change nothing.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "common/input_file.h"
#include "common/cli.h"
#include "mlperf_logging/cli/official_tool.h"
#include "mlperf_logging/package/system_desc.h"

namespace mlbert::logging::official {
namespace {

struct SystemArgs {
  std::string file;
  std::string usage;
  std::string ruleset;
  bool werror = false;
  bool quiet = false;
  std::string log_output = "system_desc_checker.log";
};

}  // namespace

// The verdict line the official check_system_desc logs (also for package_checker); throws
// OfficialStop where it would stop with an exception.
void log_system_desc_verdict(const SystemDescResult& result, OfficialLog& log) {
  if (!result.official_stop.empty())
    throw OfficialStop(result.file.string() + ": " + result.official_stop);
  for (const auto& [key, field] : result.misspelled_keys) {
    log.warning("mlbert: " + result.file.string() + ": key '" + key +
                "' is no field of a system description; did you mean '" + field + "'?");
  }
  if (result.official_reasons.empty()) {
    log.info("  System description checker passed for " + result.system_name);
  } else {
    log.error("  System description checker failed for " + result.system_name + " : " +
              python_list_repr(result.official_reasons));
  }
}

namespace {

int check(const SystemArgs& args, OfficialLog& log) {
  if (const std::string reason = files::unreadable_reason(args.file); !reason.empty())
    throw OfficialStop(args.file + ": " + reason);
  log_system_desc_verdict(check_system_desc_file(args.file, args.ruleset), log);
  std::printf("** Logging output also at %s\n", log.file().c_str());
  return 0;
}

}  // namespace

void register_system_desc_checker(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<SystemArgs>();
  CLI::App* cmd = app.add_subcommand("system_desc_checker",
                                     "mlperf_logging.system_desc_checker, same arguments")
                      ->group("official");
  cli::set_example(*cmd, "mlbert system_desc_checker NVIDIA/systems/dgxh100.json training 4.1.0");
  cmd->add_option("filename", args->file, "the file to check for compliance")->required();
  add_usage_and_ruleset(cmd, args->usage, args->ruleset);
  cmd->add_flag("--werror", args->werror, "Treat warnings as errors (no effect, as officially)");
  cmd->add_flag("--quiet", args->quiet, "Suppress warnings (no effect, as officially)");
  cmd->add_option("--log_output", args->log_output,
                  "where to store system description checker output log")
      ->capture_default_str();
  cmd->callback([args, &exit_code] {
    check_usage("system_desc_checker", args->usage);
    exit_code = run_official("system_desc_checker", args->log_output,
                             [&](OfficialLog& log) { return check(*args, log); });
  });
}

}  // namespace mlbert::logging::official
