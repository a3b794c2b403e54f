// The advisory audit over folders and packages (see advise.h).
#include "mlperf_logging/advise/advise.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/input_file.h"
#include "mlperf_logging/advise/folder_advice.h"
#include "mlperf_logging/advise/log_advice.h"
#include "mlperf_logging/advise/seed_source.h"
#include "mlperf_logging/package/layout.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;

// The folder a result folder's system is named by: results/<system>[/bert].
fs::path system_folder_of(const fs::path& results_dir) {
  fs::path dir = fs::absolute(results_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  if (dir.filename() == kBertBenchmark) dir = dir.parent_path();
  return dir;
}

// The package's organization folder when `results_dir` is <org>/results/<system>/bert.
std::optional<fs::path> package_of(const fs::path& results_dir) {
  fs::path dir = fs::absolute(results_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  if (dir.filename() != kBertBenchmark) return std::nullopt;
  const fs::path results = dir.parent_path().parent_path();
  if (results.filename() != "results") return std::nullopt;
  return results.parent_path();
}

AdviceContext context_of(const fs::path& results_dir, const std::string& ruleset,
                         AdviceReport& report) {
  AdviceContext context;
  context.ruleset = ruleset;
  context.system_folder = system_folder_of(results_dir).filename().string();
  context.description_file = find_system_description(results_dir);
  if (context.description_file.empty()) return context;
  try {
    context.description = read_json_file(context.description_file);
  } catch (const std::exception& e) {
    report.notes.push_back(std::string(e.what()) + " (org-platform not checked)");
  }
  return context;
}

// closed, open, or "" when neither the logs nor the description say.
std::string division_of(const std::vector<LogFacts>& runs, const AdviceContext& context) {
  for (const LogFacts& run : runs)
    if (run.submission_division && run.submission_division->value.is_string())
      return run.submission_division->value.get<std::string>();
  if (context.description && context.description->is_object() &&
      context.description->contains("division") && (*context.description)["division"].is_string())
    return (*context.description)["division"].get<std::string>();
  return "";
}

// Whether every eval of every run counts samples in epoch_num (else the RCP reads train_samples,
// as --rcp-bert-train-samples does for NVIDIA's early logs).
bool evals_count_samples(const std::vector<LogFacts>& runs) {
  for (const LogFacts& run : runs) {
    double previous = 0;
    for (const LoggedEval& eval : run.evals) {
      if (!eval.epoch_num.is_number()) return false;
      const double x = eval.epoch_num.get<double>();
      if (!std::isfinite(x) || x <= previous) return false;
      previous = x;
    }
    const LoggedValue* gbs = run.global_batch_size ? &*run.global_batch_size : nullptr;
    if (gbs && gbs->value.is_number() && !run.evals.empty() &&
        run.evals.front().epoch_num.get<double>() < gbs->value.get<double>())
      return false;
  }
  return true;
}

// Everything across the runs of one folder; `whole_folder` when `runs` are all its result files.
void advise_runs(const fs::path& results_dir, const std::vector<LogFacts>& runs,
                 const AdviceContext& context, bool whole_folder, AdviceReport& report) {
  advise_seed_repeats(runs, report);
  advise_identical_runs(runs, report);
  if (!whole_folder) return;
  if (division_of(runs, context) == "closed")
    advise_rcp_envelope(results_dir, context.ruleset, !evals_count_samples(runs), report);
  if (const auto org = package_of(results_dir)) advise_seed_sources(*org, runs, report);
}

fs::path results_dir_of(const fs::path& dir) {
  if (find_result_files(dir).empty() && fs::is_directory(dir / kBertBenchmark))
    return dir / kBertBenchmark;
  return dir;
}

std::string ruleset_for(const fs::path& dir, const std::string& ruleset) {
  if (!ruleset.empty()) return ruleset;
  if (auto inferred = ruleset_from_path(dir)) return *inferred;
  throw AuditError(dir.string() +
                   ": no --ruleset given and no round (e.g. v4.0) in the path to infer it from");
}

}  // namespace

void AdviceReport::append(AdviceReport other) {
  for (auto& a : other.advisories) advisories.push_back(std::move(a));
  for (auto& n : other.notes) notes.push_back(std::move(n));
}

std::string format_advisory(const Advisory& advisory) {
  return "ADVISE " + advisory.rule + " " + advisory.file.string() +
         (advisory.line > 0 ? ":" + std::to_string(advisory.line) : "") + ": " + advisory.text;
}

FolderAdvice advise_result_folder(const fs::path& dir, const std::string& ruleset) {
  FolderAdvice folder;
  folder.dir = results_dir_of(dir);
  folder.ruleset = ruleset;
  const auto files = find_result_files(folder.dir);
  if (files.empty()) throw AuditError(dir.string() + ": no result_*.txt files");
  const AdviceContext context = context_of(folder.dir, ruleset, folder.report);
  for (const fs::path& file : files) {
    folder.runs.push_back(read_log_facts(file));
    folder.report.append(advise_log(folder.runs.back(), context));
  }
  advise_runs(folder.dir, folder.runs, context, true, folder.report);
  return folder;
}

AdviceReport advise_logs(const std::vector<fs::path>& logs,
                         const std::vector<std::string>& rulesets) {
  // The logs by folder (and ruleset), in the order given.
  std::vector<std::pair<fs::path, std::string>> order;
  std::map<std::pair<fs::path, std::string>, std::vector<fs::path>> groups;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const auto key = std::make_pair(logs[i].parent_path(), rulesets[i]);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(logs[i]);
  }
  AdviceReport report;
  for (const auto& key : order) {
    const auto& [dir, ruleset] = key;
    const fs::path folder = dir.empty() ? fs::path(".") : dir;
    const AdviceContext context = context_of(folder, ruleset, report);
    std::vector<LogFacts> runs;
    for (const fs::path& log : groups[key]) {
      runs.push_back(read_log_facts(log));
      report.append(advise_log(runs.back(), context));
    }
    std::vector<fs::path> given = groups[key], all;
    try {
      all = find_result_files(folder);
    } catch (const std::exception&) {
    }
    const auto canonical = [](std::vector<fs::path> paths) {
      for (auto& p : paths) p = fs::weakly_canonical(p);
      std::sort(paths.begin(), paths.end());
      paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
      return paths;
    };
    advise_runs(folder, runs, context, !all.empty() && canonical(given) == canonical(all), report);
  }
  return report;
}

std::vector<FolderAdvice> audit_directory(const fs::path& dir, const std::string& ruleset) {
  if (const std::string why = files::directory_reason(dir); !why.empty())
    throw AuditError(dir.string() + ": " + why);
  const fs::path results_dir = results_dir_of(dir);
  if (!find_result_files(results_dir).empty())
    return {advise_result_folder(results_dir, ruleset_for(dir, ruleset))};
  if (!fs::is_directory(dir / "results"))
    throw AuditError(dir.string() +
                     ": neither a result folder (result_*.txt, or bert/ with them) nor a "
                     "package's organization folder (results/<system>/bert/)");
  std::vector<FolderAdvice> folders;
  for (const fs::path& system : sorted_subdirectories(dir / "results")) {
    if (!fs::is_directory(system / kBertBenchmark) ||
        find_result_files(system / kBertBenchmark).empty())
      continue;
    folders.push_back(advise_result_folder(system / kBertBenchmark, ruleset_for(dir, ruleset)));
  }
  if (folders.empty())
    throw AuditError(dir.string() + ": no results/<system>/bert/result_*.txt in this package");
  return folders;
}

}  // namespace mlbert::logging
