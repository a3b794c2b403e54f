// bert_cuda_bench: throughput of one BERT-large training step (forward, backward, global gradient
// norm, LAMB) on the CUDA backend in bf16 and fp16, for a padded batch (16 x 512) and a realistic
// unpadded length mix (docs/reference.md, "The length mix"), with the MFU of its "Compute"
// against the datasheet peak and against a GEMM ceiling measured in the same process (an 8192^3
// bf16 GEMM through cuBLASLt; a device-to-device copy is the memory ceiling). PyTorch on the same GPU is
// timed by torch_bert_step.py (scripts/device_check.sh runs both). fp16 steps use the device loss
// scaler; each step's loss is scaled by the scale the device holds for it, and the table reports
// the steps the scaler skipped and the final scale. With --check the exit status is 1 unless every
// configuration has a finite loss, seq/s > 0, no skipped timed step and no device allocation after
// the warm-up. Exit 77 when there is no CUDA device.
//
// Design choice: the classic figure charges the optimizer to every 16 sequences; --system FILE
// adds the step as training counts it: the system's per-GPU batch (run.per_rank_batch sequences a
// micro-batch, drawn from the length mix) times its gradient accumulation, then the optimizer
// once (bench/cuda/step_timing.h).
//
// With --json FILE the measurements are also written there (format "mlbert-device-bench/1": the
// device, the two baselines, per configuration the micro-batch's shape and the timed forward+
// backward and optimizer; the --system steps under "training_steps"), which `mlbert simulate
// calibrate --bench FILE` turns into a measured accelerator profile. With --breakdown N, N more
// steps per configuration run with a CUDA event around every op (bert/op_profile.h): the time per
// op family against its ceiling, the GPU's idle time, the largest gaps (not in the timed figures).
//
//   bert_cuda_bench [--dtype bf16|fp16|both] [--mix padded|mix|both] [--steps N] [--warmup N]
//                   [--batch N] [--seed N] [--peak-tflops X] [--check] [--json FILE]
//                   [--breakdown N] [--epilogues default|all|no-gelu|no-bias-grad|none]
//                   [--dropout all|no-attention|none] [--attention-dropout-bits
//                   drawn-twice|forward-keeps|kernel-keeps] [--attention-kernels
//                   classic|fa2|auto] [--attention-deterministic-dq] [--system FILE]
//                   [VARIANT FLAGS] [--variants LIST]
//
// --epilogues sets which of cuBLASLt's fused GELU and bias-gradient epilogues may run: default
// (every epilogue but DGELU_BGRAD), all (DGELU_BGRAD too), no-gelu, no-bias-grad, none.
// --dropout sets the attention-probability dropout (no-attention) or every dropout (none) to 0:
// what the Philox draws cost (not a training configuration; the step's FLOPs stay).
// --attention-dropout-bits sets where the attention's dropout bits come from.
// --attention-kernels picks the 64-row or the FlashAttention-2-class attention kernels, or by
// sequence length (classic by default); --attention-deterministic-dq sums their dQ in a fixed
// order (fa2 only).
// The step variants (CudaOpsOptions, each off by default), for every configuration: --fused-qkv,
// --dgelu-epilogue, --gemm-candidates N, --gemm-plans FILE, --gemm-strict,
// --layer-norm-keep-bits, --layer-norm-streaming, --cuda-graphs. --variants LIST (comma-separated:
// default, attn-fa2, fused-qkv, dgelu, gemm-tuned, ln-keep-bits, ln-streaming, cuda-graphs, all)
// times the
// first dtype's first mix once per variant in this process, instead of the table, and prints each
// against `default` (a VARIANT line each).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/cuda/step_timing.h"
#include "bert/cuda/device_info.h"

namespace {

using mlbert::bert::DType;
namespace bert = mlbert::bert;
namespace cuda = mlbert::cuda;
namespace bench = mlbert::bench;

constexpr int kSkipped = 77;

// The system's per-GPU micro-batch and accumulation (run.per_rank_batch, gradient_accumulation).
struct TrainingShape {
  std::string name;
  int per_gpu_batch = 0, accumulation = 1;
};
TrainingShape read_training_shape(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file + ": cannot open the system file");
  nlohmann::json json;
  try {
    in >> json;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file + ": not valid JSON: " + e.what());
  }
  TrainingShape s;
  s.name = file.substr(file.find_last_of('/') + 1);
  const nlohmann::json* run = json.contains("run") ? &json["run"] : nullptr;
  for (const auto& [field, target] : {std::pair{"per_rank_batch", &s.per_gpu_batch},
                                      std::pair{"gradient_accumulation", &s.accumulation}}) {
    if (!run || !run->contains(field) || !(*run)[field].is_number_integer() ||
        (*run)[field].get<int>() < 1)
      throw std::runtime_error(file + ": run." + field + " must be a positive integer");
    *target = (*run)[field].get<int>();
  }
  return s;
}

