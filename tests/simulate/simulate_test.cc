// mlbert simulate: the model's own checks (an infinitely fast network leaves compute and
// imbalance, more NIC bandwidth never slows a step, one rank reduces to the profile, the
// imbalance at 1,024 x 16 is the straggler bench's), convergence points from the RCP tables,
// the network model's shape, settings and sweeps.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>

#include "bert/parameters.h"
#include "data_prep/hdf5_io.h"

#include "harness/data/length_distribution.h"
#include "harness/data/load_balance.h"
#include "simulate/calibrate.h"
#include "simulate/network.h"
#include "simulate/report.h"
#include "simulate/host_networking.h"
#include "simulate/result_model.h"
#include "simulate/settings.h"
#include "simulate/simulator.h"
#include "harness/config/system_config.h"
#include "mlperf_logging/rcp/rcp.h"
#include "tests/common/file_size_limit.h"
#include "tests/common/process_temp_dir.h"
#include "tests/common/shared_fixtures.h"

namespace {

using namespace mlbert::harness;
using namespace mlbert::simulate;

std::filesystem::path systems_dir() {
  return mlbert::test::source_dir() / "systems";
}

// This process's directory under the system's temp dir, removed when the process exits.
const std::filesystem::path& process_temp_dir() {
  static const mlbert::test::ProcessTempDir dir("mlbert_simulate_test_");
  return dir.path;
}

// An empty directory for one test of this process.
std::filesystem::path fresh_temp_dir(const std::string& name) {
  const auto dir = process_temp_dir() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// `r` as if its logs echoed the launch line `launch`: its flags read, its launch derived.
void launch_as(PublishedResult& r, const std::string& launch) {
  const auto log = fresh_temp_dir("mlbert_simulate_launch_line") / "result_0.txt";
  std::ofstream(log) << launch << "\n";
  r.launch_line = read_launch_line(log);
  r.launch = derive_launch(r);
}

// A profile of round numbers (A100-like: 150 TFLOP/s tensor rate, 1.7 TB/s, 108 SMs).
AcceleratorProfile test_profile() {
  AcceleratorProfile p;
  p.path = "test-profile.json";
  p.accelerator = "NVIDIA A100-SXM4-80GB";
  p.matches = {"a100 sxm 80gb"};
  p.provenance_kind = "measured";
  p.provenance = {{"source", "unit test"}};
  p.tensor_flops_per_second = 150e12;
  p.multiprocessors = 108;
  p.optimizer_seconds_per_parameter_lamb = 2.9e-11;
  p.optimizer_seconds_per_parameter_adam = 1.7e-11;
  p.memory_bytes_per_second = 1.7e12;
  p.run_start_seconds = 2.5;
  return p;
}

SimulationOptions small_options() {
  SimulationOptions o;
  o.bin_mix_rows = 1 << 20;
  return o;
}

// A100-like kernel rates with an eager framework's 10 us of issue per kernel.
KernelRates a100_rates() {
  KernelRates rates;
  rates.tensor_flops_per_second = 150e12;
  rates.memory_bytes_per_second = 1.7e12;
  rates.multiprocessors = 108;
  rates.host_seconds_per_kernel = 10e-6;
  return rates;
}

ClusterRun samsung() {
  return cluster_from_system(load_system("samsung_dgxa100_128x8", systems_dir()));
}

}  // namespace

TEST_CASE("an infinitely fast network leaves compute and imbalance in every step", "[simulate]") {
  ClusterRun cluster = samsung();
  const AcceleratorProfile profile = test_profile();
  const Prediction real = predict(cluster, profile, small_options());
  cluster.network.infinite = true;
  const Prediction free = predict(cluster, profile, small_options());
  REQUIRE(free.step_seconds.size() == real.step_seconds.size());
  CHECK(free.mean_step.exposed_comm == 0);
  CHECK(free.mean_step.exchange == 0);
  // What is left is the ranks' own work: compute, the slowest rank's excess, and the
  // rank-local passes (norms, optimizer) that need no network.
  const StepBreakdown& b = free.mean_step;
  CHECK(b.total() == Approx(b.compute + b.imbalance + b.clip + b.optimizer));
  CHECK(b.compute == Approx(real.mean_step.compute));
  CHECK(b.imbalance == Approx(real.mean_step.imbalance));
  for (std::size_t i = 0; i < free.step_seconds.size(); ++i)
    CHECK(free.step_seconds[i] <= real.step_seconds[i]);
  CHECK(real.mean_step.exposed_comm > 0);  // the 4-NIC system does expose communication
}

TEST_CASE("more NIC bandwidth never slows a step", "[simulate]") {
  const ClusterRun cluster = samsung();
  const AcceleratorProfile profile = test_profile();
  const Simulation sim(cluster, profile, small_options());
  std::vector<double> previous;
  for (double gbs : {3.0, 12.5, 25.0, 50.0, 100.0, 200.0, 400.0, 1600.0}) {
    NetworkSpec network = cluster.network;
    network.nic_gbs_per_node = gbs;
    const Prediction p = sim.time(profile, network);
    INFO("NIC bandwidth per node " << gbs << " GB/s");
    if (!previous.empty()) {
      REQUIRE(p.step_seconds.size() == previous.size());
      for (std::size_t i = 0; i < previous.size(); ++i) CHECK(p.step_seconds[i] <= previous[i]);
    }
    previous = p.step_seconds;
  }
  // The same holds for the links' efficiency and for NVLink.
  NetworkSpec slow = cluster.network, fast = cluster.network;
  slow.nic_efficiency = 0.5;
  fast.nvlink_gbs *= 4;
  const Prediction base = sim.time(profile), a = sim.time(profile, slow),
                   b = sim.time(profile, fast);
  for (std::size_t i = 0; i < base.step_seconds.size(); ++i) {
    CHECK(a.step_seconds[i] >= base.step_seconds[i]);
    CHECK(b.step_seconds[i] <= base.step_seconds[i]);
  }
}

TEST_CASE("backward beside the reductions runs simulate.overlap_slowdown slower, and only then",
          "[simulate]") {
  const AcceleratorProfile profile = test_profile();
  const auto run = [&](const ClusterRun& cluster, double slowdown, bool overlap) {
    SimulationOptions o = small_options();
    o.overlap_slowdown = slowdown;
    o.overlap = overlap;
    return predict(cluster, profile, o);
  };
  // Samsung's 4-NIC system: the stream is busy for part of backward.
  const ClusterRun cluster = samsung();
  const Prediction none = run(cluster, 0, true);
  REQUIRE(none.comm_busy > 0);
  double previous_total = none.mean_step.total();
  for (double slowdown : {kOverlapComputeSlowdown, 0.4, 1.0}) {
    INFO("slowdown " << slowdown);
    const Prediction p = run(cluster, slowdown, true);
    REQUIRE(p.step_seconds.size() == none.step_seconds.size());
    for (std::size_t i = 0; i < p.step_seconds.size(); ++i) {
      CHECK(p.step_seconds[i] >= none.step_seconds[i]);
      // Backward loses at most the slowdown's share of the time the stream is busy beside it.
      CHECK(p.step_seconds[i] - none.step_seconds[i] <= slowdown * none.comm_busy * 1.0000001);
    }
    CHECK(p.mean_step.total() > previous_total);  // it does cost, and more with a larger slowdown
    previous_total = p.mean_step.total();
    // The loss is communication's: compute and imbalance are those of the ranks' own work.
    CHECK(p.mean_step.compute == Approx(none.mean_step.compute));
    CHECK(p.mean_step.imbalance == Approx(none.mean_step.imbalance));
    CHECK(p.mean_step.exposed_comm > none.mean_step.exposed_comm);
  }
  // Reductions after backward (no overlap) run beside nothing.
  const Prediction after = run(cluster, 0, false);
  CHECK(run(cluster, 0.4, false).step_seconds == after.step_seconds);
  // Where the reductions outlast backward, the stream sets the step and a slower backward costs
  // nothing: NVIDIA's configuration, 3 sequences a GPU against 37 f32 buckets.
  const ClusterRun nvidia = cluster_from_system(load_system("dgxa100_128x8", systems_dir()));
  const Prediction stream_bound = run(nvidia, 0, true);
  REQUIRE(stream_bound.mean_step.exposed_comm > 0);
  CHECK(run(nvidia, 0.4, true).step_seconds == stream_bound.step_seconds);
}

TEST_CASE("one rank reduces the step to the profile's costs", "[simulate]") {
  ClusterRun c;
  c.name = "one";
  c.accelerator = "NVIDIA A100-SXM4-80GB";
  c.network.nodes = 1;
  c.network.gpus_per_node = 1;
  c.network.nvlink_gbs = 300;
  c.run.ruleset = "4.1.0";
  c.run.per_rank_batch = 16;
  c.run.global_batch_size = 16;
  c.run.gradient_accumulation = 1;
  c.run.optimizer.kind = OptimizerKind::lamb;
  c.run.clipping = ClippingMode::after_allreduce;
  c.run.load_balancing = LoadBalancing::global_exchange;  // a group of one: nothing to exchange
  c.run.max_steps = 0;
  c.model = mlbert::bert::BertConfig::preset("bert-large");
  const AcceleratorProfile profile = test_profile();
  SimulationOptions options = small_options();
  options.steps = 5;
  options.evals = 2;
  const Prediction p = predict(c, profile, options);

  // The same draw the simulator makes: the bin-mix table and the harness's sampler.
  const LengthSource lengths = mlperf_bin_mix_lengths(c.run, options.bin_mix_rows,
                                                      c.run.eval.eval_samples, options.length_seed);
  const Sampler sampler(lengths.streams, lengths.quotas, 1, 0);
  const auto layout = mlbert::bert::bert_parameter_layout(c.model);
  double parameters = 0;
  for (const auto& info : layout) parameters += static_cast<double>(info.numel);
  const double flat = static_cast<double>(mlbert::bert::flat_size_of(layout));
  const double optimizer = parameters * profile.optimizer_seconds_per_parameter_lamb;
  const double clip = flat * 4 / profile.memory_bytes_per_second + 20e-6;
  // The model's kernels on this one rank's micro-batches, nothing else.
  const KernelPlan plan = trace_kernel_plan(c.model);
  KernelRates rates;
  rates.tensor_flops_per_second = profile.tensor_flops_per_second;
  rates.memory_bytes_per_second = profile.memory_bytes_per_second;
  rates.multiprocessors = profile.multiprocessors;
  rates.host_seconds_per_kernel = options.host_seconds_per_kernel;
  const auto shape_of = [&](const std::vector<int>& batch) {
    MicroBatchShape shape;
    for (int len : batch) {
      shape.tokens += len;
      shape.squares += double(len) * len;
      shape.sequences += 1;
      shape.predictions += masked_predictions(len, c.run.max_predictions_per_seq);
    }
    return shape;
  };
  REQUIRE(p.step_seconds.size() == 5);
  for (std::int64_t s = 0; s < 5; ++s) {
    std::vector<int> batch;
    for (const SampleRef& ref : sampler.batch(0, s)) batch.push_back(lengths.length(ref));
    const double compute = KernelPlan::time(plan.train, shape_of(batch), rates).seconds;
    CHECK(p.step_seconds[s] == Approx(compute + clip + optimizer));
  }
  double eval = 0;
  for (std::size_t first = 0; first < lengths.eval_lengths.size(); first += 16) {
    std::vector<int> batch(
        lengths.eval_lengths.begin() + first,
        lengths.eval_lengths.begin() + std::min(first + 16, lengths.eval_lengths.size()));
    eval += KernelPlan::time(plan.eval, shape_of(batch), rates).seconds;
  }
  CHECK(p.eval_seconds == Approx(eval));
  CHECK(p.mean_step.exposed_comm == 0);
  CHECK(p.mean_step.imbalance == 0);
  CHECK(p.total_seconds == Approx(profile.run_start_seconds + p.train_seconds + 2 * eval));
}

TEST_CASE("the imbalance at 1,024 x 16 is the straggler bench's for every balancing mode",
          "[simulate]") {
  // The bench (bench/harness/straggler_bench.cc) draws i.i.d. lengths from the bin mix for each
  // rank and step; the simulator draws them through the Sampler from a table of the same mix.
  // Both go through plan_exchange; their mean max/mean token ratios must agree.
  struct Mode {
    SamplerKind sampler;
    LoadBalancing balancing;
    double bench;  // BENCHMARKS.md, harness_bench_straggler, tokens max/mean (mean of steps)
  };
  const Mode modes[] = {{SamplerKind::random, LoadBalancing::none, 1.572},
                        {SamplerKind::random, LoadBalancing::global_exchange, 1.010},
                        {SamplerKind::random, LoadBalancing::node_exchange, 1.172},
                        {SamplerKind::stratified, LoadBalancing::node_exchange, 1.039}};
  const int ranks = 1024, per_node = 8, steps = 200;
  for (const Mode& m : modes) {
    RunSpec run;
    run.per_rank_batch = 16;
    run.sampler = m.sampler;
    run.stratified_quotas = {6, 3, 2, 5};
    run.load_balancing = m.balancing;
    const LengthSource lengths = mlperf_bin_mix_lengths(run, 1 << 22, 0, 7);
    const WorkCost tokens_only{1, 0, 0};
    const auto work = deal_micro_steps(lengths, run, ranks, per_node, tokens_only, steps);
    double simulated = 0;
    for (const auto& w : work) simulated += w.slowest_tokens / w.mean_tokens / steps;

    std::mt19937_64 rng(12345);
    double bench_style = 0;
    for (int s = 0; s < steps; ++s) {
      std::vector<std::vector<int>> sampled(ranks);
      for (auto& rank : sampled) {
        if (m.sampler == SamplerKind::stratified) {
          for (int b = 0; b < 4; ++b)
            for (int i = 0; i < run.stratified_quotas[b]; ++i)
              rank.push_back(mlperf_length_in_bin(b, rng));
        } else {
          for (int i = 0; i < 16; ++i) rank.push_back(mlperf_random_length(rng));
        }
      }
      const auto plan = plan_exchange(sampled, m.balancing, per_node);
      std::vector<std::int64_t> tokens(ranks);
      for (int r = 0; r < ranks; ++r)
        for (const auto& src : plan[r]) tokens[r] += sampled[src.rank][src.index];
      bench_style += straggler_ratio(tokens) / steps;
    }
    INFO(to_string(m.sampler) << " + " << to_string(m.balancing) << ": simulated " << simulated
                              << ", bench method " << bench_style << ", recorded " << m.bench);
    CHECK(std::abs(simulated - bench_style) < 0.01);
    CHECK(std::abs(bench_style - m.bench) < 0.01);
  }
}

TEST_CASE("convergence: RCP means exact and interpolated, stated figures, eval boundaries",
          "[simulate]") {
  RunSpec run;
  run.ruleset = "4.1.0";
  run.optimizer.kind = OptimizerKind::lamb;
  run.max_steps = 0;
  const mlbert::logging::RcpCatalog catalog("4.1.0");
  const auto& points = catalog.points(mlbert::logging::RcpPass::pruned);
  REQUIRE(points.size() >= 3);
  const auto& low = points[1];
  const auto& high = points[2];
  run.global_batch_size = static_cast<std::int64_t>(low.batch_size);
  Convergence c = convergence_for(run);
  CHECK(c.target_samples == low.mean);
  CHECK(c.eval_interval == mlperf_eval_interval(run.global_batch_size));
  // The run stops at the first evaluation at or past the RCP mean.
  CHECK(static_cast<double>(c.samples) >= c.target_samples);
  CHECK(static_cast<double>(c.samples - run.global_batch_size) <
        c.target_samples + static_cast<double>(c.eval_interval));
  CHECK(c.evals == c.samples / c.eval_interval);

  // A batch size between two references: the checker's interpolation.
  const auto between = static_cast<std::int64_t>((low.batch_size + high.batch_size) / 2 / 64 * 64);
  run.global_batch_size = between;
  c = convergence_for(run);
  CHECK(c.target_samples == catalog.interpolate(static_cast<double>(between), low, high).mean);
  CHECK(c.source.find("interpolated") != std::string::npos);

  // The paper's Adam at GBS 16384: 2,932,736 samples, 179 steps, the 9th evaluation.
  run.optimizer.kind = OptimizerKind::adamw;
  run.global_batch_size = 16384;
  CHECK_THROWS_WITH(convergence_for(run), Catch::Contains("run.samples_to_converge"));
  run.samples_to_converge = 2932736;
  c = convergence_for(run);
  CHECK(c.steps == 179);
  CHECK(c.evals == 9);
  CHECK(c.samples == 2932736);

  run.optimizer.kind = OptimizerKind::lamb;
  run.samples_to_converge = 0;
  run.global_batch_size = 65536;  // beyond every RCP of 4.1.0
  CHECK_THROWS_WITH(convergence_for(run), Catch::Contains("no RCP of ruleset 4.1.0 covers"));
}

TEST_CASE("allreduce costs: one node is a ring, many nodes take the tree, bytes cost time",
          "[simulate]") {
  NetworkSpec n;
  n.nodes = 1;
  n.gpus_per_node = 8;
  n.nvlink_gbs = 300;
  const CollectiveCost one = allreduce_cost(n, 100e6);
  CHECK(one.algorithm == Algorithm::ring);
  // Bandwidth term of a ring: 2 (n-1)/n S over NVLink x efficiency, plus a few microseconds.
  // The Simple ring: base 8.4 us + 14 NVLink hops of 3.4 us, then 2 (n-1)/n S at 0.70 x 300 GB/s.
  CHECK(one.seconds == Approx((8.4 + 14 * 3.4) * 1e-6 + 2.0 * 7 / 8 * 100e6 / (300e9 * 0.70)));
  CHECK(one.protocol == Protocol::simple);
  n.nodes = 128;
  n.nics_per_node = 4;
  n.nic_gbs_per_node = 100;
  const CollectiveCost many = allreduce_cost(n, 26e6);
  CHECK(many.algorithm == Algorithm::tree);
  n.algorithm = AlgorithmChoice::ring;
  CHECK(allreduce_cost(n, 26e6).seconds > many.seconds);
  n.algorithm = AlgorithmChoice::fastest;
  double previous = 0;
  for (double bytes : {1e3, 1e5, 1e6, 1e7, 1e8, 1e9}) {
    const double s = allreduce_cost(n, bytes).seconds;
    CHECK(s > previous);
    previous = s;
  }
  // A node all-gather never crosses the NICs.
  CHECK(allgather_cost(n, 1e5, true).seconds < allgather_cost(n, 1e5, false).seconds);
  n.infinite = true;
  CHECK(allreduce_cost(n, 1e9).seconds == 0);
}

TEST_CASE(
    "a sharded reduction moves the allreduce's bytes as reduce-scatter then shards then all-gather",
    "[simulate]") {
  NetworkSpec n;
  n.nodes = 16;
  n.gpus_per_node = 8;
  n.nvlink_gbs = 300;
  n.nics_per_node = 8;
  n.nic_gbs_per_node = 200;
  n.algorithm = AlgorithmChoice::hierarchical;
  const double bytes = 1e9;  // large: the bandwidth terms dominate every latency
  const double whole = allreduce_cost(n, bytes).seconds;
  const double sharded = node_sharded_reduction_cost(n, bytes).seconds +
                         allgather_cost(n, bytes / n.gpus_per_node, true).seconds;
  INFO("hierarchical allreduce " << whole << " s, reduce-scatter + shards + all-gather " << sharded
                                 << " s");
  CHECK(sharded == Approx(whole).epsilon(0.02));
  // In one node a sharded reduction is the reduce-scatter alone: half the ring allreduce.
  n.nodes = 1;
  CHECK(node_sharded_reduction_cost(n, bytes).seconds ==
        Approx(allreduce_cost(n, bytes).seconds / 2).epsilon(0.02));
}

TEST_CASE("the traced kernels do BERT-large's training FLOPs (docs/reference.md: Compute)",
          "[simulate]") {
  const mlbert::bert::BertConfig c = mlbert::bert::BertConfig::preset("bert-large");
  const KernelPlan plan = trace_kernel_plan(c);
  const double h = c.hidden_size, f = c.intermediate_size, layers = c.num_hidden_layers;
  const double v = c.padded_vocab_size();
  const Affine gemm = KernelPlan::total_flops(plan.train, KernelKind::gemm);
  // 2 FLOPs per multiply-add forward, twice that backward: 6 per weight per row it multiplies.
  CHECK(gemm.t == Approx(6 * layers * (4 * h * h + 2 * h * f)));
  CHECK(gemm.p == Approx(6 * (h * h + h * v)));  // transform and tied decoder on predictions
  CHECK(gemm.s == Approx(6 * (h * h + 2 * h)));  // pooler and NSP on [CLS]
  CHECK(gemm.c0 == 0);
  CHECK(gemm.q == 0);
  // Attention: QK^T and PV forward (4 H s^2); backward recomputes P, then dV, dP, dQ, dK (10).
  CHECK(KernelPlan::total_flops(plan.train, KernelKind::attention).q == Approx(14 * layers * h));
  // Evaluation is the forward alone: a third of the GEMMs.
  CHECK(KernelPlan::total_flops(plan.eval, KernelKind::gemm).t == Approx(gemm.t / 3));
  // Work that does not scale with the batch: zeroing and accumulating the f32 gradient buffer.
  const double flat =
      static_cast<double>(mlbert::bert::flat_size_of(mlbert::bert::bert_parameter_layout(c)));
  double fixed_bytes = 0;
  for (const Kernel& k : plan.train) fixed_bytes += k.bytes.c0;
  CHECK(fixed_bytes > 4 * flat);
}

TEST_CASE("a micro-step is GPU-bound at large batch and waits for the host at small",
          "[simulate]") {
  const KernelPlan plan = trace_kernel_plan(mlbert::bert::BertConfig::preset("bert-large"));
  KernelRates rates = a100_rates();
  const MicroBatchShape large{56 * 260.0, 56, 56 * 39.0, 56 * 260.0 * 300};
  const MicroBatchShape small{40, 2, 6, 800};
  rates.host_seconds_per_kernel = 0;
  const KernelTime gpu_large = KernelPlan::time(plan.train, large, rates);
  const KernelTime gpu_small = KernelPlan::time(plan.train, small, rates);
  CHECK(gpu_large.host_bound_seconds() == Approx(0).margin(1e-12));
  rates.host_seconds_per_kernel = 10e-6;
  const KernelTime host_large = KernelPlan::time(plan.train, large, rates);
  CHECK(host_large.seconds == Approx(gpu_large.seconds).epsilon(1e-3));
  // Issue-bound: every kernel waits for its own issue, so the micro-step is the issue times
  // (plus what a kernel runs after the host has caught up).
  rates.host_seconds_per_kernel = 1e-3;
  const KernelTime slow_host = KernelPlan::time(plan.train, small, rates);
  const double issue = static_cast<double>(plan.train.size()) * 1e-3;
  CHECK(slow_host.seconds >= issue);
  CHECK(slow_host.seconds <= issue + gpu_small.gpu_seconds);
  // More host time per kernel never makes a micro-step faster.
  double previous = 0;
  for (double h : {0.0, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4}) {
    rates.host_seconds_per_kernel = h;
    const double t = KernelPlan::time(plan.train, small, rates).seconds;
    CHECK(t >= previous);
    previous = t;
  }
}

TEST_CASE("the trace marks where backward finishes each gradient prefix and where phases start",
          "[simulate]") {
  const mlbert::bert::BertConfig c = mlbert::bert::BertConfig::preset("bert-large");
  const KernelPlan plan = trace_kernel_plan(c);
  REQUIRE_FALSE(plan.grad_ready.empty());
  const std::size_t flat = mlbert::bert::flat_size_of(mlbert::bert::bert_parameter_layout(c));
  CHECK(plan.grad_ready.back().flat_prefix == flat);
  for (std::size_t i = 1; i < plan.grad_ready.size(); ++i) {
    CHECK(plan.grad_ready[i].flat_prefix > plan.grad_ready[i - 1].flat_prefix);
    CHECK(plan.grad_ready[i].kernels >= plan.grad_ready[i - 1].kernels);
  }
  CHECK(plan.grad_ready.back().kernels <= plan.train.size());
  // Embeddings, then the encoder, then the heads, then backward's gradients.
  CHECK(plan.train[plan.encoder_start].op == "linear_forward");
  CHECK(plan.encoder_start > 0);
  CHECK(plan.heads_start > plan.encoder_start + 24 * 4);
  CHECK(plan.grad_ready.front().kernels > plan.heads_start);
}

TEST_CASE("a read-back waits for every kernel issued before it, then costs a round trip",
          "[simulate]") {
  const KernelPlan plan = trace_kernel_plan(mlbert::bert::BertConfig::preset("bert-large"));
  const KernelRates rates = a100_rates();
  const MicroBatchShape shape{16 * 260.0, 16, 16 * 39.0, 16 * 260.0 * 300};
  const double plain = KernelPlan::time(plan.train, shape, rates).seconds;
  // Before the first kernel nothing is queued: a read-back and host work add exactly their time.
  const double host = 1e-3;
  const KernelTime first = KernelPlan::time(plan.train, shape, rates, {HostEvent{0, 2, host}});
  CHECK(first.seconds == Approx(plain + 2 * kReadBackSeconds + host));
  // Mid-step the host has run ahead of the GPU: a read-back there loses that lead, so the GPU then
  // waits for the next issue; never faster than without it.
  const KernelTime mid =
      KernelPlan::time(plan.train, shape, rates, {HostEvent{plan.heads_start, 1, 0}});
  CHECK(mid.seconds > plain + kReadBackSeconds);
  CHECK(mid.seconds < plain + kReadBackSeconds + 3 * rates.host_seconds_per_kernel);
  // One read-back per gradient prefix costs more than one, and every event is counted once.
  std::vector<HostEvent> every;
  for (const GradReady& g : plan.grad_ready) every.push_back(HostEvent{g.kernels, 1, 50e-6});
  const double all = KernelPlan::time(plan.train, shape, rates, every).seconds;
  CHECK(all > mid.seconds);
  CHECK(all >= plain + static_cast<double>(every.size()) * (kReadBackSeconds + 50e-6));
}

TEST_CASE("a broadcast costs every rank the whole buffer once, over the slowest link",
          "[simulate]") {
  NetworkSpec n;
  n.nodes = 128;
  n.gpus_per_node = 8;
  n.nvlink_gbs = 300;
  n.nics_per_node = 4;
  n.nic_gbs_per_node = 100;
  const double bytes = 151e6;
  const double t = broadcast_cost(n, bytes).seconds;
  CHECK(t > bytes / (100e9 * 0.96));  // at least the node's NIC time for the whole buffer
  CHECK(t < 2 * bytes / (100e9 * 0.96) + 5e-3);
  n.nic_gbs_per_node = 200;  // more NIC bandwidth never slows it
  CHECK(broadcast_cost(n, bytes).seconds < t);
  n.nodes = 1;
  CHECK(broadcast_cost(n, bytes).seconds < t);
  n.gpus_per_node = 1;
  CHECK(broadcast_cost(n, bytes).seconds == 0);
  n.gpus_per_node = 8;
  n.infinite = true;
  CHECK(broadcast_cost(n, bytes).seconds == 0);
}

TEST_CASE("wave quantization: one tile more than the SMs takes a second wave", "[simulate]") {
  CHECK(wave_efficiency(108, 108) == 1);
  CHECK(wave_efficiency(54, 108) == 0.5);
  CHECK(wave_efficiency(109, 108) == Approx(109.0 / 216));
  CHECK(wave_efficiency(216, 108) == 1);
  CHECK(wave_efficiency(50, 0) == 1);  // no SM count: no quantization
}

TEST_CASE("a sharded optimizer updates 1/g of the parameters and all-gathers them", "[simulate]") {
  const ClusterRun cluster = samsung();
  const AcceleratorProfile profile = test_profile();
  SimulationOptions options = small_options();
  const Prediction whole = predict(cluster, profile, options);
  options.optimizer_shard = OptimizerShard::node;
  const Prediction node = predict(cluster, profile, options);
  options.optimizer_shard = OptimizerShard::world;
  const Prediction world = predict(cluster, profile, options);
  CHECK(node.mean_step.optimizer == Approx(whole.mean_step.optimizer / 8));
  CHECK(world.mean_step.optimizer == Approx(whole.mean_step.optimizer / 1024));
  // The compute is the same; the all-gather of the parameters is communication.
  CHECK(node.mean_step.compute == Approx(whole.mean_step.compute));
  CHECK(node.comm_busy > 0);
  CHECK(node.mean_step.exposed_comm >=
        allgather_cost(cluster.network, node.gradient_bytes / 4 * 2 / 8, true).seconds);
}

TEST_CASE("padded micro-batches cost what a batch of full-length sequences costs", "[simulate]") {
  const ClusterRun cluster = samsung();
  const AcceleratorProfile profile = test_profile();
  SimulationOptions options = small_options();
  const Prediction real = predict(cluster, profile, options);
  options.padded = true;
  const Prediction padded = predict(cluster, profile, options);
  CHECK(padded.mean_step.compute > real.mean_step.compute * 1.3);
  // Padding equalizes the ranks' GEMM work; only attention (real lengths) can differ.
  CHECK(padded.mean_step.imbalance < real.mean_step.imbalance);
}

TEST_CASE("a model that never removes padding runs attention on the padded length too",
          "[simulate]") {
  const ClusterRun cluster = samsung();
  const AcceleratorProfile profile = test_profile();
  SimulationOptions options = small_options();
  options.padded_attention = true;  // alone it changes nothing: it qualifies `padded`
  const Prediction real = predict(cluster, profile, options);
  options.padded_attention = false;
  CHECK(predict(cluster, profile, options).mean_step.compute == Approx(real.mean_step.compute));
  options.padded = true;
  const Prediction padded = predict(cluster, profile, options);
  options.padded_attention = true;
  const Prediction full = predict(cluster, profile, options);
  CHECK(full.mean_step.compute > padded.mean_step.compute * 1.05);
  CHECK(full.eval_seconds > padded.eval_seconds);
  // Every rank's encoder work is the same: what is left differs with the masked positions only.
  CHECK(full.mean_step.imbalance < padded.mean_step.imbalance);
  CHECK(full.mean_step.imbalance < full.mean_step.compute * 1e-3);
}

TEST_CASE("packed rows cost what rows of full length cost, not what their samples would",
          "[simulate]") {
  const ClusterRun cluster = samsung();  // 16 sequences per GPU
  const AcceleratorProfile profile = test_profile();
  SimulationOptions options = small_options();
  options.padded = true;
  const Prediction rows16 = predict(cluster, profile, options);
  options.packing = 2;
  const Prediction rows8 = predict(cluster, profile, options);
  options.packing = 3;  // ceil(16 / 3) = 6 rows
  const Prediction rows6 = predict(cluster, profile, options);
  CHECK(rows8.mean_step.compute < rows16.mean_step.compute * 0.6);
  CHECK(rows8.mean_step.compute > rows16.mean_step.compute * 0.4);
  CHECK(rows6.mean_step.compute < rows8.mean_step.compute);
  // Unpadded, packing changes nothing: the kernels run on the real tokens.
  options.padded = false;
  const Prediction real = predict(cluster, profile, options);
  options.packing = 1;
  CHECK(predict(cluster, profile, options).mean_step.compute == Approx(real.mean_step.compute));
}

TEST_CASE("a published launch line sets how the implementation ran", "[simulate]") {
  PublishedResult r;
  r.framework = "PyTorch NVIDIA Release 21.05";
  const auto options_for = [&](const std::string& launch) {
    launch_as(r, launch);
    return simulation_options_for(r, SimulationOptions());
  };
  // An eager framework from Python, mlbert's gradient path when nothing else is stated.
  SimulationOptions o = options_for("python train.py --eval_batch_size=16");
  CHECK(o.host_seconds_per_kernel == Approx(kPytorchEagerOpSeconds + kDriverLaunchSeconds));
  CHECK(o.optimizer_shard == OptimizerShard::none);
  CHECK(o.gradient_pass_bytes_per_parameter == 0);
  CHECK(o.overlap);
  CHECK_FALSE(o.padded);
  // NVIDIA's single-node v1.0 line: --distributed_lamb with --allreduce_post_accumulation(_fp16).
  const std::string flat = " --allreduce_post_accumulation --allreduce_post_accumulation_fp16";
  o = options_for("python train.py --distributed_lamb" + flat);
  CHECK(o.optimizer_shard == OptimizerShard::node);
  CHECK(o.gradient_wire_bytes == 2);
  CHECK(o.gradient_pass_bytes_per_parameter == kDistributedLambPassBytes);
  CHECK_FALSE(o.overlap);
  // NVIDIA's flat allreduce after backward, without the sharded optimizer.
  o = options_for("python train.py" + flat);
  CHECK(o.optimizer_shard == OptimizerShard::none);
  CHECK_FALSE(o.overlap);
  CHECK(o.gradient_pass_bytes_per_parameter == kPostAccumulationPassBytes);
  // Samsung's line has --allreduce_post_accumulation too, but --local_gradient_clip without
  // --baseline takes its DDP path: overlapped fp16 buckets, each normed and scaled first.
  o = options_for("python train.py --local_gradient_clip" + flat);
  CHECK(o.overlap);
  CHECK(o.gradient_wire_bytes == 2);
  CHECK(o.bucket_norm_bytes_per_element == kDdpBucketNormBytes);
  CHECK(o.gradient_pass_bytes_per_parameter == kAmpUnscaleBytes);
  // With --baseline it is NVIDIA's flat path with the local clip before the allreduce.
  o = options_for("python train.py --local_gradient_clip --baseline" + flat);
  CHECK_FALSE(o.overlap);
  CHECK(o.gradient_pass_bytes_per_parameter == kPostAccumulationPassBytes + kLocalClipPassBytes);
  // NVIDIA's at scale: the step in CUDA graphs on padded shapes.
  o = options_for("python train.py --local_gradient_clip --use_cuda_graph --pad_fmha" + flat);
  CHECK(o.host_seconds_per_kernel == 0);
  CHECK(o.padded);
  // No framework stated: mlbert's own launches.
  PublishedResult bare;
  bare.launch = derive_launch(bare);
  CHECK(simulation_options_for(bare, SimulationOptions()).host_seconds_per_kernel ==
        kDriverLaunchSeconds);
  const SimulationOptions none = simulation_options_for(bare, SimulationOptions());
  CHECK(none.syncs_before_encoder == 0);
  CHECK_FALSE(none.sync_per_bucket);
  CHECK(none.forward_broadcast_bytes == 0);
}

TEST_CASE("the published implementation's read-backs, host loops and buffer broadcast",
          "[simulate]") {
  PublishedResult r;
  r.framework = "PyTorch NVIDIA Release 21.09";
  const auto options_for = [&](const std::string& launch) {
    launch_as(r, launch);
    return simulation_options_for(r, SimulationOptions());
  };
  // NVIDIA's eager path: unpadding and the dense sequence output read back; no hook, no scaler.
  SimulationOptions o = options_for("python train.py --unpad_fmha --dense_seq_output");
  CHECK(o.syncs_before_encoder == kUnpadReadBacks);
  CHECK(o.syncs_before_heads == kDenseSeqOutputReadBacks);
  CHECK_FALSE(o.sync_per_bucket);
  CHECK_FALSE(o.sync_after_backward);
  CHECK(o.forward_broadcast_bytes == 0);
  // Samsung's DDP path with apex amp: a read-back per bucket, one after backward with the
  // per-tensor loops, and DDP broadcasting the FMHA layers' QKV buffers before every forward.
  o = options_for(
      "python train.py --unpad_fmha --dense_seq_output --local_gradient_clip --use_apex_amp");
  CHECK(o.sync_per_bucket);
  CHECK(o.bucket_hook_seconds == Approx(kBucketHookOps * 10e-6));
  CHECK(o.sync_after_backward);
  CHECK(o.host_seconds_per_tensor == Approx(3 * 7e-6 + 3e-6));
  CHECK(o.forward_broadcast_bytes == 24.0 * (3 * 1024 * 1024 + 3 * 1024) * 2);
  CHECK(o.host_notes.size() == 5);
  // What-ifs on a published result: no read-backs inside the step, no buffers broadcast.
  ClusterRun cluster = samsung();
  SimulationOptions what_if = o;
  apply_result_settings(
      {parse_setting("simulate.read_backs=false"), parse_setting("simulate.broadcast_mb=0")},
      cluster, what_if);
  CHECK(what_if.syncs_before_encoder == 0);
  CHECK(what_if.syncs_before_heads == 0);
  CHECK_FALSE(what_if.sync_per_bucket);
  CHECK_FALSE(what_if.sync_after_backward);
  CHECK(what_if.forward_broadcast_bytes == 0);
  CHECK_THROWS_WITH(
      apply_result_settings({parse_setting("simulate.broadcast_mb=-1")}, cluster, what_if),
      Catch::Contains("simulate.broadcast_mb=-1: a number >= 0"));
  // Without FMHA no buffers; CUDA graphs replay the step with no read-back at all.
  const std::string samsung_unfused =
      "python train.py --unpad --dense_seq_output --local_gradient_clip --use_apex_amp";
  CHECK(options_for(samsung_unfused).forward_broadcast_bytes == 0);
  o = options_for(samsung_unfused + " --use_cuda_graph");
  CHECK(o.syncs_before_encoder == 0);
  CHECK_FALSE(o.sync_per_bucket);
  CHECK_FALSE(o.sync_after_backward);
}

TEST_CASE("read-backs, host loops and a buffer broadcast each lengthen the predicted step",
          "[simulate]") {
  const ClusterRun cluster = samsung();
  const AcceleratorProfile profile = test_profile();
  SimulationOptions options = small_options();
  options.host_seconds_per_kernel = 10e-6;
  const Prediction base = predict(cluster, profile, options);
  CHECK(base.mean_step.host == 0);
  SimulationOptions synced = options;
  synced.syncs_before_encoder = 3;
  synced.sync_per_bucket = true;
  synced.bucket_hook_seconds = 60e-6;
  const Prediction with_syncs = predict(cluster, profile, synced);
  // Each of the 37 buckets' read-backs drains the queue and pays the hook before backward goes on.
  CHECK(with_syncs.mean_step.compute > base.mean_step.compute + 37 * (kReadBackSeconds + 60e-6));
  SimulationOptions looped = options;
  looped.sync_after_backward = true;
  looped.host_seconds_per_tensor = 1e-3;  // far more than the GPU's passes and optimizer
  const Prediction with_loops = predict(cluster, profile, looped);
  const double tensors =
      static_cast<double>(mlbert::bert::bert_parameter_layout(cluster.model).size());
  CHECK(with_loops.mean_step.host == Approx(kReadBackSeconds + tensors * 1e-3 -
                                            (base.mean_step.clip + base.mean_step.optimizer)));
  SimulationOptions broadcast = options;
  broadcast.forward_broadcast_bytes = 151e6;
  const Prediction with_broadcast = predict(cluster, profile, broadcast);
  CHECK(with_broadcast.mean_step.exposed_comm ==
        Approx(base.mean_step.exposed_comm + broadcast_cost(cluster.network, 151e6).seconds));
}

TEST_CASE("settings: nodes keeps the global batch, quotas follow the per-rank batch",
          "[simulate]") {
  std::ifstream in(systems_dir() / "samsung_dgxa100_128x8.json");
  const nlohmann::json root = nlohmann::json::parse(in);
  SimulatorSettings sim;
  const auto edited = apply_settings(root, {parse_setting("nodes=64")}, sim, "samsung");
  const SystemConfig system = parse_system(edited, "samsung_64.json");
  CHECK(system.topology.nodes == 64);
  CHECK(system.description["number_of_nodes"] == "64");
  CHECK(system.run.global_batch_size == 16384);
  CHECK(system.run.per_rank_batch == 32);
  CHECK(system.run.stratified_quotas == std::vector<int>{12, 6, 4, 10});

  SimulatorSettings sim2;
  CHECK_THROWS_WITH(apply_settings(root, {parse_setting("per_rank_batch=8")}, sim2, "samsung"),
                    Catch::Contains("run.samples_to_converge is stated for GBS 16384"));
  SimulatorSettings sim3;
  const auto nics = apply_settings(root, {parse_setting("nics=8"), parse_setting("nic_gbps=400")},
                                   sim3, "samsung");
  const SystemConfig eight = parse_system(nics, "samsung_8nics.json");
  CHECK(eight.topology.nics.size() == 8);
  CHECK(eight.topology.nics[7].bandwidth_gbps == 400);
  CHECK(eight.topology.local_ranks[7].nic == "nic7");
  SimulatorSettings sim4;
  CHECK_THROWS_WITH(apply_settings(root, {parse_setting("no_such_field=1")}, sim4, "samsung"),
                    Catch::Contains("no_such_field: not a field"));
  SimulatorSettings sim5;
  apply_settings(root, {parse_setting("simulate.algorithm=ring")}, sim5, "samsung");
  CHECK(sim5.algorithm == AlgorithmChoice::ring);
  SimulatorSettings sim10;
  apply_settings(root, {parse_setting("simulate.overlap_slowdown=0.4")}, sim10, "samsung");
  ClusterRun slowed = samsung();
  SimulationOptions slowed_options;
  apply_simulator_settings(sim10, slowed, slowed_options);
  CHECK(slowed_options.overlap_slowdown == 0.4);
  CHECK(SimulationOptions{}.overlap_slowdown == kOverlapComputeSlowdown);
  SimulatorSettings sim11;
  CHECK_THROWS_WITH(
      apply_settings(root, {parse_setting("simulate.overlap_slowdown=-0.1")}, sim11, "samsung"),
      Catch::Contains("simulate.overlap_slowdown=-0.1: a number >= 0"));
  // A number past double stays text, which the field then refuses by name (it was an uncaught
  // nlohmann out_of_range).
  SimulatorSettings sim6;
  CHECK_THROWS_WITH(
      parse_system(apply_settings(root, {parse_setting("gbs=1e999")}, sim6, "samsung"),
                   "samsung_overflow.json"),
      Catch::Contains("samsung: run.global_batch_size: a whole number >= 0 is required, not "
                      "\"1e999\""));
  SimulatorSettings sim7;
  CHECK_THROWS_WITH(apply_settings(root, {parse_setting("nodes=many")}, sim7, "samsung"),
                    Catch::Contains("samsung: topology.nodes: a whole number >= 1 is required"));
  SimulatorSettings sim9;  // 0 nodes or 0 accumulation steps divided the batch by zero (SIGFPE)
  CHECK_THROWS_WITH(apply_settings(root, {parse_setting("nodes=0")}, sim9, "samsung"),
                    Catch::Contains("topology.nodes: a whole number >= 1 is required, not 0"));
  CHECK_THROWS_WITH(apply_settings(root, {parse_setting("accumulation=0")}, sim9, "samsung"),
                    Catch::Contains("run.gradient_accumulation: a whole number >= 1"));
  nlohmann::json odd = root;  // a sampler name that is not text reaches the system's own check
  odd["run"]["sampler"]["name"] = 5;
  SimulatorSettings sim8;
  CHECK_THROWS_WITH(parse_system(apply_settings(odd, {}, sim8, "odd"), "odd.json"),
                    Catch::Contains("odd.json") && Catch::Contains("sampler"));
  CHECK_THROWS(parse_sweep("nodes="));
  CHECK(parse_sweep("nodes=16,32,64").size() == 3);
}

TEST_CASE("a sweep's plot stacks every component to the predicted time", "[simulate]") {
  const AcceleratorProfile profile = test_profile();
  std::vector<SweepPoint> points;
  for (int nodes : {64, 128}) {
    std::ifstream in(systems_dir() / "samsung_dgxa100_128x8.json");
    SimulatorSettings sim;
    const auto edited = apply_settings(nlohmann::json::parse(in),
                                       {parse_setting("nodes=" + std::to_string(nodes))}, sim, "s");
    ClusterRun c = cluster_from_system(parse_system(edited, "samsung.json"));
    points.push_back({std::to_string(nodes), predict(c, profile, small_options())});
  }
  for (const SweepPoint& s : points) {
    const TimeComponents t = components_of(s.prediction);
    CHECK(t.run_start + t.compute + t.imbalance + t.exposed_comm + t.exchange + t.clip +
              t.optimizer + t.host + t.evaluation ==
          Approx(s.prediction.total_seconds));
  }
  const std::string svg = sweep_svg("nodes", points);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("exposed communication") != std::string::npos);
  CHECK(svg.find(">64<") != std::string::npos);
  CHECK(svg.find(">128<") != std::string::npos);
}

