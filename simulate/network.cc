// Alpha-beta costs of allreduce and all-gather per algorithm and protocol (see network.h).
#include "simulate/network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace mlbert::simulate {
namespace {

// NCCL's cost model (src/graph/tuning.cc of the 2.8-2.12 releases, the versions the A100
// submissions of MLPerf v1.0-v2.0 ran): a base latency per algorithm and protocol plus a latency
// per hop over NVLink or the network, in microseconds. A protocol also carries only part of the
// bytes on the wire: LL sends 4 bytes of flag with every 4 of data, LL128 8 of every 128.
struct ProtocolConstants {
  Protocol protocol;
  double bandwidth_fraction;
  double ring_base, ring_nvlink_hop, ring_net_hop;
  double tree_base, tree_nvlink_hop, tree_net_hop;
};
constexpr ProtocolConstants kProtocols[] = {
    {Protocol::ll, 0.5, 3.6, 0.47, 2.7, 4.4, 0.52, 5.0},
    {Protocol::ll128, 120.0 / 128.0, 10.0, 1.9, 4.0, 4.4, 1.25, 8.5},
    {Protocol::simple, 1.0, 8.4, 3.4, 9.6, 0.0, 28.0, 28.0},
};
constexpr double kMicro = 1e-6;

double nvlink_bytes_per_second(const NetworkSpec& n) {
  return n.nvlink_gbs * n.nvlink_efficiency * 1e9;
}
double nic_bytes_per_second(const NetworkSpec& n) {
  if (n.nodes > 1 && !(n.nic_gbs_per_node > 0))
    throw std::invalid_argument("network: " + std::to_string(n.nodes) +
                                " nodes but no compute NIC bandwidth");
  return n.nic_gbs_per_node * n.nic_efficiency * 1e9;
}
// The slowest link a ring or tree crosses per GPU: NVLink, or the node's NICs between nodes.
double bottleneck_bytes_per_second(const NetworkSpec& n) {
  const double nvlink = nvlink_bytes_per_second(n);
  return n.nodes > 1 ? std::min(nvlink, nic_bytes_per_second(n)) : nvlink;
}

double ring_allreduce(const NetworkSpec& n, const ProtocolConstants& p, double bytes) {
  const double ranks = n.ranks();
  const double steps = 2 * (ranks - 1);
  const double inter = n.nodes > 1 ? 2.0 * (n.nodes - 1) : 0.0;
  const double latency =
      (p.ring_base + (steps - inter) * p.ring_nvlink_hop + inter * p.ring_net_hop) * kMicro;
  const double volume = 2 * (ranks - 1) / ranks * bytes;
  return latency + volume / (bottleneck_bytes_per_second(n) * p.bandwidth_fraction);
}

double tree_allreduce(const NetworkSpec& n, const ProtocolConstants& p, double bytes) {
  const double depth = std::ceil(std::log2(static_cast<double>(n.nodes)));
  const double latency =
      (p.tree_base + 2 * ((n.gpus_per_node - 1) * p.tree_nvlink_hop + depth * p.tree_net_hop)) *
      kMicro;
  const double ranks = n.ranks();
  const double volume = 2 * (ranks - 1) / ranks * bytes;
  return latency + volume / (bottleneck_bytes_per_second(n) * p.bandwidth_fraction);
}

double hierarchical_allreduce(const NetworkSpec& n, const ProtocolConstants& p, double bytes) {
  const double g = n.gpus_per_node, nodes = n.nodes;
  const double latency =
      (3 * p.ring_base + 2 * (g - 1) * p.ring_nvlink_hop + 2 * (nodes - 1) * p.ring_net_hop) *
      kMicro;
  // Each GPU reduces 1/g of the data between nodes over its 1/g share of the node's NICs.
  const double in_node = 2 * (g - 1) / g * bytes / nvlink_bytes_per_second(n);
  const double between = 2 * (nodes - 1) / nodes * bytes / nic_bytes_per_second(n);
  return latency + (in_node + between) / p.bandwidth_fraction;
}

template <typename Cost>
CollectiveCost cheapest(Algorithm algorithm, Cost cost) {
  CollectiveCost best;
  best.seconds = std::numeric_limits<double>::infinity();
  best.algorithm = algorithm;
  for (const ProtocolConstants& p : kProtocols) {
    const double seconds = cost(p);
    if (seconds < best.seconds) {
      best.seconds = seconds;
      best.protocol = p.protocol;
    }
  }
  return best;
}

}  // namespace

CollectiveCost allreduce_cost(const NetworkSpec& n, double bytes) {
  if (n.infinite || n.ranks() <= 1 || bytes <= 0) return CollectiveCost{0, Algorithm::ring};
  const auto ring =
      cheapest(Algorithm::ring, [&](const auto& p) { return ring_allreduce(n, p, bytes); });
  // One node: NCCL's tree degenerates to a chain and hierarchical to the ring itself.
  if (n.nodes == 1) return ring;
  switch (n.algorithm) {
    case AlgorithmChoice::ring:
      return ring;
    case AlgorithmChoice::tree:
      return cheapest(Algorithm::tree, [&](const auto& p) { return tree_allreduce(n, p, bytes); });
    case AlgorithmChoice::hierarchical:
      return cheapest(Algorithm::hierarchical,
                      [&](const auto& p) { return hierarchical_allreduce(n, p, bytes); });
    case AlgorithmChoice::fastest: {
      const auto tree =
          cheapest(Algorithm::tree, [&](const auto& p) { return tree_allreduce(n, p, bytes); });
      return tree.seconds < ring.seconds ? tree : ring;
    }
  }
  return ring;
}

