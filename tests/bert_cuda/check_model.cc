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
                     const std::string& note, const std::string& op = "bert-large fwd+bwd") {
  CheckRow row;
  row.op = op;
  row.tensor = tensor;
  row.dtype = bert::dtype_name(t);
  row.gpu.max_abs = value;
  row.plain.max_abs = limit;
  row.pass = pass;
  row.note = note;
  return row;
}

// Per-tensor gradient norms and the whole gradient's direction, GPU against CPU (the CPU's flat
// buffer in the separate QKV layout; the GPU's read tensor by tensor in TF layout, or from
// `gpu_flat` when it is in the CPU's layout).
void compare_gradients(std::vector<CheckRow>& rows, const std::string& op, DType t,
                       const Tolerances& tol, const bert::ParameterStore& gpu_params,
                       const bert::ParameterStore& cpu_params, const std::vector<float>& cpu_grad,
                       const std::vector<float>* gpu_flat) {
  std::vector<double> norm_errors;
  double dot = 0, gg = 0, cc = 0, worst = 0;
  std::string worst_name;
  bool finite = true;
  for (size_t i = 0; i < cpu_params.infos().size(); ++i) {
    const bert::ParameterInfo& info = cpu_params.infos()[i];
    std::vector<float> own;
    if (!gpu_flat) own = gpu_params.download_grad(i);
    double gn = 0, cn = 0;
    for (size_t e = 0; e < info.numel; ++e) {
      const double gv = gpu_flat ? (*gpu_flat)[info.offset + e] : own[e];
      const double cv = cpu_grad[info.offset + e];
      finite = finite && std::isfinite(gv);
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
                             std::to_string(norm_errors.size()) + " tensors", op));
  rows.push_back(summary_row("grad norms: max rel err", t, worst, tol.grad_norm_max_rel,
                             worst <= tol.grad_norm_max_rel, "worst: " + worst_name, op));
  rows.push_back(summary_row("gradient cosine", t, cosine, tol.min_cosine, cosine >= tol.min_cosine,
                             "flat gradient, GPU vs CPU (value is the cosine, limit the minimum)",
                             op));
  rows.push_back(summary_row("gradients finite", t, finite ? 0 : 1, 0, finite,
                             "no NaN/inf anywhere in the GPU gradient", op));
}

// The same step on a CudaOps with every step variant of CudaOpsOptions on (fused QKV, DGELU with
// FFN1's bias beside its weight gradient, tuned GEMM algorithms, kept LayerNorm bits, the
// streaming LayerNorm backward), the same weights, against the same CPU step.
void check_step_variants(std::vector<CheckRow>& rows, DType t, const Tolerances& tol,
                         const CudaOps& gpu, const bert::ParameterStore& gpu_params,
                         const bert::ModelLimits& limits, const bert::Batch& batch,
                         const bert::DropoutKey& key, const bert::ForwardBackwardOptions& options,
                         const bert::StepResult& c, const bert::ParameterStore& cpu_params,
                         const std::vector<float>& cpu_grad) {
  const std::string op = "bert-large fwd+bwd, step variants";
  CudaOpsOptions o = gpu.options();
  o.fused_qkv = o.dgelu_epilogue = o.layer_norm_keep_bits = o.layer_norm_streaming = true;
  o.gemm_candidates = 4;
  CudaOps ops(o);
  bert::ParameterStore params(gpu_params.config(), ops);
  for (size_t i = 0; i < params.infos().size(); ++i)
    params.upload_master(i, gpu_params.download_master(i));
  params.sync_compute();
  bert::Model model(params, limits);
  const bert::StepResult g = model.forward_backward(batch, key, {}, options);
  std::printf("model check, step variants (%s): %s; %s\n", bert::dtype_name(t),
              ops.gemm().tuning_report().c_str(), ops.gemm().fusion_report().c_str());
  rows.push_back(summary_row("qkv layout", t, params.qkv_layout() == bert::QkvLayout::fused, 1,
                             params.qkv_layout() == bert::QkvLayout::fused,
                             "the store took the backend's fused QKV layout", op));
  const std::string loss_note = "rel err <= " + std::to_string(tol.loss_rel);
  for (const auto& [name, got, ref] : {std::tuple{"mlm_loss", g.mlm_loss, c.mlm_loss},
                                       std::tuple{"nsp_loss", g.nsp_loss, c.nsp_loss}})
    rows.push_back(summary_row(
        name, t, rel(got, ref), tol.loss_rel, rel(got, ref) <= tol.loss_rel,
        loss_note + " (cpu " + std::to_string(ref) + ", gpu " + std::to_string(got) + ")", op));
  compare_gradients(rows, op, t, tol, params, cpu_params, cpu_grad, nullptr);
}

// CUDA graphs: without attention dropout (the attention kernels do not read the key from device
// memory yet), steps 1-4 with four dropout keys on a CudaOps that records steps (op by op, then
// recorded, then replayed twice) give the losses and gradients of the same steps run op by op,
// bit for bit.
void check_recorded_steps(std::vector<CheckRow>& rows, DType t, const CudaOps& gpu,
                          const bert::ParameterStore& gpu_params, const bert::ModelLimits& limits,
                          const bert::Batch& batch, const bert::ForwardBackwardOptions& options) {
  const std::string op = "bert-large fwd+bwd, CUDA graphs";
  bert::BertConfig config = gpu_params.config();
  config.attention_probs_dropout_prob = 0;
  const std::vector<float> master = gpu_params.download_master();
  std::vector<double> losses[2];
  std::vector<float> grads[2];
  std::string report;
  for (const bool graphs : {false, true}) {
    CudaOpsOptions o = gpu.options();
    o.cuda_graphs = graphs;
    CudaOps ops(o);
    bert::ParameterStore params(config, ops);
    params.upload_master(master);
    bert::Model model(params, limits);
    for (uint32_t step = 1; step <= 4; ++step)
      losses[graphs].push_back(
          model.forward_backward(batch, bert::DropoutKey{77, step}, {}, options).total_loss);
    grads[graphs] = params.download_grad();
    if (graphs) report = ops.step_report();
  }
  const bool same_losses = losses[0] == losses[1];
  const bool same_grads = grads[0] == grads[1];
  rows.push_back(summary_row("losses of steps 1-4", t, same_losses ? 0 : 1, 0, same_losses,
                             "recorded and replayed steps vs op by op, exactly; " + report, op));
  rows.push_back(summary_row("gradient of step 4", t, same_grads ? 0 : 1, 0, same_grads,
                             "a replay, bit for bit the op-by-op step's", op));
  const bool replayed = report.find(" 1 steps recorded, 2 replayed") != std::string::npos;
  rows.push_back(summary_row("steps replayed", t, replayed ? 0 : 1, 0, replayed,
                             "step 2 recorded, steps 3 and 4 replayed: " + report, op));
  bool distinct = true;
  for (int k = 1; k < 4; ++k) distinct = distinct && losses[1][k] != losses[1][k - 1];
  rows.push_back(summary_row("replays draw each step's masks", t, distinct ? 0 : 1, 0, distinct,
                             "the four steps' losses all differ (hidden dropout keyed by step)",
                             op));
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

  compare_gradients(rows, "bert-large fwd+bwd", t, tol, gpu_params, cpu_params, cpu_grad,
                    &gpu_grad);
  check_step_variants(rows, t, tol, gpu, gpu_params, limits, batch, key, options, c, cpu_params,
                      cpu_grad);
  check_recorded_steps(rows, t, gpu, gpu_params, limits, batch, options);
  return rows;
}

}  // namespace mlbert::cuda::check
