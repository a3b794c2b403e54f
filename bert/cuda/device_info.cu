// Placeholder until the CUDA backend lands: proves the toolchain builds and links sm_80/sm_90 code.
#include <cuda_runtime.h>

namespace mlbert::cuda {
int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}
}  // namespace mlbert::cuda
