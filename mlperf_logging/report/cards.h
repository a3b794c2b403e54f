// The cards of the report page (html.cc lays them out): one function per card, each the markup of
// one system's card body, or for the system description one table of all systems. Design choice:
// a card draws what SystemReport holds and judges nothing; where a figure is missing it says why
// in a <p class="missing" data-plot="kind">, so the page always has every section.
#pragma once
#include <string>
#include <vector>

#include "mlperf_logging/report/report.h"

namespace mlbert::logging::report {

// The plots of one system's runs (cards_runs.cc); `id` is unique in the page, `width` in pixels.
std::string convergence_card(const SystemReport& system, const std::string& id, double width);
std::string time_to_train_card(const SystemReport& system, const std::string& id, double width);
std::string timeline_card(const SystemReport& system, const std::string& id, double width);
std::string throughput_card(const SystemReport& system, const std::string& id, double width);

// The checks (cards_checks.cc): the RCP test, the compliance verdicts, the system descriptions.
std::string rcp_card(const SystemReport& system, const std::string& id, double width);
std::string compliance_card(const SystemReport& system);
std::string description_card(const std::vector<SystemReport>& systems);

// The audit (cards_audit.cc): hyperparameters and seeds, the logs' SHA-256, the advisories.
std::string hyperparameters_card(const SystemReport& system);
std::string logs_card(const SystemReport& system);
std::string advisories_card(const SystemReport& system);

// The comparison of a reproduction with the published result (comparison.cc).
std::string comparison_card(const ComparisonSection& comparison);

}  // namespace mlbert::logging::report
