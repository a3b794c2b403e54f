// The timed run of one rank (see timed_run.h). A step: each micro-batch's samples from the loader
// (exchanged in the load-balancing group), forward and backward with the last micro-batch's
// gradients allreduced in buckets as backward produces them, then the optimizer.
#include "harness/train/timed_run.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>

#include "common/atomic_file.h"
#include "common/elapsed.h"
#include "harness/train/progress.h"
#include "mlperf_logging/log/mllog.h"

namespace mlbert::harness {
namespace {

namespace key = mllog::key;
using Json = mllog::Json;
using Clock = std::chrono::steady_clock;

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

class TimedRun {
 public:
  TimedRun(const TrainOptions& o, const Prepared& p, RankState& s, MpiCommunicator& world,
           RunLog& log, RunGuard& guard, RunObserver& observer, std::int64_t seed)
      : o_(o),
        p_(p),
        run_(p.system.run),
        s_(s),
        world_(world),
        log_(log),
        guard_(guard),
        observer_(observer),
        seed_(seed),
        interval_(eval_interval(run_)),
        progress_(Progress::for_stderr(o.progress_display, world.rank() == 0,
                                       p.system.run.target_accuracy, p.max_steps)) {
    next_eval_ = run_.eval.start_samples > 0 ? run_.eval.start_samples : interval_;
    s_.sync->on_first_launch([this] { observer_.reached(RunPoint::allreduce); });
  }
  ~TimedRun() { s_.sync->on_first_launch(nullptr); }
  TimedRun(const TimedRun&) = delete;
  TimedRun& operator=(const TimedRun&) = delete;

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
    for (int a = 0; a < accumulation; ++a) micro_step(loader, a, loss_scale, t);
    auto t0 = Clock::now();
    const SyncResult synced = s_.sync->finish();
    t.comm_wait = seconds_since(t0);
    const bool skip = s_.scaler->update(synced.overflow);
    const bool dump = !o_.dump_dir.empty() && step_ < o_.dump_steps && world_.rank() == 0;
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

  // Micro-batch `a` of the step: its samples, then forward and backward (the last one's
  // gradients go to the sync as backward produces them).
  void micro_step(BatchLoader& loader, int a, double loss_scale, StepTimes& t) {
    const int accumulation = run_.gradient_accumulation;
    const int rank = world_.rank(), size = world_.size();
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
        last ? std::function<void(std::size_t)>([&](std::size_t n) { s_.sync->on_grad_ready(n); })
             : std::function<void(std::size_t)>(),
        options);
    t.loss += result.total_loss / accumulation;
    t.compute += seconds_since(t0);
  }

  // Tests: every rank lists the samples it trains, <dump_dir>/step_<k>.rank_<r>.samples, one
  // line per sample: micro-batch, length, fingerprint.
  void dump_samples(int micro_batch, const std::vector<data::Sample>& samples) const {
    const auto file = o_.dump_dir / ("step_" + std::to_string(step_ + 1) + ".rank_" +
                                     std::to_string(world_.rank()) + ".samples");
    // Appended to by each micro-batch of the step, not written atomically: a test's record that
    // it reads after the run, never an output of a run.
    errno = 0;
    std::ofstream out(file, micro_batch == 0 ? std::ios::trunc : std::ios::app);
    for (const auto& sample : samples)
      out << micro_batch << ' ' << sample.length() << ' ' << std::hex << sample_fingerprint(sample)
          << std::dec << '\n';
    out.close();
    if (!out)
      throw std::runtime_error(file.string() + ": cannot write the samples dump: " +
                               (errno ? std::strerror(errno) : "stream error"));
  }

  // The eval set over all ranks; true when the target is reached.
  bool evaluate() {
    progress_.eval_started();
    Json epoch = Json::object();
    epoch["epoch_num"] = samples_seen_;
    log_.start(key::eval_start, samples_seen_, epoch);
    guard_.doing("in an eval");
    std::int64_t counts[2] = {0, 0};
    for (std::size_t i = 0; i < p_.eval.batches.size(); ++i) {
      const bert::EvalResult r = s_.model->evaluate(p_.eval.batches[i]);
      counts[0] += r.mlm_correct;
      counts[1] += r.mlm_total;
      guard_.heartbeat();
      if (i == 0) observer_.reached(RunPoint::eval);
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
  RunObserver& observer_;
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

}  // namespace

int run_timed(const TrainOptions& o, const Prepared& p, RankState& s, MpiCommunicator& world,
              RunLog& log, RunGuard& guard, RunObserver& observer, std::int64_t seed) {
  return TimedRun(o, p, s, world, log, guard, observer, seed).run();
}

}  // namespace mlbert::harness
