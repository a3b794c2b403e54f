// Device check, part 1: every CudaOps op against the CPU reference backend on fresh random inputs.
// For each output: the fp32 reference (CpuOps on the same inputs, which are already rounded to the
// compute type), the GPU result (outputs NaN-poisoned before the op), and a plain low-precision
// implementation of the op emulated on the host (the same math, rounding to the compute type at
// every point where an unfused implementation stores a tensor). Masks, copies and counts are
// compared exactly. Besides BERT-large's shapes, the cases cover the paths real training meets that
// small inputs do not: row kernels with several rows per warp (~5000 rows), evaluation without
// dropout, the unfused GEMM paths a cuBLASLt refusal takes and the tiled fallback GEMM, device loss
// scaling, and optimizer chunks that do not start on a 16-byte boundary.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>

#include "bert/cpu/cpu_ops.h"
#include "bert/cuda/gemm_plan.h"
#include "bert/philox.h"
#include "tests/bert_cuda/check_ops.h"

namespace mlbert::cuda::check {
namespace {

using bert::Activation;
using bert::DropoutMask;

constexpr int64_t kHidden = 1024;
constexpr int64_t kHeads = 16;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kFfn = 4096;
constexpr int64_t kVocab = 30522;
constexpr int64_t kPaddedVocab = 30528;
constexpr double kF32Floor = 1e-4;  // f32 outputs of 16-bit products: fp32-accumulation noise

// Lengths with the edge cases of the 64-row tiles: 1, exactly 64, 65, and a long one.
const std::vector<int32_t> kLengths = {1, 37, 64, 65, 128, 200, 511};
// 5003 tokens, a micro-batch's scale: above 132 SMs x 4 blocks x 4 warps = 2112 rows the row
// kernels give each warp several rows (3 here, on 108 or 132 SMs), and 5003 is no multiple of the
// 12 rows of a block, so the last block's warps get uneven counts.
const std::vector<int32_t> kLongLengths = {512, 300, 1,   511, 128, 65,  512,
                                           497, 64,  512, 400, 511, 512, 478};

std::vector<int32_t> cu_seqlens_of(const std::vector<int32_t>& lengths) {
  std::vector<int32_t> cu{0};
  for (int32_t len : lengths) cu.push_back(cu.back() + len);
  return cu;
}

float act(Activation a, float x) {
  switch (a) {
    case Activation::gelu:
      return bert::gelu_tanh(x);
    case Activation::gelu_erf:
      return bert::gelu_erf(x);
    case Activation::tanh:
      return std::tanh(x);
    default:
      return x;
  }
}
float act_grad(Activation a, float pre, float out) {
  switch (a) {
    case Activation::gelu:
      return bert::gelu_tanh_grad(pre);
    case Activation::gelu_erf:
      return bert::gelu_erf_grad(pre);
    case Activation::tanh:
      return 1.0f - out * out;
    default:
      return 1.0f;
  }
}

DropoutMask random_mask(std::mt19937_64& rng, double p) {
  return bert::make_dropout_mask(rng(), static_cast<uint32_t>(rng() % 100000),
                                 static_cast<uint32_t>(rng() % 73), p);
}

struct Context {
  Backends& b;
  DType t;  // compute type
  std::mt19937_64& rng;
  std::vector<CheckRow>& rows;
  void add(CheckRow row) { rows.push_back(std::move(row)); }
};

MatrixType matrix_type(DType t) {
  return t == DType::bf16 ? MatrixType::bf16 : MatrixType::f16;
}

// How often `epilogue` has run fused in cuBLASLt on this backend so far (what actually ran, after
// any refusal), from its GEMM runner's counts.
int64_t fused_runs(const CudaOps& ops, GemmEpilogue epilogue) {
  int64_t runs = 0;
  for (const EpilogueUse& use : ops.gemm().epilogue_uses())
    if (use.epilogue == epilogue) runs += use.fused_runs;
  return runs;
}

// ---- linear ----------------------------------------------------------------------------------

struct LinearCase {
  const char* name;
  int64_t m, n, k;
  int batch;
  bool transposed, bias;
  Activation activation;
};

void check_linear(Context& c, const LinearCase& lc) {
  Backends& b = c.b;
  const size_t B = lc.batch, M = lc.m, N = lc.n, K = lc.k;
  const size_t out_n = B * M * N;
  const std::string op = std::string("linear ") + lc.name;
  auto x = b.twin(normal(c.rng, M * K), c.t);
  auto w = b.twin(normal(c.rng, B * N * K, 0.03f), c.t);
  auto bias = b.twin(normal(c.rng, B * N, 0.1f), c.t);
  const bool has_act = lc.activation != Activation::none;
  auto out = b.output(out_n, c.t);
  auto pre = b.output(out_n, c.t);

  auto fwd = [&](bool gpu, const Twin& o, const Twin* p, Activation a, bool with_bias = true) {
    bert::LinearForwardParams f;
    f.input = gpu ? x.gpu.tensor() : x.cpu.tensor();
    f.weight = gpu ? w.gpu.tensor() : w.cpu.tensor();
    if (lc.bias && with_bias) f.bias = gpu ? bias.gpu.tensor() : bias.cpu.tensor();
    f.out = gpu ? o.gpu.tensor() : o.cpu.tensor();
    if (p) f.pre_activation = gpu ? p->gpu.tensor() : p->cpu.tensor();
    f.activation = a;
    f.m = lc.m;
    f.n = lc.n;
    f.k = lc.k;
    f.batch = lc.batch;
    f.weight_stride = N * K;
    f.bias_stride = N;
    f.out_stride = M * N;
    f.weight_transposed = lc.transposed;
    if (gpu)
      b.gpu().linear_forward(f);
    else
      b.cpu().linear_forward(f);
  };
  fwd(true, out, has_act ? &pre : nullptr, lc.activation);
  fwd(false, out, has_act ? &pre : nullptr, lc.activation);
  const auto ref_out = b.cpu_values(out);
  const auto gpu_out = b.gpu_values(out);
  // Plain: the product stored in the compute type, the bias added and stored, then the
  // activation, stored again (a GEMM without a bias epilogue, then elementwise kernels).
  auto plain_pre = b.output(out_n, c.t);
  fwd(false, plain_pre, nullptr, Activation::none, /*with_bias=*/false);
  auto plain = rounded(c.t, b.cpu_values(plain_pre));
  if (lc.bias) {
    const auto bias_values = b.cpu_values(bias);
    for (size_t i = 0; i < out_n; ++i)
      plain[i] = round_to(c.t, plain[i] + bias_values[(i / (M * N)) * N + i % N]);
  }
  const auto plain_pre_values = plain;
  for (float& v : plain) v = round_to(c.t, act(lc.activation, v));
  c.add(judge(op + " fwd", "out", c.t, gpu_out, plain, ref_out));
  if (has_act)
    c.add(judge(op + " fwd", "pre_activation", c.t, b.gpu_values(pre), plain_pre_values,
                b.cpu_values(pre)));

  // Backward (d_weight and d_bias accumulate onto random values).
  auto d_out = b.twin(normal(c.rng, out_n), c.t);
  const auto d_out_host = b.cpu_values(d_out);
  const auto dw0 = normal(c.rng, B * N * K, 0.01f), db0 = normal(c.rng, B * N, 0.01f);
  auto d_w = b.twin(dw0, DType::f32);
  auto d_b = b.twin(db0, DType::f32);
  auto d_x = b.output(M * K, c.t);
  // Both backends go backward from the same saved forward tensors (the CPU's, rounded to the
  // compute type), so the backward is judged on its own and not on the forward's last bit.
  auto saved_pre = b.twin(rounded(c.t, b.cpu_values(pre)), c.t);
  auto saved_out = b.twin(rounded(c.t, ref_out), c.t);
  auto bwd = [&](bool gpu, const Twin& dy, const Twin& dw, const Twin& db, const Twin& dx,
                 Activation a) {
    bert::LinearBackwardParams p;
    p.d_out = gpu ? dy.gpu.tensor() : dy.cpu.tensor();
    p.pre_activation = gpu ? saved_pre.gpu.tensor() : saved_pre.cpu.tensor();
    p.out = gpu ? saved_out.gpu.tensor() : saved_out.cpu.tensor();
    p.activation = a;
    p.input = gpu ? x.gpu.tensor() : x.cpu.tensor();
    p.weight = gpu ? w.gpu.tensor() : w.cpu.tensor();
    p.d_input = gpu ? dx.gpu.tensor() : dx.cpu.tensor();
    p.d_weight = gpu ? dw.gpu.tensor() : dw.cpu.tensor();
    if (lc.bias) p.d_bias = gpu ? db.gpu.tensor() : db.cpu.tensor();
    p.m = lc.m;
    p.n = lc.n;
    p.k = lc.k;
    p.batch = lc.batch;
    p.weight_stride = N * K;
    p.bias_stride = N;
    p.out_stride = M * N;
    p.weight_transposed = lc.transposed;
    if (gpu)
      b.gpu().linear_backward(p);
    else
      b.cpu().linear_backward(p);
  };
  bwd(true, d_out, d_w, d_b, d_x, lc.activation);
  bwd(false, d_out, d_w, d_b, d_x, lc.activation);
  // Plain: d_pre rounded to the compute type (stored by an activation-backward kernel), then the
  // products from it.
  std::vector<float> d_pre(out_n);
  const auto pre_ref = b.cpu_values(saved_pre), out_ref = b.cpu_values(saved_out);
  // The activation's input as stored by the forward (compute type).
  for (size_t i = 0; i < out_n; ++i)
    d_pre[i] = round_to(
        c.t, d_out_host[i] * act_grad(lc.activation, has_act ? round_to(c.t, pre_ref[i]) : 0.0f,
                                      round_to(c.t, out_ref[i])));
  auto plain_dy = b.twin(d_pre, c.t);
  auto plain_dw = b.twin(dw0, DType::f32);
  auto plain_db = b.twin(db0, DType::f32);
  auto plain_dx = b.output(M * K, c.t);
  bwd(false, plain_dy, plain_dw, plain_db, plain_dx, Activation::none);
  std::vector<float> plain_d_input = rounded(c.t, b.cpu_values(plain_dx));
  if (B > 1) {
    // Batch entries (Q, K, V) each add their input gradient into the stored sum, as separate
    // query/key/value layers do: acc = round(acc + d_pre[e] . W[e]^T), entry by entry.
    auto entry_dx = b.output(M * K, c.t);
    auto entry_dw = b.twin(std::vector<float>(N * K, 0.0f), DType::f32);
    std::fill(plain_d_input.begin(), plain_d_input.end(), 0.0f);
    for (size_t e = 0; e < B; ++e) {
      bert::LinearBackwardParams p;
      p.d_out = plain_dy.cpu.tensor().slice(e * M * N, M * N);
      p.input = x.cpu.tensor();
      p.weight = w.cpu.tensor().slice(e * N * K, N * K);
      p.d_input = entry_dx.cpu.tensor();
      p.d_weight = entry_dw.cpu.tensor();
      p.m = lc.m;
      p.n = lc.n;
      p.k = lc.k;
      p.weight_transposed = lc.transposed;
      b.cpu().linear_backward(p);
      const auto part = b.cpu_values(entry_dx);
      for (size_t i = 0; i < part.size(); ++i)
        plain_d_input[i] = round_to(c.t, plain_d_input[i] + part[i]);
    }
  }
  c.add(judge(op + " bwd", "d_input", c.t, b.gpu_values(d_x), plain_d_input, b.cpu_values(d_x)));
  c.add(judge(op + " bwd", "d_weight (+=)", c.t, b.gpu_values(d_w), b.cpu_values(plain_dw),
              b.cpu_values(d_w), kF32Floor));
  if (lc.bias)
    c.add(judge(op + " bwd", "d_bias (+=)", c.t, b.gpu_values(d_b), b.cpu_values(plain_db),
                b.cpu_values(d_b), kF32Floor));
  if (has_act)
    c.add(judge(op + " bwd", "d_out (in place d_pre)", c.t, b.gpu_values(d_out), d_pre,
                b.cpu_values(d_out)));
}

// FFN2's backward with FFN1's GELU folded in (DGELU_BGRAD): d_input is the gradient of FFN1's
// pre-activation and d_input_bias FFN1's bias gradient.
void check_linear_input_activation(Context& c, const char* name, int64_t m, Activation a,
                                   const char* variant = "fused") {
  Backends& b = c.b;
  const size_t M = m, N = kHidden, K = kFfn;
  const std::string op = std::string("linear ffn2 + ") + name + "' (" + variant + ")";
  auto pre = b.twin(normal(c.rng, M * K, 2.0f), c.t);
  const auto pre_values = b.cpu_values(pre);
  std::vector<float> x_values(M * K);
  for (size_t i = 0; i < x_values.size(); ++i) x_values[i] = act(a, pre_values[i]);
  auto x = b.twin(x_values, c.t);
  auto w = b.twin(normal(c.rng, K * N, 0.03f), c.t);
  auto d_out = b.twin(normal(c.rng, M * N), c.t);
  const auto dw0 = normal(c.rng, K * N, 0.01f), db0 = normal(c.rng, K, 0.01f);
  auto d_w = b.twin(dw0, DType::f32);
  auto d_b = b.twin(db0, DType::f32);
  auto d_x = b.output(M * K, c.t);
  auto bwd = [&](bool gpu, const Twin& dx, const Twin& dw, const Twin* db, Activation input_act) {
    bert::LinearBackwardParams p;
    p.d_out = gpu ? d_out.gpu.tensor() : d_out.cpu.tensor();
    p.input = gpu ? x.gpu.tensor() : x.cpu.tensor();
    p.weight = gpu ? w.gpu.tensor() : w.cpu.tensor();
    p.d_input = gpu ? dx.gpu.tensor() : dx.cpu.tensor();
    p.d_weight = gpu ? dw.gpu.tensor() : dw.cpu.tensor();
    p.input_activation = input_act;
    if (input_act != Activation::none) {
      p.input_pre_activation = gpu ? pre.gpu.tensor() : pre.cpu.tensor();
      p.d_input_bias = gpu ? db->gpu.tensor() : db->cpu.tensor();
    }
    p.m = m;
    p.n = static_cast<int64_t>(N);
    p.k = static_cast<int64_t>(K);
    if (gpu)
      b.gpu().linear_backward(p);
    else
      b.cpu().linear_backward(p);
  };
  const int64_t dgelu_runs_before = fused_runs(b.gpu(), GemmEpilogue::dgelu_bgrad);
  const int64_t dgelu_only_before = fused_runs(b.gpu(), GemmEpilogue::dgelu);
  bwd(true, d_x, d_w, &d_b, a);
  // Whether the GPU's data product ran with the DGELU_BGRAD epilogue: its runner's count, not the
  // host rule, so a refused plan (unfused path) is judged with the unfused rounding. (With DGELU
  // alone the bias gradient is the f32 column sum, as unfused.)
  const bool fused = fused_runs(b.gpu(), GemmEpilogue::dgelu_bgrad) > dgelu_runs_before;
  const bool dgelu = fused_runs(b.gpu(), GemmEpilogue::dgelu) > dgelu_only_before;
  bwd(false, d_x, d_w, &d_b, a);
  // Plain: the product rounded to the compute type, times act' rounded again, and the column sums
  // of that in fp32. Where the backend fused this into cuBLASLt's DGELU_BGRAD (the tanh GELU), the
  // epilogue stores the bias gradient in the compute type (its documented type, as a bf16/fp16
  // framework stores a bias gradient) before it is added to the f32 gradient: the plain version
  // rounds its column sums once there too.
  auto plain_dx = b.output(M * K, c.t);
  auto plain_dw = b.twin(dw0, DType::f32);
  bwd(false, plain_dx, plain_dw, nullptr, Activation::none);
  auto plain = rounded(c.t, b.cpu_values(plain_dx));
  std::vector<float> column_sums(K, 0.0f);
  for (size_t r = 0; r < M; ++r)
    for (size_t col = 0; col < K; ++col) {
      float& v = plain[r * K + col];
      v = round_to(c.t, v * act_grad(a, pre_values[r * K + col], 0.0f));
      column_sums[col] += v;
    }
  std::vector<float> plain_db = db0;
  for (size_t col = 0; col < K; ++col)
    plain_db[col] += fused ? round_to(c.t, column_sums[col]) : column_sums[col];
  c.add(judge(op, "d_input (d_pre of ffn1)", c.t, b.gpu_values(d_x), plain, b.cpu_values(d_x)));
  CheckRow bias_row = judge(op, "d_input_bias (+=)", c.t, b.gpu_values(d_b), plain_db,
                            b.cpu_values(d_b), kF32Floor);
  if (bias_row.note.empty())
    bias_row.note = fused   ? "ran as DGELU_BGRAD (bias gradient rounded once)"
                    : dgelu ? "ran with the DGELU epilogue, then an f32 column sum"
                            : "ran unfused (GEMM, activation gradient, f32 column sum)";
  c.add(std::move(bias_row));
  c.add(judge(op, "d_weight (+=)", c.t, b.gpu_values(d_w), b.cpu_values(plain_dw),
              b.cpu_values(d_w), kF32Floor));
}

// ---- the tiled fallback GEMM and the plan cache ------------------------------------------------

// fallback_gemm called directly (it runs only where cuBLASLt refuses a product, so nothing else
// exercises it on a machine whose cuBLASLt takes every plan), on the products a refusal would send
// to it: the NSP layer's forward ([2,H]^T weight, BIAS) and weight gradient (f32, beta 1), and a
// QKV-sized data gradient accumulating onto d_input (beta 1), as linear_backward's later batch
// entries do. The CPU reference runs the same linear op.
void check_fallback_gemm(Context& c) {
  Backends& b = c.b;
  const MatrixType mt = matrix_type(c.t);
  cudaStream_t stream = b.gpu().stream();
  const int64_t tokens = std::accumulate(kLengths.begin(), kLengths.end(), 0);
  {
    const size_t M = 7, N = 2, K = kHidden;
    const std::string op = "fallback_gemm nsp [2,H]^T fwd";
    auto x = b.twin(normal(c.rng, M * K), c.t);
    auto w = b.twin(normal(c.rng, N * K, 0.03f), c.t);
    auto bias = b.twin(normal(c.rng, N, 0.1f), c.t);
    auto out = b.output(M * N, c.t);
    GemmArgs g;
    g.shape = plan_linear_forward(M, N, K, true);
    g.ab_type = g.d_type = g.bias_type = mt;
    g.a = w.gpu.tensor().data;
    g.b = x.gpu.tensor().data;
    g.d = out.gpu.tensor().data;
    g.epilogue = GemmEpilogue::bias;
    g.bias = bias.gpu.tensor().data;
    fallback_gemm(g, stream);
    bert::LinearForwardParams f;
    f.input = x.cpu.tensor();
    f.weight = w.cpu.tensor();
    f.bias = bias.cpu.tensor();
    f.out = out.cpu.tensor();
    f.m = M;
    f.n = N;
    f.k = K;
    f.weight_transposed = true;
    b.cpu().linear_forward(f);
    const auto ref = b.cpu_values(out);
    c.add(judge(op, "out (+ bias)", c.t, b.gpu_values(out), rounded(c.t, ref), ref));

    // d_W [2,H] += d_out^T . x in f32 (beta 1).
    auto d_out = b.twin(normal(c.rng, M * N), c.t);
    const auto dw0 = normal(c.rng, N * K, 0.01f);
    auto d_w = b.twin(dw0, DType::f32);
    const ColumnMajorGemm ws = plan_linear_backward_weight(M, N, K, true);
    GemmArgs gw;
    gw.shape = ws;
    gw.ab_type = mt;
    gw.d_type = MatrixType::f32;
    gw.a = ws.a == LinearOperand::d_out ? d_out.gpu.tensor().data : x.gpu.tensor().data;
    gw.b = ws.b == LinearOperand::d_out ? d_out.gpu.tensor().data : x.gpu.tensor().data;
    gw.d = d_w.gpu.tensor().data;
    gw.beta = 1.0f;
    fallback_gemm(gw, stream);
    bert::LinearBackwardParams bp;
    bp.d_out = d_out.cpu.tensor();
    bp.input = x.cpu.tensor();
    bp.weight = w.cpu.tensor();
    bp.d_weight = d_w.cpu.tensor();
    bp.m = M;
    bp.n = N;
    bp.k = K;
    bp.weight_transposed = true;
    b.cpu().linear_backward(bp);
    const auto ref_dw = b.cpu_values(d_w);
    c.add(judge("fallback_gemm nsp [2,H]^T bwd", "d_weight (+=, f32)", c.t, b.gpu_values(d_w),
                ref_dw, ref_dw, kF32Floor));
  }
  {
    // d_input [T,H] += d_out [T,H] . W^T (W [H,H]), in the compute type.
    const size_t M = tokens, N = kHidden, K = kHidden;
    auto d_out = b.twin(normal(c.rng, M * N), c.t);
    auto w = b.twin(normal(c.rng, K * N, 0.03f), c.t);
    auto x = b.twin(normal(c.rng, M * K), c.t);
    auto d_x = b.twin(normal(c.rng, M * K), c.t);
    GemmArgs g;
    g.shape = plan_linear_backward_data(M, N, K, false);
    g.ab_type = g.d_type = mt;
    g.a = w.gpu.tensor().data;
    g.b = d_out.gpu.tensor().data;
    g.d = d_x.gpu.tensor().data;
    g.beta = 1.0f;
    fallback_gemm(g, stream);
    auto unused_dw = b.twin(std::vector<float>(N * K, 0.0f), DType::f32);
    bert::LinearBackwardParams bp;
    bp.d_out = d_out.cpu.tensor();
    bp.input = x.cpu.tensor();
    bp.weight = w.cpu.tensor();
    bp.d_input = d_x.cpu.tensor();
    bp.accumulate_d_input = true;
    bp.d_weight = unused_dw.cpu.tensor();
    bp.m = M;
    bp.n = N;
    bp.k = K;
    b.cpu().linear_backward(bp);
    const auto ref = b.cpu_values(d_x);
    c.add(judge("fallback_gemm qkv-sized bwd data", "d_input (+=, beta 1)", c.t, b.gpu_values(d_x),
                rounded(c.t, ref), ref));
  }
}

// A GemmRunner with room for 4 plans, run on 10 token counts of one small layer (each a new
// problem, as packed batches bring nearly every step): it must stay at 4 plans, and a product
// whose plan was evicted must be planned again and still compute right.
void check_gemm_plan_cache(Context& c) {
  Backends& b = c.b;
  const MatrixType mt = matrix_type(c.t);
  const size_t N = 64, K = 128, max_tokens = 200;
  GemmRunner runner(size_t{4} << 20, 4);
  auto x = b.twin(normal(c.rng, max_tokens * K), c.t);
  auto w = b.twin(normal(c.rng, K * N, 0.1f), c.t);
  auto out = b.output(max_tokens * N, c.t);
  const std::vector<size_t> counts = {17, 40, 64, 71, 99, 128, 130, 150, 177, 200, 17};
  size_t most = 0;
  for (size_t tokens : counts) {
    GemmArgs g;
    g.shape = plan_linear_forward(tokens, N, K, false);
    g.ab_type = g.d_type = g.bias_type = mt;
    g.a = w.gpu.tensor().data;
    g.b = x.gpu.tensor().data;
    g.d = out.gpu.tensor().data;
    if (!runner.run(g, b.gpu().stream())) fallback_gemm(g, b.gpu().stream());
    most = std::max(most, runner.cached_problems());
  }
  const std::string op = "gemm plan cache (capacity 4)";
  c.add(judge_exact(op, "most plans held", c.t, {static_cast<float>(most)}, {4.0f}));
  c.add(judge_exact(
      op, "evictions, heuristic queries", c.t,
      {static_cast<float>(runner.evicted_plans()), static_cast<float>(runner.heuristic_queries())},
      {7.0f, 11.0f}));
  // The last product (17 tokens) was planned again after its eviction.
  const size_t T = counts.back();
  bert::LinearForwardParams f;
  f.input = x.cpu.tensor();
  f.weight = w.cpu.tensor();
  f.out = out.cpu.tensor();
  f.m = static_cast<int64_t>(T);
  f.n = N;
  f.k = K;
  b.cpu().linear_forward(f);
  const auto ref = b.cpu_values(out.cpu.tensor(), T * N);
  c.add(judge(op, "out (17 tokens, re-planned)", c.t, b.gpu_values(out.gpu.tensor(), T * N),
              rounded(c.t, ref), ref));
}

// ---- LayerNorm -------------------------------------------------------------------------------

void host_layer_norm(const std::vector<float>& s, size_t rows, size_t width,
                     const std::vector<float>& gamma, const std::vector<float>& beta, float eps,
                     std::vector<float>& out, std::vector<float>& mean, std::vector<float>& rstd) {
  out.resize(rows * width);
  mean.resize(rows);
  rstd.resize(rows);
  for (size_t r = 0; r < rows; ++r) {
    double sum = 0, sq = 0;
    for (size_t col = 0; col < width; ++col) sum += s[r * width + col];
    const double mu = sum / width;
    for (size_t col = 0; col < width; ++col)
      sq += (s[r * width + col] - mu) * (s[r * width + col] - mu);
    const double rs = 1.0 / std::sqrt(sq / width + eps);
    mean[r] = static_cast<float>(mu);
    rstd[r] = static_cast<float>(rs);
    for (size_t col = 0; col < width; ++col)
      out[r * width + col] =
          static_cast<float>((s[r * width + col] - mu) * rs * gamma[col] + beta[col]);
  }
}

// `name` prefixes the rows' op; `rows` rows of BERT-large's width.
void check_layer_norm(Context& c, const std::string& name, size_t rows) {
  Backends& b = c.b;
  const size_t R = rows, W = kHidden;
  const std::string fwd_op = name + " fwd", bwd_op = name + " bwd";
  const float eps = 1e-12f;
  const DropoutMask mask = random_mask(c.rng, 0.1);
  auto x = b.twin(normal(c.rng, R * W), c.t);
  auto bias = b.twin(normal(c.rng, W, 0.1f), c.t);
  auto residual = b.twin(normal(c.rng, R * W), c.t);
  auto gamma = b.twin(normal(c.rng, W, 0.1f, 1.0f), c.t);
  auto beta = b.twin(normal(c.rng, W, 0.1f), c.t);
  auto out = b.output(R * W, c.t), ln_input = b.output(R * W, c.t);
  auto mean = b.output(R, DType::f32), rstd = b.output(R, DType::f32);
  // What the GPU backend keeps between forward and backward (its dropout keep bits), if anything.
  const size_t saved_bytes = b.gpu().layer_norm_saved_bytes(static_cast<int64_t>(R), W);
  bert::Buffer saved;
  if (saved_bytes > 0) saved = bert::Buffer(b.gpu(), DType::i32, (saved_bytes + 3) / 4);
  auto fwd = [&](bool gpu, bool with_residual) {
    bert::LayerNormForwardParams p;
    auto pick = [&](const Twin& tw) { return gpu ? tw.gpu.tensor() : tw.cpu.tensor(); };
    p.x = pick(x);
    p.bias = pick(bias);
    if (with_residual) p.residual = pick(residual);
    p.gamma = pick(gamma);
    p.beta = pick(beta);
    p.out = pick(out);
    p.ln_input = pick(ln_input);
    p.mean = pick(mean);
    p.rstd = pick(rstd);
    p.dropout = mask;
    p.rows = static_cast<int64_t>(R);
    p.width = static_cast<int64_t>(W);
    p.eps = eps;
    if (gpu) p.saved = saved.tensor();
    if (gpu)
      b.gpu().layer_norm_forward(p);
    else
      b.cpu().layer_norm_forward(p);
  };
  // Mask check first: without a residual, ln_input is exactly zero where dropout dropped.
  fwd(true, false);
  fwd(false, false);
  {
    auto zeros = [](const std::vector<float>& v) {
      std::vector<float> z(v.size());
      for (size_t i = 0; i < v.size(); ++i) z[i] = v[i] == 0.0f ? 1.0f : 0.0f;
      return z;
    };
    c.add(judge_exact(fwd_op, "dropout mask", c.t, zeros(b.gpu_values(ln_input)),
                      zeros(b.cpu_values(ln_input))));
  }
  b.poison(out);
  b.poison(ln_input);
  b.poison(mean);
  b.poison(rstd);
  fwd(true, true);
  fwd(false, true);
  // Plain: h = x + bias stored, dropout applied and stored, s = h + residual stored, LN stored.
  const auto xv = b.cpu_values(x), bv = b.cpu_values(bias), rv = b.cpu_values(residual);
  const auto gv = b.cpu_values(gamma), betav = b.cpu_values(beta);
  std::vector<float> s(R * W);
  for (size_t r = 0; r < R; ++r)
    for (size_t col = 0; col < W; ++col) {
      const size_t i = r * W + col;
      const float h = round_to(c.t, round_to(c.t, xv[i] + bv[col]) * bert::dropout_factor(mask, i));
      s[i] = round_to(c.t, h + rv[i]);
    }
  std::vector<float> plain_out, plain_mean, plain_rstd;
  host_layer_norm(s, R, W, gv, betav, eps, plain_out, plain_mean, plain_rstd);
  c.add(judge(fwd_op, "out", c.t, b.gpu_values(out), rounded(c.t, plain_out), b.cpu_values(out)));
  c.add(judge(fwd_op, "ln_input", c.t, b.gpu_values(ln_input), s, b.cpu_values(ln_input)));
  c.add(judge(fwd_op, "mean", c.t, b.gpu_values(mean), plain_mean, b.cpu_values(mean)));
  c.add(judge(fwd_op, "rstd", c.t, b.gpu_values(rstd), plain_rstd, b.cpu_values(rstd)));
  if (saved_bytes > 0) {
    // The kept bits, bit for bit the mask's draw (the backward reads them instead of drawing).
    std::vector<uint8_t> bits(saved_bytes);
    b.gpu().copy_to_host(bits.data(), saved.tensor(), saved_bytes);
    std::vector<float> kept(R * W), drawn(R * W);
    for (size_t i = 0; i < R * W; ++i) {
      kept[i] = static_cast<float>((bits[i / 8] >> (i % 8)) & 1);
      drawn[i] = bert::dropout_keep(mask, i) ? 1.0f : 0.0f;
    }
    c.add(judge_exact(fwd_op, "kept dropout bits", c.t, kept, drawn));
  }

  // Backward from the same saved tensors on both backends (the CPU's, rounded).
  auto s_in = b.twin(b.cpu_values(ln_input), c.t);
  auto mean_in = b.twin(b.cpu_values(mean), DType::f32);
  auto rstd_in = b.twin(b.cpu_values(rstd), DType::f32);
  auto d_out = b.twin(normal(c.rng, R * W), c.t);
  const auto res0 = normal(c.rng, R * W), dg0 = normal(c.rng, W), dbeta0 = normal(c.rng, W),
             dbias0 = normal(c.rng, W);
  auto d_res = b.twin(res0, c.t);
  auto d_gamma = b.twin(dg0, DType::f32), d_beta = b.twin(dbeta0, DType::f32),
       d_bias = b.twin(dbias0, DType::f32);
  auto d_x = b.output(R * W, c.t);
  auto bwd = [&](bool gpu, const Twin& dx, const Twin* dres, const DropoutMask& m,
                 bool accumulate) {
    bert::LayerNormBackwardParams p;
    auto pick = [&](const Twin& tw) { return gpu ? tw.gpu.tensor() : tw.cpu.tensor(); };
    p.d_out = pick(d_out);
    p.ln_input = pick(s_in);
    p.mean = pick(mean_in);
    p.rstd = pick(rstd_in);
    p.gamma = pick(gamma);
    p.d_x = pick(dx);
    if (dres) p.d_residual = pick(*dres);
    p.accumulate_d_residual = accumulate;
    p.d_gamma = pick(d_gamma);
    p.d_beta = pick(d_beta);
    p.d_bias = pick(d_bias);
    p.dropout = m;
    p.rows = static_cast<int64_t>(R);
    p.width = static_cast<int64_t>(W);
    if (gpu) p.saved = saved.tensor();
    if (gpu)
      b.gpu().layer_norm_backward(p);
    else
      b.cpu().layer_norm_backward(p);
  };
  bwd(true, d_x, &d_res, mask, true);
  bwd(false, d_x, &d_res, mask, true);
  const auto gpu_dx = b.gpu_values(d_x), gpu_res = b.gpu_values(d_res);
  const auto gpu_dg = b.gpu_values(d_gamma), gpu_dbeta = b.gpu_values(d_beta),
             gpu_dbias = b.gpu_values(d_bias);
  const auto ref_dx = b.cpu_values(d_x), ref_res = b.cpu_values(d_res);
  const auto ref_dg = b.cpu_values(d_gamma), ref_dbeta = b.cpu_values(d_beta),
             ref_dbias = b.cpu_values(d_bias);
  // Plain: d_s stored in the compute type, d_x = d_s * mask and d_residual += d_s from it.
  auto d_s = b.output(R * W, c.t);
  bwd(false, d_s, nullptr, DropoutMask{}, false);
  const auto ds = rounded(c.t, b.cpu_values(d_s));
  std::vector<float> plain_dx(R * W), plain_res(R * W);
  for (size_t i = 0; i < R * W; ++i) {
    plain_dx[i] = round_to(c.t, ds[i] * bert::dropout_factor(mask, i));
    plain_res[i] = round_to(c.t, round_to(c.t, res0[i]) + ds[i]);
  }
  c.add(judge(bwd_op, "d_x", c.t, gpu_dx, plain_dx, ref_dx));
  c.add(judge(bwd_op, "d_residual (+=)", c.t, gpu_res, plain_res, ref_res));
  c.add(judge(bwd_op, "d_gamma (+=)", c.t, gpu_dg, ref_dg, ref_dg, kF32Floor));
  c.add(judge(bwd_op, "d_beta (+=)", c.t, gpu_dbeta, ref_dbeta, ref_dbeta, kF32Floor));
  c.add(judge(bwd_op, "d_bias (+=)", c.t, gpu_dbias, ref_dbias, ref_dbias, kF32Floor));

  // d_residual written, not added to (accumulate_d_residual false, as the model calls it): into a
  // poisoned output, so every element must be written. (The parameter gradients accumulate again;
  // they were compared above.)
  auto d_x2 = b.output(R * W, c.t), d_res2 = b.output(R * W, c.t);
  bwd(true, d_x2, &d_res2, mask, false);
  bwd(false, d_x2, &d_res2, mask, false);
  c.add(judge(bwd_op, "d_x (d_residual =)", c.t, b.gpu_values(d_x2), plain_dx, b.cpu_values(d_x2)));
  c.add(judge(bwd_op, "d_residual (=)", c.t, b.gpu_values(d_res2), ds, b.cpu_values(d_res2)));
}

// ---- embeddings --------------------------------------------------------------------------------

// `name` prefixes the rows' op; one token per position of `lengths`; a word table of `word_rows`.
void check_embedding(Context& c, const std::string& name, const std::vector<int32_t>& lengths,
                     size_t word_rows, size_t types = 2) {
  Backends& b = c.b;
  const size_t T = std::accumulate(lengths.begin(), lengths.end(), 0), H = kHidden;
  const size_t positions = 512;
  const int64_t ids_drawn = std::min<int64_t>(kVocab, static_cast<int64_t>(word_rows));
  const std::string fwd_op = name + " fwd", bwd_op = name + " bwd";
  const float eps = 1e-12f;
  const DropoutMask mask = random_mask(c.rng, 0.1);
  std::vector<int32_t> ids(T), pos(T), seg(T);
  {
    size_t t = 0;
    for (int32_t len : lengths)
      for (int32_t i = 0; i < len; ++i, ++t) {
        ids[t] = static_cast<int32_t>(c.rng() % ids_drawn);
        pos[t] = i;
        // BERT's two segments; with more types, runs of each type in turn.
        seg[t] = types == 2 ? (i < len / 2 ? 0 : 1) : static_cast<int32_t>((i / 7) % types);
      }
    ids[5] = ids[6] = ids[700];  // repeated ids: the scatter must add, not overwrite
  }
  auto input_ids = b.twin_i32(ids), position_ids = b.twin_i32(pos), segment_ids = b.twin_i32(seg);
  auto word = b.twin(normal(c.rng, word_rows * H, 0.5f), c.t);
  auto position = b.twin(normal(c.rng, positions * H, 0.5f), c.t);
  auto token_type = b.twin(normal(c.rng, types * H, 0.5f), c.t);
  auto gamma = b.twin(normal(c.rng, H, 0.1f, 1.0f), c.t);
  auto beta = b.twin(normal(c.rng, H, 0.5f), c.t);
  auto out = b.output(T * H, c.t), ln_input = b.output(T * H, c.t);
  auto mean = b.output(T, DType::f32), rstd = b.output(T, DType::f32);
  auto pick_gpu = [](const Twin& tw, bool gpu) { return gpu ? tw.gpu.tensor() : tw.cpu.tensor(); };
  auto fwd = [&](bool gpu) {
    bert::EmbeddingForwardParams p;
    p.input_ids = pick_gpu(input_ids, gpu);
    p.position_ids = pick_gpu(position_ids, gpu);
    p.segment_ids = pick_gpu(segment_ids, gpu);
    p.word = pick_gpu(word, gpu);
    p.position = pick_gpu(position, gpu);
    p.token_type = pick_gpu(token_type, gpu);
    p.gamma = pick_gpu(gamma, gpu);
    p.beta = pick_gpu(beta, gpu);
    p.out = pick_gpu(out, gpu);
    p.ln_input = pick_gpu(ln_input, gpu);
    p.mean = pick_gpu(mean, gpu);
    p.rstd = pick_gpu(rstd, gpu);
    p.dropout = mask;
    p.tokens = static_cast<int64_t>(T);
    p.hidden = static_cast<int64_t>(H);
    p.eps = eps;
    if (gpu)
      b.gpu().embedding_forward(p);
    else
      b.cpu().embedding_forward(p);
  };
  fwd(true);
  fwd(false);
  const auto gpu_out = b.gpu_values(out), ref_out = b.cpu_values(out);
  // Plain: the gathered sum stored, LN stored, dropout stored.
  const auto wv = b.cpu_values(word), pv = b.cpu_values(position), tv = b.cpu_values(token_type);
  std::vector<float> s(T * H);
  for (size_t t = 0; t < T; ++t)
    for (size_t col = 0; col < H; ++col)
      s[t * H + col] =
          round_to(c.t, wv[ids[t] * H + col] + pv[pos[t] * H + col] + tv[seg[t] * H + col]);
  std::vector<float> plain_out, plain_mean, plain_rstd;
  host_layer_norm(s, T, H, b.cpu_values(gamma), b.cpu_values(beta), eps, plain_out, plain_mean,
                  plain_rstd);
  for (size_t i = 0; i < plain_out.size(); ++i)
    plain_out[i] = round_to(c.t, round_to(c.t, plain_out[i]) * bert::dropout_factor(mask, i));
  const CheckRow out_row = judge(fwd_op, "out", c.t, gpu_out, plain_out, ref_out);
  {
    // The output's zeros are the mask: the reference's exact zeros are the dropped elements. An
    // element counts against the mask only when one side is exactly 0 and the other is further
    // from 0 than the output's allowance. A kept value within the allowance of 0 may be exactly 0
    // on one side and not the other (under half fp16's smallest subnormal on the GPU, or an exact
    // cancellation against beta in the fp32 reference): one such element of 5,123,072 in fp16 on
    // the H200 (seed 305702); the row's note names each. A wrong mask keeps or drops values of
    // the output's own size, ~10% of them at p = 0.1.
    const double allowance = out_row.allowance;
    std::vector<float> gz(gpu_out.size()), rz(ref_out.size());
    std::string tolerated;
    for (size_t i = 0; i < gz.size(); ++i) {
      const bool gpu_zero = gpu_out[i] == 0.0f, ref_zero = ref_out[i] == 0.0f;
      rz[i] = ref_zero;
      gz[i] = rz[i];
      if (gpu_zero == ref_zero) continue;
      const float other = gpu_zero ? ref_out[i] : gpu_out[i];
      if (std::abs(other) > allowance) {
        gz[i] = 1.0f - rz[i];
      } else if (tolerated.size() < 200) {
        std::ostringstream one;
        one << (tolerated.empty() ? "zero on one side only, within the allowance: " : "; ")
            << "element " << i << " gpu " << gpu_out[i] << " reference " << ref_out[i];
        tolerated += one.str();
      }
    }
    CheckRow mask_row = judge_exact(fwd_op, "dropout mask", c.t, gz, rz);
    if (!tolerated.empty()) mask_row.note += (mask_row.note.empty() ? "" : "; ") + tolerated;
    c.add(std::move(mask_row));
  }
  c.add(out_row);
  c.add(judge(fwd_op, "ln_input", c.t, b.gpu_values(ln_input), s, b.cpu_values(ln_input)));
  c.add(judge(fwd_op, "mean", c.t, b.gpu_values(mean), plain_mean, b.cpu_values(mean)));
  c.add(judge(fwd_op, "rstd", c.t, b.gpu_values(rstd), plain_rstd, b.cpu_values(rstd)));

  // Backward from the CPU's saved tensors; table gradients accumulate onto random values.
  auto s_in = b.twin(b.cpu_values(ln_input), c.t);
  auto mean_in = b.twin(b.cpu_values(mean), DType::f32),
       rstd_in = b.twin(b.cpu_values(rstd), DType::f32);
  auto d_out = b.twin(normal(c.rng, T * H), c.t);
  auto d_word = b.twin(normal(c.rng, word_rows * H, 0.01f), DType::f32);
  auto d_position = b.twin(normal(c.rng, positions * H, 0.01f), DType::f32);
  auto d_type = b.twin(normal(c.rng, types * H, 0.01f), DType::f32);
  auto d_gamma = b.twin(normal(c.rng, H, 0.01f), DType::f32),
       d_beta = b.twin(normal(c.rng, H, 0.01f), DType::f32);
  auto bwd = [&](bool gpu) {
    bert::EmbeddingBackwardParams p;
    p.d_out = pick_gpu(d_out, gpu);
    p.input_ids = pick_gpu(input_ids, gpu);
    p.position_ids = pick_gpu(position_ids, gpu);
    p.segment_ids = pick_gpu(segment_ids, gpu);
    p.ln_input = pick_gpu(s_in, gpu);
    p.mean = pick_gpu(mean_in, gpu);
    p.rstd = pick_gpu(rstd_in, gpu);
    p.gamma = pick_gpu(gamma, gpu);
    p.d_word = pick_gpu(d_word, gpu);
    p.d_position = pick_gpu(d_position, gpu);
    p.d_token_type = pick_gpu(d_type, gpu);
    p.d_gamma = pick_gpu(d_gamma, gpu);
    p.d_beta = pick_gpu(d_beta, gpu);
    p.dropout = mask;
    p.tokens = static_cast<int64_t>(T);
    p.hidden = static_cast<int64_t>(H);
    if (gpu)
      b.gpu().embedding_backward(p);
    else
      b.cpu().embedding_backward(p);
  };
  bwd(true);
  bwd(false);
  // The GPU computes these in fp32 from the stored inputs like the reference: only fp32 noise.
  for (auto [tensor, tw] : {std::pair{"d_word (+=)", &d_word},
                            {"d_position (+=)", &d_position},
                            {"d_token_type (+=)", &d_type},
                            {"d_gamma (+=)", &d_gamma},
                            {"d_beta (+=)", &d_beta}}) {
    const auto ref = b.cpu_values(*tw);
    c.add(judge(bwd_op, tensor, c.t, b.gpu_values(*tw), ref, ref, kF32Floor));
  }
}

// ---- attention ---------------------------------------------------------------------------------

struct AttentionData {
  std::vector<int32_t> cu;
  int max_seqlen = 0;
  size_t tokens = 0;
};

AttentionData attention_layout(const std::vector<int32_t>& lengths) {
  AttentionData d;
  d.cu = cu_seqlens_of(lengths);
  d.max_seqlen = *std::max_element(lengths.begin(), lengths.end());
  d.tokens = static_cast<size_t>(d.cu.back());
  return d;
}

// Standard (unfused) attention in the compute type: S, P, the dropped P and O each stored.
void plain_attention_forward(DType t, const AttentionData& a, const std::vector<float>& q,
                             const std::vector<float>& k, const std::vector<float>& v,
                             const DropoutMask& mask, float scale, std::vector<float>& out,
                             std::vector<float>& lse) {
  const size_t H = kHeads * kHeadDim;
  out.assign(a.tokens * H, 0.0f);
  lse.assign(kHeads * a.tokens, 0.0f);
  const uint64_t row_stride = bert::attention_dropout_row_stride(a.max_seqlen);
  for (size_t s = 0; s + 1 < a.cu.size(); ++s) {
    const int start = a.cu[s], len = a.cu[s + 1] - a.cu[s];
    for (int h = 0; h < kHeads; ++h)
      for (int i = 0; i < len; ++i) {
        std::vector<float> sc(len);
        float mx = -INFINITY;
        for (int j = 0; j < len; ++j) {
          double dot = 0;
          for (int d = 0; d < kHeadDim; ++d)
            dot += q[(start + i) * H + h * kHeadDim + d] * k[(start + j) * H + h * kHeadDim + d];
          sc[j] = round_to(t, static_cast<float>(scale * dot));
          mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (int j = 0; j < len; ++j) sum += std::exp(static_cast<double>(sc[j]) - mx);
        lse[h * a.tokens + start + i] = static_cast<float>(mx + std::log(sum));
        // The dropped probabilities once per row (not per output column: the exp and the Philox
        // draw dominate this emulation's time).
        std::vector<float> pd(len);
        for (int j = 0; j < len; ++j) {
          const float p =
              round_to(t, static_cast<float>(std::exp(static_cast<double>(sc[j]) - mx) / sum));
          const float f = bert::dropout_factor(
              mask, bert::attention_dropout_element(start + i, h, kHeads, row_stride, j));
          pd[j] = round_to(t, p * f);
        }
        for (int d = 0; d < kHeadDim; ++d) {
          double acc = 0;
          for (int j = 0; j < len; ++j) acc += pd[j] * v[(start + j) * H + h * kHeadDim + d];
          out[(start + i) * H + h * kHeadDim + d] = round_to(t, static_cast<float>(acc));
        }
      }
  }
}

// Standard attention backward in the compute type: P, dPd, dP, dS each stored.
void plain_attention_backward(DType t, const AttentionData& a, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& d_o, const DropoutMask& mask, float scale,
                              std::vector<float>& dq, std::vector<float>& dk,
                              std::vector<float>& dv) {
  const size_t H = kHeads * kHeadDim;
  dq.assign(a.tokens * H, 0.0f);
  dk.assign(a.tokens * H, 0.0f);
  dv.assign(a.tokens * H, 0.0f);
  std::vector<double> dqd(dq.size(), 0.0), dkd(dk.size(), 0.0), dvd(dv.size(), 0.0);
  const uint64_t row_stride = bert::attention_dropout_row_stride(a.max_seqlen);
  for (size_t s = 0; s + 1 < a.cu.size(); ++s) {
    const int start = a.cu[s], len = a.cu[s + 1] - a.cu[s];
    for (int h = 0; h < kHeads; ++h) {
      auto at = [&](const std::vector<float>& x, int row, int d) {
        return x[(start + row) * H + h * kHeadDim + d];
      };
      for (int i = 0; i < len; ++i) {
        std::vector<float> p(len), f(len), dp(len);
        float mx = -INFINITY;
        std::vector<double> sc(len);
        for (int j = 0; j < len; ++j) {
          double dot = 0;
          for (int d = 0; d < kHeadDim; ++d) dot += at(q, i, d) * at(k, j, d);
          sc[j] = round_to(t, static_cast<float>(scale * dot));
          mx = std::max(mx, static_cast<float>(sc[j]));
        }
        double sum = 0;
        for (int j = 0; j < len; ++j) sum += std::exp(sc[j] - mx);
        double delta = 0;
        for (int j = 0; j < len; ++j) {
          p[j] = round_to(t, static_cast<float>(std::exp(sc[j] - mx) / sum));
          f[j] = bert::dropout_factor(
              mask, bert::attention_dropout_element(start + i, h, kHeads, row_stride, j));
          double dot = 0;
          for (int d = 0; d < kHeadDim; ++d) dot += at(d_o, i, d) * at(v, j, d);
          dp[j] = round_to(t, round_to(t, static_cast<float>(dot)) * f[j]);
          delta += static_cast<double>(p[j]) * dp[j];
        }
        for (int j = 0; j < len; ++j) {
          const float ds = round_to(t, static_cast<float>(p[j] * (dp[j] - delta)));
          const float pd = round_to(t, p[j] * f[j]);
          for (int d = 0; d < kHeadDim; ++d) {
            dqd[(start + i) * H + h * kHeadDim + d] +=
                static_cast<double>(ds) * scale * at(k, j, d);
            dkd[(start + j) * H + h * kHeadDim + d] +=
                static_cast<double>(ds) * scale * at(q, i, d);
            dvd[(start + j) * H + h * kHeadDim + d] += static_cast<double>(pd) * at(d_o, i, d);
          }
        }
      }
    }
  }
  for (size_t i = 0; i < dq.size(); ++i) {
    dq[i] = round_to(t, static_cast<float>(dqd[i]));
    dk[i] = round_to(t, static_cast<float>(dkd[i]));
    dv[i] = round_to(t, static_cast<float>(dvd[i]));
  }
}

// `saved`: the GPU forward's AttentionForwardParams::saved (empty: none).
void run_attention(Backends& b, bool gpu, const AttentionData& a, const Twin& cu, const Twin& q,
                   const Twin& k, const Twin& v, const Twin& out, const Twin& lse,
                   const DropoutMask& mask, float scale, Tensor saved = {}) {
  auto pick = [&](const Twin& tw) { return gpu ? tw.gpu.tensor() : tw.cpu.tensor(); };
  bert::AttentionForwardParams p;
  if (gpu) p.saved = saved;
  p.q = pick(q);
  p.k = pick(k);
  p.v = pick(v);
  p.cu_seqlens = pick(cu);
  p.out = pick(out);
  p.softmax_lse = pick(lse);
  p.dropout = mask;
  p.tokens = static_cast<int64_t>(a.tokens);
  p.num_sequences = static_cast<int64_t>(a.cu.size() - 1);
  p.heads = kHeads;
  p.head_dim = kHeadDim;
  p.max_seqlen = a.max_seqlen;
  p.scale = scale;
  if (gpu)
    b.gpu().attention_forward(p);
  else
    b.cpu().attention_forward(p);
}

// AttentionForwardParams::saved of the GPU backend for `a` (empty where it keeps nothing).
bert::Buffer attention_saved_buffer(Backends& b, const AttentionData& a) {
  const size_t bytes = b.gpu().attention_saved_bytes(
      static_cast<int64_t>(a.tokens), static_cast<int64_t>(a.cu.size() - 1), kHeads, a.max_seqlen);
  if (bytes == 0) return {};
  return bert::Buffer(b.gpu(), DType::i32, (bytes + 3) / 4);
}

// `name` prefixes the rows' op; sequences of `lengths`, dropout probability `p_drop` (0: no
// dropout, as evaluation runs); `mask_readout` adds the exact dropout-mask check first;
// `repeatable` a second backward that must give the same gradients bit for bit (deterministic dQ).
void check_attention(Context& c, const std::string& name, const std::vector<int32_t>& lengths,
                     double p_drop, bool mask_readout, bool repeatable = false) {
  Backends& b = c.b;
  const float scale = 0.125f;
  const size_t H = kHeads * kHeadDim;
  const std::string fwd_op = name + " fwd", bwd_op = name + " bwd";
  if (mask_readout) {
    // Exact mask readout: q = k = 0 gives P = 1/len; v_j = e_j (len <= 64) makes out_i[j] =
    // keep_ij * scale_keep / len, so the output's zero pattern is the dropout mask.
    const AttentionData a = attention_layout({1, 17, 64, 40, 64, 33});
    const DropoutMask mask = random_mask(c.rng, 0.3);
    std::vector<float> zeros(a.tokens * H, 0.0f), onehot(a.tokens * H, 0.0f);
    for (size_t s = 0; s + 1 < a.cu.size(); ++s)
      for (int j = 0; j < a.cu[s + 1] - a.cu[s]; ++j)
        for (int h = 0; h < kHeads; ++h) onehot[(a.cu[s] + j) * H + h * kHeadDim + j] = 1.0f;
    auto cu = b.twin_i32(a.cu);
    auto q = b.twin(zeros, c.t), v = b.twin(onehot, c.t);
    auto out = b.output(a.tokens * H, c.t), lse = b.output(kHeads * a.tokens, DType::f32);
    // With the backend's keep-bit buffer, if it keeps one: the bits the forward then stores, or
    // reads after a kernel of their own filled them, are read out exactly here.
    const bert::Buffer readout_saved = attention_saved_buffer(b, a);
    run_attention(b, true, a, cu, q, q, v, out, lse, mask, scale, readout_saved.tensor());
    run_attention(b, false, a, cu, q, q, v, out, lse, mask, scale);
    auto nz = [](std::vector<float> v) {
      for (float& x : v) x = x != 0.0f ? 1.0f : 0.0f;
      return v;
    };
    c.add(judge_exact(fwd_op, "dropout mask", c.t, nz(b.gpu_values(out)), nz(b.cpu_values(out))));
  }
  const AttentionData a = attention_layout(lengths);
  const DropoutMask mask = random_mask(c.rng, p_drop);
  auto cu = b.twin_i32(a.cu);
  auto q = b.twin(normal(c.rng, a.tokens * H), c.t);
  auto k = b.twin(normal(c.rng, a.tokens * H), c.t);
  auto v = b.twin(normal(c.rng, a.tokens * H), c.t);
  auto out = b.output(a.tokens * H, c.t), lse = b.output(kHeads * a.tokens, DType::f32);
  // The keep bits the GPU keeps for its backward (CudaOpsOptions::attention_dropout_bits).
  const bert::Buffer saved = attention_saved_buffer(b, a);
  run_attention(b, true, a, cu, q, k, v, out, lse, mask, scale, saved.tensor());
  run_attention(b, false, a, cu, q, k, v, out, lse, mask, scale);
  const auto qv = b.cpu_values(q), kv = b.cpu_values(k), vv = b.cpu_values(v);
  std::vector<float> plain_out, plain_lse;
  plain_attention_forward(c.t, a, qv, kv, vv, mask, scale, plain_out, plain_lse);
  c.add(judge(fwd_op, "out", c.t, b.gpu_values(out), plain_out, b.cpu_values(out)));
  c.add(judge(fwd_op, "softmax_lse", c.t, b.gpu_values(lse), plain_lse, b.cpu_values(lse)));
  if (saved.tensor().defined() && mask.enabled) {
    // The forward with the bits it keeps (drawn by their own kernel and read, or drawn and
    // stored) against drawing them where they are used: the same output, bit for bit, at every
    // length here (the readout above covers keys < 64 only).
    const auto kept_out = b.gpu_values(out);
    b.poison(out);
    run_attention(b, true, a, cu, q, k, v, out, lse, mask, scale);
    c.add(judge_exact(fwd_op, "out (stored bits = drawn)", c.t, kept_out, b.gpu_values(out)));
  }

  // Backward from the CPU forward's out and lse (rounded/f32) on both backends.
  auto out_in = b.twin(b.cpu_values(out), c.t);
  auto lse_in = b.twin(b.cpu_values(lse), DType::f32);
  auto d_out = b.twin(normal(c.rng, a.tokens * H), c.t);
  auto d_q = b.output(a.tokens * H, c.t), d_k = b.output(a.tokens * H, c.t),
       d_v = b.output(a.tokens * H, c.t);
  auto bwd = [&](bool gpu, Tensor saved_bits = {}) {
    auto pick = [&](const Twin& tw) { return gpu ? tw.gpu.tensor() : tw.cpu.tensor(); };
    bert::AttentionBackwardParams p;
    p.saved = saved_bits;
    p.q = pick(q);
    p.k = pick(k);
    p.v = pick(v);
    p.out = pick(out_in);
    p.d_out = pick(d_out);
    p.softmax_lse = pick(lse_in);
    p.cu_seqlens = pick(cu);
    p.d_q = pick(d_q);
    p.d_k = pick(d_k);
    p.d_v = pick(d_v);
    p.dropout = mask;
    p.tokens = static_cast<int64_t>(a.tokens);
    p.num_sequences = static_cast<int64_t>(a.cu.size() - 1);
    p.heads = kHeads;
    p.head_dim = kHeadDim;
    p.max_seqlen = a.max_seqlen;
    p.scale = scale;
    if (gpu)
      b.gpu().attention_backward(p);
    else
      b.cpu().attention_backward(p);
  };
  bwd(true, saved.tensor());
  bwd(false);
  std::vector<float> pdq, pdk, pdv;
  plain_attention_backward(c.t, a, qv, kv, vv, b.cpu_values(d_out), mask, scale, pdq, pdk, pdv);
  c.add(judge(bwd_op, "d_q", c.t, b.gpu_values(d_q), pdq, b.cpu_values(d_q)));
  c.add(judge(bwd_op, "d_k", c.t, b.gpu_values(d_k), pdk, b.cpu_values(d_k)));
  c.add(judge(bwd_op, "d_v", c.t, b.gpu_values(d_v), pdv, b.cpu_values(d_v)));
  if (repeatable) {
    const auto first_q = b.gpu_values(d_q), first_k = b.gpu_values(d_k);
    for (const Twin* t : {&d_q, &d_k}) b.poison(*t);
    bwd(true, saved.tensor());
    c.add(judge_exact(bwd_op, "d_q (second run = first)", c.t, first_q, b.gpu_values(d_q)));
    c.add(judge_exact(bwd_op, "d_k (second run = first)", c.t, first_k, b.gpu_values(d_k)));
  }
  if (!saved.tensor().defined() || !mask.enabled) return;

  // The forward's stored bits against drawing them again: the same gradients, bit for bit.
  const auto with_saved_q = b.gpu_values(d_q), with_saved_k = b.gpu_values(d_k),
             with_saved_v = b.gpu_values(d_v);
  for (const Twin* t : {&d_q, &d_k, &d_v}) b.poison(*t);
  bwd(true);
  c.add(judge_exact(bwd_op, "d_q (stored bits = drawn)", c.t, with_saved_q, b.gpu_values(d_q)));
  c.add(judge_exact(bwd_op, "d_k (stored bits = drawn)", c.t, with_saved_k, b.gpu_values(d_k)));
  c.add(judge_exact(bwd_op, "d_v (stored bits = drawn)", c.t, with_saved_v, b.gpu_values(d_v)));
  // And the backward does read them: with every stored bit cleared (every probability dropped),
  // d_v = P_dropped^T dO is zero.
  b.gpu().fill_zero(saved.tensor());
  b.poison(d_v);
  bwd(true, saved.tensor());
  c.add(judge_exact(bwd_op, "d_v, stored bits cleared", c.t, b.gpu_values(d_v),
                    std::vector<float>(a.tokens * H, 0.0f)));
}

// ---- rows, losses
// --------------------------------------------------------------------------------

void check_rows(Context& c, size_t W = kHidden) {
  Backends& b = c.b;
  const size_t rows = 1006, count = 300;
  std::vector<int32_t> idx(count);
  for (auto& i : idx) i = static_cast<int32_t>(c.rng() % rows);
  idx[1] = idx[2] = idx[3];  // repeats
  auto indices = b.twin_i32(idx);
  auto src = b.twin(normal(c.rng, rows * W), c.t);
  auto out = b.output(count * W, c.t);
  bert::GatherRowsParams g{src.gpu.tensor(), indices.gpu.tensor(), out.gpu.tensor(),
                           static_cast<int64_t>(count), static_cast<int64_t>(W)};
  b.gpu().gather_rows(g);
  bert::GatherRowsParams gc{src.cpu.tensor(), indices.cpu.tensor(), out.cpu.tensor(),
                            static_cast<int64_t>(count), static_cast<int64_t>(W)};
  b.cpu().gather_rows(gc);
  c.add(judge_exact("gather_rows", "out", c.t, b.gpu_values(out), b.cpu_values(out)));

  const auto d0 = normal(c.rng, rows * W);
  auto d_src = b.twin(d0, c.t);
  auto d_out = b.twin(normal(c.rng, count * W), c.t);
  bert::ScatterAddRowsParams s{d_out.gpu.tensor(), indices.gpu.tensor(), d_src.gpu.tensor(),
                               static_cast<int64_t>(count), static_cast<int64_t>(W)};
  b.gpu().scatter_add_rows(s);
  bert::ScatterAddRowsParams sc{d_out.cpu.tensor(), indices.cpu.tensor(), d_src.cpu.tensor(),
                                static_cast<int64_t>(count), static_cast<int64_t>(W)};
  b.cpu().scatter_add_rows(sc);
  // Plain: each add rounded to the compute type.
  auto plain = rounded(c.t, d0);
  const auto dov = b.cpu_values(d_out);
  for (size_t i = 0; i < count; ++i)
    for (size_t col = 0; col < W; ++col) {
      float& dst = plain[idx[i] * W + col];
      dst = round_to(c.t, dst + dov[i * W + col]);
    }
  c.add(judge("scatter_add_rows", "d_src (+=)", c.t, b.gpu_values(d_src), plain,
              b.cpu_values(d_src)));
}

void check_cross_entropy(Context& c, const char* name, size_t rows, int64_t classes,
                         int64_t row_stride, float logit_scale) {
  Backends& b = c.b;
  auto logits_host = normal(c.rng, rows * row_stride, logit_scale);
  std::vector<int32_t> labels(rows);
  for (size_t r = 0; r < rows; ++r) {
    // A third of the rows are labelled with their argmax, so the hit count is not trivially 0.
    if (r % 3 == 0) {
      const auto row = logits_host.begin() + static_cast<std::ptrdiff_t>(r * row_stride);
      labels[r] = static_cast<int32_t>(std::max_element(row, row + classes) - row);
    } else {
      labels[r] = static_cast<int32_t>(c.rng() % classes);
    }
  }
  auto logits = b.twin(logits_host, c.t);
  auto label_t = b.twin_i32(labels);
  auto stats = b.output(2, DType::f32);
  const float grad_scale = 1.0f / static_cast<float>(rows);
  auto run = [&](bool gpu) {
    auto pick = [&](const Twin& tw) { return gpu ? tw.gpu.tensor() : tw.cpu.tensor(); };
    bert::CrossEntropyParams p;
    p.logits = pick(logits);
    p.d_logits = pick(logits);  // in place, as the model calls it
    p.labels = pick(label_t);
    p.stats = pick(stats);
    p.rows = static_cast<int64_t>(rows);
    p.classes = classes;
    p.row_stride = row_stride;
    p.grad_scale = grad_scale;
    if (gpu)
      b.gpu().cross_entropy(p);
    else
      b.cpu().cross_entropy(p);
  };
  run(true);
  run(false);
  const auto ref = b.cpu_values(logits);
  c.add(judge(std::string("cross_entropy ") + name, "d_logits (in place)", c.t,
              b.gpu_values(logits), rounded(c.t, ref), ref));
  const auto gs = b.gpu_values(stats), rs = b.cpu_values(stats);
  c.add(judge_tolerance(std::string("cross_entropy ") + name, "loss sum", c.t, {gs[0]}, {rs[0]},
                        1e-5));
  c.add(judge_exact(std::string("cross_entropy ") + name, "argmax hits", c.t, {gs[1]}, {rs[1]}));
}

// ---- optimizer
// -----------------------------------------------------------------------------------

std::vector<bert::TensorSegment> random_segments(std::mt19937_64& rng, size_t& total,
                                                 int count = 60, size_t max_numel = 200000) {
  std::vector<bert::TensorSegment> segments;
  size_t offset = 0;
  for (int s = 0; s < count; ++s) {
    const size_t numel = s % 10 == 0 ? 1 + rng() % 7 : 1 + rng() % max_numel;
    segments.push_back({offset, numel, s % 3 != 0});
    offset += (numel + 63) / 64 * 64;
  }
  total = offset;
  return segments;
}

// Segment norms, the global norm and the inf/nan flag over `segments` of an n-element buffer;
// the flag must rise for an inf and a NaN in segment `flagged`.
void check_l2_norm(Context& c, const std::string& op,
                   const std::vector<bert::TensorSegment>& segments, size_t n, size_t flagged) {
  Backends& b = c.b;
  auto buffer = b.twin(normal(c.rng, n), DType::f32);
  auto norms = b.output(segments.size(), DType::f32), total = b.output(2, DType::f32);
  for (bool gpu : {true, false}) {
    bert::L2NormParams p;
    p.buffer = gpu ? buffer.gpu.tensor() : buffer.cpu.tensor();
    p.segments = segments;
    p.segment_norms = gpu ? norms.gpu.tensor() : norms.cpu.tensor();
    p.total = gpu ? total.gpu.tensor() : total.cpu.tensor();
    if (gpu)
      b.gpu().l2_norm(p);
    else
      b.cpu().l2_norm(p);
  }
  c.add(judge_tolerance(op, "segment norms", DType::f32, b.gpu_values(norms), b.cpu_values(norms),
                        1e-6));
  const auto gt = b.gpu_values(total), rt = b.cpu_values(total);
  c.add(judge_tolerance(op, "global norm", DType::f32, {gt[0]}, {rt[0]}, 1e-6));
  c.add(judge_exact(op, "inf/nan flag (clean)", DType::f32, {gt[1]}, {0.0f}));
  // One inf and one NaN inside segments: the flag must rise.
  std::vector<float> bad = b.cpu_values(buffer);
  const size_t at = segments[flagged].offset + segments[flagged].numel / 2;
  bad[at] = INFINITY;
  auto bad_buffer = b.twin(bad, DType::f32);
  bert::L2NormParams p;
  p.buffer = bad_buffer.gpu.tensor();
  p.segments = segments;
  p.total = total.gpu.tensor();
  b.gpu().l2_norm(p);
  c.add(judge_exact(op, "inf/nan flag (inf)", DType::f32, {b.gpu_values(total)[1]}, {1.0f}));
  bad[at] = NAN;
  auto nan_buffer = b.twin(bad, DType::f32);
  p.buffer = nan_buffer.gpu.tensor();
  b.gpu().l2_norm(p);
  c.add(judge_exact(op, "inf/nan flag (nan)", DType::f32, {b.gpu_values(total)[1]}, {1.0f}));
}

// The optimizers' state on both backends.
struct MomentState {
  Twin master, grad, exp_avg, exp_avg_sq;
};
// master ~ N(0, 1), grad ~ N(0, 0.1) times grad_multiplier (a loss scale the gradients carry),
// exp_avg ~ N(0, 0.01), exp_avg_sq the square of N(0, 0.001).
MomentState moment_state(Context& c, size_t n, float grad_multiplier = 1.0f) {
  const auto master0 = normal(c.rng, n), grad0 = normal(c.rng, n, 0.1f),
             m0 = normal(c.rng, n, 0.01f);
  std::vector<float> v0 = normal(c.rng, n, 0.001f);
  for (float& x : v0) x = x * x;
  std::vector<float> scaled = grad0;
  for (float& g : scaled) g *= grad_multiplier;
  return {c.b.twin(master0, DType::f32), c.b.twin(scaled, DType::f32), c.b.twin(m0, DType::f32),
          c.b.twin(v0, DType::f32)};
}

// Optimizer variants: 0 AdamW, 1 Adam (L2), 2 LAMB, 3 LAMB with the trust ratio on every tensor.
const char* moment_variant_name(int variant) {
  return variant == 0   ? "adamw"
         : variant == 1 ? "adam (L2)"
         : variant == 2 ? "lamb"
                        : "lamb (nvlamb)";
}

// One step of `variant` on one backend; `compute` (GPU only) receives the rounded master copy.
void moment_step(Backends& b, bool gpu, int variant, MomentState& st, const Twin* compute,
                 const std::vector<bert::TensorSegment>& segments, float grad_scale) {
  auto pick = [&](const Twin& tw) { return gpu ? tw.gpu.tensor() : tw.cpu.tensor(); };
  // What Adam and LAMB take alike.
  auto shared = [&](auto& p) {
    p.master = pick(st.master);
    p.grad = pick(st.grad);
    p.exp_avg = pick(st.exp_avg);
    p.exp_avg_sq = pick(st.exp_avg_sq);
    if (gpu && compute) p.compute = compute->gpu.tensor();
    p.segments = segments;
    p.eps = 1e-6f;
    p.weight_decay = 0.01f;
    p.grad_scale = grad_scale;
  };
  if (variant < 2) {
    bert::AdamParams p;
    shared(p);
    p.lr = 1e-3f;
    p.beta1 = 0.9f;
    p.beta2 = 0.999f;
    p.step = 7;
    p.mode = variant == 0 ? bert::AdamMode::adamw : bert::AdamMode::adam_l2;
    if (gpu)
      b.gpu().adam_update(p);
    else
      b.cpu().adam_update(p);
  } else {
    bert::LambParams p;
    shared(p);
    p.lr = 2e-3f;
    p.beta1 = 0.66f;
    p.beta2 = 0.996f;
    p.step = 3;
    p.trust_ratio_without_decay = variant == 3;
    if (gpu)
      b.gpu().lamb_update(p);
    else
      b.cpu().lamb_update(p);
  }
}

// f32 updates, compared at fp32 tolerance; the compute copy must be exactly the rounded master.
void check_moment_update(Context& c, int variant, const std::string& op,
                         const std::vector<bert::TensorSegment>& segments, size_t n) {
  Backends& b = c.b;
  MomentState st = moment_state(c, n);
  auto compute = b.output(n, c.t);
  moment_step(b, true, variant, st, &compute, segments, 0.5f);
  moment_step(b, false, variant, st, nullptr, segments, 0.5f);
  const auto gm = b.gpu_values(st.master);
  c.add(judge_tolerance(op, "master", DType::f32, gm, b.cpu_values(st.master), 1e-6));
  c.add(judge_tolerance(op, "exp_avg", DType::f32, b.gpu_values(st.exp_avg),
                        b.cpu_values(st.exp_avg), 1e-6));
  c.add(judge_tolerance(op, "exp_avg_sq", DType::f32, b.gpu_values(st.exp_avg_sq),
                        b.cpu_values(st.exp_avg_sq), 1e-6));
  // The compute copy covers the segments; the alignment gaps between them stay unwritten.
  std::vector<float> copy = b.gpu_values(compute), want(n, 0.0f), got(n, 0.0f);
  for (const auto& s : segments)
    for (size_t i = s.offset; i < s.offset + s.numel; ++i) {
      want[i] = round_to(c.t, gm[i]);
      got[i] = copy[i];
    }
  c.add(judge_exact(op, "compute copy", c.t, got, want));
}

void check_optimizer(Context& c) {
  Backends& b = c.b;
  size_t n = 0;
  const auto segments = random_segments(c.rng, n);
  check_l2_norm(c, "l2_norm", segments, n, 7);
  {
    auto x = b.twin(normal(c.rng, 100003), DType::f32);
    b.gpu().scale(x.gpu.tensor(), 0.37f);
    b.cpu().scale(x.cpu.tensor(), 0.37f);
    c.add(judge_exact("scale", "x", DType::f32, b.gpu_values(x), b.cpu_values(x)));
    // Bucket-wise clipping before the allreduce: the factor read from `total` on the device (the
    // CPU takes Ops' default, which reads it back); under tau (25 buckets: 0.2), over it at loss
    // scale 2 over 64 ranks, and a flagged bucket, which must come out all NaN.
    const struct {
      const char* name;
      float norm, flag;
      double loss_scale;
      int world;
    } clips[] = {{"bucket_clip (under tau)", 0.05f, 0, 1, 8},
                 {"bucket_clip (over tau)", 3.7f, 0, 2, 64},
                 {"bucket_clip (inf/nan flag)", 1.0f, 1, 1, 8}};
    for (const auto& k : clips) {
      auto y = b.twin(normal(c.rng, 100003), DType::f32);
      auto total = b.twin({k.norm, k.flag}, DType::f32);
      bert::BucketClipParams p;
      p.loss_scale = k.loss_scale;
      p.num_buckets = 25;
      p.world = k.world;
      p.x = y.gpu.tensor();
      p.total = total.gpu.tensor();
      b.gpu().bucket_clip(p);
      p.x = y.cpu.tensor();
      p.total = total.cpu.tensor();
      b.cpu().bucket_clip(p);
      auto got = b.gpu_values(y), ref = b.cpu_values(y);
      if (k.flag != 0)
        for (auto* v : {&got, &ref})
          for (float& e : *v) e = std::isnan(e) ? 1.0f : 0.0f;
      c.add(judge_exact(k.name, "x", DType::f32, got, ref));
    }
    auto half = b.output(100003, c.t);
    b.gpu().cast(half.gpu.tensor(), x.gpu.tensor());
    c.add(judge_exact("cast f32->compute", "dst", c.t, b.gpu_values(half),
                      rounded(c.t, b.cpu_values(x))));
  }
  // Adam (both modes) and LAMB (both trust-ratio modes).
  for (int variant = 0; variant < 4; ++variant)
    check_moment_update(c, variant, moment_variant_name(variant), segments, n);
}

// Chunks that do not start on a 16-byte boundary take the kernels' scalar path (parameters start
// at multiples of 64 elements, so the main case never does): a 70001-element segment at offset
// 66 (both its chunks start at 2 mod 4), a 3-element one at 70070 and a 4-aligned one after it.
void check_optimizer_unaligned(Context& c) {
  const std::vector<bert::TensorSegment> segments = {
      {0, 50, false}, {66, 70001, true}, {70070, 3, false}, {70080, 999, true}};
  const size_t n = 71100;
  check_l2_norm(c, "l2_norm (offset 66)", segments, n, 1);
  check_moment_update(c, 0, "adamw (offset 66)", segments, n);
  check_moment_update(c, 2, "lamb (offset 66)", segments, n);
}

void check_loss_scaling(Context& c) {
  Backends& b = c.b;
  LossScaleConfig config;
  config.initial_scale = 65536.0f;
  config.growth_interval = 3;
  b.gpu().enable_device_loss_scaling(config);
  LossScaleState host = initial_loss_scale_state(config);
  const std::vector<bool> overflow = {false, true,  false, false, false, true,
                                      true,  false, false, false, false};
  std::vector<float> got, want;
  for (bool inf : overflow) {
    auto total = b.twin({1.0f, inf ? 1.0f : 0.0f}, DType::f32);
    b.gpu().update_loss_scale(total.gpu.tensor());
    host = next_loss_scale(host, inf, config);
    const LossScaleState dev = b.gpu().loss_scale_state();
    got.insert(got.end(), {dev.scale, dev.step_unscale, static_cast<float>(dev.good_steps),
                           static_cast<float>(dev.found_inf)});
    want.insert(want.end(), {host.scale, host.step_unscale, static_cast<float>(host.good_steps),
                             static_cast<float>(host.found_inf)});
  }
  c.add(judge_exact("loss scaling (device)", "state sequence", DType::f32, got, want));
  // An overflowed Adam step leaves the master weights untouched (clean steps below).
  size_t n = 0;
  const auto segments = random_segments(c.rng, n);
  auto master = b.twin(normal(c.rng, n), DType::f32);
  auto grad = b.twin(normal(c.rng, n), DType::f32),
       m = b.twin(std::vector<float>(n, 0.0f), DType::f32);
  auto v = b.twin(std::vector<float>(n, 0.0f), DType::f32);
  auto bad = b.twin({1.0f, 1.0f}, DType::f32);
  b.gpu().update_loss_scale(bad.gpu.tensor());
  const auto before = b.gpu_values(master);
  bert::AdamParams p;
  p.master = master.gpu.tensor();
  p.grad = grad.gpu.tensor();
  p.exp_avg = m.gpu.tensor();
  p.exp_avg_sq = v.gpu.tensor();
  p.segments = segments;
  p.lr = 1e-3f;
  b.gpu().adam_update(p);
  c.add(judge_exact("loss scaling (device)", "skipped step keeps master", DType::f32,
                    b.gpu_values(master), before));

  // Clean steps at loss scale 1024: the gradients carry the scale and the GPU's update multiplies
  // them by the device-held 1/scale on top of grad_scale; the CPU reference is given the product
  // (exact: powers of two). Then an overflowed LAMB step, whose three kernels must all skip.
  LossScaleConfig scaled;
  scaled.initial_scale = 1024.0f;
  b.gpu().enable_device_loss_scaling(scaled);
  auto clean = b.twin({1.0f, 0.0f}, DType::f32);
  b.gpu().update_loss_scale(clean.gpu.tensor());
  const LossScaleState expected = next_loss_scale(initial_loss_scale_state(scaled), false, scaled);
  size_t sn = 0;
  const auto small = random_segments(c.rng, sn, 12, 70000);
  for (int variant : {0, 2}) {
    const std::string op = std::string(moment_variant_name(variant)) + " (loss scale 1024)";
    MomentState st = moment_state(c, sn, scaled.initial_scale);
    moment_step(b, true, variant, st, nullptr, small, 0.5f);
    moment_step(b, false, variant, st, nullptr, small, 0.5f * expected.step_unscale);
    c.add(judge_tolerance(op, "master", DType::f32, b.gpu_values(st.master),
                          b.cpu_values(st.master), 1e-6));
    c.add(judge_tolerance(op, "exp_avg", DType::f32, b.gpu_values(st.exp_avg),
                          b.cpu_values(st.exp_avg), 1e-6));
    c.add(judge_tolerance(op, "exp_avg_sq", DType::f32, b.gpu_values(st.exp_avg_sq),
                          b.cpu_values(st.exp_avg_sq), 1e-6));
  }
  b.gpu().update_loss_scale(bad.gpu.tensor());
  {
    MomentState st = moment_state(c, sn, scaled.initial_scale);
    const auto master0 = b.gpu_values(st.master), grad0 = b.gpu_values(st.grad),
               m0 = b.gpu_values(st.exp_avg), v0 = b.gpu_values(st.exp_avg_sq);
    moment_step(b, true, 2, st, nullptr, small, 0.5f);
    const std::string op = "lamb (loss scale, overflow)";
    c.add(
        judge_exact(op, "skipped step keeps master", DType::f32, b.gpu_values(st.master), master0));
    c.add(judge_exact(op, "skipped step keeps grad", DType::f32, b.gpu_values(st.grad), grad0));
    c.add(judge_exact(op, "skipped step keeps exp_avg", DType::f32, b.gpu_values(st.exp_avg), m0));
    c.add(judge_exact(op, "skipped step keeps exp_avg_sq", DType::f32, b.gpu_values(st.exp_avg_sq),
                      v0));
  }
  b.gpu().disable_device_loss_scaling();
}

// ---- cast ------------------------------------------------------------------------------------

// Every pair of the three float types at an odd size, one element past a 16-byte boundary: the
// scalar conversions (the optimizer's aligned f32 -> 16-bit cast is the model check's). Exact:
// each element is the destination type's round-to-nearest-even of the source's value.
void check_cast_pairs(Context& c) {
  Backends& b = c.b;
  const size_t n = 1003;
  for (DType from : {DType::f32, DType::f16, DType::bf16}) {
    for (DType to : {DType::f32, DType::f16, DType::bf16}) {
      const std::vector<float> source = rounded(from, normal(c.rng, n, 8.0f));
      bert::Buffer src(b.gpu(), from, n + 1), dst(b.gpu(), to, n + 1);
      const bert::Tensor src_view = src.slice(1, n), dst_view = dst.slice(1, n);
      const auto bytes = encode(from, source);
      b.gpu().copy_from_host(src_view, bytes.data(), bytes.size());
      b.gpu().cast(dst_view, src_view);
      c.add(judge_exact(std::string("cast ") + bert::dtype_name(from) + " -> " +
                            bert::dtype_name(to) + " (1,003 at offset 1)",
                        "dst", to, b.gpu_values(dst_view, n), rounded(to, source)));
    }
  }
}

}  // namespace

uint64_t case_seed(uint64_t seed, const std::string& name) {
  // FNV-1a of the name, mixed with the run's seed: a case draws the same inputs whichever other
  // cases run, so `--only` reproduces a failure.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  return h ^ (seed * 0x9e3779b97f4a7c15ull);
}

namespace {
CheckCase make_case(std::string name, std::function<void(Context&)> body) {
  CheckCase one;
  one.name = name;
  one.run = [name, body](bert::CpuOps& cpu, CudaOps& gpu, uint64_t seed) {
    Backends backends(cpu, gpu);
    std::mt19937_64 rng(case_seed(seed, name));
    std::vector<CheckRow> rows;
    Context c{backends, gpu.compute_dtype(), rng, rows};
    body(c);
    return rows;
  };
  return one;
}

// The rows of `body` run on `other` (a second CudaOps with other options), seeded for `name`.
std::vector<CheckRow> rows_on(bert::CpuOps& cpu, CudaOps& other, const std::string& name,
                              uint64_t seed, const std::function<void(Context&)>& body) {
  std::vector<CheckRow> rows;
  Backends backends(cpu, other);
  std::mt19937_64 rng(case_seed(seed, name));
  Context c{backends, other.compute_dtype(), rng, rows};
  body(c);
  return rows;
}

// The attention case on a second CudaOps whose attention dropout bits come from `mode`.
CheckCase make_attention_bits_case(std::string name, AttentionDropoutBits mode) {
  CheckCase one;
  one.name = name;
  one.run = [name, mode](bert::CpuOps& cpu, CudaOps& gpu, uint64_t seed) {
    CudaOpsOptions options;
    options.compute_dtype = gpu.compute_dtype();
    options.attention_dropout_bits = mode;
    CudaOps other(options);
    return rows_on(cpu, other, name, seed,
                   [&](Context& c) { check_attention(c, name, kLengths, 0.1, true); });
  };
  return one;
}

// The attention case on a second CudaOps with the attention kernels, source of the dropout bits
// and dQ summation of `variant`: every check of check_attention (the exact dropout-mask readout
// through the keep-bit buffer included, and with deterministic dQ a second backward bit for bit).
struct AttentionVariant {
  AttentionKernels kernels = AttentionKernels::fa2;
  AttentionDropoutBits bits = CudaOpsOptions{}.attention_dropout_bits;
  bool deterministic_dq = false;
};
CheckCase make_attention_variant_case(std::string name, AttentionVariant variant,
                                      std::vector<int32_t> lengths, double p_drop,
                                      bool mask_readout) {
  CheckCase one;
  one.name = name;
  one.run = [=](bert::CpuOps& cpu, CudaOps& gpu, uint64_t seed) {
    CudaOpsOptions options;
    options.compute_dtype = gpu.compute_dtype();
    options.attention_kernels = variant.kernels;
    options.attention_dropout_bits = variant.bits;
    options.attention_deterministic_dq = variant.deterministic_dq;
    CudaOps other(options);
    return rows_on(cpu, other, name, seed, [&](Context& c) {
      check_attention(c, name, lengths, p_drop, mask_readout, variant.deterministic_dq);
    });
  };
  return one;
}

// A case on a second CudaOps of the same compute type with other epilogue options. Unfused
// (`fused` false): the cuBLASLt GELU and bias-gradient epilogues switched off, the paths every
// cuBLASLt refusal of those epilogues takes (BIAS GEMM + GELU kernel; plain GEMM +
// activation-gradient kernel + f32 column sum), which a cuBLASLt that takes every plan never runs;
// a last row asserts that none of those epilogues ran fused there. Fused (`fused` true): every
// epilogue allowed, DGELU_BGRAD included (off by default, CudaOpsOptions), so its path stays
// checked; whether cuBLASLt took it is in the last row's note.
CheckCase make_epilogue_case(std::string name, bool fused, std::function<void(Context&)> body) {
  CheckCase one;
  one.name = name;
  one.run = [name, fused, body](bert::CpuOps& cpu, CudaOps& gpu, uint64_t seed) {
    CudaOpsOptions options;
    options.compute_dtype = gpu.compute_dtype();
    options.gelu_epilogue = fused;
    options.bias_grad_epilogue = fused;
    options.dgelu_bgrad_epilogue = fused;
    CudaOps other(options);
    std::vector<CheckRow> rows = rows_on(cpu, other, name, seed, body);
    if (fused) {
      if (!rows.empty()) rows.back().note = other.gemm().fusion_report();
      return rows;
    }
    int64_t runs = 0;
    for (GemmEpilogue e : {GemmEpilogue::gelu_aux_bias, GemmEpilogue::dgelu_bgrad,
                           GemmEpilogue::bgrad_a, GemmEpilogue::bgrad_b})
      runs += fused_runs(other, e);
    CheckRow row = judge_exact(name, "fused GELU/BGRAD epilogue runs", other.compute_dtype(),
                               {static_cast<float>(runs)}, {0.0f});
    row.note = other.gemm().fusion_report();
    rows.push_back(std::move(row));
    return rows;
  };
  return one;
}
}  // namespace

// A case on a second CudaOps of the same compute type with `set` applied to its options; the last
// row's note says what the options changed (GEMM tuning, epilogue use) when `report` is set.
CheckCase make_options_case(std::string name, std::function<void(CudaOpsOptions&)> set,
                            std::function<void(Context&)> body) {
  CheckCase one;
  one.name = name;
  one.run = [name, set, body](bert::CpuOps& cpu, CudaOps& gpu, uint64_t seed) {
    CudaOpsOptions options;
    options.compute_dtype = gpu.compute_dtype();
    set(options);
    CudaOps other(options);
    std::vector<CheckRow> rows = rows_on(cpu, other, name, seed, body);
    if (!rows.empty() && rows.back().note.empty())
      rows.back().note = other.gemm().tuning_report() + "; " + other.gemm().fusion_report();
    return rows;
  };
  return one;
}

// The step variants of CudaOpsOptions (each off by default), on the ops they change.
std::vector<CheckCase> step_variant_cases(int64_t tokens, size_t long_tokens) {
  const LinearCase ffn1{
      "ffn1 gelu (tuned algorithms)", tokens, kFfn, kHidden, 1, false, true, Activation::gelu};
  const LinearCase qkv_fused{"qkv fused [3H,H]^T (tuned algorithms)",
                             tokens,
                             3 * kHidden,
                             kHidden,
                             1,
                             true,
                             true,
                             Activation::none};
  return {
      make_options_case(
          "linear ffn2 + gelu' (DGELU epilogue)",
          [](CudaOpsOptions& o) { o.dgelu_epilogue = true; },
          [tokens](Context& c) {
            check_linear_input_activation(c, "gelu", tokens, Activation::gelu, "dgelu");
          }),
      make_options_case(
          "linear with tuned cuBLASLt algorithms", [](CudaOpsOptions& o) { o.gemm_candidates = 8; },
          [ffn1, qkv_fused](Context& c) {
            check_linear(c, ffn1);
            check_linear(c, qkv_fused);
          }),
      make_options_case(
          "linear ffn1 gelu (strict GEMM plans: a refusal fails)",
          [](CudaOpsOptions& o) { o.gemm_strict = true; },
          [tokens](Context& c) {
            check_linear(
                c, {"ffn1 gelu (strict)", tokens, kFfn, kHidden, 1, false, true, Activation::gelu});
          }),
      make_options_case(
          "layer_norm (forward keeps the dropout bits)",
          [](CudaOpsOptions& o) { o.layer_norm_keep_bits = true; },
          [tokens](Context& c) { check_layer_norm(c, "layer_norm kept bits", tokens); }),
      make_options_case(
          "layer_norm (streaming backward)",
          [](CudaOpsOptions& o) { o.layer_norm_streaming = true; },
          [tokens](Context& c) { check_layer_norm(c, "layer_norm streaming", tokens); }),
      make_options_case(
          "layer_norm 5003 rows (streaming backward, kept bits)",
          [](CudaOpsOptions& o) { o.layer_norm_streaming = o.layer_norm_keep_bits = true; },
          [long_tokens](Context& c) {
            check_layer_norm(c, "layer_norm 5003 rows streaming kept", long_tokens);
          }),
  };
}

std::vector<CheckCase> op_cases() {
  const int64_t tokens = std::accumulate(kLengths.begin(), kLengths.end(), 0);
  const size_t long_tokens = std::accumulate(kLongLengths.begin(), kLongLengths.end(), size_t{0});
  auto linear = [](LinearCase lc) {
    return make_case(std::string("linear ") + lc.name, [lc](Context& c) { check_linear(c, lc); });
  };
  auto linear_unfused = [](LinearCase lc) {
    return make_epilogue_case(std::string("linear ") + lc.name, false,
                              [lc](Context& c) { check_linear(c, lc); });
  };
  std::vector<CheckCase> cases = {
      linear({"ffn1 gelu", tokens, kFfn, kHidden, 1, false, true, Activation::gelu}),
      linear({"qkv batch 3", tokens, kHidden, kHidden, 3, false, true, Activation::none}),
      // The fused QKV layout's product: N = 3H over the [3H, H] weight (transposed), K = 3H back.
      linear({"qkv fused [3H,H]^T", tokens, 3 * kHidden, kHidden, 1, true, true, Activation::none}),
      linear({"pooler tanh", 7, kHidden, kHidden, 1, false, true, Activation::tanh}),
      linear({"nsp [2,H]^T", 7, 2, kHidden, 1, true, true, Activation::none}),
      linear({"ffn2", tokens, kHidden, kFfn, 1, false, false, Activation::none}),
      make_case("linear ffn2 + gelu' (fused)",
                [tokens](Context& c) {
                  check_linear_input_activation(c, "gelu", tokens, Activation::gelu);
                }),
      make_epilogue_case("linear ffn2 + gelu' (fused, DGELU_BGRAD allowed)", true,
                         [tokens](Context& c) {
                           check_linear_input_activation(c, "gelu", tokens, Activation::gelu,
                                                         "dgelu_bgrad");
                         }),
      make_case("linear ffn2 + gelu_erf' (fused)",
                [](Context& c) {
                  check_linear_input_activation(c, "gelu_erf", 100, Activation::gelu_erf);
                }),
      linear({"decoder [V,H]^T", 200, kPaddedVocab, kHidden, 1, true, true, Activation::none}),
      linear({"gelu_erf", 100, 512, kHidden, 1, false, true, Activation::gelu_erf}),
      // The unfused paths a cuBLASLt refusal takes, on the shapes with those epilogues.
      linear_unfused(
          {"ffn1 gelu (unfused)", tokens, kFfn, kHidden, 1, false, true, Activation::gelu}),
      linear_unfused(
          {"qkv batch 3 (unfused)", tokens, kHidden, kHidden, 3, false, true, Activation::none}),
      linear_unfused({"nsp [2,H]^T (unfused)", 7, 2, kHidden, 1, true, true, Activation::none}),
      make_epilogue_case("linear ffn2 + gelu' (unfused)", false,
                         [tokens](Context& c) {
                           check_linear_input_activation(c, "gelu", tokens, Activation::gelu,
                                                         "unfused");
                         }),
      make_case("fallback_gemm (tiled, direct)", check_fallback_gemm),
      make_case("gemm plan cache (bounded)", check_gemm_plan_cache),
      make_case("layer_norm", [tokens](Context& c) { check_layer_norm(c, "layer_norm", tokens); }),
      make_case(
          "layer_norm 5003 rows (several per warp)",
          [long_tokens](Context& c) { check_layer_norm(c, "layer_norm 5003 rows", long_tokens); }),
      make_case("embedding",
                [](Context& c) { check_embedding(c, "embedding", kLengths, kPaddedVocab); }),
      // A 4096-row word table keeps the host's share small (the rows per warp are what matter) and
      // repeats ids more often, so more tokens add into the same rows.
      make_case(
          "embedding 5003 tokens (several per warp)",
          [](Context& c) { check_embedding(c, "embedding 5003 tokens", kLongLengths, 4096); }),
      make_case("attention",
                [](Context& c) { check_attention(c, "attention", kLengths, 0.1, true); }),
      // The other two sources of the dropout bits (the default is CudaOpsOptions').
      make_attention_bits_case("attention, bits kept by the forward",
                               AttentionDropoutBits::forward_keeps),
      make_attention_bits_case("attention, bits drawn twice", AttentionDropoutBits::drawn_twice),
      // Dropout row stride 300: no multiple of 8 or 64 (kLengths' 511 gives 512).
      make_case("attention lengths 1/130/300 (dropout row stride 300)",
                [](Context& c) {
                  check_attention(c, "attention 1/130/300", {1, 130, 300}, 0.1, false);
                }),
      // Evaluation (and training with dropout off): the kernels' keep-all path.
      make_case("attention without dropout",
                [](Context& c) {
                  check_attention(c, "attention no dropout", {1, 65, 129}, 0.0, false);
                }),
      // The FlashAttention-2-class kernels (CudaOpsOptions::attention_kernels) in each source of
      // the dropout bits, at lengths with and without a boundary tile, without dropout, with
      // deterministic dQ; and `auto` on sequences short enough for the 64-row kernels.
      make_attention_variant_case("attention fa2", {}, kLengths, 0.1, true),
      // (shorter sequences: the CPU's share of the ops stage's time is the plain emulation's)
      make_attention_variant_case("attention fa2, bits kept by the forward",
                                  {.bits = AttentionDropoutBits::forward_keeps}, {1, 37, 200}, 0.1,
                                  true),
      make_attention_variant_case("attention fa2, bits drawn twice",
                                  {.bits = AttentionDropoutBits::drawn_twice}, {1, 37, 200}, 0.1,
                                  true),
      make_attention_variant_case("attention fa2 lengths 512/128/256 (no boundary tile)", {},
                                  {512, 128, 256}, 0.1, false),
      make_attention_variant_case("attention fa2 lengths 1/130/300 (dropout row stride 300)", {},
                                  {1, 130, 300}, 0.1, false),
      make_attention_variant_case("attention fa2 without dropout", {}, {1, 65, 129}, 0.0, false),
      make_attention_variant_case("attention fa2, deterministic dQ", {.deterministic_dq = true},
                                  kLengths, 0.1, false),
      make_attention_variant_case("attention auto lengths 1/37/64 (64-row kernels)",
                                  {.kernels = AttentionKernels::automatic}, {1, 37, 64}, 0.1, true),
      make_case("gather/scatter rows", [](Context& c) { check_rows(c); }),
      // Paths no BERT-large shape takes, so that every branch of these kernels has run once:
      // rows of 13 elements (no 16-byte units), an activation over 7 x 13 outputs (scalar
      // tails), three token types (atomics instead of the shared-memory sums), zero rows.
      make_case("gather/scatter rows of width 13 (bytewise)",
                [](Context& c) { check_rows(c, 13); }),
      linear_unfused({"width 13 gelu (unfused: scalar tails)", 7, 13, kHidden, 1, false, true,
                      Activation::gelu}),
      linear_unfused({"width 13 tanh (unfused: scalar tails)", 7, 13, kHidden, 1, false, true,
                      Activation::tanh}),
      make_case("embedding with 3 token types (atomics)",
                [](Context& c) { check_embedding(c, "embedding 3 types", kLengths, 4096, 3); }),
      linear({"zero rows", 0, kHidden, kHidden, 1, false, true, Activation::gelu}),
      make_case("cast between f32, fp16 and bf16", check_cast_pairs),
      make_case("cross_entropy mlm",
                [](Context& c) { check_cross_entropy(c, "mlm", 300, kVocab, kPaddedVocab, 3.0f); }),
      make_case("cross_entropy nsp",
                [](Context& c) { check_cross_entropy(c, "nsp", 7, 2, 2, 2.0f); }),
      make_case("optimizer", check_optimizer),
      make_case("optimizer (segment at offset 66)", check_optimizer_unaligned),
      make_case("loss scaling", check_loss_scaling),
  };
  for (CheckCase& variant : step_variant_cases(tokens, long_tokens))
    cases.push_back(std::move(variant));
  return cases;
}

}  // namespace mlbert::cuda::check
