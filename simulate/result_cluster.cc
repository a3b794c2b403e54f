// The machine and the run of a published result (see result_model.h): the network from
// system.json, the run from the logs and the derived launch, the gradient reduction of its code.
#include <algorithm>
#include <numeric>
#include <regex>
#include <stdexcept>

#include "mlperf_logging/package/layout.h"
#include "simulate/constants.h"
#include "simulate/host_networking.h"
#include "simulate/result_model.h"
#include "simulate/system_fields.h"

namespace mlbert::simulate {
namespace {

// A rack-scale NVLink (GB200 NVL72: `domain` GPUs) joins the trays' GPUs across nodes: for the
// network model a "node" is then an NVLink domain, the fewest of equal whole trays that hold the
// world, with its trays' NICs. Worlds past kMaxSimulatedRanks are left to cluster_from_result's
// error.
void group_nvlink_domains(int domain, NetworkSpec& n, std::vector<std::string>& notes) {
  const int tray = n.gpus_per_node;
  const std::int64_t world = static_cast<std::int64_t>(n.nodes) * tray;
  if (domain <= tray || world > kMaxSimulatedRanks) return;
  std::int64_t domains = (world + domain - 1) / domain;
  while (world % domains != 0 || (world / domains) % tray != 0) ++domains;  // at most n.nodes
  const auto trays = static_cast<int>(world / domains / tray);
  notes.push_back("NVLink across trays (up to " + std::to_string(domain) + " GPUs): " +
                  std::to_string(n.nodes) + " nodes of " + std::to_string(tray) + " GPUs as " +
                  std::to_string(domains) + " NVLink domain(s) of " + std::to_string(trays) +
                  " trays, " + std::to_string(trays * tray) + " GPUs, with the trays' NICs");
  n.nodes = static_cast<int>(domains);
  n.gpus_per_node = trays * tray;
  n.nics_per_node *= trays;
  n.nic_gbs_per_node *= trays;
}

// NVLink per GPU and direction from accelerator_interconnect (stated, or the datasheet's).
void read_nvlink(const PublishedResult& r, const std::optional<AcceleratorDatasheet>& sheet,
                 NetworkSpec& n, std::vector<std::string>& notes) {
  std::smatch m;
  const std::string interconnect = string_field(r.system, "accelerator_interconnect");
  // A number of its own ("600GB/s", "900 GB/s"; not the "0" of "9o0 GB/s").
  static const std::regex nvlink("(?:^|[^\\w.])(\\d{1,6}(?:\\.\\d{1,6})?)\\s{0,4}GB/s",
                                 std::regex::icase);
  // Dell's "18xNVLink 25GB/s" states the links and each link's rate per direction (NVLink 3 and
  // 4: 25 GB/s); a figure alone ("600GB/s") is the GPU's total over both directions.
  static const std::regex links("(?:^|[^\\w.])(\\d{1,3})\\s{0,2}x\\s{0,2}nvlink",
                                std::regex::icase);
  std::smatch count;
  if (std::regex_search(interconnect, m, nvlink)) {
    const double stated = std::stod(m.str(1));
    if (std::regex_search(interconnect, count, links) && count.position() < m.position()) {
      n.nvlink_gbs = std::stoi(count.str(1)) * stated;
      notes.push_back("accelerator_interconnect \"" + interconnect.substr(0, 80) + "\": " +
                      count.str(1) + " NVLinks of " + m.str(1) + " GB/s per direction each");
    } else {
      n.nvlink_gbs = stated / 2;
    }
    if (!(n.nvlink_gbs > 0))
      throw std::invalid_argument(r.system_file.string() + ": accelerator_interconnect: \"" +
                                  m.str(1) + " GB/s\" is no bandwidth");
  } else if (sheet) {
    n.nvlink_gbs = sheet->nvlink_gbs / 2;
    notes.push_back("accelerator_interconnect states no GB/s: the datasheet's " +
                    std::to_string(static_cast<int>(sheet->nvlink_gbs)) + " GB/s NVLink");
  } else {
    throw std::invalid_argument(r.system_file.string() +
                                ": accelerator_interconnect states no bandwidth (e.g. 600GB/s)");
  }
}

// The machine from system.json: NVLink, the compute NICs (stated, or the reference system's one
// per GPU), the NVLink domains.
void read_network(const PublishedResult& r, const std::optional<AcceleratorDatasheet>& sheet,
                  NetworkSpec& n, std::vector<std::string>& notes) {
  read_nvlink(r, sheet, n, notes);
  const std::string networking = string_field(r.system, "host_networking");
  const double reference_gbps = sheet ? sheet->reference_nic_gbps : kDefaultReferenceNicGbps;
  if (const auto nics = parse_compute_nics(networking)) {
    n.nics_per_node = nics->count;
    n.nic_gbs_per_node = nics->count * nics->gbps_each / 8;
    if (!nics->count_stated && n.nodes > 1)
      notes.push_back("host_networking states a compute NIC speed but no count: one NIC per node");
  } else if (n.nodes > 1) {
    n.nics_per_node = n.gpus_per_node;
    n.nic_gbs_per_node = n.gpus_per_node * reference_gbps / 8;
    notes.push_back("host_networking states no compute NICs: default one " +
                    std::to_string(static_cast<int>(reference_gbps)) +
                    " Gb/s NIC per GPU (the accelerator's reference system)");
  }
  if (sheet) group_nvlink_domains(sheet->nvlink_domain, n, notes);
}

// The batch over these ranks: the global batch, the accumulation, the samples per rank.
void read_batch(const PublishedResult& r, const NetworkSpec& n, harness::RunSpec& run) {
  run.global_batch_size = r.global_batch_size;
  run.gradient_accumulation = std::max(1, r.gradient_accumulation);
  const std::int64_t world = static_cast<std::int64_t>(n.nodes) * n.gpus_per_node;
  if (world > kMaxSimulatedRanks)
    throw std::invalid_argument(
        r.system_file.string() + ": number_of_nodes " + std::to_string(n.nodes) +
        " x accelerators_per_node " + std::to_string(n.gpus_per_node) + " is more than the " +
        std::to_string(kMaxSimulatedRanks) + " ranks mlbert simulate models");
  if (run.global_batch_size % (world * run.gradient_accumulation) != 0)
    throw std::invalid_argument(r.dir.string() + ": global_batch_size " +
                                std::to_string(run.global_batch_size) + " does not split over " +
                                std::to_string(world) + " GPUs x accumulation " +
                                std::to_string(run.gradient_accumulation));
  run.per_rank_batch =
      static_cast<int>(run.global_batch_size / (world * run.gradient_accumulation));
}

// The launch's load balancing, and why where the launch line does not state it.
void read_load_balancing(const PublishedResult& r, harness::RunSpec& run,
                         std::vector<std::string>& notes) {
  const auto& balancing = r.launch.load_balancing;
  run.load_balancing = balancing.value;
  if (balancing.basis == Basis::unstated) {
    notes.push_back(
        "the logs state no load balancing: global-exchange assumed (NVIDIA's "
        "exchange padding, the GPU submissions' practice); --set "
        "run.load_balancing=none to change");
  } else if (balancing.value == harness::LoadBalancing::none) {  // padded or packed shapes
    if (r.launch.shapes.value == Shapes::fully_padded)
      notes.push_back(
          "no --unpad on NVIDIA's run_pretraining.py launch line: every sequence padded to " +
          std::to_string(run.max_seq_length) +
          " tokens, attention too (the model removes no padding), and no load balancing (every "
          "rank's work is the same)");
    else
      notes.push_back("packed samples: d_batch_size " + std::to_string(*r.device_batch_size) +
                      " rows per GPU for " + std::to_string(run.per_rank_batch) + " samples, " +
                      std::to_string(r.launch.packing) +
                      " per row; no load balancing (NVIDIA's packed configs pass no "
                      "--exchange_padding: the packing evens the rows)");
  }
}

// What the logs add beyond the records: skipped steps, the launch line, the reference launch.
void note_logs(const PublishedResult& r, std::vector<std::string>& notes) {
  std::int64_t skipped = 0, most = 0;
  for (const PublishedRun& run : r.runs) {
    skipped += run.skipped_steps;
    most = std::max(most, run.skipped_steps);
  }
  if (skipped > 0)
    notes.push_back("loss-scale overflows: " + std::to_string(skipped) + " steps over the " +
                    std::to_string(r.runs.size()) + " runs (at most " + std::to_string(most) +
                    " in one) were skipped for an overflow, which the logs announce, and not "
                    "counted in train_samples (global_step does not advance on them): each is "
                    "timed as a whole step beyond the logged samples");
  if (!r.launch_line.flags.empty()) {
    std::string flags;
    for (const auto& f : r.launch_line.flags) flags += (flags.empty() ? "" : " ") + f;
    notes.push_back("read from the launch line in the logs: " + flags);
  }
  if (r.launch.reference_launch.value)
    notes.push_back(std::string("the logs echo no launch flag: NVIDIA's reference launch of its "
                                "PyTorch BERT assumed, ") +
                    kReferenceLaunchFlags +
                    " (its run_and_time.sh passes it to every run in the v1.1-v3.1 results; the "
                    "config's CUDA graphs, padding or packing are not in the folder)");
}

// The run from the logs over these ranks: the batch, the optimizer, the clipping, the sampler and
// the load balancing, the skipped steps, the launch line, the evaluation cadence.
void run_from_logs(const PublishedResult& r, const NetworkSpec& n, harness::RunSpec& run,
                   std::vector<std::string>& notes) {
  const PublishedLaunch& launch = r.launch;
  const LaunchLine& line = r.launch_line;
  run.ruleset = r.ruleset;
  run.division = r.division;
  read_batch(r, n, run);
  run.optimizer.kind = launch.optimizer.value;
  if (launch.optimizer.basis == Basis::unstated)
    notes.push_back("the logs name no optimizer (no opt_name): LAMB assumed");
  run.clipping = launch.clipping();
  if (line.stratified_quotas &&
      std::accumulate(line.stratified_quotas->begin(), line.stratified_quotas->end(),
                      std::int64_t{0}) == run.per_rank_batch) {
    run.sampler = harness::SamplerKind::stratified;
    run.stratified_quotas = *line.stratified_quotas;
  }
  read_load_balancing(r, run, notes);
  note_logs(r, notes);
  run.eval.eval_samples = r.eval_samples;
  if (line.eval_every_samples) {  // the cadence the run used, where its launch line states it
    run.eval.mlperf_cadence = false;
    run.eval.interval_samples = *line.eval_every_samples;
    run.eval.start_samples = line.eval_first_samples.value_or(0);
  }
  run.eval.batch_size = line.eval_batch_size.value_or(kAssumedEvalBatchSize);
  if (!line.eval_batch_size)
    notes.push_back("eval batch size not stated: " + std::to_string(kAssumedEvalBatchSize) +
                    " per rank assumed");
  run.max_steps = 0;
}

// The gradient path's buckets, and what it does, in words.
void read_reduction(const PublishedResult& r, const NetworkSpec& n, harness::RunSpec& run,
                    std::vector<std::string>& notes) {
  switch (r.launch.gradient_path.value) {
    case GradientPath::distributed_lamb:
      // apex DistributedFusedLAMB (NVIDIA's optim/distributed_fused_lamb.py in the v2.0
      // results): the model's fp16 gradients flattened, their norm, the pre-reduction scaling, a
      // reduce-scatter in the node, an allreduce of each shard between nodes, LAMB on the shard,
      // an all-gather of the fp16 parameters in the node.
      run.bucket_mb = kWholeGradientBucketMb;
      notes.push_back(
          "--distributed_lamb: the gradient flattened, normed and scaled (10 bytes per "
          "parameter), reduce-scattered in the node and allreduced between nodes in fp16 after "
          "backward, the optimizer on the node's 1/" +
          std::to_string(n.gpus_per_node) + " shard, the fp16 parameters all-gathered in the node");
      return;
    case GradientPath::ddp_bucket_clipping:
      // Samsung's run_pretraining.py (v1.1 results): with --local_gradient_clip the model is
      // wrapped in DDP with a comm hook that norms and scales each bucket before its allreduce;
      // take_optimizer_step, the --allreduce_post_accumulation path, runs only with --baseline.
      run.bucket_mb = kDdpBucketCapMb * sizeof(float) / 2;  // fp16 gradients in f32 bucket units
      notes.push_back(
          "--local_gradient_clip without --baseline (Samsung's code): DDP allreduces 25 MiB "
          "buckets of fp16 gradients as backward fills them, each normed and scaled first (6 "
          "bytes per element); amp then unscales into the f32 master gradients (6 bytes per "
          "parameter); --allreduce_post_accumulation is unused on this path");
      return;
    case GradientPath::post_accumulation_allreduce:
      run.bucket_mb = kWholeGradientBucketMb;
      notes.push_back(
          "--allreduce_post_accumulation: one allreduce of the whole gradient after backward, "
          "not overlapped" +
          std::string(r.launch.fp16_allreduce ? ", in fp16" : "") +
          "; amp's unscale into the f32 master gradients, the scaling into the flat buffer and "
          "back (18 bytes per parameter)" +
          (r.launch.clip_before_allreduce
               ? "; --local_gradient_clip: the norm and scaling of the master gradients before it "
                 "(12 more)"
               : ""));
      return;
    case GradientPath::mlbert_buckets:
      run.bucket_mb = harness::RunSpec().bucket_mb;
      notes.push_back("no gradient reduction stated: mlbert's overlapped 25 MiB f32 buckets");
      return;
  }
}

// How the host issues the kernels, and the shapes they run on, in words.
void note_issue_and_shapes(const PublishedResult& r, const harness::RunSpec& run,
                           std::vector<std::string>& notes) {
  switch (r.launch.host_issue.value) {
    case HostIssue::cuda_graphs:
      notes.push_back(
          "--use_cuda_graph: kernels replayed from CUDA graphs, no host issue per kernel");
      break;
    case HostIssue::eager_python:
      notes.push_back("framework \"" + r.framework +
                      "\" without --use_cuda_graph: each kernel issued by an eager op from "
                      "Python, 7 us (pytorch/pytorch#41383) + 3 us launch");
      break;
    case HostIssue::cpp_launches:
      notes.push_back("no framework stated: mlbert's C++ launches, 3 us per kernel");
      break;
  }
  const std::string length = std::to_string(run.max_seq_length);
  if (r.launch.shapes.value == Shapes::packed)
    notes.push_back("packed rows: kernels on rows x " + length +
                    " tokens, attention on the real lengths" +
                    (r.launch.reference_launch.value
                         ? std::string(", the step replayed from CUDA graphs, as NVIDIA's packed "
                                       "configs run (--packed_samples --pad_fmha --use_cuda_graph "
                                       "in 90 of the 92 with PACKING_FACTOR 2, v2.0-v4.0 results)")
                         : std::string()));
  else if (r.launch.shapes.value == Shapes::padded)
    notes.push_back("--pad_fmha: kernels on sequences x " + length +
                    " tokens, attention on the real lengths");
}

}  // namespace

ClusterRun cluster_from_result(const PublishedResult& r) {
  const auto& system_file = r.system_file;
  ClusterRun c;
  c.name = (r.dir.filename() == logging::kBertBenchmark ? r.dir.parent_path() : r.dir)
               .filename()
               .string();
  c.accelerator = string_field(r.system, "accelerator_model_name");
  if (const auto why = unmodelled_accelerator(c.accelerator, system_file))
    throw std::invalid_argument(*why);
  auto& notes = c.notes;
  NetworkSpec& n = c.network;
  n.nodes = positive_count(r.system, "number_of_nodes", system_file);
  n.gpus_per_node = positive_count(r.system, "accelerators_per_node", system_file);
  read_network(r, datasheet_for(c.accelerator), n, notes);
  run_from_logs(r, n, c.run, notes);
  read_reduction(r, n, c.run, notes);
  note_issue_and_shapes(r, c.run, notes);
  c.model = bert::BertConfig::preset("bert-large");
  return c;
}

}  // namespace mlbert::simulate
