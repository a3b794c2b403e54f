// bert_cuda_check: compares every CUDA op, then a whole BERT-large forward + backward, with the
// CPU reference backend on fresh random inputs, in bf16 and fp16. Every table row is printed and
// flushed as soon as its case has run (stdout is line-buffered, also into a file), each case is
// announced before it starts (so a hang names its op), and an exception in one case becomes a FAIL
// row while the others still run. Ends with a summary line and, per failing case, the command that
// reruns it alone with the same inputs. Exit 0 when every row passes, 1 otherwise, 77 (reported as
// skipped by ctest) when no CUDA device is present. Run by scripts/device_check.sh.
//
//   bert_cuda_check [--ops-only | --model-only] [--dtype bf16|fp16|both] [--seed N]
//                   [--only SUBSTRING] [--list]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <set>
#include <string>

#include "bert/cuda/device_info.h"
#include "tests/bert_cuda/check_ops.h"

namespace {

using mlbert::bert::DType;
namespace check = mlbert::cuda::check;

constexpr int kSkipped = 77;

void print_header() {
  std::printf("%-34s %-28s %-5s %12s %12s %10s  %s\n", "op", "tensor", "type", "gpu err",
              "plain/limit", "rel_l2", "result");
}

void print_row(const check::CheckRow& r) {
  std::printf("%-34s %-28s %-5s %12.4g %12.4g %10.3g  %s%s%s\n", r.op.c_str(), r.tensor.c_str(),
              r.dtype.c_str(), r.gpu.max_abs, r.plain.max_abs, r.gpu.rel_l2,
              r.pass ? "PASS" : "FAIL", r.note.empty() ? "" : "  ", r.note.c_str());
}

check::CheckRow error_row(const std::string& op, DType t, const std::string& what) {
  check::CheckRow row;
  row.op = op;
  row.tensor = "(error)";
  row.dtype = mlbert::bert::dtype_name(t);
  row.pass = false;
  row.note = what;
  return row;
}

// A case that threw may have left the context in a sticky error state; then nothing later can run.
bool device_usable(std::string& why) {
  const cudaError_t status = cudaDeviceSynchronize();
  if (status == cudaSuccess) return true;
  why = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  bool ops = true, model = true, list = false;
  std::string dtypes = "both", only;
  uint64_t seed = std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--ops-only")
      model = false;
    else if (arg == "--model-only")
      ops = false;
    else if (arg == "--list")
      list = true;
    else if (arg == "--dtype" && i + 1 < argc)
      dtypes = argv[++i];
    else if (arg == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--only" && i + 1 < argc)
      only = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s [--ops-only | --model-only] [--dtype bf16|fp16|both] [--seed N] "
                   "[--only SUBSTRING] [--list]\n",
                   argv[0]);
      return 2;
    }
  }
  std::vector<DType> types;
  if (dtypes == "both" || dtypes == "bf16") types.push_back(DType::bf16);
  if (dtypes == "both" || dtypes == "fp16") types.push_back(DType::f16);
  if (types.empty()) {
    std::fprintf(stderr, "--dtype must be bf16, fp16 or both\n");
    return 2;
  }
  std::vector<check::CheckCase> cases;
  if (ops) {
    // --only: the case of that exact name, else every case whose name contains it.
    const auto all = check::op_cases();
    for (const auto& one : all)
      if (one.name == only) cases.push_back(one);
    if (cases.empty())
      for (const auto& one : all)
        if (only.empty() || one.name.find(only) != std::string::npos) cases.push_back(one);
  }
  const bool run_model = model && (only.empty() || std::string("model").find(only) == 0);
  if (list) {
    for (const auto& one : cases) std::printf("%s\n", one.name.c_str());
    if (run_model) std::printf("model\n");
    return 0;
  }
  if (cases.empty() && !run_model) {
    std::fprintf(stderr, "--only '%s' matches no case (see --list)\n", only.c_str());
    return 2;
  }
  const auto devices = mlbert::cuda::cuda_devices();
  if (devices.empty()) {
    std::printf("no CUDA device: bert_cuda_check skipped\n");
    return kSkipped;
  }
  std::printf("device: %s\nseed: %llu (--seed reproduces every case's inputs)\n",
              devices[0].describe().c_str(), static_cast<unsigned long long>(seed));
  print_header();
  size_t rows = 0, failed = 0;
  std::set<std::pair<std::string, std::string>> failing;  // (dtype, case)
  auto sink = [&](const check::CheckRow& row, const std::string& case_name) {
    print_row(row);
    ++rows;
    if (!row.pass) {
      ++failed;
      failing.insert({row.dtype, case_name});
    }
  };
  std::string unusable;
  for (DType t : types) {
    if (!unusable.empty()) break;
    const char* tname = mlbert::bert::dtype_name(t);
    if (!cases.empty()) {
      try {
        mlbert::bert::CpuOps cpu;
        mlbert::cuda::CudaOpsOptions options;
        options.compute_dtype = t;
        mlbert::cuda::CudaOps gpu(options);
        for (const auto& one : cases) {
          std::printf("running: %s (%s)\n", one.name.c_str(), tname);
          try {
            for (const auto& row : one.run(cpu, gpu, seed)) sink(row, one.name);
          } catch (const std::exception& e) {
            sink(error_row(one.name, t, e.what()), one.name);
            if (!device_usable(unusable)) break;
          }
        }
        std::printf("ops (%s): %s\n", tname, gpu.gemm().fusion_report().c_str());
      } catch (const std::exception& e) {
        sink(error_row("(setup)", t, e.what()), "");
      }
    }
    if (run_model && unusable.empty()) {
      std::printf("running: model (%s)\n", tname);
      try {
        for (const auto& row : check::check_model(t, seed)) sink(row, "model");
      } catch (const std::exception& e) {
        sink(error_row("bert-large fwd+bwd", t, e.what()), "model");
        device_usable(unusable);
      }
    }
  }
  if (!unusable.empty())
    std::printf(
        "bert_cuda_check: the CUDA context is unusable (%s); the remaining cases did not run\n",
        unusable.c_str());
  std::printf("bert_cuda_check: %zu of %zu checks passed%s\n", rows - failed, rows,
              failed ? "" : " (all)");
  for (const auto& [dtype, name] : failing) {
    const std::string which = name.empty()      ? ""
                              : name == "model" ? " --model-only --only model"
                                                : " --ops-only --only '" + name + "'";
    std::printf("rerun: bert_cuda_check --dtype %s --seed %llu%s\n",
                dtype == "f16" ? "fp16" : dtype.c_str(), static_cast<unsigned long long>(seed),
                which.c_str());
  }
  return failed == 0 && unusable.empty() ? 0 : 1;
}
