// The plan under construction, shared by the parts that fill it (the topology from the system
// description, the run from the logs): one setter that writes a field and records its source, so
// no value reaches the system file without one.
#pragma once

#include <string>

#include "harness/reproduce/plan.h"

namespace mlbert::harness::reproduce {

class PlanBuilder {
 public:
  explicit PlanBuilder(ReproductionPlan& plan) : plan_(plan) {}

  // Sets `field` ("run.optimizer.beta1") in the system file and records where it came from.
  void set(const std::string& field, const nlohmann::json& value, const std::string& source);
  void differ(std::string published, std::string substitution);
  void refuse(const std::string& why);  // the first reason is kept; later ones are appended
  void not_carried(const std::string& key_and_why) { plan_.not_carried.push_back(key_and_why); }

  ReproductionPlan& plan() { return plan_; }

 private:
  ReproductionPlan& plan_;
};

// The topology of the system file: an mlbert system file's own, else one derived from the
// official description's counts and names (refuses an accelerator mlbert cannot run on).
void plan_topology(const nlohmann::json& description, const std::filesystem::path& file,
                   PlanBuilder& builder);

// The run of the system file: the base (an mlbert system file's run, else stated defaults), the
// launch's facts over it, then every hyperparameter the logs state over both.
void plan_run(const PublishedRuns& runs, const nlohmann::json& description,
              const std::filesystem::path& file, const LaunchFacts& launch, PlanBuilder& builder);

}  // namespace mlbert::harness::reproduce
