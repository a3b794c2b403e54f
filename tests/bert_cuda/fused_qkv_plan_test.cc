// The fused QKV products as the CUDA backend runs them: the column-major cuBLASLt plans of the
// N = 3h forward, the K = 3h data gradient and the weight gradient with its BGRADB bias gradient,
// executed on the host with cuBLAS semantics on a ParameterStore's own flat buffer, must give each
// TF-named query, key and value tensor's projection and gradients, with q, k and v where the
// attention kernels read them (pointer + column block, row stride 3h).
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "bert/cpu/cpu_ops.h"
#include "bert/cuda/gemm_plan.h"
#include "bert/parameters.h"
#include "tests/bert/test_util.h"
#include "tests/bert_cuda/column_major_gemm.h"

namespace {

namespace bert = mlbert::bert;
namespace cuda = mlbert::cuda;
using mlbert::test::run_plan;

std::vector<double> random_doubles(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

}  // namespace

TEST_CASE(
    "fused QKV plans on the store's flat buffer give each TF-named projection, its gradients and "
    "q, k, v at the attention kernels' addresses") {
  bert::CpuOps ops;
  const bert::BertConfig c = mlbert::test::small_bert_config();
  const int64_t h = c.hidden_size, t = 5;
  bert::ParameterStore store(c, ops, bert::QkvLayout::fused);
  store.init_truncated_normal(13);
  const bert::LayerParameters& lp = store.index().layers[0];
  for (size_t j = 0; j < 3; ++j)
    store.upload_master(lp.qkv_bias + j, mlbert::test::random_vector(h, 40 + j));
  // The operand cuBLASLt gets: the span of the three kernels in the flat buffer, as stored.
  const std::vector<float> flat = store.download_master();
  const size_t w0 = store.infos()[lp.qkv_kernel].offset, b0 = store.infos()[lp.qkv_bias].offset;
  const std::vector<double> weight(flat.begin() + w0, flat.begin() + w0 + 3 * h * h);
  const std::vector<double> bias(flat.begin() + b0, flat.begin() + b0 + 3 * h);
  std::vector<std::vector<float>> w_tf, b_tf;  // TF [in, out] views
  for (size_t j = 0; j < 3; ++j) {
    w_tf.push_back(store.download_master(lp.qkv_kernel + j));
    b_tf.push_back(store.download_master(lp.qkv_bias + j));
  }
  std::mt19937 rng(7);
  const auto x = random_doubles(rng, t * h), d_qkv = random_doubles(rng, t * 3 * h);

  // Forward: D (column-major [3h, t], ldd 3h) is row-major [t, 3h]; the BIAS epilogue adds
  // bias[row of D] = the fused bias span.
  const cuda::ColumnMajorGemm fwd = cuda::plan_linear_forward(t, 3 * h, h, true);
  REQUIRE(fwd.a == cuda::LinearOperand::weight);
  const std::vector<double> y = run_plan(fwd, weight, x);
  for (int64_t token = 0; token < t; ++token)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t col = 0; col < h; ++col) {
        double want = 0;
        for (int64_t k = 0; k < h; ++k) want += x[token * h + k] * w_tf[j][k * h + col];
        // Where the attention kernel reads q (j 0), k (1), v (2): pointer qkv + j * h, element
        // token * row_stride + col with row_stride 3h.
        const int64_t address = j * h + token * (3 * h) + col;
        REQUIRE(y[address] == Approx(want).margin(1e-12));
        REQUIRE(bias[j * h + col] == b_tf[j][col]);
      }

  // Data gradient: dx[t, h] = sum over j of d_j W_j^T, one K = 3h product.
  const cuda::ColumnMajorGemm data = cuda::plan_linear_backward_data(t, 3 * h, h, true);
  REQUIRE(data.k == 3 * h);
  const std::vector<double> dx = run_plan(data, weight, d_qkv);
  for (int64_t token = 0; token < t; ++token)
    for (int64_t k = 0; k < h; ++k) {
      double want = 0;
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t n = 0; n < h; ++n)
          want += d_qkv[token * 3 * h + j * h + n] * w_tf[j][k * h + n];
      REQUIRE(dx[token * h + k] == Approx(want).margin(1e-12));
    }

  // Weight gradient into the stored [3h, h] layout; each TF view is x^T d_j. Its bias gradient
  // (BGRADB: sums of B over k = the tokens) is each d_j's column sums.
  const cuda::ColumnMajorGemm wgrad = cuda::plan_linear_backward_weight(t, 3 * h, h, true);
  REQUIRE(wgrad.b == cuda::LinearOperand::d_out);
  REQUIRE(wgrad.bias_epilogue == cuda::GemmEpilogue::bgrad_b);
  const std::vector<double> dw = run_plan(wgrad, x, d_qkv);
  for (size_t j = 0; j < 3; ++j) {
    const bert::ParameterInfo& info = store.infos()[lp.qkv_kernel + j];
    const std::vector<float> block(dw.begin() + static_cast<int64_t>(info.offset - w0),
                                   dw.begin() + static_cast<int64_t>(info.offset - w0 + h * h));
    const std::vector<float> dw_tf = bert::to_tf_layout(info, block);
    for (int64_t k = 0; k < h; ++k)
      for (int64_t n = 0; n < h; ++n) {
        double want = 0;
        for (int64_t token = 0; token < t; ++token)
          want += x[token * h + k] * d_qkv[token * 3 * h + j * h + n];
        REQUIRE(dw_tf[k * h + n] == Approx(want).margin(1e-5));
      }
    for (int64_t n = 0; n < h; ++n) {
      double epilogue = 0, want = 0;
      for (int64_t k = 0; k < wgrad.k; ++k)
        epilogue += mlbert::test::op_at(d_qkv, wgrad.trans_b, wgrad.ldb, k, j * h + n);
      for (int64_t token = 0; token < t; ++token) want += d_qkv[token * 3 * h + j * h + n];
      REQUIRE(epilogue == Approx(want).margin(1e-12));
    }
  }
}
