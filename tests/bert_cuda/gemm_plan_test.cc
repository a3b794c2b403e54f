// The row-major linear layers mapped onto column-major cuBLASLt problems: executing each plan with
// a plain column-major GEMM (cuBLAS semantics: op, ld) on the row-major buffers must give the
// row-major products, and the epilogue chosen for the bias gradient must reduce the dy operand.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "bert/cuda/gemm_plan.h"
#include "tests/bert_cuda/column_major_gemm.h"

namespace {

using mlbert::cuda::ColumnMajorGemm;
using mlbert::cuda::GemmEpilogue;
using mlbert::cuda::LinearOperand;
using mlbert::test::op_at;
using mlbert::test::run_plan;
namespace cuda = mlbert::cuda;

std::vector<double> random_matrix(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// Row-major C[R,C] = A[R,K] . B[K,C] with an accessor for B.
template <typename BAt>
std::vector<double> row_major_product(const std::vector<double>& a, int64_t R, int64_t K, int64_t C,
                                      BAt b_at) {
  std::vector<double> c(static_cast<size_t>(R * C), 0.0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < C; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += a[r * K + k] * b_at(k, j);
      c[r * C + j] = sum;
    }
  return c;
}

const std::vector<double>& operand(LinearOperand which, const std::vector<double>& x,
                                   const std::vector<double>& w, const std::vector<double>& dy) {
  switch (which) {
    case LinearOperand::input:
      return x;
    case LinearOperand::weight:
      return w;
    default:
      return dy;
  }
}

void require_close(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-12));
}

}  // namespace

TEST_CASE("linear plans reproduce y = xW, dx = dy W^T and dW = x^T dy for both weight layouts") {
  std::mt19937 rng(3);
  for (bool transposed : {false, true}) {
    for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{5, 7, 3}, {8, 2, 16}, {1, 9, 4}}) {
      INFO("M=" << M << " N=" << N << " K=" << K << " transposed=" << transposed);
      const auto x = random_matrix(rng, M * K);
      const auto w = random_matrix(rng, N * K);  // [K,N], or [N,K] when transposed
      const auto dy = random_matrix(rng, M * N);
      auto w_at = [&](int64_t k, int64_t n) { return transposed ? w[n * K + k] : w[k * N + n]; };

      const ColumnMajorGemm fwd = cuda::plan_linear_forward(M, N, K, transposed);
      CHECK(fwd.bias_epilogue == GemmEpilogue::bias);
      CHECK(fwd.m == N);  // the bias runs along D's rows = output features
      require_close(run_plan(fwd, operand(fwd.a, x, w, dy), operand(fwd.b, x, w, dy)),
                    row_major_product(x, M, K, N, w_at));

      const ColumnMajorGemm data = cuda::plan_linear_backward_data(M, N, K, transposed);
      require_close(
          run_plan(data, operand(data.a, x, w, dy), operand(data.b, x, w, dy)),
          row_major_product(dy, M, N, K, [&](int64_t n, int64_t k) { return w_at(k, n); }));

      const ColumnMajorGemm wgrad = cuda::plan_linear_backward_weight(M, N, K, transposed);
      // dW in its stored layout: [K,N], or [N,K] when transposed.
      std::vector<double> dw(static_cast<size_t>(N * K), 0.0);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) {
          double sum = 0;
          for (int64_t m = 0; m < M; ++m) sum += x[m * K + k] * dy[m * N + n];
          dw[transposed ? n * K + k : k * N + n] = sum;
        }
      require_close(run_plan(wgrad, operand(wgrad.a, x, w, dy), operand(wgrad.b, x, w, dy)), dw);

      // The bias-gradient epilogue reduces the dy operand over k = M tokens, giving its column
      // sums.
      const bool from_a = wgrad.bias_epilogue == GemmEpilogue::bgrad_a;
      REQUIRE((from_a ? wgrad.a : wgrad.b) == LinearOperand::d_out);
      CHECK(wgrad.bias_epilogue == (transposed ? GemmEpilogue::bgrad_b : GemmEpilogue::bgrad_a));
      const auto& dy_operand = operand(from_a ? wgrad.a : wgrad.b, x, w, dy);
      const int64_t length = from_a ? wgrad.m : wgrad.n;
      REQUIRE(length == N);
      for (int64_t n = 0; n < N; ++n) {
        double epilogue_sum = 0, column_sum = 0;
        for (int64_t k = 0; k < wgrad.k; ++k)
          epilogue_sum += from_a ? op_at(dy_operand, wgrad.trans_a, wgrad.lda, n, k)
                                 : op_at(dy_operand, wgrad.trans_b, wgrad.ldb, k, n);
        for (int64_t m = 0; m < M; ++m) column_sum += dy[m * N + n];
        REQUIRE(epilogue_sum == Approx(column_sum).margin(1e-12));
      }
    }
  }
}

TEST_CASE(
    "forward epilogue: GELU_AUX_BIAS only with a bias, tanh GELU, an aux buffer and ld % 8 == 0") {
  CHECK(cuda::forward_epilogue(true, true, true, 4096) == GemmEpilogue::gelu_aux_bias);
  CHECK(cuda::forward_epilogue(true, true, true, 4092) == GemmEpilogue::bias);
  CHECK(cuda::forward_epilogue(true, true, false, 4096) == GemmEpilogue::bias);
  CHECK(cuda::forward_epilogue(true, false, true, 4096) == GemmEpilogue::bias);
  CHECK(cuda::forward_epilogue(false, true, true, 4096) == GemmEpilogue::none);
}

