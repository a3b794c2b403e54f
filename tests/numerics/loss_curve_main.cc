// bert_loss_curve: trains BERT for a number of steps the way `mlbert train` does (Model forward
// and backward, GradientSync's clipping, the harness Optimizer at its LR schedule's rate) from
// the weights and batches tests/parity/bert_loss_curve.py writes, and writes every step's loss as
// JSON, for comparison with the same steps in PyTorch.
//
// Design choice: weights come in through load_checkpoint by their Hugging Face names and go out
// through export_hf_safetensors, so the comparison never depends on how ParameterStore lays the
// tensors out; dropout is off, so a run is a deterministic function of the weights, the batches
// and the update rule.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bert/checkpoint/checkpoint.h"
#include "bert/cpu/cpu_ops.h"
#include "bert/model.h"
#include "common/atomic_file.h"
#include "harness/comm/grad_sync.h"
#include "harness/train/optimizer.h"
#include "tests/numerics/single_rank_communicator.h"
#include "tests/numerics/training_batches.h"
#if MLBERT_HAVE_CUDA
#include "bert/cuda/cuda_ops.h"
#endif

namespace {

using namespace mlbert;

struct Options {
  std::filesystem::path config, weights, batches, out, final_weights;
  std::string backend = "cpu", precision = "bf16";
  harness::OptimizerSpec optimizer;
  harness::LrScheduleSpec schedule;
  double max_grad_norm = 1.0;  // 0: no clipping
  double bucket_mb = 25.0;
  int64_t steps = 0;  // 0: one per batch in the file
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("--config", o.config, "Hugging Face config.json of the model")->required();
  app.add_option("--weights", o.weights, "initial weights (a checkpoint load_checkpoint reads)")
      ->required();
  app.add_option("--batches", o.batches, "the batch file (tests/numerics/training_batches.h)")
      ->required();
  app.add_option("--out", o.out, "where the per-step losses go (JSON)")->required();
  app.add_option("--final-weights", o.final_weights, "the weights after the last step (HF names)");
  app.add_option("--backend", o.backend)->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--precision", o.precision, "CUDA compute precision")
      ->check(CLI::IsMember({"bf16", "fp16"}));
  const std::map<std::string, harness::OptimizerKind> kinds{
      {"lamb", harness::OptimizerKind::lamb},
      {"adam", harness::OptimizerKind::adam},
      {"adamw", harness::OptimizerKind::adamw}};
  app.add_option("--optimizer", o.optimizer.kind)->transform(CLI::CheckedTransformer(kinds));
  app.add_option("--learning-rate", o.optimizer.learning_rate)->required();
  app.add_option("--beta1", o.optimizer.beta1);
  app.add_option("--beta2", o.optimizer.beta2);
  app.add_option("--epsilon", o.optimizer.epsilon);
  app.add_option("--weight-decay", o.optimizer.weight_decay);
  const std::map<std::string, harness::LrScheduleStyle> styles{
      {"reference", harness::LrScheduleStyle::reference},
      {"nvidia", harness::LrScheduleStyle::nvidia}};
  app.add_option("--schedule", o.schedule.style)->transform(CLI::CheckedTransformer(styles));
  app.add_option("--warmup-steps", o.schedule.warmup_steps);
  app.add_option("--start-warmup-step", o.schedule.start_warmup_step);
  app.add_option("--decay-steps", o.schedule.decay_steps)->required();
  app.add_option("--poly-power", o.schedule.poly_power);
  app.add_option("--end-learning-rate", o.schedule.end_learning_rate);
  app.add_option("--max-grad-norm", o.max_grad_norm, "global-norm clipping (0: none)");
  app.add_option("--steps", o.steps, "steps to run (0: one per batch)");
}

std::unique_ptr<bert::Ops> make_backend(const Options& o, const bert::BertConfig& config,
                                        const bert::ModelLimits& limits) {
  if (o.backend == "cpu") return std::make_unique<bert::CpuOps>();
#if MLBERT_HAVE_CUDA
  return cuda::make_cuda_ops(config, limits, o.precision);
#else
  (void)config, (void)limits;
  throw std::runtime_error("--backend cuda: this build has no CUDA backend (nvcc was not found)");
#endif
}

struct StepRecord {
  bert::StepResult losses;
  double learning_rate = 0, grad_norm = 0, clip_factor = 1;
};

// The steps, as the trainer's train_step runs one micro-batch per step at loss scale 1.
std::vector<StepRecord> train(const Options& o, const std::vector<bert::Batch>& batches,
                              bert::Model& model, harness::Optimizer& optimizer) {
  bert::ParameterStore& params = model.parameters();
  test::SingleRankCommunicator comm;
  const auto buckets = harness::make_buckets(params.infos(), params.flat_size(),
                                             harness::bucket_elements_for(o.bucket_mb));
  harness::GradientSync sync(
      params.ops(), comm, params.grad(), buckets,
      o.max_grad_norm > 0 ? harness::ClippingMode::after_allreduce : harness::ClippingMode::none,
      o.max_grad_norm);
  bert::ForwardBackwardOptions options;
  options.dropout = false;
  std::vector<StepRecord> records;
  for (int64_t step = 0; step < o.steps; ++step) {
    sync.begin(1.0);
    StepRecord r;
    r.losses = model.forward_backward(
        batches[static_cast<size_t>(step)], bert::DropoutKey{},
        [&](size_t ready) { sync.on_grad_ready(ready); }, options);
    const harness::SyncResult synced = sync.finish();
    if (synced.overflow)
      throw std::runtime_error("step " + std::to_string(step + 1) +
                               ": the gradient is not finite (loss " +
                               std::to_string(r.losses.total_loss) + ")");
    r.grad_norm = synced.global_norm;
    r.clip_factor = synced.clip_factor;
    r.learning_rate = optimizer.step(synced.grad_scale);
    records.push_back(r);
  }
  params.ops().synchronize();
  return records;
}

nlohmann::ordered_json curve_json(const Options& o, const bert::ParameterStore& params,
                                  const std::vector<StepRecord>& records, double seconds) {
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (size_t i = 0; i < records.size(); ++i) {
    const StepRecord& r = records[i];
    steps.push_back({{"step", i + 1},
                     {"loss", r.losses.total_loss},
                     {"mlm_loss", r.losses.mlm_loss},
                     {"nsp_loss", r.losses.nsp_loss},
                     {"learning_rate", r.learning_rate},
                     {"grad_norm", r.grad_norm},
                     {"clip_factor", r.clip_factor}});
  }
  return {{"backend", params.ops().name()},
          {"compute_dtype", bert::dtype_name(params.ops().compute_dtype())},
          {"optimizer", harness::to_string(o.optimizer.kind)},
          {"schedule", harness::to_string(o.schedule.style)},
          {"parameters", params.parameter_count()},
          {"seconds", seconds},
          {"steps", steps}};
}

int run(const Options& given) {
  Options o = given;
  const bert::BertConfig config = bert::config_from_hf_json(o.config);
  const std::vector<bert::Batch> batches = test::read_training_batches(o.batches, config);
  if (o.steps == 0) o.steps = static_cast<int64_t>(batches.size());
  if (o.steps < 0 || o.steps > static_cast<int64_t>(batches.size()))
    throw std::runtime_error("--steps " + std::to_string(o.steps) + ": " + o.batches.string() +
                             " holds " + std::to_string(batches.size()) + " batches");
  const bert::ModelLimits limits = test::limits_of(batches);
  std::unique_ptr<bert::Ops> ops = make_backend(o, config, limits);
  bert::ParameterStore params(config, *ops);
  bert::load_checkpoint(params, o.weights);
  bert::Model model(params, limits);
  harness::Optimizer optimizer(params, o.optimizer, o.schedule);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<StepRecord> records = train(o, batches, model, optimizer);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  files::write_file_atomically(o.out, curve_json(o, params, records, seconds).dump(1) + "\n");
  if (!o.final_weights.empty()) bert::export_hf_safetensors(params, o.final_weights);
  std::printf("bert_loss_curve: %lld steps on %s in %.1f s, loss %.6f -> %.6f\n",
              static_cast<long long>(records.size()), params.ops().name().c_str(), seconds,
              records.front().losses.total_loss, records.back().losses.total_loss);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Trains BERT from given weights and batches as mlbert does; per-step losses as JSON"};
  Options options;
  add_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help, or a usage error CLI11 has printed
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bert_loss_curve: error: %s\n", e.what());
    return 2;
  }
}
