// `--set FIELD=VALUE` and `--sweep FIELD=V1,V2,...` for `mlbert simulate`: edits of a system file
// before it is validated, plus the simulator's own knobs (`simulate.*`).
//
// Design choice: a setting edits the system file's JSON (a dotted path such as
// run.eval.batch_size, or a short alias such as nodes or gbs), then the file is validated by the
// harness's own loader exactly as `mlbert train` would; the edits a change implies (number_of_nodes
// with topology.nodes; the per-rank batch or the global batch size when the world changes; the
// stratified quotas when the per-rank batch changes) are made and named, so a sweep over nodes is
// strong scaling at the system's global batch size unless the batch is set too.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "simulate/simulator.h"

namespace mlbert::simulate {

struct Setting {
  std::string field;
  std::string value;
};

// "FIELD=VALUE"; throws std::invalid_argument for text without '=' or an empty field.
Setting parse_setting(const std::string& text);
// "FIELD=V1,V2,..." -> one Setting per value.
std::vector<Setting> parse_sweep(const std::string& text);

// The simulator's knobs, from `simulate.<name>` settings.
struct SimulatorSettings {
  std::optional<AlgorithmChoice> algorithm;       // simulate.algorithm
  std::optional<double> nvlink_efficiency;        // simulate.nvlink_efficiency
  std::optional<double> nic_efficiency;           // simulate.nic_efficiency
  std::optional<double> gradient_wire_bytes;      // simulate.gradient_wire_bytes
  bool infinite_network = false;                  // simulate.infinite_network=true
  std::optional<bool> overlap;                    // simulate.overlap=false
  std::optional<double> overlap_slowdown;         // simulate.overlap_slowdown
  std::optional<double> host_us_per_kernel;       // simulate.host_us_per_kernel
  std::optional<OptimizerShard> optimizer_shard;  // simulate.optimizer_shard
  std::optional<bool> padded;                     // simulate.padded
  std::optional<bool> padded_attention;           // simulate.padded_attention (with padded)
  std::optional<int> packing;                     // simulate.packing
  std::optional<bool> read_backs;  // simulate.read_backs=false: none inside a step (true: as read)
  std::optional<double> broadcast_mb;  // simulate.broadcast_mb: buffers per forward
  std::vector<std::string> notes;      // what the settings changed, for the assumptions
  bool batch_changed = false;          // the global batch size differs from the file's
};

// Applies `settings` to a system file's JSON; `origin` names the file in errors. Throws
// std::invalid_argument naming the field for an unknown alias, a path into a non-object or a
// batch that does not split over the ranks.
nlohmann::json apply_settings(nlohmann::json system, const std::vector<Setting>& settings,
                              SimulatorSettings& simulator, const std::string& origin);

// The simulate.* knobs onto a cluster and the options; notes join the cluster's.
void apply_simulator_settings(const SimulatorSettings& simulator, ClusterRun& cluster,
                              SimulationOptions& options);

// The same for a published result, where only simulate.* and a few run fields may be set
// (run.load_balancing, run.bucket_mb, run.clipping.mode, run.optimizer.name).
void apply_result_settings(const std::vector<Setting>& settings, ClusterRun& cluster,
                           SimulationOptions& options);

}  // namespace mlbert::simulate
