// Row-major linear layers as column-major cuBLASLt products (see gemm_plan.h).
#include "bert/cuda/gemm_plan.h"

#include <stdexcept>

namespace mlbert::cuda {

const char* gemm_epilogue_name(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::none:
      return "none";
    case GemmEpilogue::bias:
      return "BIAS";
    case GemmEpilogue::gelu_aux_bias:
      return "GELU_AUX_BIAS";
    case GemmEpilogue::dgelu_bgrad:
      return "DGELU_BGRAD";
    case GemmEpilogue::bgrad_a:
      return "BGRADA";
    case GemmEpilogue::bgrad_b:
      return "BGRADB";
    case GemmEpilogue::dgelu:
      return "DGELU";
  }
  return "?";
}

bool epilogue_reads_bias(GemmEpilogue e) {
  return e == GemmEpilogue::bias || e == GemmEpilogue::gelu_aux_bias;
}
bool epilogue_writes_bias_grad(GemmEpilogue e) {
  return e == GemmEpilogue::dgelu_bgrad || e == GemmEpilogue::bgrad_a || e == GemmEpilogue::bgrad_b;
}
bool epilogue_uses_aux(GemmEpilogue e) {
  return e == GemmEpilogue::gelu_aux_bias || e == GemmEpilogue::dgelu_bgrad ||
         e == GemmEpilogue::dgelu;
}

const char* matrix_type_name(MatrixType type) {
  switch (type) {
    case MatrixType::f16:
      return "fp16";
    case MatrixType::bf16:
      return "bf16";
    case MatrixType::f32:
      return "f32";
  }
  return "?";
}

MatrixType epilogue_vector_type(MatrixType d_type) {
  return d_type;
}

namespace {
void require_positive(int64_t M, int64_t N, int64_t K) {
  if (M <= 0 || N <= 0 || K <= 0)
    throw std::invalid_argument("linear: M, N and K must be positive (got " + std::to_string(M) +
                                ", " + std::to_string(N) + ", " + std::to_string(K) + ")");
}
}  // namespace

ColumnMajorGemm plan_linear_forward(int64_t M, int64_t N, int64_t K, bool weight_transposed) {
  require_positive(M, N, K);
  ColumnMajorGemm g;
  // y^T[N,M] = W^T[N,K] . x^T[K,M]. W [K,N] row-major is column-major [N,K] already; W stored
  // [N,K] row-major is column-major [K,N] and needs op T.
  g.m = N;
  g.n = M;
  g.k = K;
  g.a = LinearOperand::weight;
  g.trans_a = weight_transposed;
  g.lda = weight_transposed ? K : N;
  g.b = LinearOperand::input;
  g.trans_b = false;
  g.ldb = K;
  g.d = LinearOperand::out;
  g.ldd = N;
  g.bias_epilogue = GemmEpilogue::bias;
  return g;
}

ColumnMajorGemm plan_linear_backward_data(int64_t M, int64_t N, int64_t K, bool weight_transposed) {
  require_positive(M, N, K);
  ColumnMajorGemm g;
  // dx^T[K,M] = W[K,N] . dy^T[N,M]. W [K,N] row-major is column-major [N,K]: op T; stored [N,K]
  // row-major it is column-major [K,N] already.
  g.m = K;
  g.n = M;
  g.k = N;
  g.a = LinearOperand::weight;
  g.trans_a = !weight_transposed;
  g.lda = weight_transposed ? K : N;
  g.b = LinearOperand::d_out;
  g.trans_b = false;
  g.ldb = N;
  g.d = LinearOperand::d_input;
  g.ldd = K;
  g.bias_epilogue = GemmEpilogue::none;
  return g;
}

