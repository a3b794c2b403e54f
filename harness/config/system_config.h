// A system: one `systems/<name>.json` file = the official MLPerf system-description fields at top
// level (copied verbatim into a submission's `systems/<name>.json` by `mlbert package`), plus
// `topology` (what `mlbert launch` binds ranks to) and `run` (how `mlbert train` trains on it).
//
// Design choice: the file is validated completely at load time and every problem is reported with
// the file and the JSON path of the field (`systems/x.json: run.optimizer.beta1: missing`), so a
// bad system never reaches `init_start` of a run.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlbert::harness {

// Thrown for any invalid system file; what() lists every problem found, one per line.
class SystemConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// topology

struct AcceleratorSpec {
  std::string kind;  // "gpu" or "cpu" (CPU ranks: the demo and CI)
  std::string model;
  double peak_tflops_bf16 = 0;  // dense, datasheet
  double peak_tflops_fp16 = 0;
  double peak_tflops_fp32 = 0;
  double memory_gib = 0;
  double memory_bandwidth_tbs = 0;
};

struct NicSpec {
  std::string name;  // verbs device, e.g. "mlx5_0" (what NCCL_IB_HCA names)
  int port = 1;      // UCX_NET_DEVICES = name:port
  double bandwidth_gbps = 0;
  int numa_node = 0;
};

// Where local rank i (one per GPU) lives: its NUMA node and the NIC closest to its GPU.
struct LocalRankAffinity {
  int numa_node = 0;
  std::string nic;  // empty when the system has no NICs (single node)
};

struct CpuSpec {
  int sockets = 1;
  int cores_per_socket = 1;
  int threads_per_core = 1;
  int numa_nodes = 1;
};

struct Topology {
  int nodes = 1;
  int ranks_per_node = 1;  // one rank per GPU; CPU systems: one rank per process
  AcceleratorSpec accelerator;
  std::string intra_node_link;  // e.g. "NVLink3 + NVSwitch"
  double intra_node_bandwidth_gbs = 0;
  std::vector<NicSpec> nics;
  CpuSpec cpu;
  std::vector<LocalRankAffinity> local_ranks;  // size ranks_per_node

  int world_size() const { return nodes * ranks_per_node; }
};

// ---------------------------------------------------------------------------------------------
// run

// adam: weight decay as L2 added to the gradient (torch.optim.Adam); adamw: decoupled decay.
enum class OptimizerKind { lamb, adam, adamw };
enum class ClippingMode { after_allreduce, bucket_before_allreduce, none };
enum class SamplerKind { random, stratified };
// global-deal: the deal of global-exchange, planned by every rank from the sampler and a length
// index, so no sample crosses the network (load_balance.h).
enum class LoadBalancing { none, global_exchange, node_exchange, global_deal };
enum class Precision { fp32, fp16, bf16 };
// "reference": the MLPerf TF reference (poly decay over the global step, warmup overrides it);
// "nvidia": NVIDIA's PyTorch scheduler (decay measured from the end of warmup, step counted from
// 1).
enum class LrScheduleStyle { reference, nvidia };

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::lamb;
  double learning_rate = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-6;
  double weight_decay = 0.01;
};

struct LrScheduleSpec {
  LrScheduleStyle style = LrScheduleStyle::reference;
  std::int64_t warmup_steps = 0;
  std::int64_t start_warmup_step = 0;
  std::int64_t training_steps = 0;  // opt_learning_rate_training_steps
  std::int64_t decay_steps =
      0;  // where the decay reaches end_learning_rate; = training_steps by default
  double poly_power = 1.0;
  double end_learning_rate = 0.0;
};

struct LossScaleSpec {
  double initial = 1.0;  // fp16: 2^17 in the paper
  bool dynamic = false;  // halve on overflow, double after growth_interval clean steps
  std::int64_t growth_interval = 2000;
};