TEST_CASE("lengths read from data shards feed the run's own sampler and deal", "[simulate]") {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("mlbert_simulate_shards");
  // 12 samples of 100 tokens in one shard, 12 of 300 in another.
  const auto shard = [](int length, int count) {
    std::vector<mlbert::data::Sample> samples(count);
    for (auto& s : samples) {
      s.input_ids.assign(length, 5);
      s.segment_ids.assign(length, 0);
      s.masked_lm_positions = {1};
      s.masked_lm_ids = {7};
    }
    return samples;
  };
  mlbert::data::write_shard(dir / "part_0.hdf5", mlbert::data::Layout::kVarlen, shard(100, 12));
  mlbert::data::write_shard(dir / "part_1.hdf5", mlbert::data::Layout::kVarlen, shard(300, 12));
  RunSpec run;
  run.per_rank_batch = 4;
  run.load_balancing = LoadBalancing::global_exchange;
  const LengthSource lengths = shard_lengths(dir, run, 10, 1);
  REQUIRE(lengths.shard_lengths.size() == 2);
  CHECK(lengths.eval_lengths.size() == 10);
  for (int l : lengths.eval_lengths) CHECK((l == 100 || l == 300));
  const Sampler sampler(lengths.streams, lengths.quotas, 2, 0);
  const auto work = deal_micro_steps(lengths, run, 2, 2, WorkCost{1, 0, 0}, 6);
  for (std::int64_t m = 0; m < 6; ++m) {
    double tokens = 0;
    for (int r = 0; r < 2; ++r)
      for (const SampleRef& s : sampler.batch(r, m)) tokens += s.shard == 0 ? 100 : 300;
    CHECK(work[m].mean_tokens * 2 == tokens);
    // The global deal splits the 8 samples into two halves of equal work when it can.
    CHECK(work[m].slowest_tokens - work[m].mean_tokens <= 200);
  }
  fs::remove_all(dir);
}

