// mlbert simulate on the published result logs in ../shared: reading a folder (system.json, the
// MLLOG records, the launch line), calibrating a profile from the single-node NVIDIA result, and
// that calibration reproducing the result it was fitted to.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <regex>

#include "simulate/calibrate.h"
#include "simulate/report.h"
#include "simulate/result_model.h"
#include "tests/common/shared_fixtures.h"

namespace {

using namespace mlbert::harness;
using namespace mlbert::simulate;

std::filesystem::path early(const std::string& rest) {
  return mlbert::test::fixtures_dir() / "mlperf_logs_early" / rest;
}
std::filesystem::path logs(const std::string& rest) {
  return mlbert::test::fixtures_dir() / "mlperf_logs" / rest;
}

}  // namespace

TEST_CASE("a published single-node result reads as 1 x 8 A100 with its runs and launch flags",
          "[simulate]") {
  const PublishedResult r = read_published_result(early("v1.0/NVIDIA/dgxa100_ngc21.05_pytorch"));
  CHECK(r.ruleset == "1.0.0");
  REQUIRE(r.runs.size() == 10);
  CHECK(r.global_batch_size == 448);
  CHECK(r.runs[0].samples == 3000256);
  CHECK(r.runs[0].evals == 20);
  CHECK(r.runs[0].seconds == Approx(1433.884));
  CHECK(r.runs[0].status == "success");
  CHECK(r.launch_line.exchange_padding);
  CHECK(r.launch_line.eval_batch_size == 16);
  const ClusterRun c = cluster_from_result(r);
  CHECK(c.network.nodes == 1);
  CHECK(c.network.gpus_per_node == 8);
  CHECK(c.network.nvlink_gbs == 300);
  CHECK(c.run.per_rank_batch == 56);
  CHECK(c.run.load_balancing == LoadBalancing::global_exchange);
  CHECK(c.run.optimizer.kind == OptimizerKind::lamb);
  // Its launch line: apex's DistributedFusedLAMB over the node, eager PyTorch, unpadded.
  CHECK(r.launch.gradient_path.value == GradientPath::distributed_lamb);
  CHECK(r.launch.host_issue.value != HostIssue::cuda_graphs);
  CHECK_FALSE(r.launch.padded());
  const SimulationOptions o = simulation_options_for(r, SimulationOptions());
  CHECK(o.optimizer_shard == OptimizerShard::node);
  CHECK(o.host_seconds_per_kernel == Approx(kPytorchEagerOpSeconds + kDriverLaunchSeconds));
}

TEST_CASE("Samsung's result reads as 128 x 8 with 4 HDR NICs, stratified node exchange, Adam",
          "[simulate]") {
  const PublishedResult r =
      read_published_result(logs("v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch"));
  const ClusterRun c = cluster_from_result(r);
  CHECK(c.network.nodes == 128);
  CHECK(c.network.nics_per_node == 4);
  CHECK(c.network.nic_gbs_per_node == 100);
  CHECK(c.run.per_rank_batch == 16);
  CHECK(c.run.sampler == SamplerKind::stratified);
  CHECK(c.run.stratified_quotas == std::vector<int>{6, 3, 2, 5});
  CHECK(c.run.load_balancing == LoadBalancing::node_exchange);
  CHECK(c.run.clipping == ClippingMode::bucket_before_allreduce);
  CHECK(c.run.optimizer.kind == OptimizerKind::adamw);
  for (const auto& run : r.runs) CHECK(run.samples == 2932736);
  // Its own gradient path: overlapped 25 MiB fp16 buckets (DDP), each normed and scaled before
  // its allreduce; --allreduce_post_accumulation is on the line but only --baseline uses it.
  CHECK(r.launch.gradient_path.value != GradientPath::distributed_lamb);
  CHECK_FALSE(r.launch_line.baseline);
  CHECK(r.launch.host_issue.value != HostIssue::cuda_graphs);
  CHECK(c.run.bucket_mb == 50);  // 25 MiB of fp16 in mlbert's f32 bucket units
  const SimulationOptions o = simulation_options_for(r, SimulationOptions());
  CHECK(o.optimizer_shard == OptimizerShard::none);
  CHECK(o.overlap);
  CHECK(o.gradient_wire_bytes == 2);
  CHECK(o.bucket_norm_bytes_per_element == kDdpBucketNormBytes);
  CHECK(o.gradient_pass_bytes_per_parameter == kAmpUnscaleBytes);
  // Its code's host side, from the same line: unpadding and the dense sequence output read back,
  // the DDP hook reads each bucket's clip coefficient back, apex amp's scaler reads its flag.
  CHECK(r.launch_line.unpad);
  CHECK(r.launch_line.unpad_fmha);
  CHECK(r.launch_line.dense_seq_output);
  CHECK(r.launch_line.use_apex_amp);
  CHECK(o.sync_per_bucket);
  CHECK(o.sync_after_backward);
  CHECK(o.forward_broadcast_bytes > 150e6);
}