struct Options {
  std::vector<DType> dtypes{DType::bf16, DType::f16};
  std::vector<std::string> mixes{"padded", "mix"};
  int steps = 10, warmup = 3, batch = 16;
  uint64_t seed = 1234;
  double peak_tflops = 0;  // 0: from the device name
  bool check = false;
  std::string json;   // --json FILE: the measurements for `mlbert simulate calibrate --bench`
  int breakdown = 0;  // --breakdown N: steps timed op by op after the timed steps
  std::string epilogues = "default";  // --epilogues: which fused cuBLASLt epilogues may run
  std::string dropout = "all";        // --dropout: which dropout sites draw masks
  cuda::CudaOpsOptions variant;       // the step variants every configuration runs with
  std::string system;                 // --system FILE: also the step as that system trains
  TrainingShape training;             // read from it
  std::vector<std::string> variants;  // --variants: compared against the default
};

// Sets a named variant's switches; false for an unknown name.
bool apply_variant(const std::string& name, cuda::CudaOpsOptions& o) {
  if (name == "default") return true;
  if (name == "attn-fa2" || name == "all") o.attention_kernels = cuda::AttentionKernels::fa2;
  if (name == "fused-qkv" || name == "all") o.fused_qkv = true;
  if (name == "dgelu" || name == "all") o.dgelu_epilogue = true;
  if (name == "gemm-tuned" || name == "all") o.gemm_candidates = 8;
  if (name == "ln-keep-bits" || name == "all") o.layer_norm_keep_bits = true;
  if (name == "ln-streaming" || name == "all") o.layer_norm_streaming = true;
  if (name == "cuda-graphs") o.cuda_graphs = true;
  for (const char* known :
       {"attn-fa2", "fused-qkv", "dgelu", "gemm-tuned", "ln-keep-bits", "ln-streaming",
        "cuda-graphs", "all"})
    if (name == known) return true;
  return false;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(
      stderr,
      "usage: %s [--dtype bf16|fp16|both] [--mix padded|mix|both] [--steps N] [--warmup N] "
      "[--batch N] [--seed N] [--peak-tflops X] [--check] [--json FILE] [--breakdown N] "
      "[--epilogues default|all|no-gelu|no-bias-grad|none] [--dropout all|no-attention|none] "
      "[--attention-dropout-bits drawn-twice|forward-keeps|kernel-keeps] "
      "[--attention-kernels classic|fa2|auto] [--attention-deterministic-dq] [--system FILE] "
      "[--fused-qkv] [--dgelu-epilogue] [--gemm-candidates N] [--gemm-plans FILE] "
      "[--gemm-strict] [--layer-norm-keep-bits] [--layer-norm-streaming] [--cuda-graphs] "
      "[--variants default,attn-fa2,fused-qkv,dgelu,gemm-tuned,ln-keep-bits,ln-streaming,cuda-graphs,"
      "all]\n",
      argv0);
  std::exit(2);
}

