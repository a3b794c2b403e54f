// mlbert simulate: its speed (a whole 1,024-rank run, every rank's deal, and a 6-value sweep over
// nodes, on one core) and its accuracy against the published A100 results in ../shared.
//
// Design choice: speed is CPU time of this process (one thread) with the deal alone (Sampler +
// plan_exchange for the same run, the baseline) measured in the same run; accuracy keeps
// calibration and prediction apart: the profile is fitted to ONE single-node result and every
// other result is predicted from it, never fitted.
//   simulate_bench [SHARED_DIR]   (default: the build's ../shared)
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "simulate/calibrate.h"
#include "simulate/report.h"
#include "simulate/result_model.h"
#include "simulate/settings.h"
#include "simulate/simulator.h"

using namespace mlbert::harness;
using namespace mlbert::simulate;

namespace {

double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

SystemConfig system_with(const std::filesystem::path& file, const std::vector<Setting>& settings) {
  std::ifstream in(file);
  SimulatorSettings sim;
  return parse_system(apply_settings(nlohmann::json::parse(in), settings, sim, file.string()),
                      file);
}

// Speed: the deal alone (the baseline), the whole 1,024-rank run, a 6-value sweep over nodes.
void speed(const std::filesystem::path& source, const AcceleratorProfile& shipped) {
  const ClusterRun samsung =
      cluster_from_system(load_system((source / "systems/samsung_dgxa100_128x8.json").string()));
  const SimulationOptions options;
  double t0 = cpu_seconds();
  const LengthSource lengths =
      mlperf_bin_mix_lengths(samsung.run, options.bin_mix_rows, 10000, options.length_seed);
  const WorkCost tokens{1, 0, 0};  // the deal alone: which rank is slowest is all it needs
  const auto work = deal_micro_steps(lengths, samsung.run, samsung.world(), 8, tokens, 179);
  const double deal = cpu_seconds() - t0;
  t0 = cpu_seconds();
  const Prediction whole = predict(samsung, shipped, options);
  const double run = cpu_seconds() - t0;
  t0 = cpu_seconds();
  for (int nodes : {16, 32, 64, 128, 256, 512}) {
    const SystemConfig s = system_with(source / "systems/samsung_dgxa100_128x8.json",
                                       {parse_setting("nodes=" + std::to_string(nodes))});
    predict(cluster_from_system(s), shipped, options);
  }
  const double sweep = cpu_seconds() - t0;
  std::printf("speed (CPU seconds, one thread)\n");
  std::printf("  baseline: table + deal of 179 steps x 1,024 ranks x 16   %7.3f s\n", deal);
  std::printf(
      "  whole 1,024-rank run (%zu steps, every rank's deal)      %7.3f s  (%.2fx the "
      "deal; target < 2 s)\n",
      whole.step_seconds.size(), run, run / deal);
  std::printf(
      "  --sweep nodes=16,32,64,128,256,512 (128 to 4,096 ranks)  %7.3f s  (target < 10 s)\n",
      sweep);
  (void)work;
}

// A published result against its prediction with `profile`, adapted to the result's accelerator
// when `adapt` (a profile of the same silicon).
ResultComparison compared(const PublishedResult& r, const AcceleratorProfile& profile, bool adapt) {
  const ClusterRun cluster = cluster_from_result(r);
  SimulationOptions o = simulation_options_for(r, SimulationOptions());
  time_longest_run(r, r.global_batch_size, o);
  return compare_with_result(
      r, predict(cluster, adapt ? adapt_profile(profile, cluster.accelerator) : profile, o));
}

// The A100 results: a profile calibrated on one single-node result predicting the others, and
// the two 128-node system files.
void a100_accuracy(const std::filesystem::path& source, const std::filesystem::path& fixtures,
                   const CalibrationOptions& calibration) {
  const auto calibration_dir = fixtures / "mlperf_logs_early/v1.0/NVIDIA/dgxa100_ngc21.05_pytorch";
  AcceleratorProfile profile = calibrate(read_published_result(calibration_dir), calibration);
  profile.path = "calibrated in memory";
  std::printf("\ncalibration (fitted): %s -> tensor rate %.1f TFLOP/s, run start %.2f s\n",
              calibration_dir.string().c_str(),
              profile.provenance["fit"]["tensor_tflops"].get<double>(), profile.run_start_seconds);
  std::printf("\n%-58s %10s %10s %8s\n", "prediction", "published", "predicted", "error");
  const char* results[] = {
      "mlperf_logs_early/v1.0/NVIDIA/dgxa100_ngc21.05_pytorch",
      "mlperf_logs_early/v1.0/Supermicro/as-2124gq-nart+",
      "mlperf_logs/v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch",
      "mlperf_logs/v1.1/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch",
      "mlperf_logs/v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch",
  };
  for (const char* rest : results) {
    const ResultComparison c = compared(read_published_result(fixtures / rest), profile, false);
    std::printf("%-58s %9.2fs %9.2fs %+7.1f%%%s\n", rest, c.published_olympic, c.predicted_olympic,
                (c.predicted_olympic / c.published_olympic - 1) * 100,
                rest == results[0] ? "  (calibration)" : "");
  }
  const SimulationOptions options;
  const auto system = [&](const char* name) {
    return cluster_from_system(load_system((source / "systems" / name).string()));
  };
  const Prediction s = predict(system("samsung_dgxa100_128x8.json"), profile, options);
  const Prediction n = predict(system("dgxa100_128x8.json"), profile, options);
  std::printf("%-58s %9s %9.2fs\n", "--system samsung_dgxa100_128x8 (v1.1 25.06 s, v2.0 22.32 s)",
              "", s.total_seconds);
  std::printf("%-58s %9.2fs %9.2fs %+7.1f%%\n", "--system dgxa100_128x8 (NVIDIA v1.1, 128 nodes)",
              33.45, n.total_seconds, (n.total_seconds / 33.45 - 1) * 100);
  std::printf("%-58s %10.3f %10.3f %+7.1f%%\n", "Samsung / NVIDIA at 128 nodes (v1.1)",
              25.06 / 33.45, s.total_seconds / n.total_seconds,
              (s.total_seconds / n.total_seconds / (25.06 / 33.45) - 1) * 100);
}

// Hopper: each profile calibrated on its one result, adapted to the other chip (the same
// silicon: H100 SXM and H200 differ in HBM only) and predicting the other's result.
void hopper_accuracy(const std::filesystem::path& fixtures, const CalibrationOptions& calibration) {
  const char* hopper[] = {"mlperf_logs/v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch",
                          "mlperf_logs/v4.0/NVIDIA/h200_ngc23.09_pytorch"};
  std::printf("\n%-58s %10s %10s %8s\n", "Hopper: calibrated on one, predicting the other",
              "published", "predicted", "error");
  for (int from = 0; from < 2; ++from) {
    const PublishedResult source_result = read_published_result(fixtures / hopper[from]);
    AcceleratorProfile fitted = calibrate(source_result, calibration);
    fitted.path = "calibrated in memory";
    const ResultComparison c =
        compared(read_published_result(fixtures / hopper[1 - from]), fitted, true);
    std::printf("%-58s %9.2fs %9.2fs %+7.1f%%  (profile fitted to %s: %.1f TFLOP/s)\n",
                hopper[1 - from], c.published_olympic, c.predicted_olympic,
                (c.predicted_olympic / c.published_olympic - 1) * 100,
                source_result.dir.parent_path().parent_path().filename().string().c_str(),
                fitted.provenance["fit"]["tensor_tflops"].get<double>());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path source = MLBERT_SOURCE_DIR;
  const std::filesystem::path shared = argc > 1 ? argv[1] : MLBERT_SHARED_DIR;
  speed(source, load_profile(source / "systems/profiles/a100-sxm4-80gb.json"));

  // ---- accuracy: calibrate on one result, predict the others
  const auto fixtures = shared / "fixtures";
  if (!std::filesystem::exists(fixtures)) {
    std::printf("\n%s is absent: no accuracy table\n", fixtures.string().c_str());
    return 0;
  }
  CalibrationOptions calibration;
  calibration.command = "simulate_bench";
  a100_accuracy(source, fixtures, calibration);
  hopper_accuracy(fixtures, calibration);
  return 0;
}
