// One rank of `mlbert train` (see trainer.h): the preflight agreed on by all ranks, the init
// phase, the timed run, and how a failure at any point ends the rank and the job.
#include "harness/train/trainer.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "common/input_file.h"
#include "harness/train/init_phase.h"
#include "harness/train/preflight.h"
#include "harness/train/result_log.h"
#include "harness/train/run_guard.h"
#include "harness/train/test_hooks.h"
#include "harness/train/timed_run.h"
#include "mlperf_logging/log/mllog.h"

#ifdef MLBERT_HAVE_CUDA
#include "bert/cuda/cuda_ops.h"
#endif

namespace mlbert::harness {
namespace {

namespace key = mllog::key;

// Ends this rank after a failure, from whichever thread sees it first: run_stop "aborted" in
// rank 0's log (renamed to its final name), one line naming the cause, then the whole job.
class RankEnding {
 public:
  RankEnding(RunLog& log, MpiCommunicator& world, RunObserver& observer)
      : log_(log), world_(world), observer_(observer) {}

  [[noreturn]] void end(const std::string& cause, int status, bool abort_job) {
    if (ending_.exchange(true))
      for (;;) ::pause();  // another thread is ending the run already
    std::thread([status] {
      std::this_thread::sleep_for(std::chrono::seconds(10));
      std::_Exit(status);  // in case the log's disk or MPI_Abort hangs
    }).detach();
    log_.stop(mllog::constants::aborted);
    std::fprintf(stderr, "mlbert train: rank %d: %s; run aborted\n", world_.rank(), cause.c_str());
    std::fflush(nullptr);
    observer_.exiting(status, cause);
    if (abort_job) world_.abort(status);
    std::_Exit(status);
  }

  // What the run guard saw: a dead or hung peer, or a termination signal (the launcher is ending
  // the job already then).
  [[noreturn]] void end(const AbortCause& cause) {
    const bool signal = cause.kind == AbortCause::Kind::signal;
    const int status = signal                                         ? 128 + cause.signal
                       : cause.kind == AbortCause::Kind::no_progress ? kExitWatchdog
                                                                      : kExitAborted;
    end(cause.reason, status, !signal);
  }

 private:
  RunLog& log_;
  MpiCommunicator& world_;
  RunObserver& observer_;
  std::atomic<bool> ending_{false};
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

// The preflight on every rank, agreed on: rank 0 throws the first rank's problem, the other
// ranks return nothing (exit status 2, without a message).
std::optional<Prepared> agreed_preflight(const TrainOptions& o, MpiCommunicator& world,
                                         RunGuard& guard, RunObserver& observer) {
  Prepared p;
  std::string error;
  try {
    p = preflight(o, world.rank(), world.size());
  } catch (const std::exception& e) {
    error = e.what();
  }
  try {
    agree_on_preflight(world, error);
  } catch (const PreflightFailed& e) {
    guard.stop_watching_peers();  // every rank leaves now
    if (p.log_file) p.log_file->abandon();
    observer.exiting(2, e.what());
    if (world.rank() != 0) return std::nullopt;
    throw;
  }
  return p;
}

// --seed, else the system's run.seed, else a random one: rank 0's choice for every rank.
std::int64_t agreed_seed(const TrainOptions& o, const RunSpec& run, Communicator& world) {
  std::int64_t seed = o.seed.value_or(run.seed);
  if (!o.seed && run.seed == 0)
    seed = static_cast<std::int64_t>(std::random_device{}() & 0x7fffffff);
  world.broadcast(&seed, sizeof(seed), 0);
  return seed;
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

// The init phase and the timed run of one rank (everything after the preflight).
int train_rank(const TrainOptions& o, const Prepared& p, MpiCommunicator& world, RunLog& log,
               RunGuard& guard, RunObserver& observer, std::int64_t seed) {
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
  RankState state = init_rank(p, world, log, guard, observer, seed);
  warm_up(p, state, guard, seed);
  world.barrier();
  log.end(key::init_stop);

  const int status = run_timed(o, p, state, world, log, guard, observer, seed);
#ifdef MLBERT_HAVE_CUDA
  // Which GEMMs ran with cuBLASLt's fused epilogues (a refused plan was named when it happened).
  if (p.backend == "cuda" && world.rank() == 0)
    std::fprintf(stderr, "mlbert train: %s\n",
                 static_cast<cuda::CudaOps*>(state.ops.get())->gemm().fusion_report().c_str());
#endif
  return status;
}

}  // namespace

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
  const std::unique_ptr<RunObserver> observer = TestHooks::from_environment(world->rank());
  // A full disk or a file size limit must fail the write (EFBIG), not kill the process.
  ::signal(SIGXFSZ, SIG_IGN);
  // A parent gone (a demo or terminal interrupted) closes the pipe behind stderr: the writes fail
  // (EPIPE), the rank goes on to log run_stop instead of dying of SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  RunLog log;
  RankEnding ending(log, *world, *observer);
  // From here on a dead or hung peer, or a SIGTERM from the launcher, ends this rank cleanly.
  RunGuard guard(600.0, [&](const AbortCause& cause) { ending.end(cause); });
  guard.watch_peers(peers_on_this_machine(*world));

  std::optional<Prepared> p = agreed_preflight(o, *world, guard, *observer);
  if (!p) return 2;
  int status = 0;
  try {
    const std::int64_t seed = agreed_seed(o, p->system.run, *world);
    guard.set_timeout(p->system.run.watchdog_seconds);
    if (p->log_file) log.open(std::move(*p->log_file), o.log_stdout);
    status = train_rank(o, *p, *world, log, guard, *observer, seed);
  } catch (const std::exception& e) {
    // After init_start every failure is an aborted run, on every rank.
    ending.end(e.what(), kExitAborted, true);
  }
  guard.stop_watching_peers();  // past the last barrier: peers leave at their own pace
  observer->exiting(status, status == 0 ? "target reached" : "max steps or samples reached");
  return status;
}

}  // namespace mlbert::harness
