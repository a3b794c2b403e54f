// One rank of `mlbert train` (see trainer.h): preflight, init phase, the step loop, evals, MLLOG.
#include "harness/train/trainer.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "bert/checkpoint/checkpoint.h"
#include "bert/cpu/cpu_ops.h"
#include "bert/model.h"
#include "bert/parameters.h"
#include "common/atomic_file.h"
#include "common/elapsed.h"
#include "common/input_file.h"
#include "harness/comm/grad_sync.h"
#include "harness/launch/launcher.h"
#include "harness/config/model_spec.h"
#include "harness/train/optimizer.h"
#include "harness/train/result_log.h"
#include "harness/train/run_guard.h"
#include "harness/data/sampler.h"
#include "harness/config/system_config.h"
#include "harness/train/test_hooks.h"
#include "harness/data/training_data.h"
#include "mlperf_logging/rules/bert_tensors.h"
#include "mlperf_logging/log/mllog.h"

#ifdef MLBERT_HAVE_CUDA
#include "bert/cuda/cuda_ops.h"
#include "harness/comm/nccl_communicator.h"
#endif

namespace mlbert::harness {
namespace {

namespace key = mllog::key;
using Json = mllog::Json;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// preflight: everything checked before init_start

struct Prepared {
  SystemConfig system;
  bert::BertConfig config;
  std::string backend;
  TrainingDataset data;
  EvalShare eval;
  data::ReadOptions read_options;
  std::filesystem::path init_checkpoint;  // the checkpoint file, when --init-checkpoint is given
  std::optional<ResultLogFile> log_file;  // rank 0: claimed, written from init_start on
  std::int64_t max_steps = 0;
};

std::int64_t count_lines(const std::filesystem::path& path) {
  std::ifstream in = files::open_input(path, "vocab file");
  std::int64_t lines = 0;
  std::string line;
  while (std::getline(in, line)) ++lines;
  return lines;
}

bert::BertConfig model_config(const TrainOptions& o, const SystemConfig& system) {
  const ModelSpec& spec = system.run.model;
  bert::BertConfig config = model_from_spec(spec, system.path);
  if (spec.vocab_from_data || !o.vocab.empty()) {
    const auto vocab = o.vocab.empty() ? o.data / "vocab.txt" : o.vocab;
    if (!std::filesystem::exists(vocab))
      throw std::runtime_error(vocab.string() +
                               ": missing (run.model.vocab_from_data takes the "
                               "vocabulary size from it; pass --vocab)");
    config.vocab_size = count_lines(vocab);
  }
  config.validate();
  return config;
}

Prepared preflight(const TrainOptions& o, int rank, int world) {
  Prepared p;
  p.system = load_system(o.system, o.systems_dir);
  const RunSpec& run = p.system.run;
  if (world != p.system.topology.world_size())
    throw std::runtime_error(p.system.path.string() + ": system " + p.system.name + " has " +
                             std::to_string(p.system.topology.world_size()) + " ranks (" +
                             std::to_string(p.system.topology.nodes) + " nodes x " +
                             std::to_string(p.system.topology.ranks_per_node) +
                             ") but this job has " + std::to_string(world) +
                             "; start it with `mlbert launch --system " + p.system.name + "`");
  p.backend = o.backend.value_or(run.backend);
  if (p.backend != "cpu" && p.backend != "cuda")
    throw std::runtime_error("--backend: \"" + p.backend + "\" is not cpu or cuda");
#ifndef MLBERT_HAVE_CUDA
  if (p.backend == "cuda")
    throw std::runtime_error(
        "backend cuda: this mlbert was built without CUDA (no nvcc found at "
        "configure time); use --backend cpu");
#else
  if (p.backend == "cuda" && cuda::cuda_device_count() == 0)
    throw std::runtime_error("backend cuda: no CUDA device is visible on this node");
  if (p.backend == "cuda" && run.precision == Precision::fp32)
    throw std::runtime_error(p.system.path.string() +
                             ": run.precision fp32 is not a CUDA compute type (fp16 or bf16)");
#endif
  p.max_steps = o.max_steps.value_or(run.max_steps);
  if (p.max_steps < 1) throw std::runtime_error("--max-steps must be >= 1");
  if (o.data.empty())
    throw std::runtime_error("--data: a directory of training shards is required");
  if (o.eval_data.empty()) throw std::runtime_error("--eval-data: the eval set is required");
  for (const auto& path : {o.data, o.eval_data})
    if (!std::filesystem::exists(path))
      throw std::runtime_error(path.string() + ": does not exist");
  p.config = model_config(o, p.system);
  if (p.config.max_position_embeddings < run.max_seq_length)
    throw std::runtime_error(p.system.path.string() + ": run.max_seq_length " +
                             std::to_string(run.max_seq_length) + " exceeds the model's " +
                             std::to_string(p.config.max_position_embeddings) + " positions");
  p.read_options.vocab_size = static_cast<std::int32_t>(p.config.vocab_size);
  p.read_options.format.max_seq_length = run.max_seq_length;
  p.read_options.format.max_predictions_per_seq = run.max_predictions_per_seq;
  p.data = open_training_data(o.data, run);
  check_length_index(p.data, rank, world);  // global-deal: each rank hashes its share of shards
  // The sampler checks that every stream holds at least one micro-step.
  Sampler(p.data.streams, p.data.quotas, world, 0);
  p.eval = load_eval_share(o.eval_data, rank, world, run.eval.batch_size, run.eval.eval_samples,
                           p.read_options);
  if (!o.init_checkpoint.empty())
    p.init_checkpoint = init_checkpoint_for(o.init_checkpoint, p.config, p.system.name);
  if (!o.dump_dir.empty()) std::filesystem::create_directories(o.dump_dir);
  if (rank == 0) {
    p.log_file = ResultLogFile::claim(o.results_dir / p.system.name / "bert", o.run_index);
    if (!p.log_file->note().empty())
      std::fprintf(stderr, "mlbert train: %s\n", p.log_file->note().c_str());
  }
  return p;
}

// Every rank reports its preflight problem; all fail together with the first one's message.
class PreflightFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void agree_on_preflight(Communicator& world, const std::string& error) {
  const auto blocks =
      world.allgatherv(std::as_bytes(std::span<const char>(error.data(), error.size())));
  for (std::size_t r = 0; r < blocks.size(); ++r) {
    if (blocks[r].empty()) continue;
    const std::string message(reinterpret_cast<const char*>(blocks[r].data()), blocks[r].size());
    throw PreflightFailed(world.size() > 1 ? "rank " + std::to_string(r) + ": " + message
                                           : message);
  }
}

// Evicts the data files from the page cache, so every run reads them like the first one did.
void drop_file_cache(const std::vector<std::filesystem::path>& files) {
  for (const auto& file : files) {
    const int fd = ::open(file.c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// Random sequences of the run's shapes for the init-phase warm-up (no training data is touched
// before run_start).
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

#ifdef MLBERT_HAVE_CUDA
// This rank's GPU: MLBERT_DEVICE (set by `mlbert bind`), else the local rank the launcher states
// (the global rank modulo the ranks per node only when it states none: wrong for a cyclic
// placement, where two ranks of a node would take one GPU). All of it is in the environment
// before MPI starts.
int cuda_device(const SystemConfig& system) {
  if (const char* device = std::getenv("MLBERT_DEVICE"); device && *device)
    return std::atoi(device);
  const int local_rank = local_rank_from_environment().value_or(mllog::rank_from_environment() %
                                                                system.topology.ranks_per_node);
  return local_rank % std::max(cuda::cuda_device_count(), 1);
}
#endif

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

void write_floats(const std::filesystem::path& path, const std::vector<float>& values) {
  files::write_file_atomically(path, std::string_view(reinterpret_cast<const char*>(values.data()),
                                                      values.size() * sizeof(float)));
}

// Per-phase wall time of the steps since the last report.
struct StepTimes {
  double data = 0, exchange = 0, compute = 0, comm_wait = 0, optimizer = 0, total = 0;
  std::int64_t steps = 0, sequences = 0, tokens = 0;
  double loss = 0;
  void add(const StepTimes& t) {
    data += t.data, exchange += t.exchange, compute += t.compute, comm_wait += t.comm_wait;
    optimizer += t.optimizer, total += t.total, loss += t.loss;
    steps += t.steps, sequences += t.sequences, tokens += t.tokens;
  }
  Json as_json(double learning_rate, double loss_scale) const {
    const double n = std::max<std::int64_t>(steps, 1);
    Json j = Json::object();
    j["throughput"] = total > 0 ? sequences / total : 0.0;  // sequences per second, all ranks
    j["tokens_per_s"] = total > 0 ? tokens / total : 0.0;
    j["step_ms"] = 1e3 * total / n;
    j["data_ms"] = 1e3 * data / n;
    j["exchange_ms"] = 1e3 * exchange / n;
    j["compute_ms"] = 1e3 * compute / n;
    j["comm_wait_ms"] = 1e3 * comm_wait / n;
    j["optimizer_ms"] = 1e3 * optimizer / n;
    j["train_loss"] = loss / n;
    j["learning_rate"] = learning_rate;
    j["loss_scale"] = loss_scale;
    return j;
  }
};

// The job's other processes on this machine (same machine key: boot and pid namespace), which
// the run guard watches.
std::vector<PeerProcess> peers_on_this_machine(Communicator& world) {
  struct Identity {
    char machine[16] = {};
    PeerProcess process;
  };
  Identity mine;
  std::snprintf(mine.machine, sizeof(mine.machine), "%s", files::machine_key().c_str());
  mine.process = this_process(world.rank());
  std::vector<Identity> all(static_cast<std::size_t>(world.size()));
  world.allgather(&mine, all.data(), sizeof(Identity));
  std::vector<PeerProcess> peers;
  for (const auto& other : all)
    if (other.process.rank != mine.process.rank &&
        std::string_view(other.machine) == std::string_view(mine.machine))
      peers.push_back(other.process);
  return peers;
}

// The init phase and the timed run of one rank (everything after the preflight).
int train_rank(const TrainOptions& o, const Prepared& p, MpiCommunicator& world, RunLog& log,
               RunGuard& guard, TestHooks& hooks, std::int64_t seed);

}  // namespace

// ---------------------------------------------------------------------------------------------

void select_gpu_before_mpi(const TrainOptions& o) {
#ifdef MLBERT_HAVE_CUDA
  try {
    const SystemConfig system = load_system(o.system, o.systems_dir);
    if (o.backend.value_or(system.run.backend) != "cuda" || cuda::cuda_device_count() == 0) return;
    cuda::set_cuda_device(cuda_device(system));  // CudaOps sets the same device again
  } catch (const std::exception&) {
    // preflight reads the system again and reports the problem with this rank's number
  }
#else
  (void)o;
#endif
}

int run_training(const TrainOptions& o, MpiRuntime& runtime) {
  std::shared_ptr<MpiCommunicator> world = MpiCommunicator::world(runtime, o.progress);
  const int rank = world->rank();
  const int size = world->size();
  TestHooks hooks = TestHooks::from_environment(rank);
  // A full disk or a file size limit must fail the write (EFBIG), not kill the process.
  ::signal(SIGXFSZ, SIG_IGN);

  RunLog log;
  // Ends this rank after a failure, from whichever thread sees it first: run_stop "aborted" in
  // rank 0's log (renamed to its final name), one line naming the cause, then the whole job.
  std::atomic<bool> ending{false};
  const auto end_run = [&](const std::string& cause, int status, bool abort_job) {
    if (ending.exchange(true))
      for (;;) ::pause();  // another thread is ending the run already
    std::thread([status] {
      std::this_thread::sleep_for(std::chrono::seconds(10));
      std::_Exit(status);  // in case the log's disk or MPI_Abort hangs
    }).detach();
    log.stop(mllog::constants::aborted);
    std::fprintf(stderr, "mlbert train: rank %d: %s; run aborted\n", rank, cause.c_str());
    std::fflush(nullptr);
    hooks.report_exit(status, cause);
    if (abort_job) world->abort(status);
    std::_Exit(status);
  };
  // From here on a dead or hung peer, or a SIGTERM from the launcher, ends this rank cleanly.
  RunGuard guard(600.0, [&](const AbortCause& cause) {
    switch (cause.kind) {
      case AbortCause::Kind::signal:  // the launcher is ending the job already
        end_run(cause.reason, 128 + cause.signal, false);
        break;
      case AbortCause::Kind::no_progress:
        end_run(cause.reason, kExitWatchdog, true);
        break;
      case AbortCause::Kind::peer_lost:
        end_run(cause.reason, kExitAborted, true);
        break;
    }
  });
  guard.watch_peers(peers_on_this_machine(*world));

  // ---- preflight (before init_start), agreed on by all ranks
  Prepared p;
  {
    std::string error;
    try {
      p = preflight(o, rank, size);
    } catch (const std::exception& e) {
      error = e.what();
    }
    try {
      agree_on_preflight(*world, error);
    } catch (const PreflightFailed& e) {
      guard.stop_watching_peers();  // every rank leaves now
      if (p.log_file) p.log_file->abandon();
      hooks.report_exit(2, e.what());
      if (rank != 0) return 2;
      throw;
    }
  }
  int status = 0;
  try {
    const RunSpec& run = p.system.run;
    std::int64_t seed = o.seed.value_or(run.seed);
    if (!o.seed && run.seed == 0)
      seed = static_cast<std::int64_t>(std::random_device{}() & 0x7fffffff);
    world->broadcast(&seed, sizeof(seed), 0);  // rank 0's choice for everyone

    guard.set_timeout(run.watchdog_seconds);
    if (p.log_file) log.open(std::move(*p.log_file), o.log_stdout);
    status = train_rank(o, p, *world, log, guard, hooks, seed);
  } catch (const std::exception& e) {
    // After init_start every failure is an aborted run, on every rank.
    end_run(e.what(), kExitAborted, true);
  }
  guard.stop_watching_peers();  // past the last barrier: peers leave at their own pace
  hooks.report_exit(status, status == 0 ? "target reached" : "max steps or samples reached");
  return status;
}

namespace {

// ---------------------------------------------------------------------------------------------
// init phase: the run's configuration in the log, then everything a rank trains with

// The submission and hyperparameter records of the init phase, per the run's ruleset.
void log_run_config(RunLog& log, const Prepared& p, std::int64_t seed) {
  const RunSpec& run = p.system.run;
  const std::string& ruleset = run.ruleset;
  const int major = std::atoi(ruleset.c_str());
  log.event(key::submission_benchmark, "bert");
  if (ruleset < "5.0.0") log.event(key::submission_org, p.system.submitter());
  log.event(key::submission_division, run.division);
  if (ruleset <= "4.0.0") log.event(key::submission_status, p.system.status());
  if (ruleset < "5.0.0") log.event(key::submission_platform, p.system.system_name());
  log.event(key::seed, seed);
  log.event(key::global_batch_size, run.global_batch_size);
  log.event(key::gradient_accumulation_steps, run.gradient_accumulation);
  log.event(key::max_sequence_length, run.max_seq_length);
  log.event(key::max_predictions_per_seq, run.max_predictions_per_seq);
  log.event(key::opt_base_learning_rate, run.optimizer.learning_rate);
  if (run.optimizer.kind == OptimizerKind::lamb) {
    log.event(major <= 1 || ruleset == "2.0.0" ? key::opt_epsilon : key::opt_lamb_epsilon,
              run.optimizer.epsilon);
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

// Everything one rank trains with. Members are destroyed in reverse order, the backend last.
struct RankState {
  std::unique_ptr<bert::Ops> ops;
  std::unique_ptr<bert::ParameterStore> params;
  std::unique_ptr<bert::Model> model;
  std::unique_ptr<Optimizer> optimizer;
  std::shared_ptr<Communicator> grad_comm;      // MPI, or NCCL on GPUs
  std::unique_ptr<Communicator> exchange_comm;  // the load-balancing group, if any
  std::unique_ptr<GradientSync> sync;
  std::unique_ptr<LossScaler> scaler;
  std::unique_ptr<Sampler> sampler;
};

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

// Weights from the checkpoint or the seed, logged per tensor where the ruleset asks, and checked
// to be the same on every rank.
void init_weights(const Prepared& p, RankState& s, Communicator& world, RunLog& log,
                  std::int64_t seed) {
  if (p.init_checkpoint.empty())
    s.params->init_truncated_normal(static_cast<std::uint64_t>(seed));
  else
    bert::load_checkpoint(*s.params, p.init_checkpoint);
  // Rulesets 1.1.0-2.1.0 require one weights_initialization per tensor (the 398 of bert-large).
  const std::string& ruleset = p.system.run.ruleset;
  if (ruleset == "1.1.0" || ruleset == "2.0.0" || ruleset == "2.1.0") {
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

RankState init_rank(const Prepared& p, MpiCommunicator& world, RunLog& log, RunGuard& guard,
                    TestHooks& hooks, std::int64_t seed) {
  const RunSpec& run = p.system.run;
  const int rank = world.rank();
  const bert::ModelLimits limits = model_limits(run);
  RankState s;
  s.ops = make_backend(p, limits);
  s.params = std::make_unique<bert::ParameterStore>(p.config, *s.ops);
  init_weights(p, s, world, log, seed);
  guard.heartbeat();  // each init step beats: the watchdog covers init (watchdog_seconds each)
  hooks.fault_point(FaultPoint::init);
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

// The step's kernels and collectives on synthetic data; weights stay as they are.
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

// ---------------------------------------------------------------------------------------------
// the timed run: steps, evals at the cadence, the stop

class TimedRun {
 public:
  TimedRun(const TrainOptions& o, const Prepared& p, RankState& s, MpiCommunicator& world,
           RunLog& log, RunGuard& guard, TestHooks& hooks, std::int64_t seed)
      : o_(o),
        p_(p),
        run_(p.system.run),
        s_(s),
        world_(world),
        log_(log),
        guard_(guard),
        hooks_(hooks),
        seed_(seed),
        interval_(eval_interval(run_)),
        progress_(Progress::for_stderr(o.progress_display, world.rank() == 0,
                                       p.system.run.target_accuracy, p.max_steps)) {
    next_eval_ = run_.eval.start_samples > 0 ? run_.eval.start_samples : interval_;
  }

  // run_start to run_stop; returns the exit status.
  int run() {
    world_.barrier();
    log_.start(key::run_start);
    progress_.run_started();
    guard_.heartbeat();
    guard_.doing("in a training step");
    bool converged = false;
    {
      // global-deal: the loader thread plans the world's deal and reads this rank's share.
      BatchLoader loader(p_.data,
                         run_.load_balancing == LoadBalancing::global_deal
                             ? dealt_batches(*s_.sampler, p_.data, world_.rank())
                             : sampled_batches(*s_.sampler, world_.rank()),
                         p_.read_options, 0);
      Json epoch0 = Json::object();
      epoch0["epoch_num"] = 0;
      log_.start(key::epoch_start, nullptr, epoch0);
      Json block = Json::object();
      block["first_epoch_num"] = 1;
      block["epoch_count"] = 1;
      log_.start(key::block_start, nullptr, block);
      guard_.heartbeat();
      while (step_ < p_.max_steps && (run_.max_samples == 0 || samples_seen_ < run_.max_samples)) {
        train_step(loader);
        if (samples_seen_ >= next_eval_) {
          while (next_eval_ <= samples_seen_) next_eval_ += interval_;
          if ((converged = evaluate())) break;
        }
      }
      if (!converged && window_.steps > 0) converged = evaluate();  // the last steps
    }
    guard_.doing("at the end of the run");
    stop(converged);
    world_.barrier();
    guard_.arm(false);
    return converged ? 0 : kExitNotConverged;
  }

 private:
  // One step: the micro-batches' forward and backward, the gradient sync, the optimizer.
  void train_step(BatchLoader& loader) {
    const auto step_start = Clock::now();
    StepTimes t;
    const int accumulation = run_.gradient_accumulation;
    const double loss_scale = s_.scaler->scale();
    const int rank = world_.rank(), size = world_.size();
    for (int a = 0; a < accumulation; ++a) {
      const std::int64_t micro = step_ * accumulation + a;
      auto t0 = Clock::now();
      guard_.doing("waiting for its training data");
      auto samples = loader.next();
      guard_.doing("in a training step");
      t.data += seconds_since(t0);
      t0 = Clock::now();
      if (s_.exchange_comm) samples = exchange_samples(*s_.exchange_comm, std::move(samples));
      if (!o_.dump_dir.empty() && step_ < o_.dump_steps) dump_samples(a, samples);
      const bert::Batch batch = make_batch(samples);
      t.exchange += seconds_since(t0);
      t.tokens += static_cast<std::int64_t>(batch.num_tokens()) * size;  // estimate: x ranks
      t0 = Clock::now();
      const bool last = a == accumulation - 1;
      if (last) s_.sync->begin(loss_scale);
      bert::ForwardBackwardOptions options;
      options.zero_grads = a == 0;
      options.loss_scale = static_cast<float>(loss_scale / accumulation);
      // Dropout differs per rank and micro-batch: keyed by the global slice index.
      const bert::DropoutKey dropout{static_cast<std::uint64_t>(seed_),
                                     static_cast<std::uint32_t>(micro * size + rank)};
      const auto result = s_.model->forward_backward(
          batch, dropout,
          last ? std::function<void(std::size_t)>([&](std::size_t n) {
            const bool none_sent = s_.sync->launched_buckets() == 0;
            s_.sync->on_grad_ready(n);
            if (none_sent && s_.sync->launched_buckets() > 0)
              hooks_.fault_point(FaultPoint::allreduce);  // the peers are in it now
          })
               : std::function<void(std::size_t)>(),
          options);
      t.loss += result.total_loss / accumulation;
      t.compute += seconds_since(t0);
    }
    auto t0 = Clock::now();
    const SyncResult synced = s_.sync->finish();
    t.comm_wait = seconds_since(t0);
    const bool skip = s_.scaler->update(synced.overflow);
    const bool dump = !o_.dump_dir.empty() && step_ < o_.dump_steps && rank == 0;
    if (dump) {
      auto grad = s_.params->download_grad();
      for (auto& g : grad) g *= synced.grad_scale;
      write_floats(o_.dump_dir / ("step_" + std::to_string(step_ + 1) + ".grad"), grad);
    }
    t0 = Clock::now();
    if (!skip) learning_rate_ = s_.optimizer->step(synced.grad_scale);
    s_.ops->synchronize();
    t.optimizer = seconds_since(t0);
    if (dump)
      write_floats(o_.dump_dir / ("step_" + std::to_string(step_ + 1) + ".master"),
                   s_.params->download_master());
    ++step_;
    samples_seen_ += run_.global_batch_size;
    guard_.heartbeat();
    t.total = seconds_since(step_start);
    t.steps = 1;
    t.sequences = run_.global_batch_size;
    window_.add(t);
    whole_.add(t);
    progress_.step(step_, samples_seen_);
  }

  // Tests: every rank lists the samples it trains, <dump_dir>/step_<k>.rank_<r>.samples, one
  // line per sample: micro-batch, length, fingerprint.
  void dump_samples(int micro_batch, const std::vector<data::Sample>& samples) const {
    const auto file = o_.dump_dir / ("step_" + std::to_string(step_ + 1) + ".rank_" +
                                     std::to_string(world_.rank()) + ".samples");
    std::ofstream out(file, micro_batch == 0 ? std::ios::trunc : std::ios::app);
    for (const auto& sample : samples)
      out << micro_batch << ' ' << sample.length() << ' ' << std::hex << sample_fingerprint(sample)
          << std::dec << '\n';
    if (!out) throw std::runtime_error(file.string() + ": cannot write");
  }

  // The eval set over all ranks; true when the target is reached.
  bool evaluate() {
    progress_.eval_started();
    Json epoch = Json::object();
    epoch["epoch_num"] = samples_seen_;
    log_.start(key::eval_start, samples_seen_, epoch);
    guard_.doing("in an eval");
    std::int64_t counts[2] = {0, 0};
    for (const auto& batch : p_.eval.batches) {
      const bert::EvalResult r = s_.model->evaluate(batch);
      counts[0] += r.mlm_correct;
      counts[1] += r.mlm_total;
      guard_.heartbeat();
      if (&batch == &p_.eval.batches.front()) hooks_.fault_point(FaultPoint::eval);
    }
    world_.allreduce(counts, 2, DataType::i64, ReduceOp::sum);  // exact: integer counts
    last_accuracy_ = counts[1] > 0 ? static_cast<double>(counts[0]) / counts[1] : 0.0;
    log_.end(key::eval_stop, samples_seen_, epoch);
    log_.event(key::eval_accuracy, last_accuracy_, epoch);
    Json step_meta = Json::object();
    step_meta["step"] = step_;
    log_.event(key::tracked_stats, window_.as_json(learning_rate_, s_.scaler->scale()), step_meta);
    window_ = StepTimes{};
    progress_.eval(step_, samples_seen_, last_accuracy_);
    return last_accuracy_ >= run_.target_accuracy;
  }

  // The closing records and run_stop.
  void stop(bool converged) {
    Json block_end = Json::object();
    block_end["first_epoch_num"] = 1;
    log_.end(key::block_stop, nullptr, block_end);
    Json epoch_end = Json::object();
    epoch_end["epoch_num"] = samples_seen_;
    log_.end(key::epoch_stop, nullptr, epoch_end);
    log_.event(key::train_samples, samples_seen_);
    log_.event(key::eval_samples, p_.eval.total_samples);
    Json summary_meta = Json::object();
    summary_meta["step"] = step_;
    summary_meta["summary"] = "whole run";
    log_.event(key::tracked_stats, whole_.as_json(learning_rate_, s_.scaler->scale()),
               summary_meta);
    if (!log_.stop(converged ? mllog::constants::success : mllog::constants::aborted))
      throw std::runtime_error("the result log could not be completed");
    progress_.stopped(converged, step_, samples_seen_);
  }

  const TrainOptions& o_;
  const Prepared& p_;
  const RunSpec& run_;
  RankState& s_;
  MpiCommunicator& world_;
  RunLog& log_;
  RunGuard& guard_;
  TestHooks& hooks_;
  std::int64_t seed_;
  std::int64_t interval_;
  std::int64_t next_eval_ = 0;
  std::int64_t samples_seen_ = 0;
  std::int64_t step_ = 0;
  double last_accuracy_ = 0;
  double learning_rate_ = 0;
  StepTimes window_, whole_;
  Progress progress_;
};

int train_rank(const TrainOptions& o, const Prepared& p, MpiCommunicator& world, RunLog& log,
               RunGuard& guard, TestHooks& hooks, std::int64_t seed) {
  std::vector<std::filesystem::path> data_files;
  for (const auto& shard : p.data.shards) data_files.push_back(shard.path);
  for (const auto& f : find_shards(o.eval_data)) data_files.push_back(f);
  drop_file_cache(data_files);
  guard.arm(true);  // from here to the last barrier, a rank that stops beating ends the run
  guard.doing("in init");
  world.barrier();

  log.event(key::cache_clear, true);
  log.start(key::init_start);
  log_run_config(log, p, seed);
  RankState state = init_rank(p, world, log, guard, hooks, seed);
  warm_up(p, state, guard, seed);
  world.barrier();
  log.end(key::init_stop);

  const int status = TimedRun(o, p, state, world, log, guard, hooks, seed).run();
#ifdef MLBERT_HAVE_CUDA
  // Which GEMMs ran with cuBLASLt's fused epilogues (a refused plan was named when it happened).
  if (p.backend == "cuda" && world.rank() == 0)
    std::fprintf(stderr, "mlbert train: %s\n",
                 static_cast<cuda::CudaOps*>(state.ops.get())->gemm().fusion_report().c_str());
#endif
  return status;
}

}  // namespace
}  // namespace mlbert::harness
