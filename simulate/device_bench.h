// What the device check's bench measured on one GPU (bert_cuda_bench --json, format
// "mlbert-device-bench/1"), read back for `mlbert simulate calibrate --bench` (calibrate.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "simulate/kernels.h"

namespace mlbert::simulate {

inline constexpr const char* kDeviceBenchFormat = "mlbert-device-bench/1";

// One timed configuration: a dtype, a length mix, the micro-batch's shape and its times.
struct DeviceBenchStep {
  std::string dtype, mix;
  MicroBatchShape shape;
  double fwd_bwd_seconds = 0, optimizer_seconds = 0;
};

struct DeviceBench {
  std::filesystem::path file;
  std::string device;  // the CUDA device name
  int multiprocessors = 0;
  double copy_bytes_per_second = 0;    // device-to-device copy, read + write
  double gemm_flops_per_second = 0;    // a large bf16 GEMM through cuBLASLt
  std::vector<DeviceBenchStep> steps;  // at least one
};

// Every field checked: a file that is not JSON, has the wrong format or lacks a field, or holds a
// number that is not finite and > 0, throws std::runtime_error naming the file and the field
// (e.g. "bench.json: steps[1].squares: missing").
DeviceBench read_device_bench(const std::filesystem::path& file);

}  // namespace mlbert::simulate
