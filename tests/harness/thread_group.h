// A Communicator for unit tests: the ranks are threads of one process, collectives are a shared-
// memory sum behind barriers. Lets gradient-sync tests run several "ranks" without mpirun.
#pragma once

#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/comm/communicator.h"

namespace mlbert::test {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), slots_(size) {}
  int size() const { return size_; }

  void barrier() {
    std::unique_lock lock(mutex_);
    const int generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
  }
  void*& slot(int rank) { return slots_[rank]; }

  // Runs body(rank) on `size` threads and joins them; rethrows the first exception.
  void run(const std::function<void(int)>& body) {
    std::vector<std::thread> threads;
    std::exception_ptr error;
    std::mutex error_mutex;
    for (int r = 0; r < size_; ++r)
      threads.emplace_back([&, r] {
        try {
          body(r);
        } catch (...) {
          std::lock_guard lock(error_mutex);
          if (!error) error = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
    if (error) std::rethrow_exception(error);
  }

 private:
  int size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int generation_ = 0;
  std::vector<void*> slots_;
};

class ThreadGroupCommunicator final : public harness::Communicator {
 public:
  ThreadGroupCommunicator(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  std::string backend() const override { return "threads"; }

  std::unique_ptr<harness::PendingCollective> allreduce_async(void* data, std::size_t count,
                                                              harness::DataType type,
                                                              harness::ReduceOp op) override {
    ++allreduce_calls;
    allreduce_sizes.push_back(count);
    group_.slot(rank_) = data;
    group_.barrier();
    std::vector<double> result(count);
    for (int r = 0; r < size(); ++r) {
      for (std::size_t i = 0; i < count; ++i) {
        const double v = type == harness::DataType::f32 ? static_cast<float*>(group_.slot(r))[i]
                                                        : static_cast<double*>(group_.slot(r))[i];
        if (r == 0)
          result[i] = v;
        else if (op == harness::ReduceOp::sum)
          result[i] += v;
        else if (op == harness::ReduceOp::max)
          result[i] = std::max(result[i], v);
        else
          result[i] = std::min(result[i], v);
      }
    }
    group_.barrier();  // everyone has read every buffer: now each may overwrite its own
    for (std::size_t i = 0; i < count; ++i) {
      if (type == harness::DataType::f32)
        static_cast<float*>(data)[i] = static_cast<float>(result[i]);
      else
        static_cast<double*>(data)[i] = result[i];
    }
    group_.barrier();
    struct Done final : harness::PendingCollective {
      bool done() override { return true; }
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
  void allgather(const void* send, void* recv, std::size_t bytes) override {
    group_.slot(rank_) = const_cast<void*>(send);
    group_.barrier();
    for (int r = 0; r < size(); ++r)
      std::memcpy(static_cast<char*>(recv) + r * bytes, group_.slot(r), bytes);
    group_.barrier();
  }
  std::vector<std::vector<std::byte>> allgatherv(std::span<const std::byte> send) override {
    std::vector<std::byte> copy(send.begin(), send.end());
    group_.slot(rank_) = &copy;
    group_.barrier();
    std::vector<std::vector<std::byte>> all(size());
    for (int r = 0; r < size(); ++r) all[r] = *static_cast<std::vector<std::byte>*>(group_.slot(r));
    group_.barrier();
    return all;
  }
  void broadcast(void* data, std::size_t bytes, int root) override {
    group_.slot(rank_) = data;
    group_.barrier();
    if (rank_ != root) std::memcpy(data, group_.slot(root), bytes);
    group_.barrier();
  }
  void barrier() override { group_.barrier(); }
  std::unique_ptr<harness::Communicator> split(int, int) override {
    throw harness::CommunicatorError("ThreadGroupCommunicator cannot split");
  }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

  int allreduce_calls = 0;
  std::vector<std::size_t> allreduce_sizes;

 private:
  ThreadGroup& group_;
  int rank_;
};

}  // namespace mlbert::test
