// Fitting an accelerator profile to one published result (see calibrate.h).
#include "harness/simulate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <stdexcept>

namespace mlbert::harness::simulate {
namespace {

using nlohmann::json;

// Training FLOPs of BERT per real token and per squared token (REFERENCE.md section 7: 2 FLOPs
// per multiply-add, backward = 2 x forward; the masked-LM head on 15% of the tokens).
struct FlopModel {
  double per_token = 0, per_square = 0;
};
FlopModel flop_model(const bert::BertConfig& m) {
  const double layers = static_cast<double>(m.num_hidden_layers);
  const double h = static_cast<double>(m.hidden_size);
  const double ffn = static_cast<double>(m.intermediate_size);
  const double vocab = static_cast<double>(m.padded_vocab_size());
  const double encoder_matmul_parameters = layers * (4 * h * h + 2 * h * ffn);
  FlopModel f;
  f.per_token = 6 * encoder_matmul_parameters + 6 * 0.15 * (h * h + h * vocab);
  f.per_square = 12 * layers * h;
  return f;
}

AcceleratorProfile scaled(const AcceleratorProfile& base, double k) {
  AcceleratorProfile p = base;
  p.train.seconds_per_token *= k;
  p.train.seconds_per_token_squared *= k;
  p.eval.seconds_per_token *= k;
  p.eval.seconds_per_token_squared *= k;
  return p;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof(text), "%Y-%m-%d", std::gmtime(&now));
  return text;
}

}  // namespace

AcceleratorProfile calibrate(const PublishedResult& result, const CalibrationOptions& options) {
  const ClusterRun cluster = cluster_from_result(result);
  if (!looks_like_gpu(cluster.accelerator))
    throw std::invalid_argument(result.dir.string() + ": accelerator \"" + cluster.accelerator +
                                "\" is not a GPU; simulate models GPU clusters only");
  const auto sheet = datasheet_for(cluster.accelerator);
  if (!sheet)
    throw std::invalid_argument(result.dir.string() +
                                ": no datasheet figures (HBM bandwidth) "
                                "for accelerator \"" +
                                cluster.accelerator +
                                "\"; the optimizer and norm passes cannot be derived");
  const FlopModel flops = flop_model(cluster.model);

  // The base profile at 1 TFLOP/s effective; the fit scales its compute.
  AcceleratorProfile base;
  base.accelerator = cluster.accelerator;
  base.matches = {sheet->match};
  base.model = "bert-large";
  base.provenance_kind = "calibrated";
  base.train = {flops.per_token / 1e12, flops.per_square / 1e12, 0};
  base.eval = {flops.per_token / 3e12, flops.per_square / 3e12, 0};
  base.memory_bytes_per_second = sheet->memory_tbs * 1e12 * kMemoryBandwidthFraction;
  base.optimizer_seconds_per_parameter_lamb = kLambBytesPerParameter / base.memory_bytes_per_second;
  base.optimizer_seconds_per_parameter_adam = kAdamBytesPerParameter / base.memory_bytes_per_second;

  // Run start: the first evaluation interval's excess over the second (same steps, one eval each).
  double start_sum = 0;
  int start_runs = 0;
  std::int64_t max_steps = 0, max_evals = 0;
  for (const PublishedRun& run : result.runs) {
    if (run.eval_times.size() >= 2) {
      start_sum += std::max(0.0, run.eval_times[0] - (run.eval_times[1] - run.eval_times[0]));
      ++start_runs;
    }
    max_steps = std::max(max_steps, run.samples / cluster.run.global_batch_size);
    max_evals = std::max(max_evals, run.evals);
  }
  if (start_runs == 0)
    throw std::invalid_argument(result.dir.string() +
                                ": no run has two evaluations; the run start cannot be separated");
  const double run_start = start_sum / start_runs;

  SimulationOptions simulation = simulation_options_for(result, options.simulation);
  simulation.steps = max_steps;
  simulation.evals = max_evals;
  const Simulation sim(cluster, base.train, simulation);
  double observed = 0;
  for (const PublishedRun& run : result.runs) observed += run.seconds - run_start;
  const auto predicted = [&](double k) {
    const Prediction p = sim.time(scaled(base, k));
    double total = 0;
    for (const PublishedRun& run : result.runs) {
      const auto steps = static_cast<std::size_t>(run.samples / cluster.run.global_batch_size);
      for (std::size_t i = 0; i < steps; ++i) total += p.step_seconds[i];
      total += static_cast<double>(run.evals) * p.eval_seconds;
    }
    return total;
  };
  // Effective rate between 0.01 and 100,000 TFLOP/s: predicted time grows with k = 1 / rate.
  double lo = 1e-5, hi = 1e2;
  if (predicted(lo) > observed)
    throw std::invalid_argument(result.dir.string() +
                                ": the runs are shorter than their communication and optimizer "
                                "alone; no compute rate fits");
  for (int i = 0; i < 200 && hi / lo > 1 + 1e-9; ++i) {
    const double mid = std::sqrt(lo * hi);
    (predicted(mid) < observed ? lo : hi) = mid;
  }
  const double k = std::sqrt(lo * hi);
  AcceleratorProfile profile = scaled(base, k);
  profile.run_start_seconds = run_start;
  const Prediction fitted = sim.time(profile);

  const double rate = 1.0 / k;  // TFLOP/s
  json derived = json::array(
      {"train cost per token and per squared token in the ratio of their FLOPs: 6 N_enc + 0.9 "
       "(H^2 + H V) per token (masked-LM head on 15% of tokens), 12 L H per squared token",
       "evaluation forward: 1/3 of the training FLOPs at the same rate",
       "optimizer: LAMB 50 and Adam 30 bytes per parameter (mlbert's kernels) at HBM " +
           std::to_string(sheet->memory_tbs) + " TB/s (datasheet) x " +
           std::to_string(kMemoryBandwidthFraction) + "; gradient norm passes at the same rate",
       "run start: mean over runs of the first evaluation interval minus the second",
       "no fixed time per micro-step or batch: one operating point cannot separate it"});
  for (const auto& note : cluster.notes) derived.push_back(note);
  json fit = {{"effective_train_tflops", rate},
              {"fraction_of_fp16_peak", rate / sheet->peak_tflops_fp16},
              {"run_start_seconds", run_start},
              {"runs", result.runs.size()},
              {"observed_olympic_seconds", result.olympic_seconds()},
              {"simulated_step_ms", fitted.mean_step.total() * 1e3},
              {"simulated_eval_ms", fitted.eval_seconds * 1e3}};
  profile.provenance = {{"kind", "calibrated"},
                        {"source", result.dir.string()},
                        {"command", options.command},
                        {"date", today()},
                        {"result",
                         {{"ruleset", result.ruleset},
                          {"nodes", cluster.network.nodes},
                          {"gpus_per_node", cluster.network.gpus_per_node},
                          {"global_batch_size", cluster.run.global_batch_size}}},
                        {"fit", fit},
                        {"derived", derived}};
  return profile;
}

}  // namespace mlbert::harness::simulate
