// The submission package check for BERT, with the official package_checker's verdict:
// system descriptions, then per results/<system>/bert: exactly 10 result_*.txt, compliance of each
// (one failing run tolerated under olympic scoring), power-log layout when present, and in the
// closed division unique seeds and the RCP check. mlbert also requires the layout the official tool
// takes for granted (a systems/ and a results/ folder, at least one BERT result folder); those
// findings are marked "[layout]" so they are easy to tell from the official ones. The
// implementation folder benchmarks/bert/implementations/<impl>/ is a [layout] warning only: the
// official checker has no rule about benchmarks/ in any ruleset (it lists its source files and
// never uses the list), so a package without it passes there, 1.0.0 included.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mlbert::logging {

struct PackageOptions {
  std::string ruleset;
  bool quiet = false;                   // compliance warnings not reported
  bool werror = false;                  // compliance and system-description warnings are errors
  bool rcp_bypass = false;              // RCP failures pass (as with package_checker_params)
  bool rcp_bert_train_samples = false;  // RCP samples from train_samples instead of epoch_num
  bool seed_checker_bypass = false;
  bool write_scaling = false;  // write scaling.json next to the results, as officially
};

struct PackageFinding {
  enum class Level { error, warning, info };
  Level level = Level::error;
  std::filesystem::path where;  // the file or folder concerned (relative to the package root)
  std::string text;
  bool layout = false;  // a "[layout]" finding: mlbert's, the official checker has no such rule
};

// What the check found for one results/<system>/bert folder.
struct BenchmarkSummary {
  std::string system;
  std::filesystem::path folder;
  std::string division;  // from systems/<system>.json ("" when unknown)
  int result_files = 0;
  int failed_compliance = 0;     // runs failing compliance or power layout
  std::optional<bool> seeds_ok;  // closed division only
  std::optional<bool> rcp_ok;    // closed division only
  std::string rcp_message;
  double rcp_scaling_factor = 1.0;
};

struct PackageResult {
  std::filesystem::path root;
  bool passed = false;
  std::vector<PackageFinding> findings;
  std::vector<BenchmarkSummary> benchmarks;
  // Why the official package_checker would stop with a Python exception on this package (no
  // verdict line, exit status 1), naming the file; "" when it runs to its verdict.
  std::string official_stop;

  std::size_t error_count() const;
  std::size_t warning_count() const;
  // The official checker's verdict when it runs to one: no error but mlbert's [layout] ones.
  bool official_passed() const;
};

// Checks the package rooted at `org_dir` (the folder holding systems/, results/, benchmarks/).
// Throws AuditError when `org_dir` is not a directory or the ruleset has no BERT rules; everything
// wrong inside the package is a finding.
PackageResult check_package(const std::filesystem::path& org_dir, const PackageOptions& options);

}  // namespace mlbert::logging
