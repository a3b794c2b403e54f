// The topology of a reproduction's system file, from the published system description.
//
// Design choice: the official description states counts and names in free text; only what it
// states is read (counts as whole numbers, NIC counts and link speeds from the networking text),
// and what it never states (verbs device names, NUMA layout, SMT) is a default named in the plan.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <stdexcept>

#include "harness/reproduce/plan_builder.h"

namespace mlbert::harness::reproduce {
namespace {

using nlohmann::json;

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string text_field(const json& d, const char* field) {
  return d.contains(field) && d[field].is_string() ? d[field].get<std::string>() : "";
}

// A count field ("8", 8 or "8.0"); nullopt when empty or absent; throws naming the field when
// it is something else.
std::optional<int> count_field(const json& d, const char* field, const std::filesystem::path& file) {
  if (!d.contains(field)) return std::nullopt;
  const json& v = d[field];
  double n = 0;
  if (v.is_number()) {
    n = v.get<double>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.empty()) return std::nullopt;
    try {
      std::size_t used = 0;
      n = std::stod(s, &used);
      if (used != s.size()) n = -1;
    } catch (const std::exception&) {
      n = -1;
    }
  } else {
    n = -1;
  }
  if (!(n >= 0 && n < 1e6 && n == std::floor(n)))
    throw std::runtime_error(file.string() + ": " + field + ": " + v.dump() +
                             " is not a whole number");
  return static_cast<int>(n);
}

// Datasheet figures (dense tensor TFLOP/s, HBM) of the GPUs published BERT results ran on.
struct Datasheet {
  const char* marker;  // in the lower-cased accelerator_model_name
  double bf16, fp16, fp32, memory_gib, bandwidth_tbs;
};
constexpr Datasheet kDatasheets[] = {
    {"h200", 989, 989, 67, 141, 4.8},     {"h100", 989, 989, 67, 80, 3.35},
    {"a100-sxm4-40", 312, 312, 19.5, 40, 1.555}, {"a100", 312, 312, 19.5, 80, 2.039},
    {"v100", 125, 125, 15.7, 32, 0.9},
};

void plan_accelerator(const json& d, const std::filesystem::path& file, PlanBuilder& b) {
  const std::string model = text_field(d, "accelerator_model_name");
  const std::string name = lower(model);
  for (const char* other : {"ipu", "tpu", "gaudi", "habana"}) {
    if (name.find(other) != std::string::npos) {
      b.refuse("the published run trained on \"" + model + "\" (" + file.filename().string() +
               " accelerator_model_name), not a GPU: mlbert runs on NVIDIA GPUs (CUDA) and CPUs, "
               "so its time cannot be reproduced; its hyperparameters are listed in this plan");
      return;
    }
  }
  const auto sheet = std::find_if(std::begin(kDatasheets), std::end(kDatasheets),
                                  [&](const Datasheet& s) { return name.find(s.marker) != std::string::npos; });
  if (sheet == std::end(kDatasheets)) {
    b.refuse("accelerator_model_name \"" + model + "\" in " + file.string() +
             " is not a GPU mlbert knows the datasheet of (A100, H100, H200, V100)");
    return;
  }
  const std::string from = "system.json accelerator_model_name";
  const std::string datasheet = "default: the " + std::string(sheet->marker) + " datasheet";
  b.set("topology.accelerator.kind", "gpu", from);
  b.set("topology.accelerator.model", model, from);
  b.set("topology.accelerator.peak_tflops_bf16", sheet->bf16,
        datasheet + (std::string(sheet->marker) == "v100" ? " (no bf16: its fp16 figure)" : ""));
  b.set("topology.accelerator.peak_tflops_fp16", sheet->fp16, datasheet);
  b.set("topology.accelerator.peak_tflops_fp32", sheet->fp32, datasheet);
  b.set("topology.accelerator.memory_gib", sheet->memory_gib, datasheet);
  b.set("topology.accelerator.memory_bandwidth_tbs", sheet->bandwidth_tbs, datasheet);
}

void plan_cpu(const json& d, const std::filesystem::path& file, int ranks, PlanBuilder& b) {
  const auto sockets = count_field(d, "host_processors_per_node", file).value_or(0);
  const auto cores = count_field(d, "host_processor_core_count", file).value_or(0);
  if (sockets < 1 || cores < 1)
    throw std::runtime_error(file.string() + ": " +
                             (sockets < 1 ? "host_processors_per_node" : "host_processor_core_count") +
                             ": empty or 0 (the ranks' CPU binding needs it)");
  b.set("topology.cpu.sockets", sockets, "system.json host_processors_per_node");
  b.set("topology.cpu.cores_per_socket", cores, "system.json host_processor_core_count");
  const auto vcpus = count_field(d, "host_processor_vcpu_count", file);
  if (vcpus && *vcpus % (sockets * cores) == 0 && *vcpus >= sockets * cores)
    b.set("topology.cpu.threads_per_core", *vcpus / (sockets * cores),
          "system.json host_processor_vcpu_count / cores");
  else
    b.set("topology.cpu.threads_per_core", 2, "default: SMT on (not stated)");
  b.set("topology.cpu.numa_nodes", sockets, "default: one NUMA node per socket (not stated)");
  json local_ranks = json::array();
  for (int r = 0; r < ranks; ++r) local_ranks.push_back({{"numa_node", r * sockets / ranks}});
  b.set("topology.local_ranks", local_ranks, "default: ranks spread evenly over the NUMA nodes");
}

// The compute NICs: "Compute: 8x ConnectX-6 IB HDR 200Gb/Sec" gives 8 at 200 Gb/s.
void plan_nics(const json& d, int nodes, int ranks, PlanBuilder& b) {
  const std::string text = text_field(d, "host_networking");
  static const std::regex compute(R"(compute:\s*(\d+)\s*x[^,]*?(\d+)\s*gb/?s)", std::regex::icase);
  std::smatch m;
  json nics = json::array();
  if (nodes > 1 && std::regex_search(text, m, compute)) {
    const int count = std::stoi(m[1].str());
    const int sockets = b.plan().system["topology"]["cpu"]["sockets"].get<int>();
    for (int i = 0; i < count; ++i)
      nics.push_back({{"name", "mlx5_" + std::to_string(i)}, {"port", 1},
                      {"bandwidth_gbps", std::stod(m[2].str())}, {"numa_node", i * sockets / count}});
    json local = b.plan().system["topology"]["local_ranks"];
    for (int r = 0; r < ranks; ++r) local[r]["nic"] = "mlx5_" + std::to_string(r * count / ranks);
    b.set("topology.local_ranks", local,
          "default: ranks spread evenly over the NUMA nodes and the compute NICs");
    b.set("topology.nics", nics,
          "system.json host_networking (count, speed); default: verbs names mlx5_0.. "
          "(check with ibv_devinfo on the nodes)");
  } else {
    b.set("topology.nics", nics,
          nodes > 1 ? "default: none (host_networking states no compute NICs)"
                    : "default: none (one node trains over NVLink)");
  }
}

}  // namespace

