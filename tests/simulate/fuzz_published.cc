// libFuzzer target: a published result folder as `mlbert simulate --results` and `mlbert simulate
// calibrate --results` read it, from arbitrary bytes. The input's text before a line "@@ result"
// is the folder's system.json, the rest its result_0.txt; byte 0 picks the ruleset. The folder
// goes through read_published_result, published_phases, cluster_from_result and
// simulation_options_for. The phases must be finite and not negative where present. It must end
// in a named error (std::runtime_error for what cannot be read, std::invalid_argument for a
// machine or run the simulator cannot shape) or in a cluster that keeps the reader's promises:
// at least one node and GPU, no more ranks than the simulator models, finite positive NVLink and
// (with more than one node) NIC bandwidth, a batch that splits over the ranks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "simulate/result_model.h"
#include "mlperf_logging/rules/checker.h"
#include "tests/fuzz/fuzz_scratch.h"

namespace {

namespace sim = mlbert::simulate;

bool positive(double x) {
  return std::isfinite(x) && x > 0;
}

void published(const std::filesystem::path& dir, std::string_view text,
               const std::string& ruleset) {
  std::filesystem::create_directories(dir);
  const size_t split = text.find("\n@@ result\n");
  mlbert::fuzz::write_file(dir / "system.json", text.substr(0, split));
  mlbert::fuzz::write_file(dir / "result_0.txt", split == std::string_view::npos
                                                     ? std::string_view()
                                                     : text.substr(split + 11));
  sim::PublishedResult r;
  try {
    r = sim::read_published_result(dir, ruleset);
  } catch (const std::runtime_error&) {
    return;
  }
  if (r.runs.size() != 1 || r.global_batch_size < 1 || r.runs[0].samples == 0) std::abort();
  if (r.launch_line.eval_batch_size && *r.launch_line.eval_batch_size < 1) std::abort();
  for (const sim::TimedEval& e : r.runs[0].timed_evals)
    if (e.samples && *e.samples <= 1000) std::abort();
  // Without a cadence, and with one (the samples between evaluations where the log states none).
  for (const std::int64_t cadence : {std::int64_t{0}, std::int64_t{150000}}) {
    const sim::PublishedPhases ph = sim::published_phases(r, cadence);
    for (const auto& figure :
         {ph.step_seconds, ph.eval_seconds, ph.run_start_seconds, ph.interval_step_seconds})
      if (figure && !(std::isfinite(*figure) && *figure >= 0)) std::abort();
    if (ph.step_seconds.has_value() != (ph.step_intervals > 0) ||
        ph.eval_seconds.has_value() != (ph.timed_evals > 0) ||
        ph.interval_step_seconds.has_value() != (ph.intervals > 0) ||
        (cadence == 0 && ph.intervals_from_cadence) ||
        ph.timed_evals > r.runs[0].timed_evals.size() ||
        ph.step_intervals >= std::max<size_t>(r.runs[0].timed_evals.size(), 1) ||
        ph.intervals >= std::max<size_t>(r.runs[0].eval_times.size(), 1))
      std::abort();
  }
  sim::ClusterRun c;
  try {
    c = sim::cluster_from_result(r);
  } catch (const std::invalid_argument&) {
    return;
  }
  const auto& n = c.network;
  if (n.nodes < 1 || n.gpus_per_node < 1 || c.world() > sim::kMaxSimulatedRanks) std::abort();
  if (!positive(n.nvlink_gbs)) std::abort();
  if (n.nodes > 1 && (n.nics_per_node < 1 || !positive(n.nic_gbs_per_node))) std::abort();
  const auto& run = c.run;
  if (run.per_rank_batch < 1 || run.gradient_accumulation < 1 || run.eval.batch_size < 1 ||
      static_cast<std::int64_t>(run.per_rank_batch) * c.world() * run.gradient_accumulation !=
          run.global_batch_size)
    std::abort();
  (void)sim::simulation_options_for(r, sim::SimulationOptions());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto& rulesets = mlbert::mllog::supported_rulesets();
  published(mlbert::fuzz::scratch_dir() / "published",
            std::string_view(reinterpret_cast<const char*>(data + 1), size - 1),
            rulesets[data[0] % rulesets.size()]);
  return 0;
}