// The flags of one option with a value; false when `arg` is none of them.
bool parse_value_flag(const std::string& arg, const std::string& v, Options& o) {
  if (arg == "--dtype") {
    o.dtypes.clear();
    if (v == "bf16" || v == "both") o.dtypes.push_back(DType::bf16);
    if (v == "fp16" || v == "both") o.dtypes.push_back(DType::f16);
  } else if (arg == "--mix") {
    o.mixes.clear();
    if (v == "padded" || v == "both") o.mixes.push_back("padded");
    if (v == "mix" || v == "both") o.mixes.push_back("mix");
  } else if (arg == "--steps") {
    o.steps = std::atoi(v.c_str());
  } else if (arg == "--warmup") {
    o.warmup = std::atoi(v.c_str());
  } else if (arg == "--batch") {
    o.batch = std::atoi(v.c_str());
  } else if (arg == "--seed") {
    o.seed = std::strtoull(v.c_str(), nullptr, 10);
  } else if (arg == "--peak-tflops") {
    o.peak_tflops = std::atof(v.c_str());
  } else if (arg == "--json") {
    o.json = v;
  } else if (arg == "--breakdown") {
    o.breakdown = std::atoi(v.c_str());
  } else if (arg == "--epilogues") {
    o.epilogues = v;
    if (v != "default" && v != "all" && v != "no-gelu" && v != "no-bias-grad" && v != "none")
      throw std::invalid_argument("--epilogues: '" + v +
                                  "' is not default, all, no-gelu, no-bias-grad or none");
  } else if (arg == "--dropout") {
    o.dropout = v;
    if (v != "all" && v != "no-attention" && v != "none")
      throw std::invalid_argument("--dropout: '" + v + "' is not all, no-attention or none");
  } else if (arg == "--attention-dropout-bits") {
    o.variant.attention_dropout_bits = cuda::parse_attention_dropout_bits(v);
  } else if (arg == "--attention-kernels") {
    o.variant.attention_kernels = cuda::parse_attention_kernels(v);
  } else if (arg == "--gemm-candidates") {
    o.variant.gemm_candidates = std::atoi(v.c_str());
  } else if (arg == "--gemm-plans") {
    o.variant.gemm_plans_file = v;
  } else if (arg == "--system") {
    o.system = v;
    o.training = read_training_shape(v);
  } else if (arg == "--variants") {
    o.variants = split(v);
    cuda::CudaOpsOptions probe;
    for (const std::string& name : o.variants)
      if (!apply_variant(name, probe))
        throw std::invalid_argument("--variants: unknown variant '" + name + "'");
  } else {
    return false;
  }
  return true;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--check") {
      o.check = true;
    } else if (arg == "--attention-deterministic-dq") {
      o.variant.attention_deterministic_dq = true;
    } else if (arg == "--fused-qkv") {
      o.variant.fused_qkv = true;
    } else if (arg == "--dgelu-epilogue") {
      o.variant.dgelu_epilogue = true;
    } else if (arg == "--gemm-strict") {
      o.variant.gemm_strict = true;
    } else if (arg == "--layer-norm-keep-bits") {
      o.variant.layer_norm_keep_bits = true;
    } else if (arg == "--layer-norm-streaming") {
      o.variant.layer_norm_streaming = true;
    } else if (arg == "--cuda-graphs") {
      o.variant.cuda_graphs = true;
    } else {
      if (i + 1 >= argc) usage(argv[0]);
      try {
        if (!parse_value_flag(arg, argv[i + 1], o)) usage(argv[0]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        std::exit(2);
      }
      ++i;
    }
  }
  if (o.dtypes.empty() || o.mixes.empty() || o.steps < 1 || o.warmup < 1 || o.batch < 1 ||
      o.breakdown < 0 || o.variant.gemm_candidates < 1) {
    std::fprintf(stderr, "bad options\n");
    std::exit(2);
  }
  // "default" keeps the backend's own epilogue choice; the others set all three.
  if (o.epilogues != "default") {
    o.variant.gelu_epilogue = o.epilogues == "all" || o.epilogues == "no-bias-grad";
    o.variant.bias_grad_epilogue = o.epilogues == "all" || o.epilogues == "no-gelu";
    o.variant.dgelu_bgrad_epilogue = o.epilogues == "all";
  }
  return o;
}

// What the run prints and checks about each timed configuration.
struct Report {
  explicit Report(const Options& options) : o(options) {}
  const Options& o;
  double peak = 0, gemm = 0, copy = 0;
  std::vector<std::string> failures;
  nlohmann::json steps = nlohmann::json::array(), training = nlohmann::json::array(),
                 breakdowns = nlohmann::json::array();

