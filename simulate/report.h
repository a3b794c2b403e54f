// What `mlbert simulate` prints: the table of one prediction, a sweep's table, the comparison with
// a published result, their JSON, and the SVG plot of a sweep (time to train stacked by component).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "simulate/results.h"
#include "simulate/simulator.h"

namespace mlbert::simulate {

// The components of a time to train, in seconds, in plotting order.
struct TimeComponents {
  double run_start = 0, compute = 0, imbalance = 0, exposed_comm = 0, exchange = 0, clip = 0,
         optimizer = 0, host = 0, fixed = 0, evaluation = 0;
};
TimeComponents components_of(const Prediction& p);

std::string format_prediction(const Prediction& p, const AcceleratorProfile& profile);
nlohmann::json prediction_to_json(const Prediction& p);

struct SweepPoint {
  std::string value;  // the swept field's value
  Prediction prediction;
};
std::string format_sweep(const std::string& field, const std::vector<SweepPoint>& points);
nlohmann::json sweep_to_json(const std::string& field, const std::vector<SweepPoint>& points);
// A self-contained SVG: predicted time to train per swept value, stacked by component.
std::string sweep_svg(const std::string& field, const std::vector<SweepPoint>& points);

// A published result against its prediction (run by run).
struct ResultComparison {
  PublishedResult result;
  Prediction prediction;               // timed to the longest run
  std::vector<double> predicted_runs;  // seconds, per published run
  // Olympic means (drop the fastest and slowest run); the plain means, olympic false, when the
  // folder has fewer than 3 runs.
  double predicted_olympic = 0, published_olympic = 0;
  bool olympic = true;
  OfficialScore official;
  PublishedPhases phases;  // what the logs say the phases took, beside the predicted ones
};
ResultComparison compare_with_result(const PublishedResult& result, const Prediction& prediction);
std::string format_comparison(const ResultComparison& c, const AcceleratorProfile& profile);
nlohmann::json comparison_to_json(const ResultComparison& c);

}  // namespace mlbert::simulate
