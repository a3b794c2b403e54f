// CudaOps on whatever machine runs it, as two ctest entries of one program, so the case that cannot
// run here is reported as skipped (exit 77) and never as passed:
//   cuda_ops_device_test no-device   without a CUDA device, building the backend fails with a
//                                    message naming the device count (skipped with a device);
//   cuda_ops_device_test device      with one, the backend runs ops: the device check's pooler
//                                    case (a bf16 linear layer with bias and tanh, forward and
//                                    backward) passes against the CPU reference, and the run used
//                                    cuBLASLt's BIAS epilogue (skipped without a device).
#include <cstdio>
#include <exception>
#include <string>

#include "bert/config.h"
#include "bert/cuda/cuda_ops.h"
#include "bert/model.h"
#include "tests/bert_cuda/check_ops.h"

namespace {

constexpr int kSkipped = 77;
namespace cuda = mlbert::cuda;

mlbert::bert::ModelLimits tiny_limits() {
  mlbert::bert::ModelLimits limits;
  limits.max_tokens = 64;
  limits.max_sequences = 2;
  limits.max_masked = 8;
  return limits;
}

int no_device() {
  if (cuda::cuda_device_count() > 0) {
    std::printf("SKIPPED: a CUDA device is present; the no-device error cannot be provoked\n");
    return kSkipped;
  }
  try {
    cuda::make_cuda_ops(mlbert::bert::BertConfig::preset("tiny"), tiny_limits(), "bf16");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (what.find("no CUDA device 0 (found 0)") != std::string::npos) {
      std::printf("PASS: %s\n", what.c_str());
      return 0;
    }
    std::printf("FAIL: the error does not name the device count: %s\n", what.c_str());
    return 1;
  }
  std::printf("FAIL: CudaOps was built without a CUDA device\n");
  return 1;
}

int device() {
  if (cuda::cuda_device_count() == 0) {
    std::printf("SKIPPED: no CUDA device; no op can run here\n");
    return kSkipped;
  }
  auto ops = cuda::make_cuda_ops(mlbert::bert::BertConfig::preset("tiny"), tiny_limits(), "bf16");
  mlbert::bert::CpuOps cpu;
  int failures = 0, rows = 0;
  for (const auto& one : cuda::check::op_cases()) {
    if (one.name != "linear pooler tanh") continue;
    for (const auto& row : one.run(cpu, *ops, 1234)) {
      ++rows;
      failures += !row.pass;
      std::printf("%s %s %s: gpu err %.4g, plain err %.4g, allowed %.4g %s\n", row.op.c_str(),
                  row.tensor.c_str(), row.dtype.c_str(), row.gpu.max_abs, row.plain.max_abs,
                  row.allowance, row.pass ? "PASS" : "FAIL");
    }
  }
  const std::string fusion = ops->gemm().fusion_report();
  std::printf("%s\n", fusion.c_str());
  if (rows == 0) {
    std::printf("FAIL: the pooler case is missing from the device check\n");
    return 1;
  }
  if (fusion.find("BIAS(bf16) fused ") == std::string::npos ||
      fusion.find("BIAS(bf16) fused 0") != std::string::npos) {
    std::printf("FAIL: the forward did not run cuBLASLt's BIAS epilogue\n");
    return 1;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  try {
    if (mode == "no-device") return no_device();
    if (mode == "device") return device();
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: %s no-device|device\n", argv[0]);
  return 2;
}
