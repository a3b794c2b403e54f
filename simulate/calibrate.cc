// Fitting an accelerator profile to one published result, or two (see calibrate.h).
#include "simulate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <memory>
#include <stdexcept>

#include "bert/parameters.h"
#include "simulate/device_bench.h"
#include "simulate/kernels.h"
#include "simulate/result_model.h"

namespace mlbert::simulate {
namespace {

using nlohmann::json;

AcceleratorProfile with_tensor_rate(const AcceleratorProfile& base, double flops_per_second) {
  AcceleratorProfile p = base;
  p.tensor_flops_per_second = flops_per_second;
  return p;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof(text), "%Y-%m-%d", std::gmtime(&now));
  return text;
}

// Tensor rates searched: 0.01 to 100,000 TFLOP/s.
constexpr double kLowestRate = 1e10, kHighestRate = 1e17;

// The tensor rate where `too_slow` turns false (true below it, false above), bisected on a log
// scale between kLowestRate and kHighestRate to a relative 1e-9.
template <typename TooSlow>
double bisect_rate(TooSlow too_slow) {
  double lo = kLowestRate, hi = kHighestRate;
  for (int i = 0; i < 200 && hi / lo > 1 + 1e-9; ++i) {
    const double mid = std::sqrt(lo * hi);
    (too_slow(mid) ? lo : hi) = mid;
  }
  return std::sqrt(lo * hi);
}

// What a device check's measurement is fitted with: mlbert's traced bert-large at the measured
// copy bandwidth and SMs, issued from C++ as bert_cuda_bench issues it.
struct MeasuredFit {
  explicit MeasuredFit(const DeviceBench& bench)
      : plan(trace_kernel_plan(bert::BertConfig::preset("bert-large"))) {
    for (const auto& info : bert::bert_parameter_layout(bert::BertConfig::preset("bert-large")))
      parameters += static_cast<double>(info.numel);
    rates.memory_bytes_per_second = bench.copy_bytes_per_second;
    rates.multiprocessors = bench.multiprocessors;
    rates.host_seconds_per_kernel = kDriverLaunchSeconds;
  }
  // Forward and backward of one micro-batch at a tensor rate.
  double fwd_bwd(double tensor, const MicroBatchShape& shape) const {
    KernelRates r = rates;
    r.tensor_flops_per_second = tensor;
    return KernelPlan::time(plan.train, shape, r).seconds;
  }

  KernelPlan plan;
  KernelRates rates;
  double parameters = 0;
};

// Every measured step against its prediction at the fitted rate.
json measured_checks(const DeviceBench& bench, const DeviceBenchStep& chosen,
                     const MeasuredFit& fit, double tensor) {
  json checks = json::array();
  for (const DeviceBenchStep& s : bench.steps) {
    const double predicted = fit.fwd_bwd(tensor, s.shape);
    checks.push_back({{"dtype", s.dtype},
                      {"mix", s.mix},
                      {"fitted", &s == &chosen},
                      {"measured_fwd_bwd_ms", s.fwd_bwd_seconds * 1e3},
                      {"predicted_fwd_bwd_ms", predicted * 1e3},
                      {"error", predicted / s.fwd_bwd_seconds - 1}});
  }
  return checks;
}

json measured_provenance(const std::filesystem::path& bench_file,
                         const BenchCalibrationOptions& options, const DeviceBench& bench,
                         const std::optional<AcceleratorDatasheet>& sheet, double tensor,
                         json checks) {
  return {
      {"kind", "measured"},
      {"source", bench_file.string()},
      {"command", options.command},
      {"date", today()},
      {"device", bench.device},
      {"fit",
       {{"tensor_tflops", tensor / 1e12},
        {"fraction_of_gemm_ceiling", tensor / bench.gemm_flops_per_second},
        {"fraction_of_fp16_peak", sheet ? tensor / (sheet->peak_tflops_fp16 * 1e12) : 0.0},
        {"fitted_to", options.dtype + " " + options.mix}}},
      {"checks", std::move(checks)},
      {"derived",
       {"kernels: mlbert's model traced, issued from C++ (3 us a kernel), GEMM and attention at "
        "the fitted tensor rate, wave-quantized over the device's " +
            std::to_string(bench.multiprocessors) + " SMs",
        "memory rate: the measured device-to-device copy, " +
            std::to_string(bench.copy_bytes_per_second / 1e9) + " GB/s read + write",
        "optimizer: the measured global norm + LAMB of the " + options.dtype + " " + options.mix +
            " step per parameter; Adam at 30/50 of it (mlbert's kernels' bytes)",
        "run start: not measured by the bench; " + std::to_string(options.run_start_seconds) +
            " s as stated"}}};
}

}  // namespace

