// Gradient sync: buckets tile the flat gradient buffer at tensor ends, launch as soon as backward
// completes them, and the three clipping modes produce the formulas' numbers on hand-computed
// buckets (two ranks as threads).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "bert/cpu/cpu_ops.h"
#include "bert/parameters.h"
#include "harness/comm/grad_sync.h"
#include "tests/harness/thread_group.h"

using namespace mlbert;
using harness::Bucket;
using harness::ClippingMode;
using harness::GradientSync;

namespace {

std::vector<bert::ParameterInfo> fake_layout(const std::vector<std::size_t>& sizes) {
  std::vector<bert::ParameterInfo> infos;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    bert::ParameterInfo info;
    info.name = "t" + std::to_string(i);
    info.offset = offset;
    info.numel = sizes[i];
    infos.push_back(info);
    offset += (sizes[i] + 3) / 4 * 4;  // aligned like the real store
  }
  return infos;
}

// Runs one synced step on `world` thread ranks; grads[r] is rank r's gradient buffer, which holds
// the reduced buffer afterwards. Returns each rank's SyncResult.
std::vector<harness::SyncResult> run_sync(std::vector<std::vector<float>>& grads,
                                          const std::vector<Bucket>& buckets, ClippingMode mode,
                                          double max_norm, double loss_scale) {
  const int world = static_cast<int>(grads.size());
  test::ThreadGroup group(world);
  std::vector<harness::SyncResult> results(world);
  group.run([&](int rank) {
    bert::CpuOps ops;
    bert::Buffer grad(ops, bert::DType::f32, grads[rank].size());
    ops.copy_from_host(grad.tensor(), grads[rank].data(), grads[rank].size() * sizeof(float));
    test::ThreadGroupCommunicator comm(group, rank);
    GradientSync sync(ops, comm, grad.tensor(), buckets, mode, max_norm);
    sync.begin(loss_scale);
    sync.on_grad_ready(grads[rank].size());
    results[rank] = sync.finish();
    ops.copy_to_host(grads[rank].data(), grad.tensor(), grads[rank].size() * sizeof(float));
  });
  return results;
}

}  // namespace

TEST_CASE("buckets close at the first tensor end past the size and tile the buffer",
          "[grad_sync]") {
  const auto infos = fake_layout({10, 5, 20, 3, 2});  // offsets 0, 12, 20, 40, 44; flat 48
  const auto buckets = harness::make_buckets(infos, 48, 12);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0] == Bucket{0, 17});   // t0 + t1 (ends at 12 + 5)
  CHECK(buckets[1] == Bucket{17, 40});  // t2 ends at 40
  CHECK(buckets[2] == Bucket{40, 48});  // the rest, with the trailing gap
  CHECK(harness::make_buckets(infos, 48, 1000) == std::vector<Bucket>{{0, 48}});
}

TEST_CASE("25 MB buckets over the bert-large layout", "[grad_sync]") {
  const auto config = bert::BertConfig::preset("bert-large");
  const auto infos = bert::bert_parameter_layout(config);
  std::size_t flat = 0;
  for (const auto& i : infos) flat = std::max(flat, i.offset + i.numel);
  flat = (flat + bert::kParameterAlignment - 1) / bert::kParameterAlignment *
         bert::kParameterAlignment;
  const auto buckets = harness::make_buckets(infos, flat, harness::bucket_elements_for(25));
  CHECK(harness::bucket_elements_for(25) == 25 * 1024 * 1024 / 4);
  std::size_t covered = 0;
  for (const auto& b : buckets) {
    CHECK(b.begin == covered);
    covered = b.end;
    // Every boundary is the end of a tensor (or the buffer).
    bool at_tensor_end = b.end == flat;
    for (const auto& i : infos) at_tensor_end |= i.offset + i.numel == b.end;
    CHECK(at_tensor_end);
  }
  CHECK(covered == flat);
  // 1.34 GB of fp32 gradients in buckets of 25 MiB plus at most one tensor (FFN kernels are
  // 16 MiB, the word embeddings 119 MiB): between 30 and 52 of them.
  CHECK(buckets.size() >= 30);
  CHECK(buckets.size() <= 52);
}

