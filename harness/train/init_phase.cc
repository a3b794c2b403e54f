// The init phase of one rank (see init_phase.h).
#include "harness/train/init_phase.h"

#include <cstdlib>
#include <random>
#include <stdexcept>

#include "bert/checkpoint/checkpoint.h"
#include "bert/cpu/cpu_ops.h"
#include "harness/launch/launcher.h"
#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/rules/rulesets.h"

#ifdef MLBERT_HAVE_CUDA
#include "bert/cuda/cuda_ops.h"
#include "harness/comm/nccl_communicator.h"
#endif

namespace mlbert::harness {

namespace key = mllog::key;
using Json = mllog::Json;

#ifdef MLBERT_HAVE_CUDA
int cuda_device(const SystemConfig& system) {
  if (const char* device = std::getenv("MLBERT_DEVICE"); device && *device)
    return std::atoi(device);
  const int local_rank = local_rank_from_environment().value_or(mllog::rank_from_environment() %
                                                                system.topology.ranks_per_node);
  return local_rank % std::max(cuda::cuda_device_count(), 1);
}
#endif

void log_run_config(RunLog& log, const Prepared& p, std::int64_t seed) {
  const RunSpec& run = p.system.run;
  const mllog::BertInitRecords records = mllog::bert_init_records(run.ruleset);
  log.event(key::submission_benchmark, "bert");
  if (records.submission_org_and_platform) log.event(key::submission_org, p.system.submitter());
  log.event(key::submission_division, run.division);
  if (records.submission_status) log.event(key::submission_status, p.system.status());
  if (records.submission_org_and_platform)
    log.event(key::submission_platform, p.system.system_name());
  log.event(key::seed, seed);
  log.event(key::global_batch_size, run.global_batch_size);
  log.event(key::gradient_accumulation_steps, run.gradient_accumulation);
  log.event(key::max_sequence_length, run.max_seq_length);
  log.event(key::max_predictions_per_seq, run.max_predictions_per_seq);
  log.event(key::opt_base_learning_rate, run.optimizer.learning_rate);
  if (run.optimizer.kind == OptimizerKind::lamb) {
    log.event(records.lamb_epsilon_key, run.optimizer.epsilon);
    log.event(key::opt_lamb_beta_1, run.optimizer.beta1);
    log.event(key::opt_lamb_beta_2, run.optimizer.beta2);
    log.event(key::opt_lamb_weight_decay_rate, run.optimizer.weight_decay);
  } else {
    log.event(key::opt_name, to_string(run.optimizer.kind));
    log.event(key::opt_adam_beta_1, run.optimizer.beta1);
    log.event(key::opt_adam_beta_2, run.optimizer.beta2);
    log.event(key::opt_adam_epsilon, run.optimizer.epsilon);
    log.event(key::opt_weight_decay, run.optimizer.weight_decay);
  }
  log.event(key::opt_learning_rate_training_steps, run.lr_schedule.training_steps);
  log.event(key::opt_learning_rate_warmup_steps, run.lr_schedule.warmup_steps);
  log.event(key::num_warmup_steps, run.lr_schedule.warmup_steps);
  log.event(key::start_warmup_step, run.lr_schedule.start_warmup_step);
  log.event(key::opt_lamb_learning_rate_decay_poly_power, run.lr_schedule.poly_power);
  log.event(key::opt_end_learning_rate, run.lr_schedule.end_learning_rate);
  log.event(key::max_steps, p.max_steps);
}

namespace {

bert::ModelLimits model_limits(const RunSpec& run) {
  bert::ModelLimits limits;
  const std::size_t max_sequences =
      static_cast<std::size_t>(std::max(run.per_rank_batch, run.eval.batch_size));
  limits.max_sequences = max_sequences;
  limits.max_tokens = max_sequences * run.max_seq_length;
  limits.max_masked = max_sequences * run.max_predictions_per_seq;
  limits.max_seqlen = run.max_seq_length;
  return limits;
}

std::unique_ptr<bert::Ops> make_backend(const Prepared& p, const bert::ModelLimits& limits) {
  if (p.backend == "cpu") return std::make_unique<bert::CpuOps>();
#ifdef MLBERT_HAVE_CUDA
  const bert::DType dtype =
      p.system.run.precision == Precision::fp16 ? bert::DType::f16 : bert::DType::bf16;
  auto options = cuda::cuda_ops_options_for(p.config, limits, dtype);
  options.device = cuda_device(p.system);
  return std::make_unique<cuda::CudaOps>(options);
#else
  (void)limits;
  throw std::runtime_error("backend cuda: built without CUDA");
#endif
}

// Weights from the checkpoint or the seed, logged per tensor where the ruleset asks, and checked
// to be the same on every rank.
void init_weights(const Prepared& p, RankState& s, Communicator& world, RunLog& log,
                  std::int64_t seed) {
  if (p.init_checkpoint.empty())
    s.params->init_truncated_normal(static_cast<std::uint64_t>(seed));
  else
    bert::load_checkpoint(*s.params, p.init_checkpoint);
  if (mllog::bert_init_records(p.system.run.ruleset).weights_initialization) {
    for (const auto& info : s.params->infos()) {
      Json metadata = Json::object();
      metadata["tensor"] = info.name;
      log.event(key::weights_initialization, nullptr, metadata);
    }
  }
  bert::Buffer total(*s.ops, bert::DType::f32, 2);
  bert::L2NormParams norm;
  norm.buffer = s.params->master();
  norm.segments = s.params->segments();
  norm.total = total.tensor();
  s.ops->l2_norm(norm);
  float host[2];
  s.ops->copy_to_host(host, total.tensor(), sizeof(host));
  const double mine = host[0];
  if (world.max(mine) != -world.max(-mine))
    throw std::runtime_error("the ranks hold different initial weights");
}

// Random sequences of the run's shapes for the warm-up (no training data is touched before
// run_start).
bert::Batch synthetic_batch(const bert::BertConfig& config, const RunSpec& run,
                            std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<data::Sample> samples(run.per_rank_batch);
  for (auto& s : samples) {
    const int length = run.max_seq_length;
    s.input_ids.resize(length);
    s.segment_ids.resize(length);
    for (int i = 0; i < length; ++i) {
      s.input_ids[i] = static_cast<std::int32_t>(1 + rng() % (config.vocab_size - 1));
      s.segment_ids[i] = i < length / 2 ? 0 : 1;
    }
    for (int m = 0; m < run.max_predictions_per_seq && 1 + 2 * m < length; ++m) {
      s.masked_lm_positions.push_back(1 + 2 * m);
      s.masked_lm_ids.push_back(s.input_ids[1 + 2 * m]);
    }
    s.next_sentence_label = static_cast<std::int8_t>(rng() % 2);
  }
  return make_batch(samples);
}

}  // namespace

RankState init_rank(const Prepared& p, MpiCommunicator& world, RunLog& log, RunGuard& guard,
                    RunObserver& observer, std::int64_t seed) {
  const RunSpec& run = p.system.run;
  const int rank = world.rank();
  const bert::ModelLimits limits = model_limits(run);
  RankState s;
  s.ops = make_backend(p, limits);
  s.params = std::make_unique<bert::ParameterStore>(p.config, *s.ops);
  init_weights(p, s, world, log, seed);
  guard.heartbeat();  // each init step beats: the watchdog covers init (watchdog_seconds each)
  observer.reached(RunPoint::init);
  s.model = std::make_unique<bert::Model>(*s.params, limits);
  s.optimizer = std::make_unique<Optimizer>(*s.params, run.optimizer, run.lr_schedule);
#ifdef MLBERT_HAVE_CUDA
  if (p.backend == "cuda") {
    auto* cuda_ops = static_cast<cuda::CudaOps*>(s.ops.get());
    s.grad_comm = std::make_shared<NcclCommunicator>(world.split(0, rank), cuda_device(p.system),
                                                     cuda_ops->stream());
  }
#endif
  if (!s.grad_comm) s.grad_comm = world.split(0, rank);
  if (run.load_balancing == LoadBalancing::node_exchange)
    s.exchange_comm = world.split(rank / p.system.topology.ranks_per_node, rank);
  else if (run.load_balancing == LoadBalancing::global_exchange)
    s.exchange_comm = world.split(0, rank);
  const auto buckets =
      make_buckets(s.params->infos(), s.params->flat_size(), bucket_elements_for(run.bucket_mb));
  s.sync = std::make_unique<GradientSync>(*s.ops, *s.grad_comm, s.params->grad(), buckets,
                                          run.clipping, run.max_grad_norm);
  guard.heartbeat();
  LossScaleSpec loss_scale_spec = run.loss_scale;
  if (p.backend == "cpu") loss_scale_spec = LossScaleSpec{};  // fp32: no scaling
  s.scaler = std::make_unique<LossScaler>(loss_scale_spec);
  s.sampler = std::make_unique<Sampler>(p.data.streams, p.data.quotas, world.size(),
                                        static_cast<std::uint64_t>(seed));
  return s;
}

void warm_up(const Prepared& p, RankState& s, RunGuard& guard, std::int64_t seed) {
  const RunSpec& run = p.system.run;
  for (std::int64_t i = 0; i < run.warmup_iterations; ++i) {
    const bert::Batch batch = synthetic_batch(p.config, run, static_cast<std::uint64_t>(seed) + i);
    s.sync->begin(1.0);
    s.model->forward_backward(batch, bert::DropoutKey{static_cast<std::uint64_t>(seed), 0},
                              [&](std::size_t n) { s.sync->on_grad_ready(n); });
    s.sync->finish();
    if (!p.eval.batches.empty()) s.model->evaluate(p.eval.batches.front());
    guard.heartbeat();
  }
  s.params->zero_grad();
  s.ops->synchronize();
}

}  // namespace mlbert::harness