AcceleratorProfile measured_profile(const std::filesystem::path& bench_file,
                                    const BenchCalibrationOptions& options) {
  const DeviceBench bench = read_device_bench(bench_file);
  const auto chosen = std::find_if(
      bench.steps.begin(), bench.steps.end(),
      [&](const DeviceBenchStep& s) { return s.dtype == options.dtype && s.mix == options.mix; });
  if (chosen == bench.steps.end())
    throw std::runtime_error(bench_file.string() + ": steps: no " + options.dtype + " " +
                             options.mix + " measurement to fit");
  const std::string accelerator = options.accelerator.empty() ? bench.device : options.accelerator;
  const auto sheet = datasheet_for(accelerator);
  const MeasuredFit fit(bench);
  if (fit.fwd_bwd(kHighestRate, chosen->shape) > chosen->fwd_bwd_seconds)
    throw std::invalid_argument(
        bench_file.string() + ": the " + options.dtype + " " + options.mix +
        " forward+backward measured is shorter than its memory-bound kernels at the measured copy "
        "bandwidth and their issue alone; no tensor rate fits");
  const double tensor = bisect_rate(
      [&](double rate) { return fit.fwd_bwd(rate, chosen->shape) > chosen->fwd_bwd_seconds; });
  if (sheet && tensor > sheet->peak_tflops_fp16 * 1e12)
    throw std::invalid_argument(
        bench_file.string() + ": the fit needs " + std::to_string(tensor / 1e12) +
        " TFLOP/s, above the " + std::to_string(sheet->peak_tflops_fp16) +
        " TFLOP/s dense peak of \"" + accelerator + "\"; no profile written");

  AcceleratorProfile p;
  p.accelerator = accelerator;
  p.matches = {sheet ? std::string(sheet->match) : accelerator};
  p.model = "bert-large";
  p.provenance_kind = "measured";
  p.tensor_flops_per_second = tensor;
  p.memory_bytes_per_second = bench.copy_bytes_per_second;
  p.multiprocessors = bench.multiprocessors;
  // The bench's optimizer: the global gradient norm and mlbert's LAMB; Adam moves 30 of LAMB's 50
  // bytes per parameter in mlbert's kernels.
  p.optimizer_seconds_per_parameter_lamb = chosen->optimizer_seconds / fit.parameters;
  p.optimizer_seconds_per_parameter_adam =
      p.optimizer_seconds_per_parameter_lamb * kAdamBytesPerParameter / kLambBytesPerParameter;
  p.run_start_seconds = options.run_start_seconds;
  p.provenance = measured_provenance(bench_file, options, bench, sheet, tensor,
                                     measured_checks(bench, *chosen, fit, tensor));
  return p;
}

namespace {

// One published result prepared for a fit: the base profile of its accelerator (datasheet memory
// rate and SMs), its runs simulated once, the seconds they took after their run start, and the
// steps they trained.
struct FitCase {
  const PublishedResult* result = nullptr;
  ClusterRun cluster;
  AcceleratorDatasheet sheet{};
  AcceleratorProfile base;
  SimulationOptions simulation;
  std::unique_ptr<Simulation> sim;
  double run_start = 0;
  std::string run_start_note;
  double observed = 0;  // seconds of all runs after their run start
  double steps = 0;     // steps of all runs

