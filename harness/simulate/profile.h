// An accelerator profile for `mlbert simulate`: what one GPU of a kind costs for the work of a
// BERT pretraining step, and where those numbers came from.
//
// Design choice: a profile is data (`systems/profiles/<accelerator>.json`), never a constant in
// code, and states its provenance: a device-check measurement, or a calibration from one
// published result log. It holds rates, not times: the tensor rate GEMM and attention kernels
// reach, the memory rate bandwidth-bound kernels reach, and the multiprocessor count GEMMs are
// quantized over; the simulator times mlbert's traced kernels (kernels.h) at those rates, so the
// split between work that scales with the micro-batch and work that does not comes from the
// model's real kernels, not from a fit.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/system_config.h"

namespace mlbert::harness::simulate {

// Work -> seconds on one GPU, linear: per token, per squared token (sum of s^2), per call. The
// deal ranks a step's ranks by it (workload.h).
struct WorkCost {
  double seconds_per_token = 0;
  double seconds_per_token_squared = 0;
  double seconds_per_call = 0;

  double seconds(double tokens, double squares) const {
    return seconds_per_token * tokens + seconds_per_token_squared * squares + seconds_per_call;
  }
};

struct AcceleratorProfile {
  std::filesystem::path path;  // the file it came from (empty when built in memory)
  std::string accelerator;     // e.g. "NVIDIA A100-SXM4-80GB"
  // Substrings (case-insensitive) of an accelerator model name this profile stands for.
  std::vector<std::string> matches;
  std::string model = "bert-large";  // the model the costs are for (a bert/config.h preset)
  std::string provenance_kind;       // "calibrated" or "measured"
  nlohmann::json provenance;         // source, command, fit, notes
  // What GEMM and attention kernels reach (FLOP/s, before wave quantization).
  double tensor_flops_per_second = 0;
  // What bandwidth-bound kernels reach (bytes per second): the model's memory-bound kernels, the
  // optimizer, the gradient-norm and scaling passes.
  double memory_bytes_per_second = 0;
  int multiprocessors = 0;  // SMs, for the wave quantization of GEMM tiles
  double optimizer_seconds_per_parameter_lamb = 0;
  double optimizer_seconds_per_parameter_adam = 0;  // Adam and AdamW
  // run_start to the first step's work: data loaders, the first step's setup (not init).
  double run_start_seconds = 0;

  double optimizer_seconds_per_parameter(OptimizerKind kind) const;
  // provenance.source, or "" when none is recorded yet.
  std::string source() const;
  // Does `accelerator_model_name` (a system description's) name this profile's accelerator?
  bool matches_accelerator(const std::string& accelerator_model_name) const;
};

// Reads and validates a profile; errors name the file and the field.
AcceleratorProfile load_profile(const std::filesystem::path& path);
nlohmann::json profile_to_json(const AcceleratorProfile& profile);
void save_profile(const AcceleratorProfile& profile, const std::filesystem::path& path);

// The profile in `dir` whose `matches` name `accelerator_model_name`; nullopt when none does.
std::optional<AcceleratorProfile> find_profile(const std::filesystem::path& dir,
                                               const std::string& accelerator_model_name);
// "known profiles: a100-sxm4-80gb (NVIDIA A100-SXM4-80GB)", for messages.
std::string describe_profiles(const std::filesystem::path& dir);

// Datasheet figures of accelerators the simulator knows by name (HBM bandwidth, dense fp16
// tensor rate, NVLink, SMs): the memory rate, the wave quantization and the utilisation report.
struct AcceleratorDatasheet {
  const char* match;  // substring of the model name
  double memory_tbs;
  double peak_tflops_fp16;
  double nvlink_gbs;  // per GPU, both directions together, as system descriptions state it
  int multiprocessors;
};
std::optional<AcceleratorDatasheet> datasheet_for(const std::string& accelerator_model_name);

// Is this accelerator a GPU the simulator can model (NVIDIA or AMD data-centre GPU by name)?
bool looks_like_gpu(const std::string& accelerator_model_name);

}  // namespace mlbert::harness::simulate