TEST_CASE("a bucket's allreduce starts when backward has finished it, not later", "[grad_sync]") {
  test::ThreadGroup group(1);
  bert::CpuOps ops;
  bert::Buffer grad(ops, bert::DType::f32, 8);
  test::ThreadGroupCommunicator comm(group, 0);
  GradientSync sync(ops, comm, grad.tensor(), {{0, 4}, {4, 8}}, ClippingMode::none, 1.0);
  sync.on_grad_ready(8);  // not armed (an accumulation micro-batch): nothing is sent
  CHECK(comm.allreduce_calls == 0);
  sync.begin(1.0);
  sync.on_grad_ready(3);
  CHECK(comm.allreduce_calls == 0);
  sync.on_grad_ready(4);
  CHECK(comm.allreduce_calls == 1);
  sync.on_grad_ready(8);
  CHECK(comm.allreduce_calls == 2);
  sync.finish();
  CHECK(comm.allreduce_calls == 2);
  CHECK(comm.allreduce_sizes == std::vector<std::size_t>{4, 4});
}

TEST_CASE("the first-launch listener hears each step's first allreduce started by backward, once",
          "[grad_sync]") {
  test::ThreadGroup group(1);
  bert::CpuOps ops;
  bert::Buffer grad(ops, bert::DType::f32, 8);
  test::ThreadGroupCommunicator comm(group, 0);
  GradientSync sync(ops, comm, grad.tensor(), {{0, 4}, {4, 8}}, ClippingMode::none, 1.0);
  int heard = 0;
  int launched_when_heard = 0;
  sync.on_first_launch([&] {
    ++heard;
    launched_when_heard = comm.allreduce_calls;
  });
  sync.on_grad_ready(8);  // not armed: nothing sent, nothing heard
  CHECK(heard == 0);
  sync.begin(1.0);
  sync.on_grad_ready(3);
  CHECK(heard == 0);
  sync.on_grad_ready(4);
  CHECK(heard == 1);
  CHECK(launched_when_heard == 1);  // told after the collective was started
  sync.on_grad_ready(8);
  sync.finish();
  CHECK(heard == 1);
  // A step whose buckets all start in finish() (backward never reported): not heard.
  sync.begin(1.0);
  sync.finish();
  CHECK(heard == 1);
  // The next step's first launch is heard again; a cleared listener hears nothing.
  sync.begin(1.0);
  sync.on_grad_ready(8);
  sync.finish();
  CHECK(heard == 2);
  sync.on_first_launch(nullptr);
  sync.begin(1.0);
  sync.on_grad_ready(8);
  sync.finish();
  CHECK(heard == 2);
}

TEST_CASE("bucket-before-allreduce matches the paper's formula on hand-computed buckets",
          "[grad_sync]") {
  // Two buckets: tau = 1/sqrt(2). Each rank scales each bucket by min(1, tau/||g||) / W, sums.
  const double tau = 1 / std::sqrt(2.0);
  for (double loss_scale : {1.0, 8.0}) {
    INFO("loss scale " << loss_scale);
    std::vector<std::vector<float>> grads = {{3, 4, 0, 0, 0.1f, 0, 0, 0},
                                             {0, 0, 0, 0.2f, 6, 8, 0, 0}};
    for (auto& g : grads)
      for (auto& x : g) x *= static_cast<float>(loss_scale);
    const auto results =
        run_sync(grads, {{0, 4}, {4, 8}}, ClippingMode::bucket_before_allreduce, 1.0, loss_scale);
    // rank 0: bucket 0 norm 5 (clipped by tau/5), bucket 1 norm 0.1 (kept);
    // rank 1: bucket 0 norm 0.2 (kept), bucket 1 norm 10 (clipped by tau/10).
    const std::vector<double> expected = {3 * tau / 5 / 2,
                                          4 * tau / 5 / 2,
                                          0,
                                          0.2 / 2,
                                          0.1 / 2 + 6 * tau / 10 / 2,
                                          8 * tau / 10 / 2,
                                          0,
                                          0};
    for (int r = 0; r < 2; ++r) {
      CHECK_FALSE(results[r].overflow);
      CHECK(results[r].grad_scale == Approx(1 / loss_scale));
      for (int i = 0; i < 8; ++i)
        CHECK(grads[r][i] / loss_scale == Approx(expected[i]).margin(1e-7));
    }
    double norm = 0;
    for (double e : expected) norm += e * e;
    CHECK(results[0].global_norm == Approx(std::sqrt(norm)));
  }
}