  // Seconds of all runs after their run start, simulated at a tensor rate with no fixed cost.
  double predicted(double flops_per_second) const {
    const Prediction p = sim->time(with_tensor_rate(base, flops_per_second));
    double total = 0;
    for (const PublishedRun& run : result->runs) {
      const auto n = static_cast<std::size_t>(run.steps(cluster.run.global_batch_size));
      for (std::size_t i = 0; i < n; ++i) total += p.step_seconds[i];
      total += static_cast<double>(run.evals) * p.eval_seconds;
    }
    return total;
  }
  // The fixed cost per step that makes the simulated runs at this rate last as the published.
  double fixed_step(double flops_per_second) const {
    return (observed - predicted(flops_per_second)) / steps;
  }
  double samples_per_gpu_step() const {
    return static_cast<double>(cluster.run.global_batch_size) /
           (cluster.network.nodes * cluster.network.gpus_per_node);
  }
};

FitCase prepare(const PublishedResult& result, const CalibrationOptions& options) {
  FitCase c;
  c.result = &result;
  c.cluster = cluster_from_result(result);
  if (!looks_like_gpu(c.cluster.accelerator))
    throw std::invalid_argument(result.dir.string() + ": accelerator \"" + c.cluster.accelerator +
                                "\" is not a GPU; simulate models GPU clusters only");
  const auto sheet = datasheet_for(c.cluster.accelerator);
  if (!sheet)
    throw std::invalid_argument(result.dir.string() +
                                ": no datasheet figures (HBM bandwidth) "
                                "for accelerator \"" +
                                c.cluster.accelerator +
                                "\"; the optimizer and norm passes cannot be derived");
  c.sheet = *sheet;
  // The base profile: datasheet memory rate and SMs; the fit sets the tensor rate.
  AcceleratorProfile& base = c.base;
  base.accelerator = c.cluster.accelerator;
  base.matches = {sheet->match};
  base.model = "bert-large";
  base.provenance_kind = "calibrated";
  base.tensor_flops_per_second = sheet->peak_tflops_fp16 * 1e12 / 2;
  base.multiprocessors = sheet->multiprocessors;
  base.memory_bytes_per_second = sheet->memory_tbs * 1e12 * kMemoryBandwidthFraction;
  base.optimizer_seconds_per_parameter_lamb = kLambBytesPerParameter / base.memory_bytes_per_second;
  base.optimizer_seconds_per_parameter_adam = kAdamBytesPerParameter / base.memory_bytes_per_second;

  // Run start: the first evaluation interval's excess over the second (same steps, one eval each).
  // That holds only where evaluations are evenly spaced from sample 0, the cadence of rules 1.0.0
  // and later. Earlier rounds' logs (0.x) put the first evaluation elsewhere (v0.7 NVIDIA: at ~3M
  // samples, then every ~500K) and carry no sample count per evaluation, so the run start cannot
  // be separated there: it is taken as kUnseparatedRunStartSeconds, and the fit says so. The
  // error this leaves is the difference from the true start over the whole run (~0.1% of a
  // single node's ~50 minutes), absorbed by the fitted rate.
  const bool even_cadence = result.ruleset.rfind("0.", 0) != 0;
  double start_sum = 0;
  int start_runs = 0;
  std::int64_t max_steps = 0, max_evals = 0;
  for (const PublishedRun& run : result.runs) {
    if (const auto excess = run.run_start_excess(); even_cadence && excess) {
      start_sum += *excess;
      ++start_runs;
    }
    max_steps = std::max(max_steps, run.steps(c.cluster.run.global_batch_size));
    max_evals = std::max(max_evals, run.evals);
    c.steps += static_cast<double>(run.steps(c.cluster.run.global_batch_size));
  }
  if (even_cadence && start_runs == 0)
    throw std::invalid_argument(result.dir.string() +
                                ": no run has two evaluations; the run start cannot be separated");
  c.run_start = even_cadence ? start_sum / start_runs : kUnseparatedRunStartSeconds;
  c.run_start_note =
      even_cadence
          ? std::string("run start: mean over runs of the first evaluation interval minus the "
                        "second")
          : "run start: not separable from these logs (ruleset " + result.ruleset +
                ": the first evaluation is not one cadence interval from sample 0, and no "
                "evaluation states its samples); taken as " +
                std::to_string(kUnseparatedRunStartSeconds) +
                " s, the run start fitted to the v1.0 single-node NVIDIA result";

  c.simulation = simulation_options_for(result, options.simulation);
  c.simulation.steps = max_steps;
  c.simulation.evals = max_evals;
  c.sim = std::make_unique<Simulation>(c.cluster, base, c.simulation);
  for (const PublishedRun& run : result.runs) c.observed += run.seconds - c.run_start;
  return c;
}

// A rate above the datasheet's dense fp16 peak is no accelerator: the model of these runs (the
// launch line read, the samples and evaluations found) is wrong, and a profile would mislead.
void check_below_peak(const FitCase& c, double flops_per_second) {
  if (flops_per_second > c.sheet.peak_tflops_fp16 * 1e12)
    throw std::invalid_argument(
        c.result->dir.string() + ": the fit needs a tensor rate of " +
        std::to_string(flops_per_second / 1e12) + " TFLOP/s, above the " +
        std::to_string(c.sheet.peak_tflops_fp16) + " TFLOP/s dense fp16 peak of \"" +
        c.cluster.accelerator +
        "\": the runs are faster than the simulated kernels allow; no profile written");
}

// The profile at the fitted rate and fixed cost, with its provenance: the source, the fit and
// every derived constant. `second` is the other result of a two-result fit (or null).
AcceleratorProfile fitted_profile(const FitCase& c, double flops_per_second, double fixed_step,
                                  const FitCase* second, const CalibrationOptions& options) {
  AcceleratorProfile profile = with_tensor_rate(c.base, flops_per_second);
  profile.run_start_seconds = c.run_start;
  profile.fixed_step_seconds = fixed_step;
  const Prediction fitted = c.sim->time(profile);
  const double rate = flops_per_second / 1e12;  // TFLOP/s
  json derived = json::array(
      {"kernels: mlbert's model traced; GEMM and attention kernels at the fitted tensor rate, "
       "wave-quantized over the datasheet's " +
           std::to_string(c.sheet.multiprocessors) +
           " SMs; memory-bound kernels, the optimizer and the gradient passes at HBM " +
           std::to_string(c.sheet.memory_tbs) + " TB/s (datasheet) x " +
           std::to_string(kMemoryBandwidthFraction),
       "host issue per kernel and padding as the run's launch line says (the simulation "
       "options of the published implementation)",
       "optimizer: LAMB 50 and Adam 30 bytes per parameter (mlbert's kernels) at the memory rate",
       c.run_start_note});
  if (second)
    derived.push_back(
        "fitted: the tensor rate and a fixed cost per step, together, so that both results' "
        "simulated runs last as long as their published ones (" +
        std::to_string(std::llround(c.samples_per_gpu_step())) + " and " +
        std::to_string(std::llround(second->samples_per_gpu_step())) +
        " samples per GPU and step; the two taken as one implementation); the run start is "
        "this result's");
  else
    derived.push_back("fitted: the tensor rate only; fixed per-step costs come from the traced "
                      "kernels");
  for (const auto& note : c.cluster.notes) derived.push_back(note);
  for (const auto& note : c.simulation.host_notes) derived.push_back(note);
  json fit = {{"tensor_tflops", rate},
              {"fraction_of_fp16_peak", rate / c.sheet.peak_tflops_fp16},
              {"host_bound_ms_per_step", fitted.host_bound * 1e3},
              {"run_start_seconds", c.run_start},
              {"runs", c.result->runs.size()},
              {"observed_olympic_seconds", c.result->olympic_seconds()},
              {"simulated_step_ms", fitted.mean_step.total() * 1e3},
              {"simulated_eval_ms", fitted.eval_seconds * 1e3}};
  if (second) {
    fit["fixed_step_ms"] = fixed_step * 1e3;
    fit["implementation"] = describe_implementation(c.simulation);
    const Prediction other = second->sim->time(profile);
    fit["second"] = {{"source", second->result->dir.string()},
                     {"nodes", second->cluster.network.nodes},
                     {"gpus_per_node", second->cluster.network.gpus_per_node},
                     {"global_batch_size", second->cluster.run.global_batch_size},
                     {"runs", second->result->runs.size()},
                     {"run_start_seconds", second->run_start},
                     {"observed_olympic_seconds", second->result->olympic_seconds()},
                     {"simulated_step_ms", other.mean_step.total() * 1e3}};
    for (const auto& note : second->cluster.notes) derived.push_back("second result: " + note);
  }
  profile.provenance = {{"kind", "calibrated"},
                        {"source", c.result->dir.string()},
                        {"command", options.command},
                        {"date", today()},
                        {"result",
                         {{"ruleset", c.result->ruleset},
                          {"nodes", c.cluster.network.nodes},
                          {"gpus_per_node", c.cluster.network.gpus_per_node},
                          {"global_batch_size", c.cluster.run.global_batch_size}}},
                        {"fit", fit},
                        {"derived", derived}};
  return profile;
}

}  // namespace

