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

#include "harness/config/system_config.h"
#include "simulate/constants.h"

namespace mlbert::simulate {

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
  // Patterns (accelerator_name_matches) of the accelerator model names this profile stands for.
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
  // What every training step costs beyond its traced kernels, whatever its batch (the host's
  // per-step work, synchronization): 0 unless fitted, which takes two results of one
  // implementation at different batches per GPU (calibrate.h).
  double fixed_step_seconds = 0;

  double optimizer_seconds_per_parameter(harness::OptimizerKind kind) const;
  // provenance.source, or "" when none is recorded yet.
  std::string source() const;
  // Does `accelerator_model_name` (a system description's) name this profile's accelerator?
  bool matches_accelerator(const std::string& accelerator_model_name) const;
};

// Does a system description's accelerator_model_name fit `pattern`? Both are split into
// lowercase alphanumeric words; every word of the pattern must be a word of the name, where a
// pattern word ending in a letter also stands for itself plus a generation number ("sxm" for
// "sxm4", "sxm5"). So "a100 sxm 80gb" names "NVIDIA A100-SXM4-80GB (400W)" and "A100-SXM-80GB",
// but not "NVIDIA A100 80GB PCIe", "A100-SXM4-40GB" or "RTX A1000".
bool accelerator_name_matches(const std::string& accelerator_model_name,
                              const std::string& pattern);

// The default file stem of a profile for an accelerator: its model name's words before any
// parenthesis, without the vendor ("NVIDIA A100-SXM4-80GB (400W)" -> "a100-sxm4-80gb").
std::string profile_stem(const std::string& accelerator_model_name);

// Reads and validates a profile; errors name the file and the field.
AcceleratorProfile load_profile(const std::filesystem::path& path);
nlohmann::json profile_to_json(const AcceleratorProfile& profile);
void save_profile(const AcceleratorProfile& profile, const std::filesystem::path& path);

// The profile in `dir` whose `matches` name `accelerator_model_name`; nullopt when none does.
// Several profiles of one accelerator, each calibrated on a result of a different round (their
// provenance.result.ruleset), stand for the software of their rounds: the one of the latest round
// not after `ruleset` is taken (none that early: the earliest; `ruleset` empty: the latest). A
// profile without a round (measured) ranks before every round.
std::optional<AcceleratorProfile> find_profile(const std::filesystem::path& dir,
                                               const std::string& accelerator_model_name,
                                               const std::string& ruleset = "");

// The ruleset of the result a profile was calibrated on (provenance.result.ruleset), or "".
std::string calibration_ruleset(const AcceleratorProfile& profile);
// "known profiles: a100-sxm4-80gb (NVIDIA A100-SXM4-80GB)", for messages.
std::string describe_profiles(const std::filesystem::path& dir);

// Datasheet figures of accelerators the simulator knows by name (HBM bandwidth, dense fp16
// tensor rate, NVLink, SMs): the memory rate, the wave quantization and the utilisation report.
struct AcceleratorDatasheet {
  const char* match;  // a pattern of accelerator_name_matches
  double memory_tbs;
  double peak_tflops_fp16;
  double nvlink_gbs;  // per GPU, both directions together, as system descriptions state it
  int multiprocessors;
  double reference_nic_gbps;  // compute NIC per GPU of the vendor's reference system (DGX)
  int nvlink_domain = 0;      // GPUs one NVLink fabric joins across nodes (GB200 NVL72: 72)
};
std::optional<AcceleratorDatasheet> datasheet_for(const std::string& accelerator_model_name);

// Two accelerators of the same silicon: both datasheets known, with equal dense fp16 peaks and
// SM counts (A100 SXM 40 GB and 80 GB, A800; H100 SXM, H800, H200 and GH200), differing in HBM
// or NVLink.
bool same_silicon(const std::string& accelerator_a, const std::string& accelerator_b);

// `profile` carried over to `accelerator` of the same silicon (same_silicon): the fitted tensor
// rate and the run start stay, the memory rate becomes the target's datasheet HBM x
// kMemoryBandwidthFraction and the optimizer's times scale with it. The profile keeps its path;
// `accelerator` and a provenance note say what was done.
AcceleratorProfile adapt_profile(const AcceleratorProfile& profile, const std::string& accelerator);

// The profile for `accelerator`: one in `dir` that matches it, else one there of the same
// silicon adapted to it (adapt_profile, with a note in `notes`); nullopt when neither exists. Of
// several, the round rule of find_profile picks by `ruleset` (named in `notes`).
std::optional<AcceleratorProfile> profile_for_accelerator(const std::filesystem::path& dir,
                                                          const std::string& accelerator,
                                                          std::vector<std::string>& notes,
                                                          const std::string& ruleset = "");

// A note when a run trains under a third of the samples per GPU and step that `profile`'s
// calibration result did: the profile fits one rate per sample, so costs of a step that do not
// shrink with its batch (BENCHMARKS: "fixed costs per step") are spread over the calibration's
// samples and under-counted here. nullopt otherwise, or when the profile records no result.
std::optional<std::string> small_batch_note(const AcceleratorProfile& profile,
                                            double samples_per_gpu_step);

// `text` with ASCII letters in lower case (other bytes as they are), for matching names.
std::string ascii_lower(std::string text);

// Is this accelerator a GPU the simulator can model (NVIDIA or AMD data-centre GPU by name)?
bool looks_like_gpu(const std::string& accelerator_model_name);

// Is this accelerator a PCIe card: "PCIe" in its name, or a part made only as one (A2, A10, A16,
// A30, A40, L4, L40, L40S, T4, the RTX workstation cards)? Its GPUs talk over PCIe, or in pairs
// over an NVLink bridge, which the network model (NVLink/NVSwitch inside a node, NICs between
// nodes) does not describe.
bool is_pcie_card(const std::string& accelerator_model_name);

}  // namespace mlbert::simulate