TEST_CASE("global-deal predicts no exchange time and global-exchange's straggler factor",
          "[simulate]") {
  // Global-deal trains global-exchange's deal without the all-gather: the same slowest rank in
  // every micro-step, nothing on the wire before it.
  ClusterRun exchange = samsung();
  exchange.run.load_balancing = LoadBalancing::global_exchange;
  ClusterRun deal = samsung();
  SimulationOptions options = small_options();
  apply_result_settings({parse_setting("load_balancing=global-deal")}, deal, options);
  REQUIRE(deal.run.load_balancing == LoadBalancing::global_deal);
  const AcceleratorProfile profile = test_profile();
  const Prediction with_exchange = predict(exchange, profile, small_options());
  const Prediction dealt = predict(deal, profile, options);

  CHECK(with_exchange.mean_step.exchange > 0);
  CHECK(dealt.mean_step.exchange == 0);
  CHECK(dealt.straggler_ratio == Approx(with_exchange.straggler_ratio));
  CHECK(dealt.straggler_ratio > 1);
  CHECK(dealt.mean_step.compute == Approx(with_exchange.mean_step.compute));
  CHECK(dealt.mean_step.imbalance == Approx(with_exchange.mean_step.imbalance));
  REQUIRE(dealt.step_seconds.size() == with_exchange.step_seconds.size());
  for (std::size_t i = 0; i < dealt.step_seconds.size(); ++i)
    CHECK(dealt.step_seconds[i] < with_exchange.step_seconds[i]);
  const std::string said =
      std::accumulate(dealt.assumptions.begin(), dealt.assumptions.end(), std::string(),
                      [](std::string a, const std::string& b) { return std::move(a) + b + "\n"; });
  CHECK_THAT(said, Catch::Contains("global-deal: every rank computes global-exchange's deal"));
}

