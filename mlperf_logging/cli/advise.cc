// `mlbert audit DIR...` and the advisories of `mlbert check --advise`: the audits the official
// tools miss (advise/advise.h), printed one line each after whatever verdicts the command gives.
// `audit` exits 0 when there is nothing to advise, 1 when there is, 2 on unusable input; `check
// --advise` keeps check's exit status, the official verdict's.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "mlperf_logging/advise/advise.h"
#include "mlperf_logging/cli/cli.h"

namespace mlbert::logging {

namespace {

nlohmann::json advisory_json(const Advisory& a) {
  return {{"rule", a.rule}, {"file", a.file.string()}, {"line", a.line}, {"text", a.text}};
}

void print_report(const AdviceReport& report) {
  for (const Advisory& a : report.advisories) std::printf("%s\n", format_advisory(a).c_str());
  for (const std::string& note : report.notes) std::printf("  note: %s\n", note.c_str());
}

struct AuditArgs {
  std::vector<std::string> dirs;
  std::string ruleset;
  bool json = false;
};

int run_audit(const AuditArgs& args) {
  std::size_t advisories = 0, folders = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& dir : args.dirs) {
    for (const FolderAdvice& folder : audit_directory(dir, args.ruleset)) {
      ++folders;
      advisories += folder.report.advisories.size();
      if (args.json) {
        nlohmann::json runs = nlohmann::json::array(), found = nlohmann::json::array();
        for (const LogFacts& run : folder.runs)
          runs.push_back({{"file", run.file.string()}, {"sha256", run.sha256}});
        for (const Advisory& a : folder.report.advisories) found.push_back(advisory_json(a));
        out.push_back({{"dir", folder.dir.string()},
                       {"ruleset", folder.ruleset},
                       {"runs", runs},
                       {"advisories", found},
                       {"notes", folder.report.notes}});
        continue;
      }
      std::printf("%s: ruleset %s, %zu runs, %zu advisories\n", folder.dir.c_str(),
                  folder.ruleset.c_str(), folder.runs.size(), folder.report.advisories.size());
      print_report(folder.report);
    }
  }
  if (args.json) {
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("audit: %zu advisories in %zu result folder%s (advisories never change the "
                "official verdicts of check, score, rcp and package)\n",
                advisories, folders, folders == 1 ? "" : "s");
  }
  return advisories == 0 ? 0 : 1;
}

}  // namespace

// For `mlbert check --advise`: the advisories of the logs just checked, after their verdicts.
void print_log_advice(const std::vector<std::string>& logs,
                      const std::vector<std::string>& rulesets) {
  const std::vector<std::filesystem::path> paths(logs.begin(), logs.end());
  const AdviceReport report = advise_logs(paths, rulesets);
  print_report(report);
  std::printf("%zu advisories (beside the verdicts above, which they do not change)\n",
              report.advisories.size());
}

void register_advise_cli(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<AuditArgs>();
  CLI::App* cmd =
      app.add_subcommand("audit", "what the official tools miss, as advisories (no verdict)")
          ->group("audit");
  cmd->add_option("dirs", args->dirs,
                  "result folders (result_*.txt, or bert/) or a package's organization folder")
      ->required()
      ->check(cli::existing_directory());
  cmd->add_option("--ruleset", args->ruleset,
                  "training ruleset, e.g. 4.1.0; default: the round in the path (v4.0 -> 4.0.0)");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->callback([args, &exit_code] { exit_code = run_audit(*args); });
  cli::set_example(*cmd, "mlbert audit training_results_v4.0/NVIDIA");
}

}  // namespace mlbert::logging
