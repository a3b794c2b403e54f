// Collective costs on a GPU cluster for `mlbert simulate`: an alpha-beta model per algorithm and
// protocol, the cheapest one taken per call as NCCL's tuner does.
//
// Design choice: the bandwidth term uses the links a system states (NVLink per GPU, the node's
// compute NICs) times efficiency fractions from published nccl-tests figures; the latency term
// uses the per-hop latencies of NCCL's own cost model for each protocol (LL, LL128, Simple), so a
// collective over 1,024 ranks pays the pipeline fill of its ring or tree and a small bucket is not
// free. Rings run through the GPUs of a node over NVLink and cross nodes over the NICs; the tree
// is NCCL's double binary tree between nodes with a chain inside each node; `hierarchical` is
// reduce-scatter in the node, allreduce between nodes on each GPU's share of the NICs, all-gather
// in the node.
#pragma once

#include <string>
#include <vector>

#include "simulate/constants.h"

namespace mlbert::simulate {

enum class Algorithm { ring, tree, hierarchical };
enum class Protocol { ll, ll128, simple };
// Which algorithm an allreduce uses: the cheapest of NCCL's (ring, tree), or one forced.
enum class AlgorithmChoice { fastest, ring, tree, hierarchical };

struct NetworkSpec {
  int nodes = 1;
  int gpus_per_node = 1;
  double nvlink_gbs = 0;        // per GPU and direction, line rate (GB/s)
  int nics_per_node = 0;        // compute NICs
  double nic_gbs_per_node = 0;  // sum over the compute NICs, per direction, line rate (GB/s)
  double nvlink_efficiency = kNvlinkEfficiency;
  double nic_efficiency = kNicEfficiency;
  AlgorithmChoice algorithm = AlgorithmChoice::fastest;
  bool infinite = false;  // the model check: every collective costs nothing

  int ranks() const { return nodes * gpus_per_node; }
};

struct CollectiveCost {
  double seconds = 0;
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
};

// Allreduce of `bytes` on every rank of the world.
CollectiveCost allreduce_cost(const NetworkSpec& network, double bytes);

// All-gather inside one node (`node_only`) or over the world; `bytes_per_rank` is what each rank
// contributes (every rank ends with ranks x bytes_per_rank).
CollectiveCost allgather_cost(const NetworkSpec& network, double bytes_per_rank, bool node_only);

// Reduce-scatter of `bytes` (each rank ends with its reduced 1/ranks share) inside one node or
// over the world: the ring all-gather's schedule run in reverse.
CollectiveCost reduce_scatter_cost(const NetworkSpec& network, double bytes, bool node_only);

// Broadcast of `bytes` from one rank to the world: NCCL's pipelined ring (its only broadcast
// algorithm), every rank receiving the whole buffer once.
CollectiveCost broadcast_cost(const NetworkSpec& network, double bytes);

// The gradient reduction of an optimizer sharded over each node's GPUs (apex's
// DistributedFusedLAMB): a reduce-scatter inside the node, then an allreduce of each GPU's 1/g
// share between the nodes, the node's g GPUs at once, each on its 1/g of the node's NICs.
CollectiveCost node_sharded_reduction_cost(const NetworkSpec& network, double bytes);

const char* to_string(Algorithm);
const char* to_string(Protocol);
const char* to_string(AlgorithmChoice);
// "fastest", "ring", "tree" or "hierarchical"; throws std::invalid_argument otherwise.
AlgorithmChoice algorithm_choice_from_string(const std::string& text);

// The model's constants and their sources, one line each, for the output's assumptions.
std::vector<std::string> network_assumptions(const NetworkSpec& network);

}  // namespace mlbert::simulate
