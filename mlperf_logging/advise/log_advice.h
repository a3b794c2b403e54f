// The advisories of one result log: its evals against the reference schedule, its submission_org
// and submission_platform against the system description, a missing run_stop, a clock that steps
// back. Each function adds what it finds to `report` and, where it cannot look, says why in the
// report's notes.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "mlperf_logging/advise/advisory.h"
#include "mlperf_logging/advise/log_facts.h"

namespace mlbert::logging {

// Where the logs come from: their ruleset, and the system they ran on.
struct AdviceContext {
  std::string ruleset;
  std::optional<nlohmann::json> description;  // the system description, when one was found
  std::filesystem::path description_file;
  std::string system_folder;  // the result folder's system name (results/<system>/...)
};

// The reference evaluation interval in samples for a global batch size:
// floor(0.05 * (230.23 * GBS + 3,000,000), 25,000).
std::int64_t reference_eval_interval(double global_batch_size);

void advise_eval_schedule(const LogFacts& log, const AdviceContext& context, AdviceReport& report);
void advise_org_platform(const LogFacts& log, const AdviceContext& context, AdviceReport& report);
void advise_run_stop(const LogFacts& log, AdviceReport& report);
void advise_clock(const LogFacts& log, AdviceReport& report);

// All of the above.
AdviceReport advise_log(const LogFacts& log, const AdviceContext& context);

}  // namespace mlbert::logging
