// Settings and sweeps on system files (see settings.h).
#include "simulate/settings.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace mlbert::simulate {
namespace {

using nlohmann::json;

// Short names for the fields a planner changes most.
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> kAliases = {
      {"nodes", "topology.nodes"},
      {"gbs", "run.global_batch_size"},
      {"global_batch_size", "run.global_batch_size"},
      {"per_rank_batch", "run.per_rank_batch"},
      {"accumulation", "run.gradient_accumulation"},
      {"load_balancing", "run.load_balancing"},
      {"clipping", "run.clipping.mode"},
      {"bucket_mb", "run.bucket_mb"},
      {"optimizer", "run.optimizer.name"},
      {"sampler", "run.sampler.name"},
      {"samples_to_converge", "run.samples_to_converge"},
      {"ruleset", "run.ruleset"},
      {"nvlink_gbs", "topology.intra_node.bandwidth_gbs"},
      {"nic_gbps", "topology.nics[].bandwidth_gbps"},
      {"nics", "topology.nics"},
  };
  return kAliases;
}

json parse_value(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception&) {
    // A bare word (node-exchange, 2.0.0, fastest), or a number past double (1e999): kept as
    // text, which a numeric field then refuses by name.
    return text;
  }
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}

double positive_number(const Setting& s) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s.value, &used);
    if (used == s.value.size() && std::isfinite(v) && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("--set " + s.field + "=" + s.value + ": a number > 0 is required");
}

// "true" or "false".
bool boolean(const Setting& s) {
  if (s.value != "true" && s.value != "false")
    throw std::invalid_argument("--set " + s.field + ": true or false");
  return s.value == "true";
}

// A number >= 0 in `unit` (named in the error).
double non_negative_number(const Setting& s, const std::string& unit) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s.value, &used);
    if (used == s.value.size() && std::isfinite(v) && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("--set " + s.field + "=" + s.value + ": a number >= 0 (" + unit +
                              ") is required");
}

bool simulator_setting(const Setting& s, SimulatorSettings& sim) {
  if (s.field.rfind("simulate.", 0) != 0) return false;
  const std::string name = s.field.substr(9);
  if (name == "algorithm") {
    sim.algorithm = algorithm_choice_from_string(s.value);
  } else if (name == "nvlink_efficiency") {
    sim.nvlink_efficiency = positive_number(s);
  } else if (name == "nic_efficiency") {
    sim.nic_efficiency = positive_number(s);
  } else if (name == "gradient_wire_bytes") {
    sim.gradient_wire_bytes = positive_number(s);
  } else if (name == "overlap") {
    sim.overlap = boolean(s);
  } else if (name == "overlap_slowdown") {
    sim.overlap_slowdown = non_negative_number(s, "the fraction compute slows beside a reduction");
  } else if (name == "host_us_per_kernel") {
    sim.host_us_per_kernel = non_negative_number(s, "microseconds");
  } else if (name == "optimizer_shard") {
    sim.optimizer_shard = optimizer_shard_from_string(s.value);
  } else if (name == "padded") {
    sim.padded = boolean(s);
  } else if (name == "padded_attention") {
    sim.padded_attention = boolean(s);
  } else if (name == "packing") {
    const double v = positive_number(s);
    if (v != std::floor(v) || v > kMaxPacking)
      throw std::invalid_argument("--set " + s.field + "=" + s.value +
                                  ": samples per padded row, a whole number from 1 to " +
                                  std::to_string(kMaxPacking));
    sim.packing = static_cast<int>(v);
  } else if (name == "read_backs") {
    sim.read_backs = boolean(s);
  } else if (name == "broadcast_mb") {
    sim.broadcast_mb = non_negative_number(s, "MB broadcast before each forward");
  } else if (name == "infinite_network") {
    sim.infinite_network = boolean(s);
  } else {
    throw std::invalid_argument(
        "--set " + s.field +
        ": unknown simulator setting (simulate.algorithm, "
        "simulate.nvlink_efficiency, simulate.nic_efficiency, "
        "simulate.gradient_wire_bytes, simulate.overlap, simulate.overlap_slowdown, "
        "simulate.host_us_per_kernel, "
        "simulate.optimizer_shard, simulate.padded, simulate.padded_attention, simulate.packing, "
        "simulate.read_backs, "
        "simulate.broadcast_mb, "
        "simulate.infinite_network)");
  }
  sim.notes.push_back("--set " + s.field + "=" + s.value);
  return true;
}

