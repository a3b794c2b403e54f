// libFuzzer target: the files `mlbert simulate` takes from its user besides system files, as
// arbitrary bytes. Byte 0 picks the reader: an accelerator profile (--profile, systems/profiles/*)
// through load_profile, or a device check's measurement (calibrate --bench) through
// read_device_bench. A file gives std::runtime_error (naming the file) or a value that keeps the
// readers' promises: every rate finite and > 0, every match pattern naming something; a profile
// written back and read again is the same profile.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "simulate/device_bench.h"
#include "simulate/profile.h"
#include "tests/fuzz/fuzz_scratch.h"

namespace {

namespace sim = mlbert::simulate;

bool positive(double x) {
  return std::isfinite(x) && x > 0;
}

void profile(const std::filesystem::path& path) {
  sim::AcceleratorProfile p;
  try {
    p = sim::load_profile(path);
  } catch (const std::runtime_error&) {
    return;
  }
  if (!positive(p.tensor_flops_per_second) || !positive(p.memory_bytes_per_second)) std::abort();
  if (p.multiprocessors < 0 || !std::isfinite(p.run_start_seconds) || p.run_start_seconds < 0)
    std::abort();
  if (!std::isfinite(p.fixed_step_seconds) || p.fixed_step_seconds < 0) std::abort();
  if (p.matches.empty()) std::abort();
  for (const auto& m : p.matches)
    if (!sim::accelerator_name_matches(m, m)) std::abort();  // a pattern names at least itself
  // Written back and read again: the same numbers and names.
  const auto again_path = path.parent_path() / "again.json";
  sim::save_profile(p, again_path);
  const sim::AcceleratorProfile q = sim::load_profile(again_path);
  if (q.accelerator != p.accelerator || q.matches != p.matches ||
      q.tensor_flops_per_second != p.tensor_flops_per_second ||
      q.memory_bytes_per_second != p.memory_bytes_per_second ||
      q.multiprocessors != p.multiprocessors || q.run_start_seconds != p.run_start_seconds ||
      q.fixed_step_seconds != p.fixed_step_seconds ||
      q.optimizer_seconds_per_parameter_lamb != p.optimizer_seconds_per_parameter_lamb ||
      q.optimizer_seconds_per_parameter_adam != p.optimizer_seconds_per_parameter_adam ||
      q.provenance_kind != p.provenance_kind)
    std::abort();
  (void)sim::datasheet_for(p.accelerator);
  (void)sim::profile_stem(p.accelerator);
}

void bench(const std::filesystem::path& path) {
  sim::DeviceBench b;
  try {
    b = sim::read_device_bench(path);
  } catch (const std::runtime_error&) {
    return;
  }
  if (b.device.empty() || b.multiprocessors < 1 || b.steps.empty()) std::abort();
  if (!positive(b.copy_bytes_per_second) || !positive(b.gemm_flops_per_second)) std::abort();
  for (const auto& s : b.steps) {
    if (s.dtype.empty() || s.mix.empty()) std::abort();
    for (double x : {s.shape.tokens, s.shape.sequences, s.shape.predictions, s.shape.squares,
                     s.fwd_bwd_seconds, s.optimizer_seconds})
      if (!positive(x)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto path = mlbert::fuzz::scratch_dir() / "fuzz_simulate_input.json";
  mlbert::fuzz::write_file(path,
                           std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  if (data[0] & 1)
    bench(path);
  else
    profile(path);
  return 0;
}