  void header() const {
    std::printf("%-6s %-10s %7s %7s %9s %9s %9s %9s %7s %8s %7s %8s %9s\n", "dtype", "mix",
                "tokens", "TFLOP", "step ms", "fwd+bwd", "optim ms", "seq/s", "MFU", "of GEMM",
                "allocs", "skipped", "scale");
  }
  // One row: `sequences` in the step, `flops` its FLOPs, `tokens` of its micro-batches.
  void row(DType dtype, const std::string& mix, size_t tokens, int sequences, double flops,
           const bench::StepTiming& t) {
    const double rate = flops / (t.wall_ms * 1e-3) / 1e12;
    const double seq_per_s = sequences / (t.wall_ms * 1e-3);
    const bool fp16 = dtype == DType::f16;
    const std::string skipped =
        fp16 ? std::to_string(t.skipped_timed) + "+" + std::to_string(t.skipped_warmup) + "w" : "-";
    std::printf("%-6s %-10s %7zu %7.2f %9.2f %9.2f %9.2f %9.1f %6.1f%% %7.1f%% %7zu %8s %9.0f\n",
                bert::dtype_name(dtype), mix.c_str(), tokens, flops / 1e12, t.wall_ms, t.fwd_bwd_ms,
                t.optimizer_ms, seq_per_s, peak > 0 ? 100.0 * rate / peak : 0.0,
                100.0 * rate / gemm, t.allocations_during_steps, skipped.c_str(),
                t.final_loss_scale);
    std::printf("  %s %s: %s; %s; %s\n", bert::dtype_name(dtype), mix.c_str(), t.fusion.c_str(),
                t.tuning.c_str(), t.graphs.c_str());
    std::printf(
        "RESULT mlbert %s %s seq_per_s=%.2f mfu=%.4f step_ms=%.3f tflops=%.2f gemm_ratio=%.4f "
        "skipped=%d loss_scale=%.0f\n",
        bert::dtype_name(dtype), mix.c_str(), seq_per_s, peak > 0 ? rate / peak : 0.0, t.wall_ms,
        rate, rate / gemm, t.skipped_timed, t.final_loss_scale);
    std::fflush(stdout);
    const std::string where = std::string(bert::dtype_name(dtype)) + " " + mix + ": ";
    if (!(seq_per_s > 0) || !std::isfinite(seq_per_s))
      failures.push_back(where + "seq/s is not positive");
    if (t.skipped_timed > 0)
      failures.push_back(where + std::to_string(t.skipped_timed) +
                         " timed steps skipped by the loss scaler (overflow)");
    if (t.allocations_during_steps > 0)
      failures.push_back(where + std::to_string(t.allocations_during_steps) +
                         " device allocations in the steps after warm-up");
  }
  void breakdown(DType dtype, const std::string& mix, const bench::StepTiming& t);
};

void Report::breakdown(DType dtype, const std::string& mix, const bench::StepTiming& t) {
  const auto rows = bert::family_rows(t.breakdown, gemm, copy, o.breakdown);
  std::printf("  %s %s, op by op over %d steps (event per op; not in the figures above):\n%s",
              bert::dtype_name(dtype), mix.c_str(), o.breakdown,
              bert::format_family_table(rows, t.breakdown, o.breakdown).c_str());
  const auto details = bert::detail_rows(t.breakdown, gemm, copy, o.breakdown);
  std::printf("  by op and shape, largest gap first (12 of %zu):\n%s", details.size(),
              bert::format_detail_table(details, 12).c_str());
  nlohmann::json families = nlohmann::json::array(), ops_json = nlohmann::json::array();
  for (const auto& r : details)
    ops_json.push_back({{"op", r.name},
                        {"family", bert::op_family_name(r.family)},
                        {"calls", r.calls},
                        {"ms", r.ms},
                        {"rate", r.rate},
                        {"of_ceiling", r.of_ceiling},
                        {"gap_ms", r.gap_ms}});
  for (const auto& r : rows)
    families.push_back({{"family", bert::op_family_name(r.family)},
                        {"calls", r.calls},
                        {"ms", r.ms},
                        {"share", r.share},
                        {"rate", r.rate},
                        {"of_ceiling", r.of_ceiling},
                        {"gap_ms", r.gap_ms}});
  breakdowns.push_back({{"dtype", bert::dtype_name(dtype)},
                        {"mix", mix},
                        {"span_ms", 1e3 * t.breakdown.span_seconds / o.breakdown},
                        {"families", families},
                        {"ops", ops_json}});
}

bench::StepRun step_run(const Options& o, DType dtype, std::vector<bert::Batch> micro,
                        int breakdown) {
  bench::StepRun run;
  run.dtype = dtype;
  run.options = o.variant;
  run.micro_batches = std::move(micro);
  run.steps = o.steps;
  run.warmup = o.warmup;
  run.breakdown = breakdown;
  run.seed = o.seed;
  return run;
}

