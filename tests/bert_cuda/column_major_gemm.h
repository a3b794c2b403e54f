// cuBLAS semantics on the host: D = op(A) . op(B) for column-major operands with leading
// dimensions, so a ColumnMajorGemm plan can be executed on the CPU exactly as cuBLASLt reads it.
#pragma once

#include <cstdint>
#include <vector>

#include "bert/cuda/gemm_plan.h"

namespace mlbert::test {

// Element (r, c) of op(X) for a column-major X with leading dimension ld.
template <typename T>
double op_at(const std::vector<T>& x, bool trans, int64_t ld, int64_t r, int64_t c) {
  return trans ? x[c + r * ld] : x[r + c * ld];
}

// D (column-major, ldd) = op(A) . op(B).
template <typename T>
std::vector<double> run_plan(const cuda::ColumnMajorGemm& g, const std::vector<T>& a,
                             const std::vector<T>& b) {
  std::vector<double> d(static_cast<size_t>(g.ldd * g.n), 0.0);
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < g.k; ++k)
        sum += op_at(a, g.trans_a, g.lda, i, k) * op_at(b, g.trans_b, g.ldb, k, j);
      d[i + j * g.ldd] = sum;
    }
  return d;
}

}  // namespace mlbert::test
