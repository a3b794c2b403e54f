// The collective-communication contract of the trainer: MPI serves CPU runs and every host-side
// exchange, NCCL serves GPU gradients (bootstrapped over MPI).
//
// Design choice: `allreduce_async` returns a handle at once and the collective proceeds on its
// own (an MPI progress thread, or NCCL's stream), so the trainer can start a gradient bucket's
// allreduce while backward is still computing the next bucket, and wait for all of them before
// the optimizer. Collectives on one communicator must be issued in the same order on all ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace mlbert::harness {

class CommunicatorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class DataType { f32, f64, i32, i64, f16, bf16, u8 };
enum class ReduceOp { sum, max, min };

std::size_t size_of(DataType type);

// An allreduce in flight. Destroying it without waiting blocks until it completes, so a buffer is
// never written after its owner moved on.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual bool done() = 0;  // non-blocking completion test
  virtual void wait() = 0;  // blocks until complete; throws CommunicatorError on failure
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "mpi" or "nccl"

  // In-place allreduce of `count` elements at `data` (host memory for MPI; device memory for NCCL,
  // which hands host memory to the MPI communicator it was made over).
  virtual std::unique_ptr<PendingCollective> allreduce_async(void* data, std::size_t count,
                                                             DataType type, ReduceOp op) = 0;
  void allreduce(void* data, std::size_t count, DataType type, ReduceOp op) {
    allreduce_async(data, count, type, op)->wait();
  }
  // Every rank contributes `bytes_per_rank` bytes; `recv` receives size() * bytes_per_rank, in
  // rank order.
  virtual void allgather(const void* send, void* recv, std::size_t bytes_per_rank) = 0;
  // Variable-size host byte blocks, one per rank, in rank order (MPI only).
  virtual std::vector<std::vector<std::byte>> allgatherv(std::span<const std::byte> send) = 0;
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // Collective: ranks with equal `color` form a new communicator, ordered by `key`.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // Ends the whole job (every rank of every communicator) with `exit_code`.
  [[noreturn]] virtual void abort(int exit_code) = 0;

  // Typed helpers for host scalars.
  template <typename T>
  T sum(T value);
  template <typename T>
  T max(T value);
};

template <typename T>
constexpr DataType data_type_of() {
  if constexpr (std::is_same_v<T, float>)
    return DataType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return DataType::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DataType::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DataType::i64;
  else
    static_assert(sizeof(T) == 0, "unsupported scalar type");
}

template <typename T>
T Communicator::sum(T value) {
  allreduce(&value, 1, data_type_of<T>(), ReduceOp::sum);
  return value;
}
template <typename T>
T Communicator::max(T value) {
  allreduce(&value, 1, data_type_of<T>(), ReduceOp::max);
  return value;
}

}  // namespace mlbert::harness
