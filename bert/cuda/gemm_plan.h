// How the row-major linear layers of the Ops contract map onto cuBLASLt's column-major GEMMs, and
// which epilogue each one uses. Pure host logic (no CUDA), so it is unit-tested on any machine.
//
// The one fact to know: a row-major [R, C] matrix is the same memory as a column-major [C, R]
// matrix, so y[M,N] = x[M,K] . W[K,N] is computed as y^T = W^T . x^T with no copy, and the bias of
// a layer runs along the column-major rows (cuBLASLt's BIAS epilogue direction).
#pragma once

#include <cstdint>
#include <string>

namespace mlbert::cuda {

enum class GemmEpilogue : uint8_t {
  none,
  bias,           // D = A.B + bias (bias along D's rows)
  gelu_aux_bias,  // aux = A.B + bias, D = gelu_tanh(aux)
  dgelu_bgrad,    // D = (A.B) * gelu_tanh'(aux), bias_grad = row sums of D
  bgrad_a,        // bias_grad = sums of A over k (length m), D = A.B
  bgrad_b,        // bias_grad = sums of B over k (length n), D = A.B
};
const char* gemm_epilogue_name(GemmEpilogue epilogue);

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

// Largest power of two (up to 256) dividing a byte address: the alignment cuBLASLt's heuristics
// are told, so algorithms needing more are never picked.
uint32_t pointer_alignment(uintptr_t address);

std::string describe(const ColumnMajorGemm& gemm);

}  // namespace mlbert::cuda