// The classic figure: one micro-batch of o.batch sequences and the optimizer, per dtype and mix.
void time_configurations(const Options& o, const bert::BertConfig& config, Report& report) {
  for (const std::string& mix : o.mixes) {
    std::mt19937_64 rng(o.seed);
    const bert::Batch batch = bench::make_batch(config, mix, o.batch, rng);
    const double flops = bench::step_flops(config, batch);
    for (DType dtype : o.dtypes) {
      const bench::StepTiming t =
          bench::time_steps(config, step_run(o, dtype, {batch}, o.breakdown));
      report.row(dtype, mix, batch.num_tokens(), o.batch, flops, t);
      if (o.breakdown > 0) report.breakdown(dtype, mix, t);
      nlohmann::json entry = bench::batch_shape(batch);
      entry["dtype"] = bert::dtype_name(dtype);
      entry["mix"] = mix;
      entry["fwd_bwd_ms"] = t.fwd_bwd_ms;
      entry["optimizer_ms"] = t.optimizer_ms;
      entry["wall_ms"] = t.wall_ms;
      entry["skipped_timed"] = t.skipped_timed;
      report.steps.push_back(entry);
    }
  }
}

// As training counts: the system's micro-batches of the length mix, the optimizer once a step.
void time_training(const Options& o, const bert::BertConfig& config, Report& report) {
  const TrainingShape& shape = o.training;
  std::printf(
      "as %s trains: %d micro-batches of %d sequences of the length mix a step (%d sequences), "
      "then the optimizer once\n",
      shape.name.c_str(), shape.accumulation, shape.per_gpu_batch,
      shape.accumulation * shape.per_gpu_batch);
  std::mt19937_64 rng(o.seed + 1);
  std::vector<bert::Batch> micro;
  double flops = 0;
  size_t tokens = 0;
  for (int a = 0; a < shape.accumulation; ++a) {
    micro.push_back(bench::make_batch(config, "mix", shape.per_gpu_batch, rng));
    flops += bench::step_flops(config, micro.back());
    tokens += micro.back().num_tokens();
  }
  for (DType dtype : o.dtypes) {
    const bench::StepTiming t = bench::time_steps(config, step_run(o, dtype, micro, 0));
    report.row(dtype, "train-mix", tokens, shape.accumulation * shape.per_gpu_batch, flops, t);
    report.training.push_back({{"system", shape.name},
                               {"dtype", bert::dtype_name(dtype)},
                               {"micro_batches", shape.accumulation},
                               {"sequences_per_micro_batch", shape.per_gpu_batch},
                               {"tokens", tokens},
                               {"flops", flops},
                               {"fwd_bwd_ms", t.fwd_bwd_ms},
                               {"optimizer_ms", t.optimizer_ms},
                               {"wall_ms", t.wall_ms},
                               {"skipped_timed", t.skipped_timed}});
  }
}

// Each named variant on the first dtype and mix, against `default` timed in the same process.
void time_variants(const Options& o, const bert::BertConfig& config, const Report& report) {
  const DType dtype = o.dtypes.front();
  const std::string mix = o.mixes.front();
  std::mt19937_64 rng(o.seed);
  const bert::Batch batch = bench::make_batch(config, mix, o.batch, rng);
  const double flops = bench::step_flops(config, batch);
  std::printf("step variants, %s %s (%zu tokens), against default in this run:\n",
              bert::dtype_name(dtype), mix.c_str(), batch.num_tokens());
  std::printf("  %-13s %9s %9s %9s %7s  %s\n", "variant", "step ms", "fwd+bwd", "seq/s", "ratio",
              "how");
  double baseline_ms = 0;
  for (const std::string& name : o.variants) {
    Options with = o;
    apply_variant(name, with.variant);
    try {
      const bench::StepTiming t = bench::time_steps(config, step_run(with, dtype, {batch}, 0));
      if (name == "default") baseline_ms = t.wall_ms;
      const double ratio = baseline_ms > 0 ? baseline_ms / t.wall_ms : 0;
      std::printf("  %-13s %9.2f %9.2f %9.1f %6.3fx  %s; %s\n", name.c_str(), t.wall_ms,
                  t.fwd_bwd_ms, o.batch / (t.wall_ms * 1e-3), ratio, t.tuning.c_str(),
                  t.graphs.c_str());
      std::printf("VARIANT %s %s %s step_ms=%.3f seq_per_s=%.2f ratio=%.4f mfu=%.4f\n",
                  name.c_str(), bert::dtype_name(dtype), mix.c_str(), t.wall_ms,
                  o.batch / (t.wall_ms * 1e-3), ratio,
                  report.peak > 0 ? flops / (t.wall_ms * 1e-3) / 1e12 / report.peak : 0.0);
    } catch (const std::exception& e) {
      std::printf("  %-13s refused: %s\n", name.c_str(), e.what());
      std::printf("VARIANT %s %s %s refused\n", name.c_str(), bert::dtype_name(dtype), mix.c_str());
    }
    std::fflush(stdout);
  }
}

