// Reading a published result folder for `mlbert simulate --results` (see results.h).
#include "harness/simulate/results.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "mlperf_logging/package_layout.h"
#include "mlperf_logging/parser.h"
#include "mlperf_logging/report.h"
#include "mlperf_logging/score.h"

namespace mlbert::harness::simulate {
namespace {

using nlohmann::json;

const std::set<std::string, std::less<>> kKeys = {
    "run_start",         "run_stop",
    "eval_accuracy",     "train_samples",
    "global_batch_size", "gradient_accumulation_steps",
    "opt_name",          "submission_division",
    "eval_samples"};

std::int64_t integer_value(const mllog::LogRecord& r, const std::filesystem::path& file) {
  if (!r.value.is_number())
    throw std::runtime_error(file.string() + ":" + std::to_string(r.line) + ": " + r.key +
                             ": value " + r.value.dump() + " is not a number");
  return static_cast<std::int64_t>(r.value.get<double>());
}

PublishedRun read_run(const std::filesystem::path& file, PublishedResult& result) {
  PublishedRun run;
  run.file = file;
  std::optional<double> start, stop;
  std::int64_t last_epoch = 0;
  mllog::ParseOptions options;
  options.wanted = [](std::string_view key, bool is_string) {
    return is_string && kKeys.count(key) ? mllog::ParseOptions::Want::all
                                         : mllog::ParseOptions::Want::skip;
  };
  mllog::for_each_record(
      file,
      [&](const mllog::LogRecord& r) {
        if (r.key == "run_start" && !start) {
          start = r.timestamp;
        } else if (r.key == "run_stop" && start && !stop) {
          stop = r.timestamp;
          if (r.metadata.is_object() && r.metadata.contains("status") &&
              r.metadata["status"].is_string())
            run.status = r.metadata["status"].get<std::string>();
        } else if (r.key == "eval_accuracy" && start && !stop) {
          ++run.evals;
          run.eval_times.push_back((r.timestamp - *start) / 1000.0);
          if (r.metadata.is_object() && r.metadata.contains("epoch_num") &&
              r.metadata["epoch_num"].is_number())
            last_epoch = static_cast<std::int64_t>(r.metadata["epoch_num"].get<double>());
        } else if (r.key == "train_samples") {
          run.samples = integer_value(r, file);
        } else if (r.key == "global_batch_size") {
          result.global_batch_size = integer_value(r, file);
        } else if (r.key == "gradient_accumulation_steps") {
          result.gradient_accumulation = static_cast<int>(integer_value(r, file));
        } else if (r.key == "eval_samples") {
          result.eval_samples = integer_value(r, file);
        } else if (r.key == "opt_name" && r.value.is_string()) {
          result.opt_name = r.value.get<std::string>();
        } else if (r.key == "submission_division" && r.value.is_string()) {
          result.division = r.value.get<std::string>();
        }
      },
      [](const mllog::ParseError&) {});  // lines the official parser rejects carry no timing
  if (!start || !stop)
    throw std::runtime_error(file.string() + ": no run_start and run_stop records");
  run.seconds = (*stop - *start) / 1000.0;
  // Early rounds log epoch_num 1 on every eval; later ones the samples seen.
  if (run.samples == 0 && last_epoch > 1000) run.samples = last_epoch;
  if (run.samples == 0)
    throw std::runtime_error(file.string() +
                             ": neither train_samples nor an eval epoch_num says how many samples "
                             "the run trained");
  return run;
}

// NVIDIA-style launch-line flags, read from the text around the MLLOG records.
void read_launch_flags(const std::filesystem::path& file, PublishedResult& result) {
  // Only the lines that look like a command line: the launch is echoed before the first records.
  std::ifstream in(file, std::ios::binary);
  std::string text, line;
  while (std::getline(in, line))
    if (line.find(":::MLLOG") == std::string::npos && line.find(" --") != std::string::npos &&
        text.size() < (1u << 20))
      text += line + "\n";
  const auto flag = [&](const std::string& name) {
    const std::regex re("(^|[\\s'\"])" + name + "(?=[\\s'\"=]|$)");
    if (std::regex_search(text, re)) {
      result.launch_flags.push_back(name);
      return true;
    }
    return false;
  };
  result.global_exchange = flag("--exchange_padding");
  result.group_exchange = flag("--group_exchange_padding");
  result.bucket_clipping = flag("--local_gradient_clip");
  result.distributed_lamb = flag("--distributed_lamb");
  result.baseline = flag("--baseline");
  result.cuda_graph = flag("--use_cuda_graph");
  result.padded = flag("--pad_fmha");
  result.fmha = flag("--unpad_fmha");
  result.unpad = flag("--unpad") || result.fmha;
  result.dense_seq_output = flag("--dense_seq_output");
  result.apex_amp = flag("--use_apex_amp");
  result.post_accumulation_allreduce = flag("--allreduce_post_accumulation");
  result.fp16_allreduce = flag("--allreduce_post_accumulation_fp16");
  std::smatch m;
  if (std::regex_search(text, m, std::regex("--optimizer=(\\w+)"))) {
    result.launch_flags.push_back(m.str(0));
    std::string name = m.str(1);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    result.adam = name.find("adam") != std::string::npos;
  }
  if (std::regex_search(text, m, std::regex("--eval_batch_size=(\\d+)"))) {
    result.launch_flags.push_back(m.str(0));
    result.eval_batch_size = std::stoi(m.str(1));
  }
  if (std::regex_search(text, m, std::regex("--split_batch_cnt((?:\\s+\\d+)+)"))) {
    result.launch_flags.push_back("--split_batch_cnt" + m.str(1));
    std::istringstream counts(m.str(1));
    std::vector<int> quotas;
    for (int q; counts >> q;) quotas.push_back(q);
    result.stratified_quotas = quotas;
  }
}

int positive_count(const json& system, const char* field, const std::filesystem::path& file) {
  const std::string text = system.contains(field) && system[field].is_string()
                               ? system[field].get<std::string>()
                           : system.contains(field) ? system[field].dump()
                                                    : "";
  try {
    std::size_t used = 0;
    const int n = std::stoi(text, &used);
    if (n > 0 && used == text.size()) return n;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(file.string() + ": " + field + ": \"" + text +
                              "\" is not a positive whole number");
}

std::string string_field(const json& system, const char* field) {
  return system.contains(field) && system[field].is_string() ? system[field].get<std::string>()
                                                             : "";
}

}  // namespace

// Frameworks whose ops a Python program issues one by one (eager execution).
bool eager_framework(const PublishedResult& r) {
  std::string name = r.framework;
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  return name.find("pytorch") != std::string::npos;
}

double PublishedResult::olympic_seconds() const {
  std::vector<double> seconds;
  for (const auto& r : runs) seconds.push_back(r.seconds);
  return logging::olympic_average(seconds, 0, 1).value_or(0);
}

PublishedResult read_published_result(const std::filesystem::path& dir,
                                      const std::string& ruleset) {
  PublishedResult result;
  result.dir = dir;
  auto files = logging::find_result_files(dir);
  // A submission package's <org>/results/<system>/ holds the logs in bert/.
  if (files.empty() && std::filesystem::is_directory(dir / logging::kBertBenchmark)) {
    result.dir = dir / logging::kBertBenchmark;
    files = logging::find_result_files(result.dir);
  }
  if (files.empty()) throw std::runtime_error(dir.string() + ": no result_*.txt files");
  const auto system_file = logging::find_system_description(result.dir);
  if (system_file.empty())
    throw std::runtime_error(dir.string() +
                             ": no system description (system.json beside the result files or "
                             "above bert/, or <org>/systems/<system>.json in a submission "
                             "package)");
  result.system_file = system_file;
  result.system = logging::read_json_file(system_file);
  if (!result.system.is_object())
    throw std::runtime_error(system_file.string() + ": must be a JSON object");
  if (!ruleset.empty()) {
    result.ruleset = ruleset;
  } else if (auto from_path = logging::ruleset_from_path(dir)) {
    result.ruleset = *from_path;
  }
  for (const auto& file : files) result.runs.push_back(read_run(file, result));
  read_launch_flags(files.front(), result);
  if (result.global_batch_size < 1)
    throw std::runtime_error(dir.string() + ": no global_batch_size record in the logs");
  if (result.division.empty()) result.division = string_field(result.system, "division");
  result.framework = string_field(result.system, "framework");
  return result;
}

OfficialScore official_score(const PublishedResult& result) {
  OfficialScore out;
  if (result.ruleset.empty()) {
    out.note = "no official score: the ruleset is unknown (pass --ruleset)";
    return out;
  }
  try {
    logging::ScoreOptions options;
    options.ruleset = result.ruleset;
    const logging::SystemScore score = logging::score_system(result.dir, options);
    out.minutes = score.score;
    if (!score.score)
      out.note = "no official score: too few runs pass the " + result.ruleset + " compliance check";
  } catch (const std::exception& e) {
    out.note = std::string("no official score: ") + e.what();
  }
  return out;
}

ClusterRun cluster_from_result(const PublishedResult& r) {
  const auto& system_file = r.system_file;
  ClusterRun c;
  c.name = (r.dir.filename() == logging::kBertBenchmark ? r.dir.parent_path() : r.dir)
               .filename()
               .string();
  c.accelerator = string_field(r.system, "accelerator_model_name");
  if (!looks_like_gpu(c.accelerator))
    throw std::invalid_argument(system_file.string() + ": accelerator \"" + c.accelerator +
                                "\" is not a GPU: mlbert simulate models GPU clusters only");
  auto& notes = c.notes;
  NetworkSpec& n = c.network;
  n.nodes = positive_count(r.system, "number_of_nodes", system_file);
  n.gpus_per_node = positive_count(r.system, "accelerators_per_node", system_file);
  const auto sheet = datasheet_for(c.accelerator);
  std::smatch m;
  const std::string interconnect = string_field(r.system, "accelerator_interconnect");
  if (std::regex_search(interconnect, m,
                        std::regex("(\\d+(?:\\.\\d+)?)\\s*GB/s", std::regex::icase))) {
    n.nvlink_gbs = std::stod(m.str(1)) / 2;
  } else if (sheet) {
    n.nvlink_gbs = sheet->nvlink_gbs / 2;
    notes.push_back("accelerator_interconnect states no GB/s: the datasheet's " +
                    std::to_string(static_cast<int>(sheet->nvlink_gbs)) + " GB/s NVLink");
  } else {
    throw std::invalid_argument(system_file.string() +
                                ": accelerator_interconnect states no bandwidth (e.g. 600GB/s)");
  }
  const std::string networking = string_field(r.system, "host_networking");
  if (std::regex_search(
          networking, m,
          std::regex("compute:\\s*(\\d+)\\s*x[^,]*?(\\d+)\\s*gb", std::regex::icase))) {
    n.nics_per_node = std::stoi(m.str(1));
    n.nic_gbs_per_node = n.nics_per_node * std::stod(m.str(2)) / 8;
  } else if (n.nodes > 1) {
    n.nics_per_node = n.gpus_per_node;
    n.nic_gbs_per_node = n.gpus_per_node * 200.0 / 8;
    notes.push_back("host_networking states no compute NICs: default one 200 Gb/s NIC per GPU");
  }

  RunSpec& run = c.run;
  run.ruleset = r.ruleset;
  run.division = r.division;
  run.global_batch_size = r.global_batch_size;
  run.gradient_accumulation = std::max(1, r.gradient_accumulation);
  const std::int64_t world = static_cast<std::int64_t>(n.nodes) * n.gpus_per_node;
  if (run.global_batch_size % (world * run.gradient_accumulation) != 0)
    throw std::invalid_argument(r.dir.string() + ": global_batch_size " +
                                std::to_string(run.global_batch_size) + " does not split over " +
                                std::to_string(world) + " GPUs x accumulation " +
                                std::to_string(run.gradient_accumulation));
  run.per_rank_batch =
      static_cast<int>(run.global_batch_size / (world * run.gradient_accumulation));
  if (r.opt_name) {
    std::string name = *r.opt_name;
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    run.optimizer.kind =
        name.find("adam") != std::string::npos ? OptimizerKind::adamw : OptimizerKind::lamb;
  } else if (r.adam) {
    run.optimizer.kind = OptimizerKind::adamw;
  } else {
    run.optimizer.kind = OptimizerKind::lamb;
    notes.push_back("the logs name no optimizer (no opt_name): LAMB assumed");
  }
  // --local_gradient_clip clips each bucket before its allreduce on Samsung's own path; on the
  // --baseline path it clips the whole local gradient before the one allreduce.
  if (r.bucket_clipping && !r.baseline && !r.distributed_lamb)
    run.clipping = ClippingMode::bucket_before_allreduce;
  else
    run.clipping = ClippingMode::after_allreduce;
  if (r.stratified_quotas && std::accumulate(r.stratified_quotas->begin(),
                                             r.stratified_quotas->end(), 0) == run.per_rank_batch) {
    run.sampler = SamplerKind::stratified;
    run.stratified_quotas = *r.stratified_quotas;
  }
  if (r.group_exchange) {
    run.load_balancing = LoadBalancing::node_exchange;
  } else if (r.global_exchange) {
    run.load_balancing = LoadBalancing::global_exchange;
  } else {
    run.load_balancing = LoadBalancing::global_exchange;
    notes.push_back(
        "the logs state no load balancing: global-exchange assumed (NVIDIA's "
        "exchange padding, the GPU submissions' practice); --set "
        "run.load_balancing=none to change");
  }
  if (!r.launch_flags.empty()) {
    std::string flags;
    for (const auto& f : r.launch_flags) flags += (flags.empty() ? "" : " ") + f;
    notes.push_back("read from the launch line in the logs: " + flags);
  }
  run.eval.eval_samples = r.eval_samples;
  run.eval.batch_size = r.eval_batch_size.value_or(16);
  if (!r.eval_batch_size) notes.push_back("eval batch size not stated: 16 per rank assumed");
  run.max_steps = 0;
  if (r.distributed_lamb) {
    // apex DistributedFusedLAMB (NVIDIA's optim/distributed_fused_lamb.py in the v2.0 results):
    // the model's fp16 gradients flattened, their norm, the pre-reduction scaling, a
    // reduce-scatter in the node, an allreduce of each shard between nodes, LAMB on the shard, an
    // all-gather of the fp16 parameters in the node.
    run.bucket_mb = 1e9;
    notes.push_back(
        "--distributed_lamb: the gradient flattened, normed and scaled (10 bytes per parameter), "
        "reduce-scattered in the node and allreduced between nodes in fp16 after backward, the "
        "optimizer on the node's 1/" +
        std::to_string(n.gpus_per_node) + " shard, the fp16 parameters all-gathered in the node");
  } else if (r.bucket_clipping && !r.baseline) {
    // Samsung's run_pretraining.py (v1.1 results): with --local_gradient_clip the model is wrapped
    // in DDP (bucket_cap_mb=25) with a comm hook that norms and scales each bucket before its
    // allreduce; take_optimizer_step, the --allreduce_post_accumulation path, runs only with
    // --baseline.
    run.bucket_mb = 25.0 * sizeof(float) / 2;  // 25 MiB of fp16 gradients per bucket
    notes.push_back(
        "--local_gradient_clip without --baseline (Samsung's code): DDP allreduces 25 MiB buckets "
        "of fp16 gradients as backward fills them, each normed and scaled first (6 bytes per "
        "element); amp then unscales into the f32 master gradients (6 bytes per parameter); "
        "--allreduce_post_accumulation is unused on this path");
  } else if (r.post_accumulation_allreduce) {
    // NVIDIA's --allreduce_post_accumulation: the whole gradient in one allreduce after backward.
    run.bucket_mb = 1e9;
    notes.push_back(
        "--allreduce_post_accumulation: one allreduce of the whole gradient after backward, not "
        "overlapped" +
        std::string(r.fp16_allreduce ? ", in fp16" : "") +
        "; amp's unscale into the f32 master gradients, the scaling into the flat buffer and "
        "back (18 bytes per parameter)" +
        (r.bucket_clipping ? "; --local_gradient_clip: the norm and scaling of the master "
                             "gradients before it (12 more)"
                           : ""));
  } else {
    run.bucket_mb = 25;
    notes.push_back("no gradient reduction stated: mlbert's overlapped 25 MiB f32 buckets");
  }
  notes.push_back(r.cuda_graph ? "--use_cuda_graph: kernels replayed from CUDA graphs, no host "
                                 "issue per kernel"
                  : eager_framework(r)
                      ? "framework \"" + r.framework +
                            "\" without --use_cuda_graph: each kernel issued by an eager op "
                            "from Python, 7 us (pytorch/pytorch#41383) + 3 us launch"
                      : "no framework stated: mlbert's C++ launches, 3 us per kernel");
  if (r.padded)
    notes.push_back("--pad_fmha: kernels on sequences x " + std::to_string(run.max_seq_length) +
                    " tokens, attention on the real lengths");
  c.model = bert::BertConfig::preset("bert-large");
  return c;
}

namespace {

// The read-backs, host loops and buffer broadcast the published implementation's code makes
// (results.h), in SimulationOptions. CUDA graphs replay a step with none of them (NVIDIA removed
// the read-backs to capture the whole step).
void implementation_host(const PublishedResult& r, SimulationOptions& o) {
  if (r.cuda_graph || !eager_framework(r)) return;
  const double eager_op = kPytorchEagerOpSeconds, launch = kDriverLaunchSeconds;
  if (r.unpad) {
    o.syncs_before_encoder = kUnpadReadBacks;
    o.host_notes.push_back(
        "--unpad: " + std::to_string(kUnpadReadBacks) +
        " read-backs before the encoder (generate_mask: nonzero, the longest sequence, the token "
        "count; padding.py), each emptying the GPU's queue and costing a 20 us round trip");
  }
  if (r.dense_seq_output) {
    o.syncs_before_heads = kDenseSeqOutputReadBacks;
    o.host_notes.push_back("--dense_seq_output: " + std::to_string(kDenseSeqOutputReadBacks) +
                           " read-backs before the heads (nonzero of the masked positions and a "
                           "boolean-mask index: dynamic shapes; modeling.py)");
  }
  if (!(r.bucket_clipping && !r.baseline && !r.distributed_lamb)) return;
  // Samsung's own path: DDP with the bucket-wise clipping hook, apex amp O2.
  o.sync_per_bucket = true;
  o.bucket_hook_seconds = kBucketHookOps * (eager_op + launch);
  o.host_notes.push_back(
      "DDP communication hook (Samsung's run_pretraining.py): a read-back per gradient bucket "
      "(the clip coefficient, a CUDA tensor, passed as apex multi_tensor_scale's float argument) "
      "as backward finishes it, and " +
      std::to_string(kBucketHookOps) + " eager ops with a launch each (" +
      std::to_string(static_cast<int>(std::lround(o.bucket_hook_seconds * 1e6))) + " us of host)");
  if (r.apex_amp) {
    o.sync_after_backward = true;
    o.host_seconds_per_tensor = kAmpEagerOpsPerTensor * eager_op + kAmpLaunchesPerTensor * launch;
    o.host_notes.push_back(
        "--use_apex_amp: the loss scaler reads its overflow flag back after backward; then per "
        "parameter tensor amp's empty_like of the f32 master gradient and zero_grad's detach and "
        "zero_ (" +
        std::to_string(kAmpEagerOpsPerTensor) + " eager ops, " +
        std::to_string(kAmpLaunchesPerTensor) + " launch: " +
        std::to_string(static_cast<int>(std::lround(o.host_seconds_per_tensor * 1e6))) +
        " us a tensor) run on the host while the GPU does the passes and the optimizer");
  }
  if (r.fmha) {
    const bert::BertConfig model = bert::BertConfig::preset("bert-large");
    const double h = static_cast<double>(model.hidden_size);
    o.forward_broadcast_bytes = static_cast<double>(model.num_hidden_layers) * (3 * h * h + 3 * h) *
                                kFmhaBufferBytesPerElement;
    o.host_notes.push_back(
        "DDP's broadcast_buffers (on by default): before each forward rank 0 broadcasts the "
        "module buffers, the FMHA layers' fused QKV weights and biases (fmha.py registers them as "
        "buffers): " +
        std::to_string(static_cast<long long>(o.forward_broadcast_bytes)) +
        " bytes of fp16, NCCL's ring broadcast, exposed");
  }
}

}  // namespace

SimulationOptions simulation_options_for(const PublishedResult& result, SimulationOptions base) {
  if (result.distributed_lamb) {
    base.overlap = false;
    base.gradient_wire_bytes = 2;
    base.optimizer_shard = OptimizerShard::node;
    base.gradient_pass_bytes_per_parameter = kDistributedLambPassBytes;
    base.gradient_passes =
        "DistributedFusedLAMB: fp16 gradients flattened (2 + 2), their norm (2), scaled (2 + 2)";
  } else if (result.bucket_clipping && !result.baseline) {
    base.overlap = true;
    base.gradient_wire_bytes = 2;
    base.bucket_norm_bytes_per_element = kDdpBucketNormBytes;
    base.gradient_pass_bytes_per_parameter = kAmpUnscaleBytes;
    base.gradient_passes = "amp unscale of the fp16 gradients into f32 master gradients (2 + 4)";
  } else if (result.post_accumulation_allreduce) {
    base.overlap = false;
    if (result.fp16_allreduce) base.gradient_wire_bytes = 2;
    base.gradient_pass_bytes_per_parameter =
        kPostAccumulationPassBytes + (result.bucket_clipping ? kLocalClipPassBytes : 0);
    base.gradient_passes =
        std::string(
            "amp unscale of the fp16 gradients into f32 master gradients (2 + 4), scaled "
            "into the flat allreduce buffer (4 + 2) and back (2 + 4)") +
        (result.bucket_clipping ? ", --local_gradient_clip: norm (4) and scaling (4 + 4)" : "");
  }
  if (result.cuda_graph) {
    base.host_seconds_per_kernel = 0;
    base.host_issue = "--use_cuda_graph: replayed CUDA graphs";
  } else if (eager_framework(result)) {
    base.host_seconds_per_kernel = kPytorchEagerOpSeconds + kDriverLaunchSeconds;
    base.host_issue = "eager " + result.framework +
                      " from Python: ~7 us per op (pytorch/pytorch#41383) + a 3 us launch";
  }
  base.padded = result.padded;
  implementation_host(result, base);
  return base;
}

void time_longest_run(const PublishedResult& result, std::int64_t global_batch_size,
                      SimulationOptions& o) {
  std::int64_t steps = 0, evals = 0;
  for (const PublishedRun& run : result.runs) {
    steps = std::max(steps, run.samples / global_batch_size);
    evals = std::max(evals, run.evals);
  }
  o.steps = steps;
  o.evals = evals;
}

}  // namespace mlbert::harness::simulate
