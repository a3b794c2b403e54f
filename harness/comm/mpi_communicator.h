// The MPI communicator: CPU gradients and every host-side exchange (samples, eval counts, NCCL
// ids).
//
// Design choice: non-blocking allreduces are issued and driven by one progress thread per
// communicator (MPI_Iallreduce, then MPI_Testsome in a loop with a short sleep), because Open MPI
// advances a non-blocking collective only inside MPI calls: without the thread the reduction
// would wait for the main thread's next MPI call, i.e. until backward ends, and nothing would
// overlap. The main thread never touches an outstanding request.
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <mutex>

#include "harness/comm/communicator.h"

namespace mlbert::harness {

// MPI_Init_thread / MPI_Finalize, once per process. Errors on MPI_COMM_WORLD are returned (and
// become CommunicatorError) rather than killing the process silently.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  bool thread_multiple() const { return thread_multiple_; }
  // Serializes MPI calls when the library does not provide MPI_THREAD_MULTIPLE.
  std::unique_lock<std::mutex> lock_if_needed();

 private:
  bool thread_multiple_ = false;
  bool finalize_ = false;
  std::mutex mutex_;
};

enum class MpiProgress {
  thread,  // a progress thread drives outstanding allreduces (overlap with compute)
  none,    // requests advance only when waited on (the no-overlap baseline of the benchmark)
};

class MpiCommunicator final : public Communicator {
 public:
  // A duplicate of MPI_COMM_WORLD (so its collectives never interleave with others').
  static std::unique_ptr<MpiCommunicator> world(MpiRuntime& runtime,
                                                MpiProgress progress = MpiProgress::thread);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  std::unique_ptr<PendingCollective> allreduce_async(void* data, std::size_t count, DataType type,
                                                     ReduceOp op) override;
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank) override;
  std::vector<std::vector<std::byte>> allgatherv(std::span<const std::byte> send) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;
  [[noreturn]] void abort(int exit_code) override;

  MPI_Comm handle() const { return comm_; }

  class ProgressEngine;  // the progress thread and its queue (mpi_communicator.cc)

 private:
  MpiCommunicator(MpiRuntime& runtime, MPI_Comm comm, MpiProgress progress);

  MpiRuntime& runtime_;
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  MpiProgress progress_mode_;
  std::shared_ptr<ProgressEngine> engine_;
};

// Throws CommunicatorError naming `what` when an MPI call fails.
void check_mpi(int code, const char* what);

}  // namespace mlbert::harness
