// A Communicator of one rank, so a single process trains through harness::GradientSync (its
// clipping and the optimizer's grad_scale) without starting MPI or NCCL.
//
// Design choice: a collective over one rank leaves its data as it is, so nothing here touches the
// buffers it is given; that is what lets it serve gradients in device memory as well as host.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>

#include "harness/comm/communicator.h"

namespace mlbert::test {

class SingleRankCommunicator final : public harness::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single-rank"; }

  std::unique_ptr<harness::PendingCollective> allreduce_async(void*, std::size_t, harness::DataType,
                                                              harness::ReduceOp) override {
    struct Done final : harness::PendingCollective {
      bool done() override { return true; }
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank) override {
    if (send != recv) std::memmove(recv, send, bytes_per_rank);
  }
  std::vector<std::vector<std::byte>> allgatherv(std::span<const std::byte> send) override {
    return {std::vector<std::byte>(send.begin(), send.end())};
  }
  void broadcast(void*, std::size_t, int) override {}
  void barrier() override {}
  std::unique_ptr<harness::Communicator> split(int, int) override {
    return std::make_unique<SingleRankCommunicator>();
  }
  [[noreturn]] void abort(int exit_code) override { std::_Exit(exit_code); }
};

}  // namespace mlbert::test