TEST_CASE("accelerator names as submitters write them find their profile and datasheet",
          "[simulate]") {
  // One chip, several spellings across submissions.
  for (const char* name : {"NVIDIA A100-SXM4-80GB (400W)", "NVIDIA A100-SXM4-80GB", "A100-SXM-80GB",
                           "nvidia a100 sxm4 80gb"})
    CHECK(accelerator_name_matches(name, "a100 sxm 80gb"));
  // Other chips: another memory size, another form factor, another product whose name shares
  // a prefix.
  for (const char* name : {"NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA RTX A1000",
                           "NVIDIA A100-SXMX-80GB", "NVIDIA H100-SXM5-80GB"})
    CHECK_FALSE(accelerator_name_matches(name, "a100 sxm 80gb"));
  CHECK_FALSE(accelerator_name_matches("NVIDIA A100-SXM4-80GB", ""));
  CHECK(test_profile().matches_accelerator("A100-SXM-80GB"));

  REQUIRE(datasheet_for("NVIDIA A100-SXM-80GB"));
  CHECK(datasheet_for("NVIDIA A100-SXM-80GB")->memory_tbs == 2.039);
  REQUIRE(datasheet_for("NVIDIA A100-SXM4-40GB"));
  CHECK(datasheet_for("NVIDIA A100-SXM4-40GB")->memory_tbs == 1.555);
  REQUIRE(datasheet_for("NVIDIA H100-SXM5-80GB"));
  CHECK(datasheet_for("NVIDIA H100-SXM5-80GB")->multiprocessors == 132);
  CHECK_FALSE(datasheet_for("NVIDIA A100 80GB PCIe"));
  // nvidia-smi's name of the H100 SXM5 is the SXM5's datasheet; the PCIe and NVL parts are not.
  REQUIRE(datasheet_for("NVIDIA H100 80GB HBM3"));
  CHECK(datasheet_for("NVIDIA H100 80GB HBM3")->nvlink_gbs == 900);
  CHECK_FALSE(datasheet_for("NVIDIA H100 PCIe"));
  CHECK_FALSE(datasheet_for("NVIDIA H100 NVL"));
  // The export parts: the same silicon with NVLink at 400 GB/s.
  REQUIRE(datasheet_for("NVIDIA H800-SXM5-80GB"));
  CHECK(datasheet_for("NVIDIA H800-SXM5-80GB")->nvlink_gbs == 400);
  REQUIRE(datasheet_for("NVIDIA A800-SXM4-80GB"));
  CHECK(datasheet_for("NVIDIA A800-SXM4-80GB")->multiprocessors == 108);
  CHECK(looks_like_gpu("A800-SXM4-80GB"));
  // GH200: the 144 GB HBM3e part before the 96 GB HBM3 one.
  REQUIRE(datasheet_for("NVIDIA GH200 Grace Hopper Superchip 144GB"));
  CHECK(datasheet_for("NVIDIA GH200 Grace Hopper Superchip 144GB")->memory_tbs == 4.9);
  REQUIRE(datasheet_for("NVIDIA GH200 Grace Hopper Superchip"));
  CHECK(datasheet_for("NVIDIA GH200 Grace Hopper Superchip")->memory_tbs == 4.0);
  // Blackwell: the HGX B200 as MLPerf names it; the GB200 is its own row (another peak, NVLink
  // across the rack's trays).
  REQUIRE(datasheet_for("NVIDIA Blackwell GPU (B200-SXM-180GB)"));
  CHECK(datasheet_for("NVIDIA Blackwell GPU (B200-SXM-180GB)")->multiprocessors == 148);
  CHECK(datasheet_for("NVIDIA Blackwell GPU (B200-SXM-180GB)")->peak_tflops_fp16 == 2250);
  CHECK(datasheet_for("NVIDIA Blackwell GPU (B200-SXM-180GB)")->nvlink_domain == 0);
  REQUIRE(datasheet_for("NVIDIA Blackwell GPU (GB200)"));
  CHECK(datasheet_for("NVIDIA Blackwell GPU (GB200)")->peak_tflops_fp16 == 2500);
  CHECK(datasheet_for("NVIDIA Blackwell GPU (GB200)")->nvlink_domain == 72);
  CHECK_FALSE(
      same_silicon("NVIDIA Blackwell GPU (GB200)", "NVIDIA Blackwell GPU (B200-SXM-180GB)"));
  // The reference system's compute NIC per GPU: HDR for the A100, NDR for Hopper.
  CHECK(datasheet_for("NVIDIA A100-SXM4-80GB")->reference_nic_gbps == 200);
  CHECK(datasheet_for("NVIDIA H200-SXM5-141GB")->reference_nic_gbps == 400);

  CHECK(profile_stem("NVIDIA A100-SXM4-80GB (400W)") == "a100-sxm4-80gb");
  CHECK(profile_stem("NVIDIA H200-SXM5-141GB") == "h200-sxm5-141gb");
  CHECK(profile_stem("(400W)") == "accelerator");
}

TEST_CASE("a run of under a third of the calibration's samples per GPU is named extrapolated",
          "[simulate]") {
  AcceleratorProfile p = test_profile();
  p.provenance = {{"kind", "calibrated"},
                  {"source", "x"},
                  {"result", {{"nodes", 1}, {"gpus_per_node", 8}, {"global_batch_size", 768}}}};
  const auto note = small_batch_note(p, 16);  // 96 per GPU in the calibration
  REQUIRE(note);
  CHECK_THAT(*note, Catch::Contains("16 samples per GPU") && Catch::Contains("(96)"));
  CHECK_FALSE(small_batch_note(p, 32));  // exactly a third: not under it
  CHECK_FALSE(small_batch_note(p, 200));
  p.provenance.erase("result");  // a measured profile: no calibration run to compare with
  CHECK_FALSE(small_batch_note(p, 1));
}