// A whole-number field that the settings' implied edits read (`fallback` when absent): a value
// of another type, such as the text a --set left there, or one under `minimum` is an error
// naming the field.
std::int64_t whole_number(const json& object, const std::string& key, std::int64_t fallback,
                          const std::string& where, std::int64_t minimum = 0) {
  if (!object.is_object() || !object.contains(key)) return fallback;
  const json& v = object[key];
  if (!v.is_number_integer() || v.get<std::int64_t>() < minimum)
    throw std::invalid_argument(where + "." + key + ": a whole number >= " +
                                std::to_string(minimum) + " is required, not " + v.dump());
  return v.get<std::int64_t>();
}

// The number of compute NICs: copies of the first NIC, spread over the NUMA nodes, and every
// local rank re-pointed to the NIC of its share.
void set_nic_count(json& topology, const Setting& s, const std::string& origin) {
  const double count = positive_number(s);
  if (count != std::floor(count))
    throw std::invalid_argument(origin + ": --set nics=" + s.value + ": a whole number");
  if (!topology.contains("nics") || !topology["nics"].is_array() || topology["nics"].empty())
    throw std::invalid_argument(origin + ": --set nics: the system has no topology.nics to copy");
  const json first = topology["nics"][0];
  const auto numa = static_cast<int>(whole_number(topology.value("cpu", json::object()),
                                                  "numa_nodes", 1, origin + ": topology.cpu", 1));
  const int n = static_cast<int>(count);
  json nics = json::array();
  for (int i = 0; i < n; ++i) {
    json nic = first;
    nic["name"] = "nic" + std::to_string(i);
    nic["numa_node"] = i * numa / n;
    nics.push_back(nic);
  }
  topology["nics"] = nics;
  if (topology.contains("local_ranks") && topology["local_ranks"].is_array()) {
    json& locals = topology["local_ranks"];
    const auto ranks = static_cast<int>(locals.size());
    for (int r = 0; r < ranks; ++r) locals[r]["nic"] = "nic" + std::to_string(r * n / ranks);
  }
}

void set_path(json& root, const std::string& path, const json& value, const std::string& origin) {
  json* node = &root;
  const auto parts = split(path, '.');
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!node->is_object())
      throw std::invalid_argument(origin + ": --set " + path + ": " +
                                  (i == 0 ? std::string("the file") : parts[i - 1]) +
                                  " is not an object");
    node = &(*node)[parts[i]];
    if (node->is_null()) *node = json::object();
  }
  if (!node->is_object())
    throw std::invalid_argument(origin + ": --set " + path + ": the parent is not an object");
  (*node)[parts.back()] = value;
}

// Quotas scaled to a new per-rank batch with largest remainders, so they sum to it.
std::vector<int> rescale_quotas(const std::vector<int>& quotas, int batch) {
  const double sum = std::accumulate(quotas.begin(), quotas.end(), 0.0);
  std::vector<int> out(quotas.size());
  std::vector<std::pair<double, std::size_t>> remainders;
  int given = 0;
  for (std::size_t i = 0; i < quotas.size(); ++i) {
    const double exact = quotas[i] * batch / sum;
    out[i] = static_cast<int>(std::floor(exact));
    given += out[i];
    remainders.push_back({exact - out[i], i});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; given < batch; ++i, ++given) ++out[remainders[i].second];
  return out;
}

}  // namespace

Setting parse_setting(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("\"" + text + "\" is not FIELD=VALUE");
  return Setting{text.substr(0, eq), text.substr(eq + 1)};
}

std::vector<Setting> parse_sweep(const std::string& text) {
  const Setting s = parse_setting(text);
  std::vector<Setting> out;
  for (const auto& v : split(s.value, ','))
    if (!v.empty()) out.push_back({s.field, v});
  if (out.empty()) throw std::invalid_argument("--sweep " + text + ": no values");
  return out;
}

namespace {

// The per-rank batch of `gbs` over `world` ranks x `accumulation`, or why there is none; an
// impossible size is blamed on the setting that asked for it (`gbs_setting`) when there is one.
std::int64_t split_global_batch(std::int64_t gbs, std::int64_t world, std::int64_t accumulation,
                                const std::string& gbs_setting, const std::string& origin) {
  if (!gbs_setting.empty() && gbs < world * accumulation)
    throw std::invalid_argument(origin + ": " + gbs_setting + ": a global batch size below " +
                                std::to_string(world * accumulation) + " gives no sample to " +
                                "some of the " + std::to_string(world) + " ranks (x accumulation " +
                                std::to_string(accumulation) + ")");
  if (gbs % (world * accumulation) != 0)
    throw std::invalid_argument(origin + ": global batch size " + std::to_string(gbs) +
                                " does not split over " + std::to_string(world) +
                                " ranks x accumulation " + std::to_string(accumulation) +
                                " (set gbs or per_rank_batch)");
  return gbs / (world * accumulation);
}

}  // namespace