TEST_CASE("pointer alignment reported to cuBLASLt is the largest power of two up to 256") {
  CHECK(cuda::pointer_alignment(0x1000) == 256);
  CHECK(cuda::pointer_alignment(0x1010) == 16);
  CHECK(cuda::pointer_alignment(0x1002) == 2);
  CHECK(cuda::pointer_alignment(0x1001) == 1);
}

TEST_CASE("linear plans reject empty problems with the sizes in the message") {
  CHECK_THROWS_WITH(cuda::plan_linear_forward(0, 4, 4, false), Catch::Contains("0, 4, 4"));
  CHECK_THROWS_AS(cuda::plan_linear_backward_weight(4, -1, 4, true), std::invalid_argument);
}

TEST_CASE("bias-gradient epilogues write the output's type: DGELU_BGRAD bf16/fp16, BGRAD f32") {
  using cuda::MatrixType;
  // The fused FFN backward writes d_input in the compute type, so cuBLASLt (which documents the
  // bias-gradient vector as Ctype) gets a compute-type vector, never f32 with a 16-bit output.
  for (MatrixType t : {MatrixType::bf16, MatrixType::f16}) {
    const auto fused = cuda::data_gradient_epilogue(true, true, false, 4096, t);
    CHECK(fused.epilogue == GemmEpilogue::dgelu_bgrad);
    CHECK(fused.vector_type == t);
  }
  // The weight product accumulates into the f32 d_weight: its bias gradient is f32.
  for (bool transposed : {false, true}) {
    const ColumnMajorGemm w = cuda::plan_linear_backward_weight(64, 1024, 4096, transposed);
    const auto choice = cuda::weight_gradient_epilogue(w, true, MatrixType::f32);
    CHECK(choice.epilogue == (transposed ? GemmEpilogue::bgrad_b : GemmEpilogue::bgrad_a));
    CHECK(choice.vector_type == MatrixType::f32);
    CHECK(cuda::weight_gradient_epilogue(w, false, MatrixType::f32).epilogue == GemmEpilogue::none);
  }
  // No fusion for the erf GELU, without a bias gradient, or with an aux ld cuBLASLt rejects.
  CHECK(cuda::data_gradient_epilogue(false, true, true, 4096, MatrixType::bf16).epilogue ==
        GemmEpilogue::none);
  CHECK(cuda::data_gradient_epilogue(true, false, false, 4096, MatrixType::bf16).epilogue ==
        GemmEpilogue::none);
  CHECK(cuda::data_gradient_epilogue(true, true, true, 4092, MatrixType::bf16).epilogue ==
        GemmEpilogue::none);
  // DGELU alone (the bias gradient summed elsewhere) when allowed; DGELU_BGRAD when the bias
  // gradient is to be fused; neither for the erf GELU.
  CHECK(cuda::data_gradient_epilogue(true, false, true, 4096, MatrixType::bf16).epilogue ==
        GemmEpilogue::dgelu);
  CHECK(cuda::data_gradient_epilogue(true, true, true, 4096, MatrixType::bf16).epilogue ==
        GemmEpilogue::dgelu_bgrad);
  CHECK(cuda::data_gradient_epilogue(false, false, true, 4096, MatrixType::bf16).epilogue ==
        GemmEpilogue::none);
  CHECK(cuda::epilogue_uses_aux(GemmEpilogue::dgelu));
  CHECK_FALSE(cuda::epilogue_writes_bias_grad(GemmEpilogue::dgelu));
  CHECK(cuda::epilogue_writes_bias_grad(GemmEpilogue::bgrad_a));
  CHECK_FALSE(cuda::epilogue_writes_bias_grad(GemmEpilogue::gelu_aux_bias));
  CHECK(cuda::epilogue_reads_bias(GemmEpilogue::gelu_aux_bias));
  CHECK(cuda::epilogue_uses_aux(GemmEpilogue::dgelu_bgrad));
}

TEST_CASE(
    "a refused plan is named with its epilogue, types and shape, and the report counts uses") {
  using cuda::MatrixType;
  const ColumnMajorGemm g = cuda::plan_linear_backward_data(1006, 1024, 4096, false);
  const std::string text = cuda::describe_problem(GemmEpilogue::dgelu_bgrad, MatrixType::bf16,
                                                  MatrixType::bf16, MatrixType::bf16, g);
  CHECK(text ==
        "DGELU_BGRAD A/B bf16 C/D bf16 bias-grad bf16 m=4096 n=1006 k=1024 A^T lda=1024 B "
        "ldb=1024 ldd=4096");
  CHECK(cuda::describe_problem(GemmEpilogue::bias, MatrixType::f16, MatrixType::f16,
                               MatrixType::f16, g)
            .find("BIAS A/B fp16 C/D fp16 bias fp16 m=4096") == 0);
  CHECK(cuda::fusion_report({}) == "cuBLASLt epilogues: none used");
  const std::vector<cuda::EpilogueUse> uses = {{GemmEpilogue::none, MatrixType::bf16, 500, 0},
                                               {GemmEpilogue::bias, MatrixType::bf16, 96, 0},
                                               {GemmEpilogue::dgelu_bgrad, MatrixType::bf16, 0, 1},
                                               {GemmEpilogue::bgrad_a, MatrixType::f32, 24, 2}};
  CHECK(cuda::fusion_report(uses) ==
        "cuBLASLt epilogues: BIAS(bf16) fused 96; DGELU_BGRAD(bf16) fused 0, refused 1 plan (ran "
        "unfused); BGRADA(f32) fused 24, refused 2 plans (ran unfused)");
}