CollectiveCost allgather_cost(const NetworkSpec& n, double bytes_per_rank, bool node_only) {
  const bool in_node = node_only || n.nodes == 1;
  const double ranks = in_node ? n.gpus_per_node : n.ranks();
  if (n.infinite || ranks <= 1 || bytes_per_rank <= 0) return CollectiveCost{0, Algorithm::ring};
  const double inter = in_node ? 0.0 : n.nodes - 1.0;
  const double link = in_node ? nvlink_bytes_per_second(n) : bottleneck_bytes_per_second(n);
  return cheapest(Algorithm::ring, [&](const ProtocolConstants& p) {
    const double latency =
        (p.ring_base + (ranks - 1 - inter) * p.ring_nvlink_hop + inter * p.ring_net_hop) * kMicro;
    return latency + (ranks - 1) * bytes_per_rank / (link * p.bandwidth_fraction);
  });
}

CollectiveCost broadcast_cost(const NetworkSpec& n, double bytes) {
  if (n.infinite || n.ranks() <= 1 || bytes <= 0) return CollectiveCost{0, Algorithm::ring};
  const double ranks = n.ranks();
  const double inter = n.nodes > 1 ? n.nodes - 1.0 : 0.0;
  return cheapest(Algorithm::ring, [&](const ProtocolConstants& p) {
    const double latency =
        (p.ring_base + (ranks - 1 - inter) * p.ring_nvlink_hop + inter * p.ring_net_hop) * kMicro;
    return latency + bytes / (bottleneck_bytes_per_second(n) * p.bandwidth_fraction);
  });
}

CollectiveCost reduce_scatter_cost(const NetworkSpec& n, double bytes, bool node_only) {
  const bool in_node = node_only || n.nodes == 1;
  const double ranks = in_node ? n.gpus_per_node : n.ranks();
  return allgather_cost(n, bytes / ranks, node_only);
}

CollectiveCost node_sharded_reduction_cost(const NetworkSpec& n, double bytes) {
  CollectiveCost cost = reduce_scatter_cost(n, bytes, true);
  if (n.nodes == 1 || n.infinite) return cost;
  NetworkSpec between = n;
  between.gpus_per_node = 1;
  between.nic_gbs_per_node = n.nic_gbs_per_node / n.gpus_per_node;
  const CollectiveCost across = allreduce_cost(between, bytes / n.gpus_per_node);
  cost.seconds += across.seconds;
  cost.algorithm = across.algorithm;
  cost.protocol = across.protocol;
  return cost;
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring:
      return "ring";
    case Algorithm::tree:
      return "tree";
    case Algorithm::hierarchical:
      return "hierarchical";
  }
  return "?";
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::ll:
      return "LL";
    case Protocol::ll128:
      return "LL128";
    case Protocol::simple:
      return "Simple";
  }
  return "?";
}

const char* to_string(AlgorithmChoice c) {
  switch (c) {
    case AlgorithmChoice::fastest:
      return "fastest";
    case AlgorithmChoice::ring:
      return "ring";
    case AlgorithmChoice::tree:
      return "tree";
    case AlgorithmChoice::hierarchical:
      return "hierarchical";
  }
  return "?";
}

AlgorithmChoice algorithm_choice_from_string(const std::string& text) {
  for (AlgorithmChoice c : {AlgorithmChoice::fastest, AlgorithmChoice::ring, AlgorithmChoice::tree,
                            AlgorithmChoice::hierarchical})
    if (text == to_string(c)) return c;
  throw std::invalid_argument("\"" + text +
                              "\" is not an allreduce algorithm (fastest, ring, tree, "
                              "hierarchical)");
}

std::vector<std::string> network_assumptions(const NetworkSpec& n) {
  std::vector<std::string> out;
  if (n.infinite) {
    out.push_back("network: infinitely fast (every collective costs nothing; a model check)");
    return out;
  }
  std::ostringstream links;
  links << "links: NVLink " << n.nvlink_gbs << " GB/s per GPU and direction x efficiency "
        << n.nvlink_efficiency;
  if (n.nodes > 1)
    links << "; " << n.nics_per_node << " compute NICs, " << n.nic_gbs_per_node
          << " GB/s per node and direction x efficiency " << n.nic_efficiency;
  out.push_back(links.str());
  out.push_back(
      "efficiency fractions from published nccl-tests figures, not calibrated: NVLink 0.70 "
      "(all_reduce busbw ~200-208 GB/s of 300 on 8 A100 SXM4, NVIDIA/nccl-tests#149 and #178), "
      "NIC 0.96 (24 GB/s per HDR NIC expected by the NCCL maintainers, NVIDIA/nccl#412; 96 GB/s "
      "busbw with 4 HDR per node, NVIDIA/nccl-tests#119)");
  out.push_back(
      "latency: NCCL 2.8-2.12 cost model per hop (us; ring NVLink/net, tree NVLink/net): LL "
      "0.47/2.7, 0.52/5.0; LL128 1.9/4.0, 1.25/8.5; Simple 3.4/9.6, 28/28; payload fraction LL "
      "1/2, LL128 120/128; per-channel bandwidth caps not modelled");
  out.push_back(std::string("allreduce algorithm: ") + to_string(n.algorithm) +
                (n.algorithm == AlgorithmChoice::fastest
                     ? " (the cheaper of ring and tree per call, with the cheapest protocol)"
                     : ""));
  return out;
}

}  // namespace mlbert::simulate