json apply_settings(json system, const std::vector<Setting>& settings, SimulatorSettings& sim,
                    const std::string& origin) {
  if (!system.is_object() || !system.contains("run") || !system.contains("topology"))
    throw std::invalid_argument(origin + ": not a system file (no run and topology)");
  json& run = system["run"];
  json& topology = system["topology"];
  const std::string at_run = origin + ": run", at_topology = origin + ": topology";
  const std::int64_t original_gbs = whole_number(run, "global_batch_size", 0, at_run);
  bool gbs_set = false, batch_set = false;
  std::string gbs_setting;  // "--set gbs=0" as given, when one is
  for (const Setting& s : settings) {
    if (simulator_setting(s, sim)) continue;
    std::string path = s.field;
    if (auto it = aliases().find(s.field); it != aliases().end()) path = it->second;
    if (path == "topology.nics") {
      set_nic_count(topology, s, origin);
    } else if (path == "topology.nics[].bandwidth_gbps") {
      for (json& nic : topology["nics"]) nic["bandwidth_gbps"] = positive_number(s);
    } else {
      if (path.find('.') == std::string::npos && !system.contains(path))
        throw std::invalid_argument(origin + ": --set " + s.field +
                                    ": not a field of the system file nor an alias (nodes, gbs, "
                                    "per_rank_batch, accumulation, load_balancing, clipping, "
                                    "bucket_mb, optimizer, sampler, samples_to_converge, ruleset, "
                                    "nvlink_gbs, nic_gbps, nics, simulate.*)");
      set_path(system, path, parse_value(s.value), origin);
    }
    gbs_set |= path == "run.global_batch_size";
    if (path == "run.global_batch_size") gbs_setting = "--set " + s.field + "=" + s.value;
    batch_set |= path == "run.per_rank_batch";
    sim.notes.push_back("--set " + s.field + "=" + s.value);
  }

  // The edits the settings imply.
  const auto nodes = static_cast<int>(whole_number(topology, "nodes", 1, at_topology, 1));
  system["number_of_nodes"] = std::to_string(nodes);
  const std::int64_t world = nodes * whole_number(topology, "ranks_per_node", 1, at_topology, 1);
  const std::int64_t accumulation = whole_number(run, "gradient_accumulation", 1, at_run, 1);
  std::int64_t gbs = whole_number(run, "global_batch_size", 0, at_run);
  std::int64_t batch = whole_number(run, "per_rank_batch", 0, at_run);
  if (batch_set && !gbs_set) {
    gbs = batch * world * accumulation;
    run["global_batch_size"] = gbs;
  } else if (batch * world * accumulation != gbs) {
    batch = split_global_batch(gbs, world, accumulation, gbs_setting, origin);
    run["per_rank_batch"] = batch;
    sim.notes.push_back("per-rank batch " + std::to_string(batch) + " keeps GBS " +
                        std::to_string(gbs) + " on " + std::to_string(world) + " ranks");
  }
  json& sampler = run["sampler"];
  if (sampler.is_object() && sampler.contains("name") && sampler["name"] == "stratified") {
    std::vector<int> quotas;
    if (sampler.contains("quotas") && sampler["quotas"].is_array())
      for (const json& q : sampler["quotas"])
        if (q.is_number_integer()) quotas.push_back(q.get<int>());
    // The paper's mix (docs/reference.md, "The paper's techniques").
    if (quotas.empty()) quotas = {6, 3, 2, 5};
    if (std::accumulate(quotas.begin(), quotas.end(), 0) != batch && batch > 0) {
      quotas = rescale_quotas(quotas, static_cast<int>(batch));
      sampler["quotas"] = quotas;
      std::string text;
      for (int q : quotas) text += (text.empty() ? "" : "/") + std::to_string(q);
      sim.notes.push_back("stratified quotas scaled to the per-rank batch: " + text);
    }
  }
  if (gbs != original_gbs) {
    sim.batch_changed = true;
    if (whole_number(run, "samples_to_converge", 0, at_run) > 0 &&
        std::none_of(settings.begin(), settings.end(), [](const Setting& s) {
          return s.field == "samples_to_converge" || s.field == "run.samples_to_converge";
        }))
      throw std::invalid_argument(origin + ": run.samples_to_converge is stated for GBS " +
                                  std::to_string(original_gbs) + ", not " + std::to_string(gbs) +
                                  ": --set samples_to_converge=N for the new batch");
  }
  return system;
}

