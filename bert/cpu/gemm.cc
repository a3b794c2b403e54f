// Row-major SGEMM split across the OpenMP threads, each block computed by single-threaded OpenBLAS.
#include "bert/cpu/gemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>

extern "C" void openblas_set_num_threads(int num_threads);

namespace mlbert::bert::cpu {

namespace {
// Below this many multiply-adds a GEMM is not worth splitting.
constexpr int64_t kMinParallelFlops = int64_t{1} << 18;
// Blocks are multiples of this many rows/columns (the OpenBLAS micro-kernel tiles).
constexpr int64_t kBlockQuantum = 16;
}  // namespace

void use_single_threaded_blas() {
  openblas_set_num_threads(1);
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads <= 1 || m * n * k < kMinParallelFlops) {
    cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb),
                beta, c, static_cast<int>(ldc));
    return;
  }
  const bool split_rows = m >= n;
  const int64_t extent = split_rows ? m : n;
  const int64_t chunk = std::max<int64_t>(
      kBlockQuantum, (extent + threads - 1) / threads / kBlockQuantum * kBlockQuantum);
  const int64_t blocks = (extent + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t begin = block * chunk, size = std::min(chunk, extent - begin);
    if (split_rows) {
      // Rows [begin, begin+size) of C need rows of op(A): A + begin*lda, or columns when
      // transposed.
      const float* a_block = trans_a ? a + begin : a + begin * lda;
      cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(size), static_cast<int>(n),
                  static_cast<int>(k), alpha, a_block, static_cast<int>(lda), b,
                  static_cast<int>(ldb), beta, c + begin * ldc, static_cast<int>(ldc));
    } else {
      const float* b_block = trans_b ? b + begin * ldb : b + begin;
      cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(size),
                  static_cast<int>(k), alpha, a, static_cast<int>(lda), b_block,
                  static_cast<int>(ldb), beta, c + begin, static_cast<int>(ldc));
    }
  }
}

}  // namespace mlbert::bert::cpu
