// The advisories of one result folder's runs taken together: seeds repeated between runs, runs
// identical but for the seed, and the RCP verdict under the correct lower convex envelope beside
// the official one.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "mlperf_logging/advise/advisory.h"
#include "mlperf_logging/advise/log_facts.h"

namespace mlbert::logging {

void advise_seed_repeats(const std::vector<LogFacts>& runs, AdviceReport& report);
// Only runs with at least one eval are compared: two runs that crashed in init log the same
// records and say nothing about a seed.
void advise_identical_runs(const std::vector<LogFacts>& runs, AdviceReport& report);
// The RCP check of `results_dir` with the official pruning and with the envelope; an advisory when
// the verdict, the reference or the scaling factor differ. Only closed-division folders of
// rulesets with RCPs are judged (as officially); `train_samples` reads samples to converge from
// train_samples (for logs whose epoch_num is not a sample count).
void advise_rcp_envelope(const std::filesystem::path& results_dir, const std::string& ruleset,
                         bool train_samples, AdviceReport& report);

}  // namespace mlbert::logging
