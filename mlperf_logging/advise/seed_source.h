// The seed-source advisory (mlcommons/logging#129): in a submission package, the seeds of a result
// folder are judged against the implementation folder its logs come from, not against every
// implementation of the benchmark. The folder's implementation is the one under
// benchmarks/bert/implementations/ that holds the most of the source files its logs name in
// metadata.file; each seed's metadata.file and lineno must then be a line of that implementation
// that mentions a seed.
#pragma once
#include <filesystem>
#include <vector>

#include "mlperf_logging/advise/advisory.h"
#include "mlperf_logging/advise/log_facts.h"

namespace mlbert::logging {

// `runs` are the logs of one results/<system>/bert folder of the package rooted at `org`.
void advise_seed_sources(const std::filesystem::path& org, const std::vector<LogFacts>& runs,
                         AdviceReport& report);

}  // namespace mlbert::logging