TEST_CASE("after-allreduce clipping scales the averaged gradient to norm <= 1", "[grad_sync]") {
  std::vector<std::vector<float>> grads = {{3, 4, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 6, 8, 0, 0}};
  const auto results = run_sync(grads, {{0, 4}, {4, 8}}, ClippingMode::after_allreduce, 1.0, 1.0);
  const double norm = std::sqrt(9.0 + 16 + 36 + 64) / 2;  // of the average
  for (int r = 0; r < 2; ++r) {
    CHECK(grads[r] == std::vector<float>{3, 4, 0, 0, 6, 8, 0, 0});  // the sum, untouched
    CHECK(results[r].global_norm == Approx(norm));
    CHECK(results[r].clip_factor == Approx(1 / norm));
    CHECK(results[r].grad_scale == Approx(1 / norm / 2));
    // What the optimizer sees has norm exactly max_norm.
    double seen = 0;
    for (float g : grads[r]) seen += std::pow(g * results[r].grad_scale, 2);
    CHECK(std::sqrt(seen) == Approx(1.0));
  }
  // Below the threshold nothing is clipped.
  grads = {{0.3f, 0, 0, 0, 0, 0, 0, 0}, {0.1f, 0, 0, 0, 0, 0, 0, 0}};
  const auto small = run_sync(grads, {{0, 4}, {4, 8}}, ClippingMode::after_allreduce, 1.0, 1.0);
  CHECK(small[0].clip_factor == 1.0);
  CHECK(small[0].grad_scale == Approx(0.5));
  CHECK(small[0].global_norm == Approx(0.2));
}

TEST_CASE("an inf or nan on one rank makes every rank skip the step", "[grad_sync]") {
  // +inf, -inf and NaN in one bucket of one rank of three; every other bucket of every rank is
  // finite. All ranks must see the overflow (and so skip the step with the same decision), and
  // hold the same reduced buffer, the bad bucket included.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (ClippingMode mode :
       {ClippingMode::bucket_before_allreduce, ClippingMode::after_allreduce, ClippingMode::none}) {
    for (float bad : {inf, -inf, nan}) {
      for (int bad_rank : {0, 2}) {
        for (std::size_t bad_element : {1, 6}) {  // bucket 0 or bucket 1
          INFO(harness::to_string(mode)
               << ", " << bad << " at element " << bad_element << " of rank " << bad_rank);
          std::vector<std::vector<float>> grads(3, std::vector<float>(8, 0.5f));
          grads[bad_rank][bad_element] = bad;
          const auto results = run_sync(grads, {{0, 4}, {4, 8}}, mode, 1.0, 1024.0);
          harness::LossScaleSpec spec;
          spec.initial = 1024;
          spec.dynamic = true;
          for (int r = 0; r < 3; ++r) {
            INFO("rank " << r);
            CHECK(results[r].overflow);
            harness::LossScaler scaler(spec);
            CHECK(scaler.update(results[r].overflow));  // skip
            CHECK(scaler.scale() == 512);
            for (std::size_t i = 0; i < 8; ++i) {
              const bool rank0_finite = std::isfinite(grads[0][i]);
              CHECK(std::isfinite(grads[r][i]) == rank0_finite);
              if (rank0_finite) CHECK(grads[r][i] == grads[0][i]);
            }
          }
          // The bad bucket stays non-finite after the sum on every rank (so each rank's own
          // check sees it); the good bucket of the others is untouched by it.
          const std::size_t good = bad_element < 4 ? 5 : 1;
          CHECK_FALSE(std::isfinite(grads[1][bad_element]));
          CHECK(std::isfinite(grads[1][good]));
        }
      }
    }
  }
}

TEST_CASE("dynamic loss scale halves on overflow and doubles after clean steps", "[grad_sync]") {
  harness::LossScaleSpec spec;
  spec.initial = 131072;
  spec.dynamic = true;
  spec.growth_interval = 3;
  harness::LossScaler scaler(spec);
  CHECK(scaler.update(true));
  CHECK(scaler.scale() == 65536);
  CHECK_FALSE(scaler.update(false));
  CHECK_FALSE(scaler.update(false));
  CHECK(scaler.scale() == 65536);
  CHECK_FALSE(scaler.update(false));
  CHECK(scaler.scale() == 131072);
  harness::LossScaler fixed(harness::LossScaleSpec{});
  CHECK(fixed.update(true));  // fp32: the step is still skipped, the scale stays 1
  CHECK(fixed.scale() == 1.0);
}
