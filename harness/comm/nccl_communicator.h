// The NCCL communicator: GPU gradients. Built only when CUDA is (MLBERT_HAVE_CUDA).
//
// Design choice: NCCL is bootstrapped over an MPI communicator (rank 0 creates the unique id and
// broadcasts it), runs every collective on its own CUDA stream that first waits for an event of
// the compute stream (so a bucket is reduced only after backward wrote it, while backward goes on
// with the next layer), and `split` builds sub-communicators (the node-local group) from the
// matching split of the bootstrap communicator. Waits poll NCCL's asynchronous error (a rank
// gone, the network failing) and abort the communicator on one, and unwinding past a collective
// aborts it, so a dead rank ends the run with an error instead of hanging NCCL's kernels.
#pragma once

#include <memory>

#include "harness/comm/communicator.h"

namespace mlbert::harness {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `bootstrap`; `device` is this rank's CUDA ordinal. `compute_stream` is the
  // cudaStream_t the gradients are produced on (nullptr = the legacy default stream).
  NcclCommunicator(std::shared_ptr<Communicator> bootstrap, int device, void* compute_stream);
  ~NcclCommunicator() override;

  int rank() const override;
  int size() const override;
  std::string backend() const override { return "nccl"; }

  std::unique_ptr<PendingCollective> allreduce_async(void* data, std::size_t count, DataType type,
                                                     ReduceOp op) override;
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank) override;
  std::vector<std::vector<std::byte>> allgatherv(std::span<const std::byte> send) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;
  [[noreturn]] void abort(int exit_code) override;

  void* stream() const;  // the communication cudaStream_t

  struct State;  // NCCL and CUDA handles (nccl_communicator.cc)

 private:
  void order_after_compute();

  std::shared_ptr<Communicator> bootstrap_;
  int device_;
  void* compute_stream_;
  std::unique_ptr<State> state_;
};

}  // namespace mlbert::harness