void plan_topology(const json& d, const std::filesystem::path& file, PlanBuilder& b) {
  if (d.contains("topology")) {
    b.set("topology", d["topology"], file.filename().string() + " topology (an mlbert system file)");
    return;
  }
  const auto nodes = count_field(d, "number_of_nodes", file);
  const auto ranks = count_field(d, "accelerators_per_node", file);
  if (!nodes || *nodes < 1)
    throw std::runtime_error(file.string() + ": number_of_nodes: missing, empty or 0");
  if (!ranks || *ranks < 1)
    throw std::runtime_error(file.string() + ": accelerators_per_node: missing, empty or 0");
  b.set("topology.nodes", *nodes, "system.json number_of_nodes");
  b.set("topology.ranks_per_node", *ranks, "system.json accelerators_per_node (one rank per GPU)");
  plan_accelerator(d, file, b);
  if (b.plan().refusal) return;
  const std::string link = text_field(d, "accelerator_interconnect");
  static const std::regex speed(R"((\d+)\s*gb/?s)", std::regex::icase);
  std::smatch m;
  if (!link.empty() && std::regex_search(link, m, speed))
    b.set("topology.intra_node", json{{"link", link}, {"bandwidth_gbs", std::stod(m[1].str())}},
          "system.json accelerator_interconnect");
  plan_cpu(d, file, *ranks, b);
  plan_nics(d, *nodes, *ranks, b);
}

}  // namespace mlbert::harness::reproduce
