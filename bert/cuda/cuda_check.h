// Error checking for every CUDA runtime and cuBLASLt call, usable from .cc and .cu files alike.
// A failed call throws std::runtime_error naming the call, the file and the line: a backend error
// is never silently ignored, and the CLI turns the exception into one `mlbert: error:` line.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace mlbert::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                          int line) {
  throw std::runtime_error(std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ") in `" + call + "` at " + file + ":" +
                           std::to_string(line));
}

// cublasGetStatusName lives in libcublas, which nothing else here needs: name the statuses here.
inline const char* cublas_status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
      return "CUBLAS_STATUS_UNKNOWN";
  }
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* call,
                                            const char* file, int line) {
  throw std::runtime_error(std::string("cuBLASLt error ") + cublas_status_name(status) + " (" +
                           std::to_string(static_cast<int>(status)) + ") in `" + call + "` at " +
                           file + ":" + std::to_string(line));
}

}  // namespace mlbert::cuda

#define CUDA_CHECK(call)                                                                \
  do {                                                                                  \
    const cudaError_t mlbert_cuda_status_ = (call);                                     \
    if (mlbert_cuda_status_ != cudaSuccess)                                             \
      ::mlbert::cuda::throw_cuda_error(mlbert_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After every kernel launch: catches bad launch configurations at the launch site. Asynchronous
// faults surface at the next synchronizing call, which is checked too.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#define CUBLAS_CHECK(call)                                                                  \
  do {                                                                                      \
    const cublasStatus_t mlbert_cublas_status_ = (call);                                    \
    if (mlbert_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                     \
      ::mlbert::cuda::throw_cublas_error(mlbert_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)