TEST_CASE("a multi-node result's NICs: as host_networking states them, else a named default",
          "[simulate]") {
  PublishedResult r =
      read_published_result(logs("v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch"));
  auto has_note = [](const ClusterRun& c, const std::string& text) {
    return std::any_of(c.notes.begin(), c.notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  // Stated in another submitter's words.
  r.system["host_networking"] = "8x 200Gb/s HDR InfiniBand";
  ClusterRun c = cluster_from_result(r);
  CHECK(c.network.nics_per_node == 8);
  CHECK(c.network.nic_gbs_per_node == 200);
  CHECK_FALSE(has_note(c, "host_networking"));
  // A speed without a count: one NIC, said.
  r.system["host_networking"] = "Compute: InfiniBand HDR 200Gb/s";
  c = cluster_from_result(r);
  CHECK(c.network.nics_per_node == 1);
  CHECK(c.network.nic_gbs_per_node == 25);
  CHECK(has_note(c, "no count: one NIC per node"));
  // Nothing stated: one NIC per GPU at the reference system's rate (DGX A100: HDR; Hopper: NDR).
  r.system["host_networking"] = "";
  c = cluster_from_result(r);
  CHECK(c.network.nics_per_node == 8);
  CHECK(c.network.nic_gbs_per_node == 8 * 200 / 8);
  CHECK(has_note(c, "default one 200 Gb/s NIC per GPU"));
  r.system["accelerator_model_name"] = "NVIDIA H100 80GB HBM3";
  c = cluster_from_result(r);
  CHECK(c.network.nic_gbs_per_node == 8 * 400 / 8);
  CHECK(has_note(c, "default one 400 Gb/s NIC per GPU"));
}

namespace {

// The olympic mean of `r`'s runs as `profile`, fitted to them, times them: within 1%.
void check_reproduces(const PublishedResult& r, const AcceleratorProfile& profile) {
  ClusterRun cluster = cluster_from_result(r);
  SimulationOptions sim = simulation_options_for(r, SimulationOptions());
  time_longest_run(r, r.global_batch_size, sim);
  AcceleratorProfile located = profile;
  located.path = "calibrated.json";
  const ResultComparison c = compare_with_result(r, predict(cluster, located, sim));
  INFO("published " << c.published_olympic << " s, predicted " << c.predicted_olympic << " s");
  CHECK(c.predicted_olympic == Approx(c.published_olympic).epsilon(0.01));
}

}  // namespace

TEST_CASE("a profile calibrated from one result reproduces that result's time", "[simulate]") {
  const PublishedResult r = read_published_result(early("v1.0/NVIDIA/dgxa100_ngc21.05_pytorch"));
  CalibrationOptions options;
  options.command = "test";
  const AcceleratorProfile profile = calibrate(r, options);
  CHECK(profile.provenance_kind == "calibrated");
  CHECK(profile.matches_accelerator("NVIDIA A100-SXM4-80GB (400W)"));
  const double rate = profile.provenance["fit"]["tensor_tflops"].get<double>();
  CHECK(rate > 50);   // a physically possible A100 rate for BERT-large
  CHECK(rate < 312);  // below the fp16 peak
  CHECK(profile.run_start_seconds > 0);
  CHECK(profile.run_start_seconds < 10);

  check_reproduces(r, profile);
}

TEST_CASE("results that simulate cannot model are refused, not guessed", "[simulate]") {
  CHECK_FALSE(looks_like_gpu("Graphcore IPU GC200"));
  // Said before the logs are read: an IPU's logs need not have the GPU implementations' records.
  CHECK_THROWS_WITH(
      read_published_result(logs("v1.1/Graphcore/ipu-pod16-POPART-open")),
      Catch::Contains("system.json: accelerator \"") && Catch::Contains("is not a GPU"));
  // And by what models a result read before its system was changed.
  PublishedResult ipu = read_published_result(logs("v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch"));
  ipu.system["accelerator_model_name"] = "Graphcore IPU GC200";
  CHECK_THROWS_WITH(cluster_from_result(ipu), Catch::Contains("is not a GPU"));
  CalibrationOptions options;
  CHECK_THROWS_WITH(calibrate(ipu, options), Catch::Contains("is not a GPU"));
}

TEST_CASE("steps skipped for a loss-scale overflow are counted as the logs' own step counts say",
          "[simulate]") {
  // Samsung's run_pretraining.py does not advance global_step on an overflow (train_samples is
  // global_step x GBS) and prints, after the run, "(epoch, training_steps)" with every step run:
  // the skipped steps are that count less the logged samples' steps, in every run of both rounds.
  int runs = 0;
  for (const char* round : {"v1.1", "v2.0"}) {
    const PublishedResult r =
        read_published_result(logs(std::string(round) + "/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch"));
    for (const PublishedRun& run : r.runs) {
      INFO(run.file.string());
      std::ifstream in(run.file);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::smatch m;
      REQUIRE(std::regex_search(text, m, std::regex(R"(\(1, (\d{1,6})\.0\) \{'final_loss')")));
      const std::int64_t trained = std::stoll(m.str(1));
      CHECK(run.skipped_steps > 0);
      CHECK(run.steps(r.global_batch_size) == trained);
      ++runs;
    }
    // And they are timed: the same runs without them are predicted shorter.
    ClusterRun cluster = cluster_from_result(r);
    SimulationOptions sim = simulation_options_for(r, SimulationOptions());
    time_longest_run(r, r.global_batch_size, sim);
    const AcceleratorProfile profile =
        *find_profile(mlbert::test::source_dir() / "systems" / "profiles", cluster.accelerator);
    const Prediction p = predict(cluster, profile, sim);
    PublishedResult unskipped = r;
    for (PublishedRun& run : unskipped.runs) run.skipped_steps = 0;
    CHECK(compare_with_result(r, p).predicted_olympic >
          compare_with_result(unskipped, p).predicted_olympic * 1.02);
    CHECK(std::any_of(cluster.notes.begin(), cluster.notes.end(), [](const std::string& n) {
      return n.find("loss-scale overflows:") != std::string::npos;
    }));
  }
  CHECK(runs == 20);
  // NVIDIA's logs announce none.
  for (const PublishedRun& run :
       read_published_result(early("v1.0/NVIDIA/dgxa100_ngc21.05_pytorch")).runs)
    CHECK(run.skipped_steps == 0);
}

TEST_CASE("a round without an evaluation cadence from sample 0 calibrates with a stated run start",
          "[simulate]") {
  // v0.7 NVIDIA on a DGX-2H: the first evaluation at ~3M samples, the next ~500K later, and every
  // eval_accuracy says epoch_num 1; "first interval minus the second" would make the run start
  // ~2,300 s of a ~2,800 s run and the fitted tensor rate 2.7x the V100's peak (refused). The run
  // start is instead the stated constant, and the rate is fitted to the rest.
  const PublishedResult r = read_published_result(early("v0.7/NVIDIA/dgx2h_ngc20.06_pytorch"));
  REQUIRE(r.ruleset == "0.7.0");
  CalibrationOptions options;
  const AcceleratorProfile p = calibrate(r, options);
  CHECK(p.run_start_seconds == kUnseparatedRunStartSeconds);
  // A V100's dense fp16 peak is 125 TFLOP/s; v0.7's eager PyTorch reached a fraction of it.
  CHECK(p.tensor_flops_per_second > 20e12);
  CHECK(p.tensor_flops_per_second < 80e12);
  CHECK(p.provenance["result"]["ruleset"] == "0.7.0");
  CHECK_THAT(p.provenance["derived"].dump(),
             Catch::Contains("run start: not separable from these logs (ruleset 0.7.0"));
  check_reproduces(r, p);  // and the fit reproduces the runs it was fitted to
}

TEST_CASE("a fit above the accelerator's peak is refused, not written", "[simulate]") {
  // The calibration result with every time cut to 45%: only a tensor rate above the A100's
  // 312 TFLOP/s could make the simulated runs that short.
  PublishedResult r = read_published_result(early("v1.0/NVIDIA/dgxa100_ngc21.05_pytorch"));
  for (PublishedRun& run : r.runs) {
    run.seconds *= 0.45;
    for (double& t : run.eval_times) t *= 0.45;
  }
  CalibrationOptions options;
  CHECK_THROWS_WITH(calibrate(r, options),
                    Catch::Contains("above the 312.000000 TFLOP/s dense fp16 peak") &&
                        Catch::Contains("no profile written"));
}

namespace {

// `r` with its runs' times replaced by what `truth` simulates for them (from the run start that
// calibration reads off their evaluations): a result whose true rate and fixed cost are known.
PublishedResult timed_as(PublishedResult r, const AcceleratorProfile& truth) {
  double start = 0;
  for (const PublishedRun& run : r.runs) start += run.run_start_excess().value();
  start /= static_cast<double>(r.runs.size());
  SimulationOptions options = simulation_options_for(r, SimulationOptions());
  time_longest_run(r, r.global_batch_size, options);
  const Prediction p = Simulation(cluster_from_result(r), truth, options).time(truth);
  for (PublishedRun& run : r.runs) {
    const auto steps = static_cast<std::size_t>(run.steps(r.global_batch_size));
    REQUIRE(steps <= p.step_seconds.size());
    run.seconds = start + static_cast<double>(run.evals) * p.eval_seconds;
    for (std::size_t i = 0; i < steps; ++i) run.seconds += p.step_seconds[i];
  }
  return r;
}

}  // namespace

TEST_CASE("two results at different batches per GPU fit the tensor rate and a fixed cost per step",
          "[simulate]") {
  // The v1.0 single node (56 samples per GPU) and the same runs at half the global batch (28 per
  // GPU, twice the steps), both timed by a known profile: 1.2x the one-result fit's rate and 8 ms
  // a step beyond the kernels. The two-result fit finds both; a fit to either result alone puts
  // the fixed cost into its one rate, and each gets a different rate.
  const PublishedResult r = read_published_result(early("v1.0/NVIDIA/dgxa100_ngc21.05_pytorch"));
  CalibrationOptions options;
  options.command = "test";
  AcceleratorProfile truth = calibrate(r, options);
  truth.tensor_flops_per_second *= 1.2;
  truth.fixed_step_seconds = 0.008;
  PublishedResult half = r;
  half.global_batch_size /= 2;
  const PublishedResult a = timed_as(r, truth), b = timed_as(half, truth);

  const AcceleratorProfile fit = calibrate(a, b, options);
  CHECK(fit.tensor_flops_per_second == Approx(truth.tensor_flops_per_second).epsilon(0.02));
  CHECK(fit.fixed_step_seconds == Approx(0.008).epsilon(0.05));
  CHECK(fit.provenance["fit"]["fixed_step_ms"].get<double>() == Approx(8).epsilon(0.05));
  CHECK(fit.provenance["fit"]["second"]["global_batch_size"] == r.global_batch_size / 2);
  CHECK_THAT(fit.provenance["derived"].dump(), Catch::Contains("a fixed cost per step, together"));
  check_reproduces(a, fit);
  check_reproduces(b, fit);
  const double alone_a = calibrate(a, options).tensor_flops_per_second;
  const double alone_b = calibrate(b, options).tensor_flops_per_second;
  CHECK(alone_a < truth.tensor_flops_per_second * 0.97);  // the fixed cost read as slower kernels
  CHECK(alone_b < alone_a * 0.97);                        // more so at the smaller batch

  // Refused: batches too close to separate, two rounds, the larger batch slower per sample.
  PublishedResult close = r;
  close.global_batch_size = r.global_batch_size - 6 * 8;  // 50 samples per GPU against 56
  CHECK_THROWS_WITH(calibrate(a, timed_as(close, truth), options),
                    Catch::Contains("too close (under 1.25x apart)"));
  PublishedResult other_round = b;
  other_round.ruleset = "1.1.0";
  CHECK_THROWS_WITH(calibrate(a, other_round, options),
                    Catch::Contains("different rounds (1.0.0, 1.1.0)"));
  PublishedResult graphs = b;  // the same runs, read as replayed from CUDA graphs
  graphs.launch_line.use_cuda_graph = true;
  graphs.launch = derive_launch(graphs);
  CHECK_THROWS_WITH(calibrate(a, graphs, options),
                    Catch::Contains("the two ran differently as their logs read") &&
                        Catch::Contains("replayed from CUDA graphs"));
  // A run of another implementation timed with the fitted cost: said in its assumptions.
  CHECK(fit.provenance["fit"]["implementation"] ==
        describe_implementation(simulation_options_for(a, SimulationOptions())));
  SimulationOptions graph_options = simulation_options_for(graphs, SimulationOptions());
  time_longest_run(graphs, graphs.global_batch_size, graph_options);
  const Prediction elsewhere = predict(cluster_from_result(graphs), fit, graph_options);
  CHECK_THAT(Catch::Detail::stringify(elsewhere.assumptions),
             Catch::Contains("this run has the step replayed from CUDA graphs") &&
                 Catch::Contains("the cost may not carry over"));
  SimulationOptions same_options = simulation_options_for(a, SimulationOptions());
  time_longest_run(a, a.global_batch_size, same_options);
  const std::string same = Catch::Detail::stringify(
      predict(cluster_from_result(a), fit, same_options).assumptions);
  CHECK_THAT(same, Catch::Contains("fixed cost per step: 8"));
  CHECK_THAT(same, !Catch::Contains("may not carry over"));
  PublishedResult slow = a;
  for (PublishedRun& run : slow.runs) run.seconds *= 1.5;
  CHECK_THROWS_WITH(calibrate(slow, b, options), Catch::Contains("negative fixed cost per step"));
}

TEST_CASE("a submission package's layout reads like a flat result folder", "[simulate]") {
  // <org>/results/<system>/bert/result_*.txt and <org>/systems/<system>.json, as the mlcommons
  // training_results repositories hold them.
  namespace fs = std::filesystem;
  const fs::path flat = logs("v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch");
  const fs::path org = fs::temp_directory_path() /
                       ("mlbert_simulate_package_" + std::to_string(::getpid())) / "v1.1" /
                       "NVIDIA";
  const fs::path system_dir = org / "results" / "dgxa100_n8_ngc21.09_pytorch";
  fs::remove_all(org.parent_path().parent_path());
  fs::create_directories(system_dir / "bert");
  fs::create_directories(org / "systems");
  for (const auto& entry : fs::directory_iterator(flat))
    if (entry.path().filename().string().rfind("result_", 0) == 0)
      fs::copy_file(entry.path(), system_dir / "bert" / entry.path().filename());
  fs::copy_file(flat / "system.json", org / "systems" / "dgxa100_n8_ngc21.09_pytorch.json");

  const PublishedResult expected = read_published_result(flat);
  for (const fs::path& dir : {system_dir, system_dir / "bert"}) {
    INFO(dir.string());
    const PublishedResult r = read_published_result(dir);
    CHECK(r.ruleset == "1.1.0");
    CHECK(r.system_file == org / "systems" / "dgxa100_n8_ngc21.09_pytorch.json");
    CHECK(r.system == expected.system);
    CHECK(r.runs.size() == expected.runs.size());
    CHECK(r.olympic_seconds() == expected.olympic_seconds());
    CHECK(cluster_from_result(r).name == "dgxa100_n8_ngc21.09_pytorch");
  }
  fs::remove(org / "systems" / "dgxa100_n8_ngc21.09_pytorch.json");
  CHECK_THROWS_WITH(
      read_published_result(system_dir),
      Catch::Contains("no system description") && Catch::Contains("<org>/systems/<system>.json"));
  fs::remove_all(org.parent_path().parent_path());
}
