// Advisories: what an auditor should look at that the official tools do not judge. Each names its
// rule, the file and line it concerns, and says what is wrong in one sentence.
//
// Design choice: an advisory never changes a verdict. The official verdict (check, score, rcp,
// package) is one value; the advisories are a list beside it, and no exit status, score or
// summary of the official tools' semantics reads them.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert::logging {

// The rules, one name each (what `--advise` prints and the report shows).
namespace advice {
// An eval's epoch_num off the reference schedule: evals every floor(0.05*(230.23*GBS + 3e6),
// 25000) samples, epoch_num = samples seen (mlcommons/logging#79).
inline constexpr std::string_view kEvalSchedule = "eval-schedule";
// submission_org / submission_platform that disagree with the system description
// (mlcommons/logging#241).
inline constexpr std::string_view kOrgPlatform = "org-platform";
// The RCP verdict under the correct lower convex envelope of the RCPs differs from the official
// pruning's (mlcommons/logging#368).
inline constexpr std::string_view kRcpEnvelope = "rcp-envelope";
// A seed logged from a source line the submission's implementation folder does not hold
// (mlcommons/logging#129: seeds judged against the implementation the logs come from).
inline constexpr std::string_view kSeedSource = "seed-source";
// Two runs of one folder log the same seed value (checked in every division and ruleset).
inline constexpr std::string_view kSeedRepeat = "seed-repeat";
// Two runs whose records are identical but for time_ms and the seed.
inline constexpr std::string_view kIdenticalRuns = "identical-runs";
// A run without run_stop: it never ended (crash, timeout, truncated log).
inline constexpr std::string_view kNoRunStop = "no-run-stop";
// time_ms going backwards by more than logging jitter.
inline constexpr std::string_view kClockBackwards = "clock-backwards";
// Training shards of a data folder that repeat one another (training_results_v2.1#10).
inline constexpr std::string_view kShardRepeat = "shard-repeat";
}  // namespace advice

struct Advisory {
  std::string rule;            // one of the advice:: names
  std::filesystem::path file;  // the log (or folder) it concerns
  std::size_t line = 0;        // 1-based line in `file`; 0 for the whole file or folder
  std::string text;            // what is wrong, in one sentence
};

// What the advisory audit of some logs found, and what it could not look at and why (e.g. "no
// system description beside the results: org-platform not checked").
struct AdviceReport {
  std::vector<Advisory> advisories;
  std::vector<std::string> notes;
  void add(std::string_view rule, std::filesystem::path file, std::size_t line, std::string text) {
    advisories.push_back({std::string(rule), std::move(file), line, std::move(text)});
  }
  void append(AdviceReport other);
};

// "ADVISE eval-schedule result_0.txt:412: ..." (the line number only when there is one).
std::string format_advisory(const Advisory& advisory);

}  // namespace mlbert::logging
