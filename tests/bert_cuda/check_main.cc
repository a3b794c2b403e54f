// bert_cuda_check: compares every CUDA op, then a whole BERT-large forward + backward, with the
// CPU reference backend on fresh random inputs, in bf16 and fp16. Prints one table row per output
// and a summary; exit 0 when every row passes, 1 otherwise, 77 (reported as skipped by ctest) when
// no CUDA device is present. Run by scripts/device_check.sh on a GPU machine.
//
//   bert_cuda_check [--quick] [--ops-only] [--model-only] [--dtype bf16|fp16|both] [--seed N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>

#include "bert/cuda/device_info.h"
#include "tests/bert_cuda/check_ops.h"

namespace {

using mlbert::bert::DType;
namespace check = mlbert::cuda::check;

constexpr int kSkipped = 77;

void print_rows(const std::vector<check::CheckRow>& rows) {
  std::printf("%-34s %-28s %-5s %12s %12s %10s  %s\n", "op", "tensor", "type", "gpu err",
              "plain/limit", "rel_l2", "result");
  for (const auto& r : rows) {
    std::printf("%-34s %-28s %-5s %12.4g %12.4g %10.3g  %s%s%s\n", r.op.c_str(), r.tensor.c_str(),
                r.dtype.c_str(), r.gpu.max_abs, r.plain.max_abs, r.gpu.rel_l2,
                r.pass ? "PASS" : "FAIL", r.note.empty() ? "" : "  ", r.note.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, ops = true, model = true;
  std::string dtypes = "both";
  uint64_t seed = std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick")
      quick = true;
    else if (arg == "--ops-only")
      model = false;
    else if (arg == "--model-only")
      ops = false;
    else if (arg == "--dtype" && i + 1 < argc)
      dtypes = argv[++i];
    else if (arg == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(
          stderr,
          "usage: %s [--quick] [--ops-only] [--model-only] [--dtype bf16|fp16|both] [--seed N]\n",
          argv[0]);
      return 2;
    }
  }
  const auto devices = mlbert::cuda::cuda_devices();
  if (devices.empty()) {
    std::printf("no CUDA device: bert_cuda_check skipped\n");
    return kSkipped;
  }
  std::printf("device: %s\nseed: %llu (rerun with --seed to reproduce)\n",
              devices[0].describe().c_str(), static_cast<unsigned long long>(seed));
  std::vector<DType> types;
  if (dtypes == "both" || dtypes == "bf16") types.push_back(DType::bf16);
  if (dtypes == "both" || dtypes == "fp16") types.push_back(DType::f16);
  if (types.empty()) {
    std::fprintf(stderr, "--dtype must be bf16, fp16 or both\n");
    return 2;
  }
  std::vector<check::CheckRow> all;
  try {
    std::mt19937_64 rng(seed);
    for (DType t : types) {
      if (ops) {
        mlbert::bert::CpuOps cpu;
        mlbert::cuda::CudaOpsOptions options;
        options.compute_dtype = t;
        mlbert::cuda::CudaOps gpu(options);
        const auto rows = check::check_ops(cpu, gpu, rng, quick);
        all.insert(all.end(), rows.begin(), rows.end());
      }
      if (model) {
        const auto rows = check::check_model(t, rng, quick);
        all.insert(all.end(), rows.begin(), rows.end());
      }
    }
  } catch (const std::exception& e) {
    print_rows(all);
    std::printf("bert_cuda_check: error: %s\n", e.what());
    return 1;
  }
  print_rows(all);
  size_t failed = 0;
  for (const auto& r : all) failed += !r.pass;
  std::printf("bert_cuda_check: %zu of %zu checks passed%s\n", all.size() - failed, all.size(),
              failed ? "" : " (all)");
  return failed == 0 ? 0 : 1;
}
