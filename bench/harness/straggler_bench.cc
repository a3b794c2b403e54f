// Straggler overhead of one training step at 1,024 ranks x 16 sequences: how much longer the
// slowest rank works than the average one (max / mean over ranks), per load-balancing method.
//
// Design choice: the work of a rank is its real token count (what unpadded training costs), with
// a FLOP-weighted variant that adds attention's s^2 term (REFERENCE.md section 7). Lengths follow
// the MLPerf training set's bin mix (REFERENCE.md section 8: 37.5% 1-128, 18.75% 129-256, 12.5%
// 257-384, 31.25% 385-512); inside a bin the shape is an assumption stated in the output: uniform
// in the first three bins, and in the last 80% full 512-token sequences (the reference fills most
// sequences to the maximum) and 20% uniform in 385-511.
// Baseline: `none` (each rank trains what it sampled). The step-time gain of a method is the
// ratio of straggler overheads, since a synchronous step lasts as long as its slowest rank.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "harness/length_distribution.h"
#include "harness/load_balance.h"

using namespace mlbert::harness;

namespace {

constexpr int kRanks = 1024, kRanksPerNode = 8, kBatch = 16, kSteps = 200;
const int kQuotas[4] = {6, 3, 2, 5};  // the paper's stratified batch of 16

// FLOPs of a sequence of length s, without the masked-LM head (REFERENCE.md section 7).
double flops(int s) {
  return 6.0 * 302e6 * s + 12.0 * 24 * 1024 * double(s) * s;
}

struct Method {
  std::string name;
  bool stratified;
  LoadBalancing balancing;
};

struct Outcome {
  double mean_tokens_ratio = 0, worst_tokens_ratio = 0, mean_flops_ratio = 0, plan_us = 0;
};

Outcome measure(const Method& method) {
  std::mt19937_64 rng(12345);  // the same length stream for every method
  Outcome out;
  double plan_seconds = 0;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<std::vector<int>> lengths(kRanks);
    for (auto& rank : lengths) {
      if (method.stratified) {
        for (int b = 0; b < 4; ++b)
          for (int i = 0; i < kQuotas[b]; ++i) rank.push_back(mlperf_length_in_bin(b, rng));
      } else {
        for (int i = 0; i < kBatch; ++i) rank.push_back(mlperf_random_length(rng));
      }
    }
    const auto start = std::chrono::steady_clock::now();
    const auto plan = plan_exchange(lengths, method.balancing, kRanksPerNode);
    plan_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<std::int64_t> tokens(kRanks);
    std::vector<double> work(kRanks);
    for (int r = 0; r < kRanks; ++r)
      for (const auto& s : plan[r]) {
        tokens[r] += lengths[s.rank][s.index];
        work[r] += flops(lengths[s.rank][s.index]);
      }
    const double ratio = straggler_ratio(tokens);
    out.mean_tokens_ratio += ratio / kSteps;
    out.worst_tokens_ratio = std::max(out.worst_tokens_ratio, ratio);
    const double mean_work = std::accumulate(work.begin(), work.end(), 0.0) / kRanks;
    out.mean_flops_ratio += *std::max_element(work.begin(), work.end()) / mean_work / kSteps;
  }
  out.plan_us = plan_seconds / kSteps * 1e6;
  return out;
}

}  // namespace

int main() {
  std::printf(
      "straggler overhead (max/mean work over ranks), %d ranks (%d per node) x %d sequences, "
      "%d steps\n",
      kRanks, kRanksPerNode, kBatch, kSteps);
  std::printf(
      "lengths: MLPerf bin mix 37.5/18.75/12.5/31.25%%; within bins uniform, last bin 80%% "
      "at 512 (assumption)\n\n");
  const std::vector<Method> methods = {
      {"none", false, LoadBalancing::none},
      {"global-exchange", false, LoadBalancing::global_exchange},
      {"node-exchange", false, LoadBalancing::node_exchange},
      {"stratified + node-exchange", true, LoadBalancing::node_exchange},
  };
  std::vector<Outcome> outcomes;
  for (const auto& m : methods) outcomes.push_back(measure(m));
  const Outcome& base = outcomes.front();
  std::printf("%-28s %12s %12s %12s %14s %12s\n", "method", "tokens mean", "tokens worst",
              "FLOPs mean", "step vs none", "plan us");
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const Outcome& o = outcomes[i];
    std::printf("%-28s %12.4f %12.4f %12.4f %13.3fx %12.1f\n", methods[i].name.c_str(),
                o.mean_tokens_ratio, o.worst_tokens_ratio, o.mean_flops_ratio,
                base.mean_flops_ratio / o.mean_flops_ratio, o.plan_us);
  }
  std::printf(
      "\n\"step vs none\": speed-up of a compute-bound step (slowest rank's FLOPs) over no "
      "balancing.\n");
  return 0;
}
