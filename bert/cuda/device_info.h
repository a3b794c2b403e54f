// What the CUDA backend runs on: the visible devices and their properties, for logs, the device
// check and the benchmark (which needs the SM count and clock for its ceilings).
#pragma once

#include <string>
#include <vector>

namespace mlbert::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int sm_count = 0;
  size_t global_memory_bytes = 0;
  size_t l2_bytes = 0;
  size_t shared_memory_per_block_optin = 0;
  int clock_khz = 0;
  int driver_version = 0, runtime_version = 0;
  std::string describe() const;  // one line: "NVIDIA H200 (sm_90, 132 SMs, 141 GiB)"
};

// Every visible device; empty when there is no driver or no device (never throws for that).
std::vector<DeviceInfo> cuda_devices();

}  // namespace mlbert::cuda