void apply_simulator_settings(const SimulatorSettings& sim, ClusterRun& cluster,
                              SimulationOptions& options) {
  if (sim.algorithm) cluster.network.algorithm = *sim.algorithm;
  if (sim.nvlink_efficiency) cluster.network.nvlink_efficiency = *sim.nvlink_efficiency;
  if (sim.nic_efficiency) cluster.network.nic_efficiency = *sim.nic_efficiency;
  if (sim.gradient_wire_bytes) options.gradient_wire_bytes = *sim.gradient_wire_bytes;
  if (sim.overlap) options.overlap = *sim.overlap;
  if (sim.overlap_slowdown) options.overlap_slowdown = *sim.overlap_slowdown;
  if (sim.host_us_per_kernel) {
    options.host_seconds_per_kernel = *sim.host_us_per_kernel * 1e-6;
    options.host_issue = "--set simulate.host_us_per_kernel";
  }
  if (sim.optimizer_shard) options.optimizer_shard = *sim.optimizer_shard;
  if (sim.padded) options.padded = *sim.padded;
  if (sim.padded_attention) options.padded_attention = *sim.padded_attention;
  if (sim.packing) options.packing = *sim.packing;
  if (sim.read_backs && !*sim.read_backs) {
    // What an implementation without read-backs inside its step would do (NVIDIA removed them to
    // capture the step as a CUDA graph): no waits, and its host loops overlap the GPU's work.
    options.syncs_before_encoder = options.syncs_before_heads = 0;
    options.sync_per_bucket = options.sync_after_backward = false;
  }
  if (sim.broadcast_mb) options.forward_broadcast_bytes = *sim.broadcast_mb * 1e6;
  cluster.network.infinite = sim.infinite_network;
  if (sim.batch_changed) {
    // run.max_steps caps the file's own batch; a planner's new batch runs to convergence.
    cluster.run.max_steps = 0;
  }
  for (const auto& note : sim.notes) cluster.notes.push_back(note);
}

void apply_result_settings(const std::vector<Setting>& settings, ClusterRun& cluster,
                           SimulationOptions& options) {
  SimulatorSettings sim;
  for (const Setting& s : settings) {
    if (simulator_setting(s, sim)) continue;
    harness::RunSpec& run = cluster.run;
    const std::string field = aliases().count(s.field) ? aliases().at(s.field) : s.field;
    const auto pick = [&](auto candidates, auto& target) {
      for (auto c : candidates)
        if (s.value == to_string(c)) {
          target = c;
          return;
        }
      throw std::invalid_argument("--set " + s.field + "=" + s.value + ": not a known value");
    };
    if (field == "run.load_balancing") {
      pick(std::initializer_list<harness::LoadBalancing>{harness::LoadBalancing::none, harness::LoadBalancing::global_exchange,
                                                harness::LoadBalancing::node_exchange,
                                                harness::LoadBalancing::global_deal},
           run.load_balancing);
    } else if (field == "run.clipping.mode") {
      pick(std::initializer_list<harness::ClippingMode>{harness::ClippingMode::after_allreduce,
                                               harness::ClippingMode::bucket_before_allreduce,
                                               harness::ClippingMode::none},
           run.clipping);
    } else if (field == "run.optimizer.name") {
      pick(std::initializer_list<harness::OptimizerKind>{harness::OptimizerKind::lamb, harness::OptimizerKind::adam,
                                                harness::OptimizerKind::adamw},
           run.optimizer.kind);
    } else if (field == "run.bucket_mb") {
      run.bucket_mb = positive_number(s);
    } else {
      throw std::invalid_argument("--set " + s.field +
                                  ": with --results only simulate.*, load_balancing, clipping, "
                                  "optimizer and bucket_mb can be set");
    }
    sim.notes.push_back("--set " + s.field + "=" + s.value);
  }
  apply_simulator_settings(sim, cluster, options);
}

}  // namespace mlbert::simulate