ColumnMajorGemm plan_linear_backward_weight(int64_t M, int64_t N, int64_t K,
                                            bool weight_transposed) {
  require_positive(M, N, K);
  ColumnMajorGemm g;
  g.k = M;
  g.d = LinearOperand::d_weight;
  if (!weight_transposed) {
    // dW [K,N] row-major = column-major [N,K] = dy^T[N,M] . x[M,K]; x^T stored column-major [K,M].
    g.m = N;
    g.n = K;
    g.a = LinearOperand::d_out;
    g.trans_a = false;
    g.lda = N;
    g.b = LinearOperand::input;
    g.trans_b = true;
    g.ldb = K;
    g.ldd = N;
    g.bias_epilogue = GemmEpilogue::bgrad_a;  // dy is A: its sums over k = M tokens, length N
  } else {
    // dW [N,K] row-major = column-major [K,N] = x^T[K,M] . dy[M,N]; dy stored column-major [N,M].
    g.m = K;
    g.n = N;
    g.a = LinearOperand::input;
    g.trans_a = false;
    g.lda = K;
    g.b = LinearOperand::d_out;
    g.trans_b = true;
    g.ldb = N;
    g.ldd = K;
    g.bias_epilogue = GemmEpilogue::bgrad_b;  // dy is B: its sums over k, length n = N
  }
  return g;
}

GemmEpilogue forward_epilogue(bool has_bias, bool tanh_gelu, bool has_pre_activation, int64_t ldd) {
  if (!has_bias) return GemmEpilogue::none;
  if (tanh_gelu && has_pre_activation && ldd % kGemmAuxLdMultiple == 0)
    return GemmEpilogue::gelu_aux_bias;
  return GemmEpilogue::bias;
}

EpilogueChoice data_gradient_epilogue(bool tanh_gelu_input, bool fused_bias_grad,
                                      bool dgelu_allowed, int64_t ldd, MatrixType d_type) {
  if (!tanh_gelu_input || ldd % kGemmAuxLdMultiple != 0) return {};
  if (fused_bias_grad) return {GemmEpilogue::dgelu_bgrad, epilogue_vector_type(d_type)};
  if (dgelu_allowed) return {GemmEpilogue::dgelu, epilogue_vector_type(d_type)};
  return {};
}

EpilogueChoice weight_gradient_epilogue(const ColumnMajorGemm& weight_plan, bool wants_bias_grad,
                                        MatrixType d_type) {
  if (!wants_bias_grad) return {};
  return {weight_plan.bias_epilogue, epilogue_vector_type(d_type)};
}

uint32_t pointer_alignment(uintptr_t address) {
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

std::string describe(const ColumnMajorGemm& g) {
  return "m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) +
         (g.trans_a ? " A^T" : " A") + " lda=" + std::to_string(g.lda) +
         (g.trans_b ? " B^T" : " B") + " ldb=" + std::to_string(g.ldb) +
         " ldd=" + std::to_string(g.ldd);
}

std::string describe_problem(GemmEpilogue epilogue, MatrixType ab_type, MatrixType d_type,
                             MatrixType vector_type, const ColumnMajorGemm& gemm) {
  std::string text = std::string(gemm_epilogue_name(epilogue)) + " A/B " +
                     matrix_type_name(ab_type) + " C/D " + matrix_type_name(d_type);
  if (epilogue_reads_bias(epilogue)) text += std::string(" bias ") + matrix_type_name(vector_type);
  if (epilogue_writes_bias_grad(epilogue))
    text += std::string(" bias-grad ") + matrix_type_name(vector_type);
  return text + " " + describe(gemm);
}

std::string fusion_report(const std::vector<EpilogueUse>& uses) {
  std::string text = "cuBLASLt epilogues:";
  bool any = false;
  for (const EpilogueUse& u : uses) {
    if (u.epilogue == GemmEpilogue::none) continue;
    text += std::string(any ? "; " : " ") + gemm_epilogue_name(u.epilogue) + "(" +
            matrix_type_name(u.vector_type) + ") fused " + std::to_string(u.fused_runs);
    if (u.refused_plans > 0)
      text += ", refused " + std::to_string(u.refused_plans) + " plan" +
              (u.refused_plans == 1 ? "" : "s") + " (ran unfused)";
    any = true;
  }
  if (!any) text += " none used";
  return text;
}

}  // namespace mlbert::cuda