TEST_CASE("a profile that cannot be written whole leaves the one before it", "[simulate]") {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("mlbert_simulate_profile_write");
  const fs::path path = dir / "a100.json";
  AcceleratorProfile p = test_profile();
  save_profile(p, path);
  const auto before = load_profile(path);
  p.tensor_flops_per_second *= 2;
  const auto text = profile_to_json(p).dump(2);
  std::string error;
  try {
    const mlbert::test::FileSizeLimit limit(text.size() / 2);
    save_profile(p, path);
  } catch (const std::exception& e) {
    error = e.what();
  }
  CHECK_THAT(error, Catch::Contains(path.string()) && Catch::Contains("File too large"));
  CHECK(load_profile(path).tensor_flops_per_second == before.tensor_flops_per_second);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  CHECK(names == std::vector<std::string>{"a100.json"});
  CHECK_THROWS_WITH(save_profile(p, path / "under_a_file.json"),
                    Catch::Contains("a100.json/under_a_file.json: cannot write the profile: "
                                    "cannot create ") &&
                        Catch::Contains("Not a directory"));
  fs::remove_all(dir);
}

TEST_CASE("of profiles calibrated on several rounds, the latest not after the result's is taken",
          "[simulate]") {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("mlbert_simulate_profile_rounds");
  // An A100 80 GB profile per round, told apart by their tensor rates; one without a round.
  const auto save = [&](const std::string& ruleset, double tflops, const std::string& file) {
    AcceleratorProfile p = test_profile();
    p.accelerator = "NVIDIA A100-SXM4-80GB";
    p.matches = {"a100 sxm 80gb"};
    p.tensor_flops_per_second = tflops * 1e12;
    p.memory_bytes_per_second = 2.039e12 * kMemoryBandwidthFraction;
    p.provenance = {{"kind", "calibrated"}, {"source", file}};
    if (!ruleset.empty()) p.provenance["result"] = {{"ruleset", ruleset}};
    save_profile(p, dir / file);
  };
  save("2.1.0", 182, "a100-v2.1.json");  // sorted first: the files' order must not decide
  save("1.0.0", 157, "a100-v1.0.json");
  save("2.0.0", 180, "a100-v2.0.json");
  save("", 150, "a100-measured.json");
  const auto rate = [&](const std::string& accelerator, const std::string& ruleset) {
    std::vector<std::string> notes;
    const auto p = profile_for_accelerator(dir, accelerator, notes, ruleset);
    REQUIRE(p);
    CHECK(notes.size() >= 1);  // the choice is named
    return p->tensor_flops_per_second / 1e12;
  };
  CHECK(rate("NVIDIA A100-SXM4-80GB", "1.0.0") == 157);
  CHECK(rate("NVIDIA A100-SXM4-80GB", "1.1.0") == 157);  // the latest not after it
  CHECK(rate("NVIDIA A100-SXM4-80GB", "2.0.0") == 180);
  CHECK(rate("NVIDIA A100-SXM4-80GB", "2.1.0") == 182);
  CHECK(rate("NVIDIA A100-SXM4-80GB", "4.1.0") == 182);
  CHECK(rate("NVIDIA A100-SXM4-80GB", "") == 182);       // no round: the newest software
  CHECK(rate("NVIDIA A100-SXM4-80GB", "0.7.0") == 150);  // earlier than every round: unranked
  CHECK(rate("NVIDIA A100-SXM4-80GB", "bogus") == 182);  // not a ruleset: as none
  // The same rule for a profile of the same silicon adapted to another HBM (the 40 GB part).
  CHECK(rate("NVIDIA A100-SXM4-40GB", "2.0.0") == 180);
  CHECK(find_profile(dir, "NVIDIA A100-SXM4-80GB", "1.1.0")->tensor_flops_per_second == 157e12);
  std::vector<std::string> notes;
  profile_for_accelerator(dir, "NVIDIA A100-SXM4-80GB", notes, "1.1.0");
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("a100-v1.0.json") && Catch::Contains("ruleset 1.0.0") &&
                           Catch::Contains("not after 1.1.0"));

  // The round before the part: with a v0.7 profile of the 40 GB part beside them, a 2.0 result on
  // 40 GB still takes the 2.0 profile of the 80 GB part, adapted (newer software moves a result
  // more than the HBM does); a 0.7 result takes the 40 GB profile itself, and a 0.7 result on
  // 80 GB that one adapted.
  AcceleratorProfile a40 = test_profile();
  a40.accelerator = "NVIDIA A100-SXM4-40GB";
  a40.matches = {"a100 sxm 40gb"};
  a40.tensor_flops_per_second = 78e12;
  a40.memory_bytes_per_second = 1.555e12 * kMemoryBandwidthFraction;
  a40.provenance = {{"kind", "calibrated"}, {"result", {{"ruleset", "0.7.0"}}}};
  save_profile(a40, dir / "a100-40gb-v0.7.json");
  CHECK(rate("NVIDIA A100-SXM4-40GB", "2.0.0") == 180);
  CHECK(rate("NVIDIA A100-SXM4-40GB", "1.0.0") == 157);
  CHECK(rate("NVIDIA A100-SXM4-40GB", "0.7.0") == 78);
  CHECK(rate("NVIDIA A100-SXM4-80GB", "0.7.0") == 78);
  CHECK(rate("NVIDIA A100-SXM4-80GB", "2.1.0") == 182);
  notes.clear();
  const auto adapted = profile_for_accelerator(dir, "NVIDIA A100-SXM4-40GB", notes, "2.0.0");
  REQUIRE(adapted);
  CHECK(adapted->accelerator == "NVIDIA A100-SXM4-40GB");
  CHECK(adapted->memory_bytes_per_second == Approx(1.555e12 * kMemoryBandwidthFraction));
  REQUIRE(notes.size() == 2);
  CHECK_THAT(notes[0], Catch::Contains("a100-v2.0.json") && Catch::Contains("not after 2.0.0") &&
                           Catch::Contains("a100-40gb-v0.7.json 0.7.0"));
  CHECK_THAT(notes[1], Catch::Contains("no profile for NVIDIA A100-SXM4-40GB of that round") &&
                           Catch::Contains("adapted to its HBM bandwidth"));
}

TEST_CASE("a profile stands for another accelerator only of the same silicon, adapted to its HBM",
          "[simulate]") {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("mlbert_simulate_profiles");
  AcceleratorProfile h100 = test_profile();
  h100.accelerator = "NVIDIA H100-SXM5-80GB";
  h100.matches = {"h100 sxm"};
  h100.tensor_flops_per_second = 550e12;
  h100.multiprocessors = 132;
  h100.memory_bytes_per_second = 3.35e12 * kMemoryBandwidthFraction;
  save_profile(h100, dir / "h100.json");

  CHECK(same_silicon("NVIDIA H100-SXM5-80GB", "NVIDIA H200-SXM5-141GB"));
  CHECK(same_silicon("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB"));
  CHECK_FALSE(same_silicon("NVIDIA A100-SXM4-80GB", "NVIDIA H100-SXM5-80GB"));
  CHECK_FALSE(same_silicon("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"));  // no datasheet

  std::vector<std::string> notes;
  const auto exact = profile_for_accelerator(dir, "NVIDIA H100-SXM5-80GB", notes);
  REQUIRE(exact);
  CHECK(exact->memory_bytes_per_second == h100.memory_bytes_per_second);
  CHECK(notes.empty());

  const auto h200 = profile_for_accelerator(dir, "NVIDIA H200-SXM5-141GB", notes);
  REQUIRE(h200);
  CHECK(h200->accelerator == "NVIDIA H200-SXM5-141GB");
  CHECK(h200->tensor_flops_per_second == h100.tensor_flops_per_second);
  CHECK(h200->run_start_seconds == h100.run_start_seconds);
  CHECK(h200->memory_bytes_per_second == Approx(4.8e12 * kMemoryBandwidthFraction));
  // The optimizer is bandwidth-bound: 4.8 / 3.35 the memory rate, 3.35 / 4.8 the time.
  CHECK(h200->optimizer_seconds_per_parameter_adam ==
        Approx(h100.optimizer_seconds_per_parameter_adam * 3.35 / 4.8));
  CHECK(h200->provenance.contains("adapted"));
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("no profile for NVIDIA H200-SXM5-141GB") &&
                           Catch::Contains("adapted to its HBM bandwidth"));

  // Of two same-silicon profiles, the one whose HBM is nearest the target's.
  AcceleratorProfile h200_fitted = h100;
  h200_fitted.accelerator = "NVIDIA H200-SXM5-141GB";
  h200_fitted.matches = {"h200 sxm"};
  h200_fitted.tensor_flops_per_second = 600e12;
  h200_fitted.memory_bytes_per_second = 4.8e12 * kMemoryBandwidthFraction;
  save_profile(h200_fitted, dir / "h200.json");
  notes.clear();
  const auto gh200 =
      profile_for_accelerator(dir, "NVIDIA GH200 Grace Hopper Superchip 144GB", notes);
  REQUIRE(gh200);
  CHECK(gh200->tensor_flops_per_second == h200_fitted.tensor_flops_per_second);
  CHECK(gh200->memory_bytes_per_second == Approx(4.9e12 * kMemoryBandwidthFraction));
  const auto h800 = profile_for_accelerator(dir, "NVIDIA H800-SXM5-80GB", notes);
  REQUIRE(h800);
  CHECK(h800->tensor_flops_per_second == h100.tensor_flops_per_second);
  // Calibrated on different rounds (H100 on 3.0, H200 on 4.0): a 4.0 H100 result takes the H200's
  // profile, of its round, adapted; a 3.1 one its own part's.
  h100.provenance = {{"result", {{"ruleset", "3.0.0"}}}};
  h200_fitted.provenance = {{"result", {{"ruleset", "4.0.0"}}}};
  save_profile(h100, dir / "h100.json");
  save_profile(h200_fitted, dir / "h200.json");
  CHECK(profile_for_accelerator(dir, "NVIDIA H100-SXM5-80GB", notes, "4.0.0")
            ->tensor_flops_per_second == h200_fitted.tensor_flops_per_second);
  CHECK(profile_for_accelerator(dir, "NVIDIA H100-SXM5-80GB", notes, "3.1.0")
            ->tensor_flops_per_second == h100.tensor_flops_per_second);
  h100.provenance = nlohmann::json::object();
  save_profile(h100, dir / "h100.json");
  fs::remove(dir / "h200.json");

  notes.clear();
  CHECK_FALSE(profile_for_accelerator(dir, "NVIDIA A100-SXM4-80GB", notes));
  CHECK_FALSE(profile_for_accelerator(dir, "NVIDIA V100-SXM3-32GB", notes));
  CHECK(notes.empty());
  CHECK_THROWS_WITH(adapt_profile(h100, "NVIDIA A100-SXM4-40GB"),
                    Catch::Contains("not the same silicon"));
  fs::remove_all(dir);
}

TEST_CASE("host_networking's compute NICs as submitters write them", "[simulate]") {
  struct Case {
    const char* text;
    int count;
    double gbps;
    bool count_stated;
  };
  for (const Case& c : std::vector<Case>{
           // NVIDIA's and Samsung's form: the compute part among storage and management.
           {"Storage: 2x ConnectX-6 IB HDR 200Gb/sec, Management: 1x ConnectX-6 Ethernet "
            "100Gb/Sec, Compute: 8x ConnectX-6 IB HDR 200Gb/Sec",
            8, 200, true},
           {"Storage: 1x ConnectX-6 Ethernet 100Gb/sec, Management: 1x Ethernet 1Gb/Sec, Compute: "
            "4x ConnectX-6 IB HDR 200Gb/Sec",
            4, 200, true},
           {"Storage: 2x ConnectX-7 IB NDR 400Gb/s, Compute: 8x ConnectX-7 IB NDR 400Gb/s, "
            "Management: 100Gb/s Ethernet NIC",
            8, 400, true},
           // Unlabelled, the count after the speed, Gbps, an InfiniBand generation, Tb/s.
           {"8x 200Gb/s HDR InfiniBand", 8, 200, true},
           {"Mellanox HDR InfiniBand 200Gbps x 8", 8, 200, true},
           {"Compute: 8 x NDR IB", 8, 400, true},
           {"Compute: 4x HDR100", 4, 100, true},
           {"1.6 Tb/s", 1, 1600, false},
           {"Network: 8x 200Gb/s HDR InfiniBand; Management: 1GbE", 8, 200, true},
           {"Front-end: 2x 100GbE, Compute: 8x ConnectX-7 NDR 400Gb/s", 8, 400, true},
           // A speed and no count; a dual-speed adapter (the higher has the unit).
           {"Management: iDRAC9, ExpressX5 Compute: Mellanox ConnectX-5 Dual Port 40/ 100GbE QSFP "
            "Adapter PCIe",
            1, 100, false},
           // A PCIe lane count is not a NIC count.
           {"Compute: ConnectX-6 200Gb/s HDR, PCIe Gen4 x16", 1, 200, false},
           // Several adapters: the one of the most bandwidth is the compute fabric; an item
           // without a speed counts with the next; storage only when nothing else has a speed.
           {"1x Ethernet 40Gb/Sec, 8x ConnectX-6 IB HDR 200Gb/Sec", 8, 200, true},
           {"Intel X710 2x10GbE SFP+, Mellanox ConnectX-6 HDR100/100GbE QSFP56", 1, 100, false},
           {"Compute: 4 x Mellanox Technologies MT4123 [ConnectX-6] HDR 200 Gb/Sec +  MT4119 "
            "[ConnectX-5] Ethernet 100 Gb/Sec",
            4, 200, true},
           {"2x Mellanox ConnectX-6, 100Gb/s Ethernet", 2, 100, true},
           {"1x 400GbE for storage, 1x ConnectX-6 HDR 200Gb/s", 1, 200, true},
           {"2x 100GbE (storage)", 2, 100, true},
       }) {
    INFO(c.text);
    const auto nics = parse_compute_nics(c.text);
    REQUIRE(nics);
    CHECK(nics->count == c.count);
    CHECK(nics->gbps_each == c.gbps);
    CHECK(nics->count_stated == c.count_stated);
  }
  // No compute part: only management, nothing, or no speed.
  for (const char* text : {"Management: 1x Ethernet 1 Gb/Sec", "", "Compute: 8x ConnectX-6"}) {
    INFO(text);
    CHECK_FALSE(parse_compute_nics(text));
  }
}