AcceleratorProfile calibrate(const PublishedResult& result, const CalibrationOptions& options) {
  const FitCase c = prepare(result, options);
  // The predicted time falls as the rate grows.
  if (c.predicted(kHighestRate) > c.observed)
    throw std::invalid_argument(result.dir.string() +
                                ": the runs are shorter than their memory-bound kernels, "
                                "communication and optimizer alone; no tensor rate fits");
  const double rate = bisect_rate([&](double mid) { return c.predicted(mid) > c.observed; });
  check_below_peak(c, rate);
  return fitted_profile(c, rate, 0, nullptr, options);
}

AcceleratorProfile calibrate(const PublishedResult& result, const PublishedResult& second,
                             const CalibrationOptions& options) {
  const FitCase a = prepare(result, options);
  const FitCase b = prepare(second, options);
  const auto both = result.dir.string() + " and " + second.dir.string();
  if (std::string(a.sheet.match) != b.sheet.match)
    throw std::invalid_argument(both + ": different accelerators (\"" + a.cluster.accelerator +
                                "\", \"" + b.cluster.accelerator +
                                "\"); a profile is fitted to results of one accelerator");
  if (result.ruleset != second.ruleset)
    throw std::invalid_argument(both + ": different rounds (" + result.ruleset + ", " +
                                second.ruleset +
                                "); a fixed cost per step is fitted to one implementation, "
                                "so to results of one round");
  const double ratio = std::max(a.samples_per_gpu_step(), b.samples_per_gpu_step()) /
                       std::min(a.samples_per_gpu_step(), b.samples_per_gpu_step());
  if (!(ratio >= 1.25))
    throw std::invalid_argument(
        both + ": " + std::to_string(std::llround(a.samples_per_gpu_step())) + " and " +
        std::to_string(std::llround(b.samples_per_gpu_step())) +
        " samples per GPU and step are too close (under 1.25x apart) to separate a fixed cost "
        "per step from the tensor rate; calibrate on one of them");
  if (describe_implementation(a.simulation) != describe_implementation(b.simulation))
    throw std::invalid_argument(both + ": the two ran differently as their logs read (" +
                                describe_implementation(a.simulation) + "; against " +
                                describe_implementation(b.simulation) +
                                "); a fixed cost per step is fitted to one implementation");
  // At the fitted rate both results ask for the same fixed cost: the difference of the two is
  // monotone in the rate (each fixed cost grows with the rate, the one of more work per step
  // faster), so bisect on its sign.
  const auto gap = [&](double rate) { return a.fixed_step(rate) - b.fixed_step(rate); };
  const double gap_lo = gap(kLowestRate), gap_hi = gap(kHighestRate);
  if ((gap_lo > 0) == (gap_hi > 0))
    throw std::invalid_argument(both +
                                ": no tensor rate gives the two results the same fixed cost "
                                "per step; they do not look like one implementation");
  const double rate = bisect_rate([&](double mid) { return (gap(mid) > 0) == (gap_lo > 0); });
  check_below_peak(a, rate);
  const double fixed = a.fixed_step(rate);
  if (fixed < 0)
    throw std::invalid_argument(
        both + ": the fit gives a negative fixed cost per step (" + std::to_string(fixed * 1e3) +
        " ms at " + std::to_string(rate / 1e12) +
        " TFLOP/s): the larger batch is the slower per sample, which a fixed cost does not "
        "explain; calibrate on one of them");
  return fitted_profile(a, rate, fixed, &b, options);
}

}  // namespace mlbert::simulate
