// Row-major SGEMM on the OpenMP thread pool: C[M,N] = alpha * op(A) op(B) + beta * C.
//
// Design choice: OpenBLAS runs single-threaded inside each OpenMP thread, and C is split into one
// block per thread (rows when M >= N, else columns). One thread pool for GEMMs and for the
// element-wise loops means no two pools spin against each other on the same cores.
#pragma once
#include <cstdint>

namespace mlbert::bert::cpu {

// Pins OpenBLAS to one thread per call (process-wide); CpuOps calls it on construction.
void use_single_threaded_blas();

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace mlbert::bert::cpu