namespace {

// A published result folder of one run: system.json with `networking` as its host_networking,
// and a log of `records` (key, value JSON) between run_start and run_stop, after `launch`.
std::filesystem::path published_folder(
    const std::string& name, const std::string& networking,
    const std::vector<std::pair<std::string, std::string>>& records,
    const std::string& launch = "") {
  const auto dir = fresh_temp_dir(name);
  nlohmann::json system = {{"accelerator_model_name", "NVIDIA A100-SXM4-80GB"},
                           {"number_of_nodes", "2"},
                           {"accelerators_per_node", "8"},
                           {"accelerator_interconnect", "NVLINK 3.0, NVSWITCH 2.0 600GB/s"},
                           {"host_networking", networking},
                           {"framework", "PyTorch NVIDIA Release 21.09"}};
  std::ofstream(dir / "system.json") << system.dump();
  std::ofstream log(dir / "result_0.txt");
  if (!launch.empty()) log << launch << "\n";
  auto record = [&](int ms, const std::string& key, const std::string& value) {
    log << ":::MLLOG {\"namespace\": \"\", \"time_ms\": " << ms
        << ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"" << key << "\", \"value\": " << value
        << ", \"metadata\": {\"file\": \"run.py\", \"lineno\": 1, \"status\": \"success\"}}\n";
  };
  record(1000, "run_start", "null");
  for (const auto& [key, value] : records) record(1500, key, value);
  record(61000, "run_stop", "null");
  return dir;
}

}  // namespace

TEST_CASE("GB200 trays joined by NVLink are one network node per NVLink domain", "[simulate]") {
  namespace fs = std::filesystem;
  const auto cluster = [](const std::string& nodes) {
    const fs::path dir =
        published_folder("mlbert_published_gb200", "4x ConnectX-7 IB NDR 400Gb/s",
                         {{"global_batch_size", "8192"}, {"train_samples", "81920"}});
    nlohmann::json system = nlohmann::json::parse(std::ifstream(dir / "system.json"));
    system["accelerator_model_name"] = "NVIDIA Blackwell GPU (GB200)";
    system["accelerator_interconnect"] = "NVLINK Gen5 1800 GB/s + NVSWITCH Gen5";
    system["number_of_nodes"] = nodes;
    system["accelerators_per_node"] = "4";
    std::ofstream(dir / "system.json") << system.dump();
    return cluster_from_result(read_published_result(dir, "5.0.0"));
  };
  // 128 trays of 4 (512 GPUs): 8 domains of 16 trays (64 GPUs), each with its trays' 64 NICs.
  const ClusterRun big = cluster("128");
  CHECK(big.network.nodes == 8);
  CHECK(big.network.gpus_per_node == 64);
  CHECK(big.network.nics_per_node == 64);
  CHECK(big.network.nic_gbs_per_node == Approx(64 * 400.0 / 8));
  CHECK(big.network.nvlink_gbs == 900);
  CHECK(std::any_of(big.notes.begin(), big.notes.end(), [](const std::string& n) {
    return n.find("128 nodes of 4 GPUs as 8 NVLink domain(s) of 16 trays") != std::string::npos;
  }));
  // Within one rack: one domain.
  const ClusterRun two = cluster("2");
  CHECK(two.network.nodes == 1);
  CHECK(two.network.gpus_per_node == 8);
  // 256 GPUs: 4 domains of 64 (fewer than 72 each, equal whole trays).
  CHECK(cluster("64").network.gpus_per_node == 64);
  // Past the ranks mlbert simulates: the shape's error, at once (no search over 2e9 trays).
  CHECK_THROWS_WITH(cluster("2000000000"), Catch::Contains("more than the"));
  // The B200 (HGX, NVLink inside the node) keeps its nodes.
  const fs::path dir = published_folder("mlbert_published_b200", "8x ConnectX-7 IB NDR 400Gb/s",
                                        {{"global_batch_size", "256"}, {"train_samples", "2560"}});
  nlohmann::json system = nlohmann::json::parse(std::ifstream(dir / "system.json"));
  system["accelerator_model_name"] = "NVIDIA Blackwell GPU (B200-SXM-180GB)";
  std::ofstream(dir / "system.json") << system.dump();
  const ClusterRun b200 = cluster_from_result(read_published_result(dir, "5.0.0"));
  CHECK(b200.network.nodes == 2);
  CHECK(b200.network.gpus_per_node == 8);
}

TEST_CASE("a PyTorch folder without launch flags runs NVIDIA's reference launch", "[simulate]") {
  namespace fs = std::filesystem;
  const std::vector<std::pair<std::string, std::string>> records = {{"global_batch_size", "256"},
                                                                    {"train_samples", "1000"}};
  const std::string nics = "Compute: 8x HDR 200Gb/s";
  // No launch line, or only the container's: --distributed_lamb, as NVIDIA's run_and_time.sh.
  for (const std::string launch : {"", "+ docker exec -it --env=BATCHSIZE --env=DGXNNODES bert"}) {
    INFO(launch);
    const fs::path dir = published_folder("mlbert_published_reference", nics, records, launch);
    const PublishedResult r = read_published_result(dir, "1.1.0");
    CHECK(r.launch.reference_launch.value);
    CHECK(r.launch.gradient_path.value == GradientPath::distributed_lamb);
    const SimulationOptions o = simulation_options_for(r, SimulationOptions());
    CHECK(o.optimizer_shard == OptimizerShard::node);
    CHECK(o.gradient_wire_bytes == 2);
    CHECK_FALSE(o.overlap);
    const auto notes = cluster_from_result(r).notes;
    CHECK(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
      return n.find("NVIDIA's reference launch") != std::string::npos &&
             n.find("--distributed_lamb") != std::string::npos;
    }));
  }
  // A launch line of its own decides: Samsung's DDP path, not the sharded optimizer.
  const fs::path samsung =
      published_folder("mlbert_published_own_launch", nics, records,
                       "python run_pretraining.py --local_gradient_clip --exchange_padding");
  const PublishedResult own = read_published_result(samsung, "1.1.0");
  CHECK_FALSE(own.launch.reference_launch.value);
  CHECK(own.launch.gradient_path.value != GradientPath::distributed_lamb);
  CHECK(simulation_options_for(own, SimulationOptions()).overlap);
  // Not PyTorch (MXNet, TensorFlow): NVIDIA's PyTorch launch says nothing of it.
  const fs::path mxnet = published_folder("mlbert_published_mxnet", nics, records);
  nlohmann::json system = nlohmann::json::parse(std::ifstream(mxnet / "system.json"));
  system["framework"] = "MXNet NVIDIA Release 21.09";
  std::ofstream(mxnet / "system.json") << system.dump();
  const PublishedResult other = read_published_result(mxnet, "1.1.0");
  CHECK_FALSE(other.launch.reference_launch.value);
  CHECK(other.launch.gradient_path.value != GradientPath::distributed_lamb);
}

TEST_CASE("a log's loss-scale overflow announcements count skipped steps once each", "[simulate]") {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("mlbert_simulate_overflows");
  const auto count = [&](const std::string& text) {
    std::ofstream(dir / "log.txt", std::ios::binary) << text;
    return skipped_steps(dir / "log.txt");
  };
  const std::string apex =
      "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to ";
  CHECK(count("") == 0);
  CHECK(count("nothing about scales\n") == 0);
  // Every rank prints each announcement, the copies run together on one line or not.
  CHECK(count(apex + "65536.0\n" + apex + "65536.0" + apex + "65536.0\n" + apex + "32768.0\n") ==
        2);
  // NVIDIA's main-process message; one scale written two ways is one step.
  CHECK(count("0: Overflow detected, reduced loss_scaler to 65536.000000\n" + apex +
              "65536.0\n0: Overflow detected, reduced loss_scaler to 16384.000000\n") == 2);
  // A record of the log is not an announcement; nor is the phrase without a number.
  CHECK(count(":::MLLOG {\"key\": \"x\", \"value\": \"" + apex + "8.0\"}\n") == 0);
  CHECK(count(apex + "\n" + apex + ".\n" + apex + "x1\n") == 0);
  // A corrupt line of any length ends: the number is read up to 32 characters.
  CHECK(count(apex + std::string(200000, '9') + "\n") == 1);
  fs::remove_all(dir);
}

TEST_CASE("NVIDIA's run_pretraining.py without --unpad pads every sequence", "[simulate]") {
  namespace fs = std::filesystem;
  const std::vector<std::pair<std::string, std::string>> records = {{"global_batch_size", "5120"},
                                                                    {"train_samples", "1000"}};
  const std::string nics = "Compute: 8x HDR 200Gb/s";
  // v0.7's configs at scale: --fused_mha and no --unpad, so apex's padded attention (modeling.py
  // takes --unpad before --fused_mha).
  const std::string padded_launch =
      "python -u /workspace/bert/run_pretraining.py --train_batch_size=20 --fused_gelu_bias "
      "--dense_seq_output --fused_mha --allreduce_post_accumulation";
  const fs::path dir = published_folder("mlbert_published_no_unpad", nics, records, padded_launch);
  const PublishedResult r = read_published_result(dir, "0.7.0");
  CHECK(r.launch.shapes.value == Shapes::fully_padded);
  CHECK_FALSE(r.launch.reference_launch.value);
  const SimulationOptions o = simulation_options_for(r, SimulationOptions());
  CHECK(o.padded);
  CHECK(o.padded_attention);
  const ClusterRun c = cluster_from_result(r);
  CHECK(c.run.load_balancing == LoadBalancing::none);
  CHECK(std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& n) {
    return n.find("no --unpad on NVIDIA's run_pretraining.py launch line") != std::string::npos;
  }));
  // Any way of removing padding or packing it, or a launch that is not run_pretraining.py's: no.
  for (const std::string flag : {" --unpad", " --unpad_fmha", " --pad_fmha", " --packed_samples"}) {
    INFO(flag);
    const fs::path other =
        published_folder("mlbert_published_unpad", nics, records, padded_launch + flag);
    const PublishedResult u = read_published_result(other, "0.7.0");
    CHECK(u.launch.shapes.value != Shapes::fully_padded);
    CHECK_FALSE(simulation_options_for(u, SimulationOptions()).padded_attention);
  }
  const fs::path own = published_folder("mlbert_published_other_script", nics, records,
                                        "python train.py --train_batch_size=20 --fused_mha");
  CHECK(read_published_result(own, "0.7.0").launch.shapes.value != Shapes::fully_padded);
}

TEST_CASE("the launch line's --eval_iter_samples is the run's evaluation cadence", "[simulate]") {
  namespace fs = std::filesystem;
  const std::vector<std::pair<std::string, std::string>> records = {{"global_batch_size", "5120"},
                                                                    {"train_samples", "1000"}};
  const std::string nics = "Compute: 8x HDR 200Gb/s";
  // v0.7's NVIDIA launch: every 500,000 samples from 3,000,000, where the 1.0.0 rule would give
  // 200,000 from 200,000 at GBS 5,120.
  const fs::path dir =
      published_folder("mlbert_published_eval_cadence", nics, records,
                       "python run_pretraining.py --unpad --eval_iter_start_samples=3000000 "
                       "--eval_iter_samples=500000 --eval_batch_size=16");
  const PublishedResult r = read_published_result(dir, "0.7.0");
  REQUIRE(r.launch_line.eval_every_samples);
  CHECK(*r.launch_line.eval_every_samples == 500000);
  REQUIRE(r.launch_line.eval_first_samples);
  CHECK(*r.launch_line.eval_first_samples == 3000000);
  const ClusterRun c = cluster_from_result(r);
  CHECK_FALSE(c.run.eval.mlperf_cadence);
  CHECK(c.run.eval.interval_samples == 500000);
  CHECK(c.run.eval.start_samples == 3000000);
  CHECK(eval_interval(c.run) == 500000);
  // Not stated (or not a number, or no digits): the rules' cadence.
  for (const std::string launch : {"python run_pretraining.py --unpad",
                                   "python run_pretraining.py --eval_iter_samples=${EVAL_ITER}",
                                   "python run_pretraining.py --eval_iter_samples=0"}) {
    INFO(launch);
    const PublishedResult u = read_published_result(
        published_folder("mlbert_published_eval_rule", nics, records, launch), "1.0.0");
    CHECK_FALSE(u.launch_line.eval_every_samples);
    const ClusterRun rule = cluster_from_result(u);
    CHECK(rule.run.eval.mlperf_cadence);
    CHECK(eval_interval(rule.run) == mlperf_eval_interval(5120));
  }
}

