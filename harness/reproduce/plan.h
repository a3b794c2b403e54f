// `mlbert reproduce plan`: a published BERT result turned into an mlbert system file that trains
// with exactly the hyperparameters its logs state, and the account of where each value came from.
//
// Design choice: every field the plan writes is recorded with its source (a log record, a field of
// the published system description, or a default stated here with its reason), and everything the
// reproduction cannot do as the published run did is either a named substitution or a refusal:
// the system file is validated by harness's own system reader before anything is written.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/reproduce/published_runs.h"

namespace mlbert::harness::reproduce {

// One field of the system file and where its value came from.
struct FieldSource {
  std::string field;  // JSON path in the system file: "run.optimizer.beta1"
  nlohmann::json value;
  std::string source;  // "log result_0.txt:35 opt_lamb_beta_1", "system.json accelerators_per_node",
                       // "default: <why>"
};

// A way the reproduction differs from the published run, and what mlbert does instead.
struct Difference {
  std::string published;     // what the published run did
  std::string substitution;  // what the reproduction does instead
};

// The logs' samples-to-converge over the runs.
struct ConvergenceSpread {
  std::vector<std::int64_t> samples;  // per run, in file order
  std::int64_t min = 0, max = 0;
  double mean = 0, median = 0;
  int converged = 0;  // runs whose run_stop status is "success"
};

struct ReproductionPlan {
  std::filesystem::path result_dir;
  std::filesystem::path system_description;  // the published system.json read
  std::string system_name;                   // results/<system_name>/bert in the reproduction
  std::string ruleset;
  nlohmann::json system;  // the mlbert system file (null when refused)
  std::vector<FieldSource> fields;
  std::vector<std::string> not_carried;  // logged keys the system file does not carry, and why
  std::vector<Difference> differences;
  std::optional<std::string> refusal;  // why it cannot be reproduced at all
  ConvergenceSpread spread;
  // The simulator's expected time to train, or why there is none ({"minutes":..} / {"none":why}).
  nlohmann::json expected_time = nlohmann::json::object();
};

// What the published launch states beyond the MLLOG records (the launch line the logs echo, as the
// simulator's reader derives it): fields set over the base run, which logged values still
// override. Given by the caller, so harness needs no simulator.
struct LaunchFacts {
  std::vector<FieldSource> fields;
};

// Builds the plan from the folder's runs and its system description (`description_file`, an
// official system.json or an mlbert system file). Throws std::runtime_error naming the file and
// field for input that is wrong (as opposed to a result that cannot be reproduced: `refusal`).
ReproductionPlan make_plan(const PublishedRuns& runs, const std::filesystem::path& description_file,
                           const LaunchFacts& launch = {});

// plan.json: every field with its source, the differences, the spread, the expected time.
nlohmann::json plan_to_json(const ReproductionPlan& plan);

// README.md: the same for a reader, short.
std::string plan_readme(const ReproductionPlan& plan);

// Writes DIR/system.json (unless refused), DIR/plan.json, DIR/README.md and `more` (name ->
// text, e.g. the job script): all of them or nothing. DIR must not exist or be empty; the files
// are staged in a sibling folder that is renamed to DIR.
void write_plan(const ReproductionPlan& plan, const std::filesystem::path& out_dir,
                const std::map<std::string, std::string>& more = {});

}  // namespace mlbert::harness::reproduce
