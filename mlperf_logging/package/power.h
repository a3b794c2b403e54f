// The package checker's power layout rule for results/<system>/bert/power/: one folder per result
// (power/result_N/) holding node_<i>.txt and sw_<i>.txt with i in range, and the same node and
// switch counts in every run. Design choice: a run that breaks the rule fails like a non-compliant
// log (package.cc counts it with the compliance failures), with warnings saying why.
#pragma once
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "mlperf_logging/package/findings.h"

namespace mlbert::logging {

// Checks `power_folder` against the result files `results`; returns the names of the results
// (result_N) whose power logs break the rule, having recorded why in `findings`.
std::set<std::string> check_power(const std::filesystem::path& power_folder,
                                  const std::vector<std::filesystem::path>& results,
                                  PackageFindings& findings);

}  // namespace mlbert::logging