TEST_CASE("a logged d_batch_size under the samples per GPU means packed rows", "[simulate]") {
  namespace fs = std::filesystem;
  const std::string nics = "Compute: 8x HDR 200Gb/s";
  // 2 nodes x 8 GPUs, GBS 64: 4 samples per GPU.
  const auto folder = [&](const std::string& name, const std::string& rows,
                          const std::string& launch = "") {
    return read_published_result(
        published_folder(
            name, nics,
            {{"global_batch_size", "64"}, {"d_batch_size", rows}, {"train_samples", "640"}},
            launch),
        "2.0.0");
  };
  // 2 rows for 4 samples: 2 per row; padded rows, CUDA graphs (NVIDIA's packed configs), no
  // exchange padding.
  const PublishedResult packed = folder("mlbert_published_packed", "2");
  CHECK(packed.launch.packing == 2);
  CHECK(packed.launch.padded());
  CHECK(packed.launch.host_issue.value == HostIssue::cuda_graphs);
  const ClusterRun cluster = cluster_from_result(packed);
  CHECK(cluster.run.load_balancing == LoadBalancing::none);
  const SimulationOptions o = simulation_options_for(packed, SimulationOptions());
  CHECK(o.packing == 2);
  CHECK(o.padded);
  CHECK(o.host_seconds_per_kernel == 0);
  CHECK(std::any_of(cluster.notes.begin(), cluster.notes.end(), [](const std::string& n) {
    return n.find("d_batch_size 2 rows per GPU for 4 samples, 2 per row") != std::string::npos;
  }));
  // Rows that are the samples, rows that do not divide them, no rows: not packed.
  for (const char* rows : {"4", "3", "0", "8"}) {
    INFO(rows);
    const PublishedResult r = folder("mlbert_published_unpacked", rows);
    CHECK(r.launch.packing == 1);
    CHECK_FALSE(r.launch.padded());
    CHECK(cluster_from_result(r).run.load_balancing == LoadBalancing::global_exchange);
  }
  // Counts far past any machine: no packing, no overflow (UBSan in the sanitizer run), no error
  // before cluster_from_result names the shape.
  {
    const fs::path dir = published_folder("mlbert_published_packed_huge", nics,
                                          {{"global_batch_size", "9007199254740991"},
                                           {"d_batch_size", "4503599627370496"},
                                           {"gradient_accumulation_steps", "2147483647"},
                                           {"train_samples", "640"}});
    nlohmann::json system = nlohmann::json::parse(std::ifstream(dir / "system.json"));
    system["number_of_nodes"] = "2000000000";
    system["accelerators_per_node"] = "2000000000";
    std::ofstream(dir / "system.json") << system.dump();
    const PublishedResult huge = read_published_result(dir, "2.0.0");
    CHECK(huge.launch.packing == 1);
    CHECK_THROWS_AS(cluster_from_result(huge), std::invalid_argument);
  }
  // A launch line of its own: the rows are padded, but graphs and balancing are what it says.
  const PublishedResult own =
      folder("mlbert_published_packed_own", "2", "python run_pretraining.py --exchange_padding");
  CHECK(own.launch.packing == 2);
  CHECK(own.launch.padded());
  CHECK(own.launch.host_issue.value != HostIssue::cuda_graphs);
  CHECK(cluster_from_result(own).run.load_balancing == LoadBalancing::global_exchange);
}

TEST_CASE("the phases a published log times: steps between evaluations, evaluations, run start",
          "[simulate]") {
  namespace fs = std::filesystem;
  // GBS 1,000; evaluations at 5,000, 10,000 and 15,000 samples, 200 ms each; 5 steps of 400 ms
  // between them; the first evaluation's interval (3.2 s) is 1 s longer than the second's.
  const auto write = [](const std::string& name, bool epoch_in_metadata,
                        bool accuracy_samples = true) {
    const fs::path dir =
        published_folder(name, "Compute: 8x HDR 200Gb/s", {{"global_batch_size", "1000"}});
    std::ofstream log(dir / "result_0.txt");
    auto record = [&](int ms, const std::string& key, const std::string& value,
                      const std::string& epoch = "") {
      log << ":::MLLOG {\"namespace\": \"\", \"time_ms\": " << ms
          << ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"" << key << "\", \"value\": " << value
          << ", \"metadata\": {\"file\": \"run.py\", \"lineno\": 1, \"status\": \"success\""
          << (epoch.empty() ? "" : ", \"epoch_num\": " + epoch) << "}}\n";
    };
    record(1000, "global_batch_size", "1000");
    record(1000, "run_start", "null");
    for (int i = 0; i < 3; ++i) {
      const int at = 1000 + 3000 + 2200 * i;
      const std::string samples = std::to_string(5000 * (i + 1));
      if (epoch_in_metadata)
        record(at, "eval_start", "null", samples);
      else
        record(at, "eval_start", samples, samples);
      record(at + 200, "eval_stop", epoch_in_metadata ? "null" : samples);
      record(at + 200, "eval_accuracy", "0.5", accuracy_samples ? samples : "1");
    }
    record(1000 + 9000, "eval_start", "20000");  // no eval_stop: it times nothing
    record(1000 + 9100, "train_samples", "20000");
    record(1000 + 9100, "run_stop", "null");
    return dir;
  };
  for (const bool in_metadata : {false, true}) {
    INFO("samples in eval_start's metadata only: " << in_metadata);
    const PublishedResult r =
        read_published_result(write("mlbert_published_phases", in_metadata), "2.0.0");
    REQUIRE(r.runs.size() == 1);
    CHECK(r.runs[0].timed_evals.size() == 3);
    const PublishedPhases ph = published_phases(r);
    REQUIRE(ph.step_seconds);
    CHECK(*ph.step_seconds == Approx(0.4));
    CHECK(ph.step_intervals == 2);
    REQUIRE(ph.eval_seconds);
    CHECK(*ph.eval_seconds == Approx(0.2));
    CHECK(ph.timed_evals == 3);
    REQUIRE(ph.run_start_seconds);
    CHECK(*ph.run_start_seconds == Approx(1.0));
    // Whole intervals from the second on: 2.2 s (an evaluation and 5 steps) over 5 steps.
    REQUIRE(ph.interval_step_seconds);
    CHECK(*ph.interval_step_seconds == Approx(0.44));
    CHECK(ph.intervals == 1);
    Prediction prediction;
    prediction.global_batch_size = 1000;
    const ResultComparison c = compare_with_result(r, prediction);
    const nlohmann::json j = comparison_to_json(c)["published_phases"];
    CHECK(j["step_seconds"].get<double>() == Approx(0.4));
    CHECK(j["eval_seconds"].get<double>() == Approx(0.2));
    CHECK(j["run_start_seconds"].get<double>() == Approx(1.0));
  }
  // eval_accuracy records without samples (epoch_num 1, as before v3.0): the intervals are
  // counted at the cadence given, and said so; without one there is no figure.
  {
    const PublishedResult r =
        read_published_result(write("mlbert_published_phases_cadence", false, false), "2.0.0");
    const PublishedPhases cadence = published_phases(r, 5000);
    REQUIRE(cadence.interval_step_seconds);
    CHECK(*cadence.interval_step_seconds == Approx(0.44));
    CHECK(cadence.intervals_from_cadence);
    const PublishedPhases unknown = published_phases(r);
    CHECK_FALSE(unknown.interval_step_seconds);
    CHECK_FALSE(
        published_phases(
            read_published_result(write("mlbert_published_phases_stated", false), "2.0.0"), 5000)
            .intervals_from_cadence);
  }
  // A 0.x ruleset's first evaluation is not one cadence from sample 0: no run start.
  const PublishedResult early =
      read_published_result(write("mlbert_published_phases_07", false), "0.7.0");
  CHECK_FALSE(published_phases(early).run_start_seconds);
  // Logs that time no evaluation (eval_accuracy only) give neither steps nor evaluations.
  const PublishedResult untimed = read_published_result(
      published_folder("mlbert_published_phases_untimed", "Compute: 8x HDR 200Gb/s",
                       {{"global_batch_size", "1000"}, {"train_samples", "5000"}}),
      "2.0.0");
  const PublishedPhases none = published_phases(untimed);
  CHECK_FALSE(none.step_seconds);
  CHECK_FALSE(none.eval_seconds);
  CHECK_FALSE(none.interval_step_seconds);
  CHECK(none.timed_evals == 0);
  Prediction prediction;
  prediction.global_batch_size = 1000;
  CHECK(comparison_to_json(
            compare_with_result(untimed, prediction))["published_phases"]["step_seconds"]
            .is_null());
}

TEST_CASE("a published folder's bad values are named errors, its long texts no crash",
          "[simulate]") {
  namespace fs = std::filesystem;
  const std::vector<std::pair<std::string, std::string>> good = {{"global_batch_size", "256"},
                                                                 {"train_samples", "1000"}};
  // The reader works on the minimal folder.
  fs::path dir = published_folder("mlbert_published_ok", "Compute: 8x HDR 200Gb/s", good);
  PublishedResult r = read_published_result(dir, "1.1.0");
  CHECK(r.global_batch_size == 256);
  CHECK(r.runs.at(0).seconds == 60);
  CHECK(cluster_from_result(r).network.nic_gbs_per_node == 200);
  // One run is too few for the olympic mean: the plain mean, said so.
  Prediction p;
  p.global_batch_size = 256;
  p.run_start_seconds = 2;
  p.step_seconds = {10, 10, 10};
  const ResultComparison c = compare_with_result(r, p);
  CHECK_FALSE(c.olympic);
  CHECK(c.published_olympic == 60);
  CHECK(c.predicted_olympic == 32);  // run start + 3 steps of 256 (1,000 samples)
  CHECK_THAT(format_comparison(c, test_profile()),
             Catch::Contains("mean of 1 run(s), too few for the olympic mean: published 60.00 s, "
                             "predicted 32.00 s (-46.7%)"));
  CHECK(comparison_to_json(c)["mean"] == "plain (fewer than 3 runs)");
  fs::remove_all(dir);

  // A count past what a double holds exactly names the file, line and key.
  dir = published_folder("mlbert_published_range", "", {{"global_batch_size", "1e300"}});
  CHECK_THROWS_WITH(
      read_published_result(dir, "1.1.0"),
      Catch::Contains("result_0.txt:2: global_batch_size: value 1e+300 is out of range"));
  fs::remove_all(dir);

  // NVLink bandwidth: a number of its own (fuzz_simulate_published found "9o0 GB/s" read as 0,
  // an NVLink of no bandwidth), and never 0.
  for (const auto& [interconnect, expected] : std::vector<std::pair<std::string, double>>{
           {"NVLINK Gen4 900 GB/s + NVSWITCH Gen3", 450},
           {"NVLINK3.0 600GB/s", 300},
           // Dell's form: the links, each at its rate per direction.
           {"18xNVLink 25GB/s + 4xNVSwitch", 450},
           {"12xNVLink 25GB/s + 6xNVSwitch", 300},
           {"8x 4th Gen NVLink, 900GB/s", 450},               // a count not of links: the total
           {"NVLINK Gen4 9o0 GB/s + NVSWITCH Gen3", 300}}) {  // unreadable: the datasheet's
    INFO(interconnect);
    dir = published_folder("mlbert_published_nvlink", "", good);
    r = read_published_result(dir, "1.1.0");
    r.system["accelerator_interconnect"] = interconnect;
    CHECK(cluster_from_result(r).network.nvlink_gbs == expected);
    fs::remove_all(dir);
  }
  dir = published_folder("mlbert_published_nvlink", "", good);
  r = read_published_result(dir, "1.1.0");
  r.system["accelerator_interconnect"] = "NVLink 0 GB/s";
  CHECK_THROWS_WITH(cluster_from_result(r),
                    Catch::Contains("accelerator_interconnect: \"0 GB/s\" is no bandwidth"));
  fs::remove_all(dir);

  // A PCIe card is refused by name, not read as a NVLink system of no bandwidth.
  for (const char* card : {"NVIDIA A100-PCIe-80GB", "NVIDIA A30", "NVIDIA L40S"}) {
    INFO(card);
    dir = published_folder("mlbert_published_pcie", "", good);
    r = read_published_result(dir, "1.1.0");
    r.system["accelerator_model_name"] = card;
    r.system["accelerator_interconnect"] = "PCIe 4.0";
    CHECK_THROWS_WITH(cluster_from_result(r),
                      Catch::Contains(std::string("accelerator \"") + card + "\" is a PCIe card") &&
                          Catch::Contains("system.json"));
    // Refused before the logs are read too, as the reader's std::runtime_error (its contract;
    // fuzz_simulate_published found an std::invalid_argument escaping it).
    std::ofstream(dir / "system.json") << r.system.dump();
    CHECK_THROWS_AS(read_published_result(dir, "1.1.0"), std::runtime_error);
    CHECK_THROWS_WITH(read_published_result(dir, "1.1.0"), Catch::Contains("is a PCIe card"));
    fs::remove_all(dir);
  }
  for (const char* sxm : {"NVIDIA A100-SXM4-80GB (400W)", "NVIDIA A100-SXM-40GB",
                          "NVIDIA H100 80GB HBM3", "NVIDIA GH200 144GB HBM3e", "NVIDIA A800"}) {
    INFO(sxm);
    CHECK_FALSE(is_pcie_card(sxm));
  }

  // A whole number of nodes written as a decimal is one; a fraction is not.
  for (const auto& [nodes, expected] : std::vector<std::pair<std::string, int>>{
           {"1.0", 1}, {"2", 2}, {"1.5", 0}, {"1e3", 0}, {"0", 0}}) {
    INFO(nodes);
    dir = published_folder("mlbert_published_nodes", "", good);
    r = read_published_result(dir, "1.1.0");
    r.system["number_of_nodes"] = nodes;
    if (expected > 0) {
      CHECK(cluster_from_result(r).network.nodes == expected);
    } else {
      CHECK_THROWS_WITH(
          cluster_from_result(r),
          Catch::Contains("number_of_nodes: \"" + nodes + "\" is not a positive whole number"));
    }
    fs::remove_all(dir);
  }

  // train_samples before run_start is a configuration (Composer logs the dataset's size there):
  // the last eval's epoch_num counts what the run trained.
  dir = published_folder("mlbert_published_config_samples", "", {{"global_batch_size", "448"}});
  {
    std::ifstream in(dir / "result_0.txt");
    std::stringstream text;
    text << ":::MLLOG {\"namespace\": \"\", \"time_ms\": 900, \"event_type\": \"POINT_IN_TIME\", "
            "\"key\": \"train_samples\", \"value\": 156811560, \"metadata\": {\"file\": \"c.py\", "
            "\"lineno\": 1}}\n";
    for (std::string line; std::getline(in, line);) {
      if (line.find("run_stop") != std::string::npos)
        text << ":::MLLOG {\"namespace\": \"\", \"time_ms\": 50000, \"event_type\": "
                "\"POINT_IN_TIME\", \"key\": \"eval_accuracy\", \"value\": 0.72, \"metadata\": "
                "{\"file\": \"c.py\", \"lineno\": 2, \"epoch_num\": 640640}}\n";
      text << line << "\n";
    }
    in.close();
    std::ofstream(dir / "result_0.txt") << text.str();
  }
  r = read_published_result(dir, "2.1.0");
  CHECK(r.runs.at(0).samples == 640640);
  fs::remove_all(dir);

  // A log cut short (no run_stop) is left out and named; a folder of only such logs is an error.
  dir = published_folder("mlbert_published_cut", "", good);
  {
    std::ifstream in(dir / "result_0.txt");
    std::ofstream out(dir / "result_1.txt");
    for (std::string line; std::getline(in, line);)
      if (line.find("run_stop") == std::string::npos) out << line << "\n";
  }
  r = read_published_result(dir, "1.1.0");
  REQUIRE(r.runs.size() == 1);
  CHECK(r.runs[0].file.filename() == "result_0.txt");
  REQUIRE(r.skipped_runs.size() == 1);
  CHECK_THAT(r.skipped_runs[0],
             Catch::Contains("result_1.txt: no run_stop record after run_start"));
  fs::remove(dir / "result_0.txt");
  CHECK_THROWS_WITH(read_published_result(dir, "1.1.0"),
                    Catch::Contains("result_1.txt: no run_stop record after run_start"));
  fs::remove_all(dir);

  // More ranks than the deal can hold.
  dir = published_folder("mlbert_published_world", "", good);
  {
    nlohmann::json system = nlohmann::json::parse(std::ifstream(dir / "system.json"));
    system["number_of_nodes"] = "2000000";
    std::ofstream(dir / "system.json") << system.dump();
  }
  r = read_published_result(dir, "1.1.0");
  CHECK_THROWS_WITH(cluster_from_result(r), Catch::Contains("number_of_nodes 2000000") &&
                                                Catch::Contains("ranks mlbert simulate models"));
  fs::remove_all(dir);

  // Texts long enough to overflow the stack of a regex that recurses per character: a compute
  // NIC field padded with 200,000 spaces, a launch flag with a 200,000-letter value.
  dir = published_folder("mlbert_published_long",
                         "Compute:" + std::string(200000, ' ') + "8x HDR 200Gb/s", good,
                         "python run.py --optimizer=" + std::string(200000, 'a') +
                             " --split_batch_cnt" + std::string(200000, ' ') + "4 4 4 4");
  r = read_published_result(dir, "1.1.0");
  CHECK_FALSE(r.launch_line.adam);
  CHECK(r.launch_line.stratified_quotas == std::vector<int>{4, 4, 4, 4});
  CHECK_NOTHROW(cluster_from_result(r));
  fs::remove_all(dir);

  // Stratified quotas as the launch line states them.
  dir = published_folder("mlbert_published_quotas", "", good,
                         "python run.py --split_batch_cnt 6 3 2 5 '--optimizer=FusedAdam'");
  r = read_published_result(dir, "1.1.0");
  CHECK(r.launch_line.stratified_quotas == std::vector<int>{6, 3, 2, 5});
  CHECK(r.launch_line.adam);
  fs::remove_all(dir);
}

