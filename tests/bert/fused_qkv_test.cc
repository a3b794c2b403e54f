// The fused QKV layout (QkvLayout::fused): where each TF-named query/key/value tensor lives inside
// the one [3h, h] weight and [3h] bias, that the CPU backend's ops read those views as the
// separate tensors, and that a model and its checkpoints give what the separate layout gives.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <filesystem>
#include <random>

#include "bert/checkpoint/checkpoint.h"
#include "bert/checkpoint/safetensors.h"
#include "bert/cpu/cpu_ops.h"
#include "bert/model.h"
#include "tests/bert/test_util.h"

using namespace mlbert::bert;
using mlbert::test::HostTensor;
using mlbert::test::random_vector;

namespace {

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// Distinct TF-layout values for every tensor (value j * 1e4 + element of tensor j), uploaded.
void fill_distinct(ParameterStore& params) {
  for (size_t i = 0; i < params.infos().size(); ++i) {
    std::vector<float> v(params.infos()[i].numel);
    for (size_t e = 0; e < v.size(); ++e) v[e] = static_cast<float>(i * 10000 + e % 10000);
    params.upload_master(i, v);
  }
  params.sync_compute();
}

// Three sequences (5, 9, 3 tokens), two masked positions each.
Batch three_sequences(const BertConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(1, static_cast<int32_t>(c.vocab_size) - 1);
  Batch b;
  for (int len : {5, 9, 3}) {
    std::vector<int32_t> ids(len), seg(len);
    for (int i = 0; i < len; ++i) ids[i] = token(rng), seg[i] = i >= len / 2;
    b.append_sequence(ids, seg, std::vector<int32_t>{0, len - 1},
                      std::vector<int32_t>{token(rng), token(rng)}, len % 2);
  }
  return b;
}

std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("mlbert_fused_qkv_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE(
    "fused QKV: query, key and value kernels are the [out, in] row blocks of one [3h, h] weight "
    "and their biases one [3h] vector") {
  CpuOps ops;
  const BertConfig c = mlbert::test::small_bert_config();
  const size_t h = static_cast<size_t>(c.hidden_size);
  ParameterStore params(c, ops, QkvLayout::fused);
  CHECK(params.qkv_layout() == QkvLayout::fused);
  fill_distinct(params);
  const std::vector<float> flat = params.download_master();
  for (const LayerParameters& lp : params.index().layers) {
    const ParameterInfo& q = params.infos()[lp.qkv_kernel];
    const ParameterInfo& qb = params.infos()[lp.qkv_bias];
    CHECK(q.offset % kParameterAlignment == 0);
    CHECK(qb.offset % kParameterAlignment == 0);
    CHECK(params.compute_span(lp.qkv_kernel, lp.qkv_kernel + 2).numel == 3 * h * h);
    CHECK(params.compute_span(lp.qkv_bias, lp.qkv_bias + 2).numel == 3 * h);
    for (size_t j = 0; j < 3; ++j) {
      const size_t kernel = lp.qkv_kernel + j, bias = lp.qkv_bias + j;
      const ParameterInfo& w = params.infos()[kernel];
      INFO(w.name);
      CHECK(w.name.ends_with(std::array{"query/kernel", "key/kernel", "value/kernel"}[j]));
      CHECK(w.shape == std::vector<int64_t>{c.hidden_size, c.hidden_size});  // TF [in, out]
      CHECK(w.stored_transposed);
      CHECK(w.offset == q.offset + j * h * h);
      CHECK(params.infos()[bias].offset == qb.offset + j * h);
      CHECK_FALSE(params.infos()[bias].stored_transposed);
      // TF element (in k, out n) of tensor j is row j*h + n, column k of the [3h, h] weight.
      const std::vector<float> tf = params.download_master(kernel);
      for (size_t n = 0; n < h; ++n)
        for (size_t k = 0; k < h; ++k)
          REQUIRE(flat[q.offset + (j * h + n) * h + k] == tf[k * h + n]);
      CHECK(tf[1] == static_cast<float>(kernel * 10000 + 1));  // the uploaded TF layout back
      const std::vector<float> b = params.download_master(bias);
      for (size_t n = 0; n < h; ++n) REQUIRE(flat[qb.offset + j * h + n] == b[n]);
      // The optimizer still sees one segment per TF tensor.
      CHECK(params.segments()[kernel].offset == w.offset);
      CHECK(params.segments()[kernel].numel == h * h);
    }
  }
  // Every other tensor is where the separate layout puts it relative to its neighbours: the
  // fused layout changes nothing but the Q, K, V blocks.
  const auto separate = bert_parameter_layout(c);
  REQUIRE(separate.size() == params.infos().size());
  for (size_t i = 0; i < separate.size(); ++i) {
    CHECK(separate[i].name == params.infos()[i].name);
    CHECK(separate[i].shape == params.infos()[i].shape);
    CHECK(separate[i].stored_transposed == false);
  }
}

TEST_CASE(
    "a linear over the fused [3h, h] weight writes rows of q | k | v, each the separate one") {
  CpuOps ops;
  const BertConfig c = mlbert::test::small_bert_config();
  const int64_t h = c.hidden_size, t = 7;
  ParameterStore fused(c, ops, QkvLayout::fused);
  fused.init_truncated_normal(3);
  const LayerParameters& lp = fused.index().layers[1];
  for (size_t j = 0; j < 3; ++j) fused.upload_master(lp.qkv_bias + j, random_vector(h, 50 + j));
  fused.sync_compute();
  const auto x = random_vector(t * h, 9);
  HostTensor tx(ops, x), out(ops, std::vector<float>(t * 3 * h));
  ops.linear_forward({.input = tx,
                      .weight = fused.compute_span(lp.qkv_kernel, lp.qkv_kernel + 2),
                      .bias = fused.compute_span(lp.qkv_bias, lp.qkv_bias + 2),
                      .out = out,
                      .m = t,
                      .n = 3 * h,
                      .k = h,
                      .weight_transposed = true});
  const auto y = out.host(ops);
  for (size_t j = 0; j < 3; ++j) {
    const auto w = fused.download_master(lp.qkv_kernel + j);  // TF [in, out]
    const auto b = fused.download_master(lp.qkv_bias + j);
    for (int64_t r = 0; r < t; ++r)
      for (int64_t n = 0; n < h; ++n) {
        double want = b[n];
        for (int64_t k = 0; k < h; ++k) want += double(x[r * h + k]) * w[k * h + n];
        REQUIRE(y[r * 3 * h + j * h + n] == Approx(want).margin(1e-5));
      }
  }
}

TEST_CASE(
    "attention over the q | k | v column blocks of [t, 3h] rows equals attention over three "
    "[t, h] tensors, and its backward writes only those columns") {
  CpuOps ops;
  const int64_t heads = 2, d = 8, h = heads * d, t = 13;
  const std::vector<int32_t> cu{0, 5, 6, 13};
  const DropoutMask mask =
      make_dropout_mask(4, 7, dropout_site(0, DropoutSiteKind::attention_probs), 0.2);
  const auto q = random_vector(t * h, 1), k = random_vector(t * h, 2), v = random_vector(t * h, 3),
             d_out = random_vector(t * h, 4);
  std::vector<float> rows(t * 3 * h);
  for (int64_t r = 0; r < t; ++r)
    for (int64_t col = 0; col < h; ++col) {
      rows[r * 3 * h + col] = q[r * h + col];
      rows[r * 3 * h + h + col] = k[r * h + col];
      rows[r * 3 * h + 2 * h + col] = v[r * h + col];
    }
  HostTensor tcu(ops, cu), tdo(ops, d_out);
  struct Result {
    std::vector<float> out, lse, dq, dk, dv;
  };
  // Three sequences (lengths 5, 1, 7) of `heads` heads; the q, k and v given, dropout on.
  auto forward_params = [&](Tensor q_in, Tensor k_in, Tensor v_in, Tensor out, Tensor lse,
                            int64_t qkv_row_stride) {
    return AttentionForwardParams{.q = q_in,
                                  .k = k_in,
                                  .v = v_in,
                                  .cu_seqlens = tcu,
                                  .out = out,
                                  .softmax_lse = lse,
                                  .dropout = mask,
                                  .tokens = t,
                                  .num_sequences = 3,
                                  .heads = heads,
                                  .head_dim = d,
                                  .max_seqlen = 7,
                                  .scale = 0.35f,
                                  .qkv_row_stride = qkv_row_stride};
  };
  auto run = [&](bool fused) {
    HostTensor tq(ops, q), tk(ops, k), tv(ops, v), trows(ops, rows);
    HostTensor out(ops, std::vector<float>(t * h)), lse(ops, std::vector<float>(heads * t));
    HostTensor dq(ops, std::vector<float>(t * h)), dk(ops, std::vector<float>(t * h)),
        dv(ops, std::vector<float>(t * h));
    HostTensor d_rows(ops, std::vector<float>(t * 3 * h, 5.0f));  // 5: untouched columns
    const size_t span = static_cast<size_t>((t - 1) * 3 * h + h);
    const Tensor all = trows.t();
    const AttentionForwardParams f =
        forward_params(fused ? all.slice(0, span) : tq.t(), fused ? all.slice(h, span) : tk.t(),
                       fused ? all.slice(2 * h, span) : tv.t(), out, lse, fused ? 3 * h : 0);
    ops.attention_forward(f);
    const Tensor dall = d_rows.t();
    ops.attention_backward({.q = f.q,
                            .k = f.k,
                            .v = f.v,
                            .out = out,
                            .d_out = tdo,
                            .softmax_lse = f.softmax_lse,
                            .cu_seqlens = f.cu_seqlens,
                            .d_q = fused ? dall.slice(0, span) : dq.t(),
                            .d_k = fused ? dall.slice(h, span) : dk.t(),
                            .d_v = fused ? dall.slice(2 * h, span) : dv.t(),
                            .dropout = f.dropout,
                            .tokens = f.tokens,
                            .num_sequences = f.num_sequences,
                            .heads = f.heads,
                            .head_dim = f.head_dim,
                            .max_seqlen = f.max_seqlen,
                            .scale = f.scale,
                            .qkv_row_stride = f.qkv_row_stride});
    Result r{out.host(ops), lse.host(ops), dq.host(ops), dk.host(ops), dv.host(ops)};
    if (fused) {
      const auto g = d_rows.host(ops);
      for (int64_t row = 0; row < t; ++row)
        for (int64_t col = 0; col < h; ++col) {
          r.dq[row * h + col] = g[row * 3 * h + col];
          r.dk[row * h + col] = g[row * 3 * h + h + col];
          r.dv[row * h + col] = g[row * 3 * h + 2 * h + col];
        }
    }
    return r;
  };
  const Result separate = run(false), fused = run(true);
  CHECK(relative_error(fused.out, separate.out) < 1e-6);
  CHECK(relative_error(fused.lse, separate.lse) < 1e-6);
  CHECK(relative_error(fused.dq, separate.dq) < 1e-6);
  CHECK(relative_error(fused.dk, separate.dk) < 1e-6);
  CHECK(relative_error(fused.dv, separate.dv) < 1e-6);
  // A row stride below the hidden width is refused.
  HostTensor x(ops, std::vector<float>(t * h)), lse(ops, std::vector<float>(heads * t));
  CHECK_THROWS_WITH(ops.attention_forward(forward_params(x, x, x, x, lse, h - 1)),
                    Catch::Contains("qkv_row_stride"));
}

TEST_CASE("a fused QKV model gives the separate layout's losses and TF-layout gradients") {
  CpuOps ops;
  BertConfig c = mlbert::test::small_bert_config();
  c.hidden_dropout_prob = 0.1;
  c.attention_probs_dropout_prob = 0.1;
  ParameterStore separate(c, ops, QkvLayout::separate), fused(c, ops, QkvLayout::fused);
  separate.init_truncated_normal(11);
  fused.init_truncated_normal(11);
  // The same initial weights, tensor by tensor, in TF layout.
  for (size_t i = 0; i < separate.infos().size(); ++i)
    REQUIRE(fused.download_master(i) == separate.download_master(i));
  const ModelLimits limits{32, 4, 12, 12};
  Model model_separate(separate, limits), model_fused(fused, limits);
  const Batch batch = three_sequences(c, 5);
  const DropoutKey key{21, 3};
  const StepResult a = model_separate.forward_backward(batch, key);
  const StepResult b = model_fused.forward_backward(batch, key);
  CHECK(b.total_loss == Approx(a.total_loss).epsilon(1e-5));
  CHECK(b.mlm_loss == Approx(a.mlm_loss).epsilon(1e-5));
  CHECK(b.nsp_correct == a.nsp_correct);
  for (size_t i = 0; i < separate.infos().size(); ++i) {
    INFO(separate.infos()[i].name);
    const auto want = separate.download_grad(i), got = fused.download_grad(i);
    double norm = 0;
    for (float g : want) norm += double(g) * g;
    if (std::sqrt(norm) < 1e-6) {  // the key biases: exactly no gradient in exact arithmetic
      for (float g : got) CHECK(std::fabs(g) < 1e-5);
      continue;
    }
    CHECK(relative_error(got, want) < 1e-4);
  }
  CHECK(model_fused.evaluate(batch).mlm_correct == model_separate.evaluate(batch).mlm_correct);
}

TEST_CASE("checkpoints of a fused QKV store keep every TF and Hugging Face name and layout") {
  CpuOps ops;
  BertConfig c = BertConfig::preset("tiny");
  c.vocab_size = 104;  // no padding rows: the HF round trip is exact
  ParameterStore separate(c, ops, QkvLayout::separate), fused(c, ops, QkvLayout::fused);
  separate.init_truncated_normal(5);
  fused.init_truncated_normal(5);
  const auto dir = scratch("checkpoints");
  save_checkpoint(separate, dir / "separate.safetensors");
  save_checkpoint(fused, dir / "fused.safetensors");
  export_hf_safetensors(separate, dir / "separate_hf.safetensors");
  export_hf_safetensors(fused, dir / "fused_hf.safetensors");
  for (const char* kind : {"", "_hf"}) {
    INFO("format " << kind);
    SafetensorsReader want(dir / ("separate" + std::string(kind) + ".safetensors"));
    SafetensorsReader got(dir / ("fused" + std::string(kind) + ".safetensors"));
    REQUIRE(got.entries().size() == want.entries().size());
    for (const SafetensorsEntry& e : want.entries()) {
      INFO(e.name);
      const SafetensorsEntry* g = got.find(e.name);
      REQUIRE(g != nullptr);
      CHECK(g->shape == e.shape);
      CHECK(got.read_f32(*g) == want.read_f32(e));
    }
  }
  // Either file loads into either layout with the same TF-layout values.
  for (const char* file : {"separate.safetensors", "fused_hf.safetensors"}) {
    ParameterStore loaded(c, ops, QkvLayout::fused);
    load_checkpoint(loaded, dir / file);
    for (size_t i = 0; i < separate.infos().size(); ++i)
      REQUIRE(loaded.download_master(i) == separate.download_master(i));
  }
  ParameterStore back(c, ops, QkvLayout::separate);
  load_checkpoint(back, dir / "fused.safetensors");
  CHECK(back.download_master() == separate.download_master());
  std::filesystem::remove_all(dir);
}
