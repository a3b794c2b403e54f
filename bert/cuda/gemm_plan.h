// How the row-major linear layers of the Ops contract map onto cuBLASLt's column-major GEMMs, and
// which epilogue each one uses. Pure host logic (no CUDA), so it is unit-tested on any machine.
//
// The one fact to know: a row-major [R, C] matrix is the same memory as a column-major [C, R]
// matrix, so y[M,N] = x[M,K] . W[K,N] is computed as y^T = W^T . x^T with no copy, and the bias of
// a layer runs along the column-major rows (cuBLASLt's BIAS epilogue direction).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlbert::cuda {

enum class GemmEpilogue : uint8_t {
  none,
  bias,           // D = A.B + bias (bias along D's rows)
  gelu_aux_bias,  // aux = A.B + bias, D = gelu_tanh(aux)
  dgelu_bgrad,    // D = (A.B) * gelu_tanh'(aux), bias_grad = row sums of D
  bgrad_a,        // bias_grad = sums of A over k (length m), D = A.B
  bgrad_b,        // bias_grad = sums of B over k (length n), D = A.B
  dgelu,          // D = (A.B) * gelu_tanh'(aux) (no bias gradient)
};
const char* gemm_epilogue_name(GemmEpilogue epilogue);
bool epilogue_reads_bias(GemmEpilogue epilogue);        // BIAS, GELU_AUX_BIAS
bool epilogue_writes_bias_grad(GemmEpilogue epilogue);  // DGELU_BGRAD, BGRADA, BGRADB
bool epilogue_uses_aux(GemmEpilogue epilogue);          // GELU_AUX_BIAS, DGELU_BGRAD, DGELU

// Element types of the matrices and vectors of one product.
enum class MatrixType : uint8_t { f16, bf16, f32 };
const char* matrix_type_name(MatrixType type);

// The type of the bias vector (BIAS epilogues) or bias-gradient vector (BGRAD epilogues) to ask
// cuBLASLt for: the output's (Ctype = Dtype), which is what cuBLASLt documents for both with
// floating-point outputs. So DGELU_BGRAD on a bf16/fp16 d_input writes a bf16/fp16 bias gradient
// (the caller adds it into its f32 gradient), and BGRADA/BGRADB on an f32 d_weight an f32 one.
MatrixType epilogue_vector_type(MatrixType d_type);

// Which operand plays which role in one column-major product D[m,n] = op(A)[m,k] . op(B)[k,n].
enum class LinearOperand : uint8_t { input, weight, d_out, out, d_input, d_weight };

struct ColumnMajorGemm {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldd = 0;
  LinearOperand a = LinearOperand::weight, b = LinearOperand::input, d = LinearOperand::out;
  GemmEpilogue bias_epilogue = GemmEpilogue::none;  // the epilogue that carries this layer's bias
};

// y[M,N] = x[M,K] . W + b, W stored [K,N] (or [N,K] when weight_transposed).
ColumnMajorGemm plan_linear_forward(int64_t M, int64_t N, int64_t K, bool weight_transposed);
// dx[M,K] = dy[M,N] . W^T.
ColumnMajorGemm plan_linear_backward_data(int64_t M, int64_t N, int64_t K, bool weight_transposed);
// dW (as stored) = x^T . dy, with the bias gradient (column sums of dy) from the epilogue that
// reduces dy's operand: BGRADA when W is [K,N], BGRADB when it is stored [N,K].
ColumnMajorGemm plan_linear_backward_weight(int64_t M, int64_t N, int64_t K,
                                            bool weight_transposed);

// cuBLASLt's requirement for the GELU aux matrix: its leading dimension must be a multiple of 8.
constexpr int64_t kGemmAuxLdMultiple = 8;
// Epilogue of the forward of a layer: GELU_AUX_BIAS when the activation is tanh-GELU and the aux
// buffer is usable, else BIAS (then an elementwise kernel applies the activation), else none.
GemmEpilogue forward_epilogue(bool has_bias, bool tanh_gelu, bool has_pre_activation, int64_t ldd);

// The epilogue (and its bias/bias-gradient vector type) a linear layer's product runs with.
struct EpilogueChoice {
  GemmEpilogue epilogue = GemmEpilogue::none;
  MatrixType vector_type = MatrixType::f32;
  friend bool operator==(const EpilogueChoice&, const EpilogueChoice&) = default;
};
// linear_backward's data product with the input's activation folded in, when that activation is
// the tanh GELU and the aux ld (= ldd) is a multiple of 8: DGELU_BGRAD with the bias gradient in
// d_input's type when the bias gradient is to be fused (`fused_bias_grad`), else DGELU when
// allowed (the caller sums the bias gradient, if any, itself); otherwise none (the caller runs the
// plain product, the activation-gradient kernel and an f32 column sum).
EpilogueChoice data_gradient_epilogue(bool tanh_gelu_input, bool fused_bias_grad,
                                      bool dgelu_allowed, int64_t ldd, MatrixType d_type);
// linear_backward's weight product: the plan's BGRADA/BGRADB with the bias gradient in d_weight's
// type (f32) when a bias gradient is wanted, else none.
EpilogueChoice weight_gradient_epilogue(const ColumnMajorGemm& weight_plan, bool wants_bias_grad,
                                        MatrixType d_type);

// Largest power of two (up to 256) dividing a byte address: the alignment cuBLASLt's heuristics
// are told, so algorithms needing more are never picked.
uint32_t pointer_alignment(uintptr_t address);

std::string describe(const ColumnMajorGemm& gemm);
// One cuBLASLt problem for diagnostics: "DGELU_BGRAD A/B bf16 C/D bf16 bias bf16 m=.. n=.. k=..".
std::string describe_problem(GemmEpilogue epilogue, MatrixType ab_type, MatrixType d_type,
                             MatrixType vector_type, const ColumnMajorGemm& gemm);

// How often each (epilogue, vector type) ran fused in cuBLASLt and how many of its plans cuBLASLt
// refused (each refusal sends the caller to its unfused path).
struct EpilogueUse {
  GemmEpilogue epilogue = GemmEpilogue::none;
  MatrixType vector_type = MatrixType::f32;  // bias / bias gradient (unused for none)
  int64_t fused_runs = 0;
  int64_t refused_plans = 0;
};
// "cuBLASLt epilogues: BIAS(bf16) fused 96; DGELU_BGRAD(bias bf16) refused 1 plan, unfused ...".
// Entries with epilogue none are left out; an empty list says so.
std::string fusion_report(const std::vector<EpilogueUse>& uses);

}  // namespace mlbert::cuda