void write_json(const Options& o, const Report& report, const cuda::DeviceInfo& dev) {
  nlohmann::json measured = {
      {"format", "mlbert-device-bench/1"},
      {"model", "bert-large"},
      {"device",
       {{"name", dev.name}, {"multiprocessors", dev.sm_count}, {"describe", dev.describe()}}},
      {"gemm_tflops", report.gemm},
      {"copy_gbs", report.copy},
      {"epilogues", o.epilogues},
      {"dropout", o.dropout},
      {"attention_dropout_bits",
       cuda::attention_dropout_bits_name(o.variant.attention_dropout_bits)},
      {"attention_kernels", cuda::attention_kernels_name(o.variant.attention_kernels)},
      {"attention_deterministic_dq", o.variant.attention_deterministic_dq},
      {"steps", report.steps}};
  if (!report.breakdowns.empty()) measured["breakdown"] = report.breakdowns;
  if (!report.training.empty()) measured["training_steps"] = report.training;
  std::ofstream out(o.json);
  out << measured.dump(2) << "\n";
  if (!out) throw std::runtime_error(o.json + ": cannot write the measurements");
  std::printf("measurements written to %s\n", o.json.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line into the device check's log, so a stage cut short keeps what it measured.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const Options o = parse_options(argc, argv);
  const auto devices = cuda::cuda_devices();
  if (devices.empty()) {
    std::printf("no CUDA device: bert_cuda_bench skipped\n");
    return kSkipped;
  }
  try {
    const auto& dev = devices[0];
    Report report(o);
    report.peak = o.peak_tflops > 0 ? o.peak_tflops : bench::datasheet_peak_tflops(dev.name);
    std::printf("device: %s\n", dev.describe().c_str());
    report.gemm = bench::gemm_ceiling_tflops();
    report.copy = bench::copy_bandwidth_gbs();
    std::printf(
        "baseline: bf16 GEMM 8192^3 through cuBLASLt %.1f TFLOP/s; device copy %.0f GB/s (read + "
        "write)\n",
        report.gemm, report.copy);
    std::printf("peak used for MFU: %.1f TFLOP/s (%s); cuBLASLt epilogues allowed: %s\n",
                report.peak, o.peak_tflops > 0 ? "--peak-tflops" : "datasheet, dense",
                o.epilogues.c_str());
    bert::BertConfig config = bert::BertConfig::preset("bert-large");
    if (o.dropout != "all") config.attention_probs_dropout_prob = 0;
    if (o.dropout == "none") config.hidden_dropout_prob = 0;
    if (o.dropout != "all")
      std::printf("dropout: %s (not a training configuration)\n", o.dropout.c_str());
    std::printf("attention dropout bits: %s; attention kernels: %s%s\n",
                cuda::attention_dropout_bits_name(o.variant.attention_dropout_bits),
                cuda::attention_kernels_name(o.variant.attention_kernels),
                o.variant.attention_deterministic_dq ? " (deterministic dQ)" : "");
    if (o.variants.empty()) {
      report.header();
      time_configurations(o, config, report);
      if (!o.system.empty()) time_training(o, config, report);
    }
    if (!o.json.empty()) write_json(o, report, dev);
    // The verdict covers the configurations above; the variants after it are measurements.
    if (o.check) {
      for (const auto& f : report.failures)
        std::printf("bert_cuda_bench: check FAILED: %s\n", f.c_str());
      if (report.failures.empty())
        std::printf(
            "bert_cuda_bench: check passed (finite loss, seq/s > 0, no skipped timed step, "
            "no allocation after warm-up)\n");
    }
    if (!o.variants.empty()) time_variants(o, config, report);
    return o.check && !report.failures.empty() ? 1 : 0;
  } catch (const std::exception& e) {
    std::printf("bert_cuda_bench: error: %s\n", e.what());
    return 1;
  }
}
