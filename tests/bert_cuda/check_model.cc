// Device check, part 2: a full BERT-large forward + backward on a small variable-length batch, the
// CPU reference backend (f32, holding the GPU's compute-type weights) against CudaOps, with the
// same dropout masks, then Model::evaluate (no dropout) on a smaller batch on both. Tolerances are
// fixed per compute type (stated in the rows' notes): the per-op check bounds each kernel's error;
// this one catches wiring and accumulation mistakes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "bert/batch.h"
#include "bert/config.h"
#include "bert/model.h"
#include "bert/parameters.h"
#include "tests/bert_cuda/check_ops.h"

namespace mlbert::cuda::check {
namespace {

struct Tolerances {
  double loss_rel, grad_norm_median_rel, grad_norm_max_rel, min_cosine;
};
Tolerances tolerances_for(DType t) {
  if (t == DType::bf16) return {1e-2, 2e-2, 1e-1, 0.99};
  return {5e-3, 1e-2, 5e-2, 0.995};
}

bert::Batch random_batch(const bert::BertConfig& config, std::mt19937_64& rng,
                         const std::vector<int>& lengths) {
  bert::Batch batch;
  for (int len : lengths) {
    std::vector<int32_t> ids(len), segments(len);
    for (int i = 0; i < len; ++i) {
      ids[i] = 1 + static_cast<int32_t>(rng() % (config.vocab_size - 1));
      segments[i] = i < len / 2 ? 0 : 1;
    }
    std::vector<int32_t> positions, labels;
    const int masked = std::min(76, std::max(1, len * 15 / 100));
    for (int i = 0; i < len && static_cast<int>(positions.size()) < masked; ++i) {
      if (rng() % 100 < 15 || len - i <= masked - static_cast<int>(positions.size())) {
        positions.push_back(i);
        labels.push_back(1 + static_cast<int32_t>(rng() % (config.vocab_size - 1)));
      }
    }
    batch.append_sequence(ids, segments, positions, labels, static_cast<int32_t>(rng() % 2));
  }
  return batch;
}

double rel(double got, double ref) {
  return std::fabs(got - ref) / std::max(std::fabs(ref), 1e-30);
}

CheckRow summary_row(const std::string& tensor, DType t, double value, double limit, bool pass,
                     const std::string& note) {
  CheckRow row;
  row.op = "bert-large fwd+bwd";
  row.tensor = tensor;
  row.dtype = bert::dtype_name(t);
  row.gpu.max_abs = value;
  row.plain.max_abs = limit;
  row.pass = pass;
  row.note = note;
  return row;
}

}  // namespace

std::vector<CheckRow> check_model(DType t, uint64_t run_seed) {
  std::vector<CheckRow> rows;
  std::mt19937_64 rng(case_seed(run_seed, "model"));
  const Tolerances tol = tolerances_for(t);
  const bert::BertConfig config = bert::BertConfig::preset("bert-large");
  const std::vector<int> lengths = {1, 48, 130, 300, 512};
  const bert::Batch batch = random_batch(config, rng, lengths);
  bert::ModelLimits limits;
  limits.max_tokens = batch.num_tokens();
  limits.max_sequences = batch.num_sequences();
  limits.max_masked = batch.num_masked();
  limits.max_seqlen = 512;
  const uint64_t seed = rng();
  const bert::DropoutKey key{rng(), static_cast<uint32_t>(rng() % 1000)};
  // Evaluation (forward without dropout: the attention, embedding and LayerNorm kernels' keep-all
  // paths) on a smaller batch, which keeps the CPU's extra forward to ~a fifth of its training
  // forward.
  const bert::Batch eval_batch = random_batch(config, rng, {1, 77, 130});
  bert::ForwardBackwardOptions options;
  options.loss_scale = t == DType::f16 ? 1024.0f : 1.0f;  // fp16 gradients need a loss scale

  CudaOps gpu(cuda_ops_options_for(config, limits, t));
  bert::ParameterStore gpu_params(config, gpu);
  gpu_params.init_truncated_normal(seed);
  bert::Model gpu_model(gpu_params, limits);
  const auto t0 = std::chrono::steady_clock::now();
  const bert::StepResult g = gpu_model.forward_backward(batch, key, {}, options);
  gpu.synchronize();
  const size_t allocations = gpu.device_allocations();
  const bert::StepResult g2 = gpu_model.forward_backward(batch, key, {}, options);
  gpu.synchronize();
  const auto t1 = std::chrono::steady_clock::now();
  rows.push_back(summary_row("device allocations in step 2", t,
                             static_cast<double>(gpu.device_allocations() - allocations), 0,
                             gpu.device_allocations() == allocations,
                             "cudaMalloc calls during a steady-state step"));
  rows.push_back(summary_row("step repeatability (loss)", t, rel(g2.total_loss, g.total_loss), 0,
                             g2.total_loss == g.total_loss,
                             "same batch, same dropout key: identical loss"));
  const std::vector<float> gpu_grad = gpu_params.download_grad();
  const bert::EvalResult ge = gpu_model.evaluate(eval_batch);
  std::printf("model check (%s): %s\n", bert::dtype_name(t), gpu.gemm().fusion_report().c_str());

  // The CPU reference holds exactly the GPU's compute-type weights.
  bert::CpuOps cpu;
  bert::ParameterStore cpu_params(config, cpu);
  {
    std::vector<float> master = gpu_params.download_master();
    for (float& x : master) x = round_to(t, x);
    cpu_params.upload_master(master);
  }
  bert::Model cpu_model(cpu_params, limits);
  const bert::StepResult c = cpu_model.forward_backward(batch, key, {}, options);
  const auto t2 = std::chrono::steady_clock::now();
  const std::vector<float> cpu_grad = cpu_params.download_grad();
  const bert::EvalResult ce = cpu_model.evaluate(eval_batch);
  const auto t3 = std::chrono::steady_clock::now();
  std::printf(
      "model check (%s): %zu tokens in %zu sequences, %zu masked; GPU 2 steps %.1f s, CPU 1 step "
      "%.1f s; evaluation of %zu tokens, CPU %.1f s\n",
      bert::dtype_name(t), batch.num_tokens(), batch.num_sequences(), batch.num_masked(),
      std::chrono::duration<double>(t1 - t0).count(),
      std::chrono::duration<double>(t2 - t1).count(), eval_batch.num_tokens(),
      std::chrono::duration<double>(t3 - t2).count());

  const std::string loss_note = "rel err <= " + std::to_string(tol.loss_rel);
  rows.push_back(summary_row("mlm_loss", t, rel(g.mlm_loss, c.mlm_loss), tol.loss_rel,
                             rel(g.mlm_loss, c.mlm_loss) <= tol.loss_rel,
                             loss_note + " (cpu " + std::to_string(c.mlm_loss) + ", gpu " +
                                 std::to_string(g.mlm_loss) + ")"));
  rows.push_back(summary_row("nsp_loss", t, rel(g.nsp_loss, c.nsp_loss), tol.loss_rel,
                             rel(g.nsp_loss, c.nsp_loss) <= tol.loss_rel,
                             loss_note + " (cpu " + std::to_string(c.nsp_loss) + ", gpu " +
                                 std::to_string(g.nsp_loss) + ")"));
  const double hit_diff = std::fabs(static_cast<double>(g.mlm_correct - c.mlm_correct));
  rows.push_back(
      summary_row("mlm_correct", t, hit_diff, std::max(1.0, 0.02 * c.mlm_total),
                  g.mlm_total == c.mlm_total && hit_diff <= std::max(1.0, 0.02 * c.mlm_total),
                  "argmax hits within 2% of the masked positions (near-ties may flip)"));

  // Evaluation: summed losses at the loss tolerance, hit counts as in training.
  for (const auto& [name, got, ref] :
       {std::tuple{"eval mlm_loss_sum", ge.mlm_loss_sum, ce.mlm_loss_sum},
        std::tuple{"eval nsp_loss_sum", ge.nsp_loss_sum, ce.nsp_loss_sum}})
    rows.push_back(summary_row(name, t, rel(got, ref), tol.loss_rel, rel(got, ref) <= tol.loss_rel,
                               loss_note + " (cpu " + std::to_string(ref) + ", gpu " +
                                   std::to_string(got) + "), no dropout"));
  for (const auto& [name, got, ref, total, ref_total] :
       {std::tuple{"eval mlm_correct", ge.mlm_correct, ce.mlm_correct, ge.mlm_total, ce.mlm_total},
        std::tuple{"eval nsp_correct", ge.nsp_correct, ce.nsp_correct, ge.nsp_total,
                   ce.nsp_total}}) {
    const double diff = std::fabs(static_cast<double>(got - ref));
    const double limit = std::max(1.0, 0.02 * static_cast<double>(ref_total));
    rows.push_back(summary_row(name, t, diff, limit, total == ref_total && diff <= limit,
                               "argmax hits within 2% (at least 1) of " +
                                   std::to_string(ref_total) + " (near-ties may flip)"));
  }

  // Per-tensor gradient norms and the whole gradient's direction.
  std::vector<double> norm_errors;
  double dot = 0, gg = 0, cc = 0, worst = 0;
  std::string worst_name;
  for (size_t i = 0; i < cpu_params.infos().size(); ++i) {
    const bert::ParameterInfo& info = cpu_params.infos()[i];
    double gn = 0, cn = 0;
    for (size_t e = info.offset; e < info.offset + info.numel; ++e) {
      const double gv = gpu_grad[e], cv = cpu_grad[e];
      gn += gv * gv;
      cn += cv * cv;
      dot += gv * cv;
    }
    gg += gn;
    cc += cn;
    if (cn == 0 && gn == 0) continue;  // e.g. embedding rows no token used
    // The attention key bias's gradient is zero in exact arithmetic (it adds q . b_k to every
    // score of a row, which the softmax ignores): both sides hold only rounding noise, whose norms
    // differ by orders of magnitude. It still counts in the whole gradient's direction above.
    if (info.name.ends_with("attention/self/key/bias")) continue;
    const double err = rel(std::sqrt(gn), std::sqrt(cn));
    norm_errors.push_back(err);
    if (err > worst) {
      worst = err;
      worst_name = info.name;
    }
  }
  std::sort(norm_errors.begin(), norm_errors.end());
  const double median = norm_errors.empty() ? 0 : norm_errors[norm_errors.size() / 2];
  const double cosine = dot / std::sqrt(std::max(gg * cc, 1e-300));
  rows.push_back(summary_row("grad norms: median rel err", t, median, tol.grad_norm_median_rel,
                             median <= tol.grad_norm_median_rel,
                             std::to_string(norm_errors.size()) + " tensors"));
  rows.push_back(summary_row("grad norms: max rel err", t, worst, tol.grad_norm_max_rel,
                             worst <= tol.grad_norm_max_rel, "worst: " + worst_name));
  rows.push_back(summary_row("gradient cosine", t, cosine, tol.min_cosine, cosine >= tol.min_cosine,
                             "flat gradient, GPU vs CPU (value is the cosine, limit the minimum)"));
  bool finite = true;
  for (float x : gpu_grad) finite = finite && std::isfinite(x);
  rows.push_back(summary_row("gradients finite", t, finite ? 0 : 1, 0, finite,
                             "no NaN/inf anywhere in the GPU gradient"));
  return rows;
}

}  // namespace mlbert::cuda::check