TEST_CASE("a profile file round-trips, and a bad one is refused naming the file and field",
          "[simulate]") {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("mlbert_simulate_profile_io");
  const fs::path good = dir / "good.json";
  save_profile(test_profile(), good);
  const AcceleratorProfile back = load_profile(good);
  CHECK(back.path == good);
  CHECK(back.accelerator == "NVIDIA A100-SXM4-80GB");
  CHECK(back.matches == std::vector<std::string>{"a100 sxm 80gb"});
  CHECK(back.tensor_flops_per_second == 150e12);
  CHECK(back.multiprocessors == 108);
  CHECK(back.optimizer_seconds_per_parameter_adam == 1.7e-11);
  CHECK(back.run_start_seconds == 2.5);
  CHECK(back.source() == "unit test");

  const nlohmann::json base = profile_to_json(test_profile());
  const auto refused = [&](const std::string& name, const std::string& text) {
    const fs::path file = dir / (name + ".json");
    std::ofstream(file) << text;
    try {
      load_profile(file);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = base;
    edit(j);
    return j.dump();
  };
  CHECK_THROWS_WITH(load_profile(dir / "absent.json"),
                    Catch::Contains("absent.json: cannot open accelerator profile"));
  CHECK_THAT(refused("syntax", "{\"format\": "), Catch::Contains("syntax.json: not valid JSON"));
  CHECK_THAT(refused("array", "[1, 2]"), Catch::Contains("array.json: (top level): must be"));
  CHECK_THAT(refused("format", edited([](auto& j) { j["format"] = "other/1"; })),
             Catch::Contains("format.json: format: must be"));
  CHECK_THAT(refused("nomatch", edited([](auto& j) { j.erase("matches"); })),
             Catch::Contains("nomatch.json: matches: missing"));
  CHECK_THAT(refused("wordless", edited([](auto& j) { j["matches"] = {"  -- "}; })),
             Catch::Contains("wordless.json: matches: entries must be strings with a letter"));
  CHECK_THAT(refused("kind", edited([](auto& j) { j["provenance"]["kind"] = "guessed"; })),
             Catch::Contains("kind.json: provenance.kind: must be"));
  CHECK_THAT(refused("rate", edited([](auto& j) { j["tensor_flops_per_second"] = -1; })),
             Catch::Contains("rate.json: tensor_flops_per_second: must be a finite number >= 0"));
  CHECK_THAT(refused("zero", edited([](auto& j) { j["memory_bytes_per_second"] = 0; })),
             Catch::Contains("zero.json: memory_bytes_per_second: must be > 0"));
  CHECK_THAT(refused("sms", edited([](auto& j) { j["multiprocessors"] = 10.5; })),
             Catch::Contains("sms.json: multiprocessors: must be a whole number"));
  CHECK_THAT(
      refused("adam", edited([](auto& j) { j["optimizer"].erase("adam_seconds_per_parameter"); })),
      Catch::Contains("adam.json: optimizer.adam_seconds_per_parameter: missing"));
  CHECK_THAT(refused("text", edited([](auto& j) { j["run_start_seconds"] = "2.5"; })),
             Catch::Contains("text.json: run_start_seconds: must be a number, found string"));
  CHECK_THAT(refused("fixed", edited([](auto& j) { j["fixed_step_seconds"] = 7200; })),
             Catch::Contains("fixed.json: fixed_step_seconds: must be >= 0 and under an hour"));
  CHECK_THAT(refused("fixedneg", edited([](auto& j) { j["fixed_step_seconds"] = -0.01; })),
             Catch::Contains("fixedneg.json: fixed_step_seconds: must be a finite number >= 0"));
  CHECK(back.fixed_step_seconds == 0);  // absent: none
  AcceleratorProfile with_fixed = test_profile();
  with_fixed.fixed_step_seconds = 0.0125;
  CHECK(profile_to_json(with_fixed)["fixed_step_seconds"] == 0.0125);
  CHECK_FALSE(profile_to_json(test_profile()).contains("fixed_step_seconds"));
  save_profile(with_fixed, dir / "fixed_back.json");
  CHECK(load_profile(dir / "fixed_back.json").fixed_step_seconds == 0.0125);
  // A directory holding a bad profile: the lookup names the file instead of skipping it.
  std::vector<std::string> notes;
  CHECK_THROWS_WITH(profile_for_accelerator(dir, "NVIDIA A100-SXM4-80GB", notes),
                    Catch::Contains(".json: "));
  fs::remove_all(dir);
}

TEST_CASE("a device check's measurement becomes a measured profile that predicts its other runs",
          "[simulate]") {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_temp_dir("mlbert_simulate_bench");
  // What bert_cuda_bench --json writes, timed here by the kernel model at known rates: a GPU of
  // 600 TFLOP/s on GEMMs, 4 TB/s of copy, 132 SMs, kernels issued from C++.
  const KernelPlan plan = trace_kernel_plan(mlbert::bert::BertConfig::preset("bert-large"));
  KernelRates truth;
  truth.tensor_flops_per_second = 600e12;
  truth.memory_bytes_per_second = 4e12;
  truth.multiprocessors = 132;
  truth.host_seconds_per_kernel = kDriverLaunchSeconds;
  const MicroBatchShape mix{4300, 16, 640, 1.6e6}, padded{8192, 16, 1216, 16 * 512.0 * 512};
  const auto step = [&](const char* dtype, const char* mix_name, const MicroBatchShape& s) {
    return nlohmann::json{{"dtype", dtype},
                          {"mix", mix_name},
                          {"tokens", s.tokens},
                          {"sequences", s.sequences},
                          {"predictions", s.predictions},
                          {"squares", s.squares},
                          {"fwd_bwd_ms", KernelPlan::time(plan.train, s, truth).seconds * 1e3},
                          {"optimizer_ms", 6.72},
                          {"wall_ms", 0.1}};
  };
  nlohmann::json bench = {{"format", "mlbert-device-bench/1"},
                          {"model", "bert-large"},
                          {"device", {{"name", "NVIDIA H200"}, {"multiprocessors", 132}}},
                          {"gemm_tflops", 750.0},
                          {"copy_gbs", 4000.0},
                          {"steps", {step("bf16", "padded", padded), step("bf16", "mix", mix)}}};
  const auto write = [&](const std::string& name, const nlohmann::json& j) {
    std::ofstream(dir / name) << j.dump();
    return dir / name;
  };
  BenchCalibrationOptions options;
  options.accelerator = "NVIDIA H200-SXM5-141GB";
  options.run_start_seconds = 1.5;
  const AcceleratorProfile p = measured_profile(write("bench.json", bench), options);
  CHECK(p.provenance_kind == "measured");
  CHECK(p.tensor_flops_per_second == Approx(600e12).epsilon(1e-6));
  CHECK(p.memory_bytes_per_second == 4e12);
  CHECK(p.multiprocessors == 132);
  CHECK(p.optimizer_seconds_per_parameter_lamb == Approx(6.72e-3 / 336232258.0));
  CHECK(p.optimizer_seconds_per_parameter_adam ==
        Approx(p.optimizer_seconds_per_parameter_lamb * 30 / 50));
  CHECK(p.run_start_seconds == 1.5);
  CHECK(p.matches_accelerator("NVIDIA H200-SXM5-141GB"));
  CHECK(p.provenance["device"] == "NVIDIA H200");
  REQUIRE(p.provenance["checks"].size() == 2);
  CHECK_FALSE(p.provenance["checks"][0]["fitted"].get<bool>());  // padded: a prediction
  CHECK(p.provenance["checks"][0]["error"].get<double>() == Approx(0).margin(1e-6));
  CHECK(p.provenance["checks"][1]["fitted"].get<bool>());
  // It is a profile like any other: it saves and loads.
  save_profile(p, dir / "measured.json");
  CHECK(load_profile(dir / "measured.json").tensor_flops_per_second == p.tensor_flops_per_second);

  // Bad measurements name the file and the field.
  nlohmann::json missing = bench;
  missing["steps"][1].erase("squares");
  CHECK_THROWS_WITH(measured_profile(write("missing.json", missing), options),
                    Catch::Contains("missing.json: steps[1].squares: missing"));
  nlohmann::json negative = bench;
  negative["copy_gbs"] = -1;
  CHECK_THROWS_WITH(measured_profile(write("negative.json", negative), options),
                    Catch::Contains("negative.json: copy_gbs: must be a finite number > 0"));
  nlohmann::json format = bench;
  format["format"] = "something/2";
  CHECK_THROWS_WITH(measured_profile(write("format.json", format), options),
                    Catch::Contains("format.json: format: must be \"mlbert-device-bench/1\""));
  BenchCalibrationOptions fp16 = options;
  fp16.dtype = "fp16";
  CHECK_THROWS_WITH(measured_profile(dir / "bench.json", fp16),
                    Catch::Contains("no fp16 mix measurement to fit"));
  // Faster than the memory-bound kernels allow: no rate fits.
  nlohmann::json fast = bench;
  fast["steps"][1]["fwd_bwd_ms"] = 0.5;
  CHECK_THROWS_WITH(measured_profile(write("fast.json", fast), options),
                    Catch::Contains("no tensor rate fits"));
  CHECK_THROWS_WITH(measured_profile(dir / "absent.json", options),
                    Catch::Contains("absent.json: cannot open"));
  fs::remove_all(dir);
}