struct EvalSpec {
  bool mlperf_cadence = true;         // floor(0.05*(230.23*GBS + 3e6), 25000) samples
  std::int64_t interval_samples = 0;  // used when !mlperf_cadence
  std::int64_t start_samples = 0;     // first eval at this many samples (0 = one interval)
  std::int64_t eval_samples = 10000;  // size of the eval set (logged as eval_samples)
  int batch_size = 16;                // per rank
};

struct ModelSpec {
  std::string preset = "bert-large";  // a bert/config.h preset, or "file" with config_path
  std::filesystem::path config_path;  // a bert_config.json (relative to the system file)
  nlohmann::json overrides;           // fields of BertConfig to override (tiny demo models)
  bool vocab_from_data = false;       // vocab_size = lines of <data>/vocab.txt (the demo corpus)
};

struct RunSpec {
  std::string ruleset;   // MLPerf training ruleset, e.g. "4.1.0"
  std::string division;  // "closed" | "open" (equals the top-level division)
  // The folder under results/ the logs go to (results/<result_name>/bert/), the system's id in a
  // submission's layout; "" = the file's stem. A reproduction plan names the published system.
  std::string result_name;
  std::string backend = "cuda";
  Precision precision = Precision::fp16;
  ModelSpec model;
  int per_rank_batch = 0;  // sequences per rank per micro-step
  int gradient_accumulation = 1;
  std::int64_t global_batch_size = 0;  // = per_rank_batch * world * accumulation (checked)
  OptimizerSpec optimizer;
  LrScheduleSpec lr_schedule;
  ClippingMode clipping = ClippingMode::after_allreduce;
  double max_grad_norm = 1.0;
  LossScaleSpec loss_scale;
  double bucket_mb = 25.0;
  SamplerKind sampler = SamplerKind::random;
  std::vector<int> stratified_quotas;  // per bin, sums to per_rank_batch
  LoadBalancing load_balancing = LoadBalancing::none;
  EvalSpec eval;
  double target_accuracy = 0.720;
  std::int64_t max_steps = 0;     // stop (status "aborted") after this many steps without target
  std::int64_t max_samples = 0;   // 0 = no limit
  std::int64_t seed = 0;          // default seed; `mlbert train --seed` overrides
  double watchdog_seconds = 600;  // a rank that makes no progress for this long aborts the run
  int max_seq_length = 512;
  int max_predictions_per_seq = 76;
  std::int64_t warmup_iterations = 0;  // untimed steps in the init phase (on a copy of the state)
  // Samples this configuration is known to converge in (a published result, e.g. the paper's Adam
  // at GBS 16384); 0 = unknown. Planning only (`mlbert simulate`): training never reads it.
  std::int64_t samples_to_converge = 0;
};

struct SystemConfig {
  std::filesystem::path path;  // the file it came from
  std::string name;            // run.result_name, else the file stem: results/<name>/bert/...
  nlohmann::json description;  // the official fields, verbatim (top level minus topology/run)
  Topology topology;
  RunSpec run;

  // Convenience views of the official fields.
  std::string submitter() const { return description.value("submitter", ""); }
  std::string system_name() const { return description.value("system_name", ""); }
  std::string status() const { return description.value("status", ""); }
};

// Loads and validates a system file. `name_or_path` is a path, or a bare name looked up as
// `<systems_dir>/<name>.json`. Throws SystemConfigError listing every problem.
SystemConfig load_system(const std::string& name_or_path,
                         const std::filesystem::path& systems_dir = "systems");

// Parses and validates JSON already in memory (`origin` names it in messages).
SystemConfig parse_system(const nlohmann::json& json, const std::filesystem::path& origin);

// The MLPerf eval interval in samples for a global batch size (docs/reference.md, "The benchmark").
std::int64_t mlperf_eval_interval(std::int64_t global_batch_size);

// The eval interval this run uses (MLPerf formula or the system's explicit interval).
std::int64_t eval_interval(const RunSpec& run);

// Names used in JSON and logs.
const char* to_string(OptimizerKind);
const char* to_string(ClippingMode);
const char* to_string(SamplerKind);
const char* to_string(LoadBalancing);
const char* to_string(Precision);
const char* to_string(LrScheduleStyle);

}  // namespace mlbert::harness
