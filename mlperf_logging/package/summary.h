// The official result_summarizer's rows for one organization folder of a submission
// (`<org>/systems/<system>.json`, `<org>/results/<system>/bert/`): per system the description
// columns, the BERT score (olympic mean minutes, with scaling.json), and in the detailed row the
// batch size, the mean samples to converge, the RCP verdict and the scaling factor. Design choice:
// every figure comes from the engines of `mlbert score` and `mlbert rcp`; what the summarizer
// prints on the way (dropped runs, failed RCP tests) is collected as its lines, and where it would
// stop with a Python exception (a description that is not JSON, a field it needs missing) the
// reason is returned instead of rows.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlperf_logging/package/summary_table.h"
#include "mlperf_logging/rcp/rcp.h"

namespace mlbert::logging {

struct OrgSummaryOptions {
  std::string ruleset;
  // --generate_private_ids: the private id of a description (given the text the summarizer hashes
  // and the system's name); unset: ids are read from results/<system>/privateid.json only.
  std::function<std::string(const nlohmann::json& description, const std::string& system)>
      private_id;
};

struct OrgSummary {
  std::vector<std::vector<SummaryCell>> strong;    // rows in summary_columns(ruleset, false)
  std::vector<std::vector<SummaryCell>> detailed;  // rows in summary_columns(ruleset, true)
  std::vector<std::string> printed;                // the summarizer's stdout lines, in order
  std::vector<std::string> notes;  // what mlbert leaves out (other benchmarks, power)
  std::string official_stop;       // why the summarizer would stop; then no rows
};

// `folder` is spelled as given on the command line: the printed paths start with it. Writes
// privateid.json (with private_id set) and scaling.json (closed division, as the RCP check does).
OrgSummary summarize_org(const std::string& folder, const OrgSummaryOptions& options);

// The summarizer's name for an RCP outcome: Pass, Fail, Interp. Fail, Missing, No RCP or
// Unknown state.
std::string summary_rcp_name(const RcpResult& rcp);

// The results repository the summarizer's rows link to: "4.1.0" ->
// https://github.com/mlcommons/training_results_v4.1, "1.0.0" -> ..._v1.0.
std::string results_repository_url(const std::string& ruleset);

}  // namespace mlbert::logging
