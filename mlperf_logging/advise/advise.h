// The advisory audit's entry points: `mlbert check --advise LOG...`, `mlbert audit DIR` (a result
// folder or a package's organization folder) and the report call these. Each reads every log once
// (log_facts.h), then runs the per-log advisories (log_advice.h), those across a folder's runs
// (folder_advice.h) and, in a package, the seed-source advisory (seed_source.h).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "mlperf_logging/advise/advisory.h"
#include "mlperf_logging/advise/log_facts.h"

namespace mlbert::logging {

// One result folder: its logs' facts and what the audit found.
struct FolderAdvice {
  std::filesystem::path dir;  // the folder holding result_*.txt
  std::string ruleset;
  std::vector<LogFacts> runs;
  AdviceReport report;
};

// The advisories of the result folder `dir` (result_*.txt, or bert/ holding them) under `ruleset`.
// Throws AuditError when it holds no result files.
FolderAdvice advise_result_folder(const std::filesystem::path& dir, const std::string& ruleset);

// The advisories of logs named one by one (`rulesets[i]` is the ruleset of `logs[i]`): per log,
// and across the logs of each folder; the folder-wide audits (RCP envelope, seed sources) run when
// the logs given are all of their folder's result files.
AdviceReport advise_logs(const std::vector<std::filesystem::path>& logs,
                         const std::vector<std::string>& rulesets);

// What `mlbert audit DIR` audits: DIR itself when it is a result folder, else, when it is a
// package's organization folder, every results/<system>/bert in it. `ruleset` "" means the round
// in the path. Throws AuditError when DIR is neither, or no ruleset is given or inferable.
std::vector<FolderAdvice> audit_directory(const std::filesystem::path& dir,
                                          const std::string& ruleset);

}  // namespace mlbert::logging
