// Device enumeration (see device_info.h).
#include "bert/cuda/device_info.h"

#include <cuda_runtime.h>

namespace mlbert::cuda {

std::string DeviceInfo::describe() const {
  return name + " (sm_" + std::to_string(major) + std::to_string(minor) + ", " +
         std::to_string(sm_count) + " SMs, " + std::to_string(global_memory_bytes >> 30) +
         " GiB, L2 " + std::to_string(l2_bytes >> 20) + " MiB)";
}

std::vector<DeviceInfo> cuda_devices() {
  std::vector<DeviceInfo> devices;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return devices;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, i) != cudaSuccess) continue;
    DeviceInfo info;
    info.index = i;
    info.name = props.name;
    info.major = props.major;
    info.minor = props.minor;
    info.sm_count = props.multiProcessorCount;
    info.global_memory_bytes = props.totalGlobalMem;
    info.l2_bytes = static_cast<size_t>(props.l2CacheSize);
    info.shared_memory_per_block_optin = props.sharedMemPerBlockOptin;
    int clock = 0;
    cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, i);
    info.clock_khz = clock;
    info.driver_version = driver;
    info.runtime_version = runtime;
    devices.push_back(info);
  }
  return devices;
}

}  // namespace mlbert::cuda
