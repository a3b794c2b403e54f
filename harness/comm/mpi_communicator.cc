// MPI communicator with a progress thread for non-blocking allreduces (see mpi_communicator.h).
#include "harness/comm/mpi_communicator.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <thread>

namespace mlbert::harness {

std::size_t size_of(DataType type) {
  switch (type) {
    case DataType::f32:
      return 4;
    case DataType::f64:
      return 8;
    case DataType::i32:
      return 4;
    case DataType::i64:
      return 8;
    case DataType::f16:
      return 2;
    case DataType::bf16:
      return 2;
    case DataType::u8:
      return 1;
  }
  return 0;
}

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw CommunicatorError(std::string(what) + " failed: " + std::string(text, length));
}

namespace {

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::f32:
      return MPI_FLOAT;
    case DataType::f64:
      return MPI_DOUBLE;
    case DataType::i32:
      return MPI_INT32_T;
    case DataType::i64:
      return MPI_INT64_T;
    case DataType::u8:
      return MPI_UINT8_T;
    case DataType::f16:
    case DataType::bf16:
      break;
  }
  throw CommunicatorError("MPI cannot reduce 16-bit floats; reduce fp32 gradients on the CPU");
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return MPI_SUM;
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
  }
  return MPI_SUM;
}

int checked_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw CommunicatorError("MPI collective of " + std::to_string(count) +
                            " elements exceeds the int count limit; use smaller buckets");
  return static_cast<int>(count);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// runtime

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    finalize_ = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED)
    throw CommunicatorError("the MPI library provides thread level " + std::to_string(provided) +
                            "; mlbert's progress thread needs at least MPI_THREAD_SERIALIZED");
  thread_multiple_ = provided >= MPI_THREAD_MULTIPLE;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiRuntime::~MpiRuntime() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalize_ && !finalized) MPI_Finalize();
}

std::unique_lock<std::mutex> MpiRuntime::lock_if_needed() {
  return thread_multiple_ ? std::unique_lock<std::mutex>() : std::unique_lock<std::mutex>(mutex_);
}

// ---------------------------------------------------------------------------------------------
// progress engine

namespace {

struct AllreduceRequest {
  void* data = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_FLOAT;
  MPI_Op op = MPI_SUM;
  MPI_Request request = MPI_REQUEST_NULL;
  bool finished = false;  // guarded by the engine mutex
  std::string error;
};

}  // namespace

class MpiCommunicator::ProgressEngine {
 public:
  ProgressEngine(MpiRuntime& runtime, MPI_Comm comm) : runtime_(runtime), comm_(comm) {
    thread_ = std::thread([this] { run(); });
  }
  ~ProgressEngine() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_.notify_all();
    thread_.join();
  }

  std::shared_ptr<AllreduceRequest> submit(std::shared_ptr<AllreduceRequest> request) {
    {
      std::lock_guard lock(mutex_);
      queued_.push_back(request);
    }
    work_.notify_all();
    return request;
  }
  bool finished(const AllreduceRequest& request) {
    std::lock_guard lock(mutex_);
    return request.finished;
  }
  void wait(const AllreduceRequest& request) {
    std::unique_lock lock(mutex_);
    ++waiters_;
    work_.notify_all();  // stop napping: someone is blocked on the result now
    done_.wait(lock, [&] { return request.finished; });
    --waiters_;
  }

 private:
  // How long the thread sleeps when nothing completed: short enough to add little latency to a
  // bucket, long enough not to steal a core from backward on small machines.
  static constexpr std::chrono::microseconds kPollInterval{50};

  // Issues what was submitted, tests what is in flight, and naps when nothing completed.
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !queued_.empty() || !active_.empty(); });
      if (stop_ && queued_.empty() && active_.empty()) return;
      std::deque<std::shared_ptr<AllreduceRequest>> issue;
      issue.swap(queued_);
      lock.unlock();
      start(issue);
      lock.lock();
      for (auto& r : issue) {
        if (r->error.empty())
          active_.push_back(r);
        else
          r->finished = true;
      }
      const std::vector<std::shared_ptr<AllreduceRequest>> testing = active_;
      lock.unlock();
      const bool completed_any = !testing.empty() && test(testing);
      lock.lock();
      if (completed_any) {
        done_.notify_all();
      } else if (queued_.empty() && !stop_) {
        // While compute runs, nap between tests so the thread does not steal a core from it;
        // once a caller waits for a result, poll flat out (nothing else is running then).
        if (waiters_ > 0) {
          lock.unlock();
          std::this_thread::yield();
          lock.lock();
        } else {
          work_.wait_for(lock, kPollInterval);
        }
      }
    }
  }

  // Starts the requests in submission order (the same order on every rank); a request MPI
  // refuses keeps the error.
  void start(const std::deque<std::shared_ptr<AllreduceRequest>>& issue) {
    for (auto& r : issue) {
      int code;
      {
        auto mpi_lock = runtime_.lock_if_needed();
        code = MPI_Iallreduce(MPI_IN_PLACE, r->data, r->count, r->type, r->op, comm_, &r->request);
      }
      if (code != MPI_SUCCESS) {
        try {
          check_mpi(code, "MPI_Iallreduce");
        } catch (const CommunicatorError& e) {
          r->error = e.what();
        }
      }
    }
  }

  // Tests the requests in flight (`testing`, a copy of active_) once; marks the completed ones
  // finished (all of them, with the error, when the test fails). Returns whether any finished.
  bool test(const std::vector<std::shared_ptr<AllreduceRequest>>& testing) {
    std::vector<MPI_Request> requests;
    for (auto& r : testing) requests.push_back(r->request);
    std::vector<int> indices(requests.size());
    int completed = 0;
    int code;
    {
      auto mpi_lock = runtime_.lock_if_needed();
      code = MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &completed,
                          indices.data(), MPI_STATUSES_IGNORE);
    }
    std::lock_guard lock(mutex_);
    if (code != MPI_SUCCESS) {
      std::string error;
      try {
        check_mpi(code, "MPI_Testsome");
      } catch (const CommunicatorError& e) {
        error = e.what();
      }
      for (auto& r : active_) {
        r->error = error;
        r->finished = true;
      }
      active_.clear();
      return true;
    }
    if (completed == MPI_UNDEFINED || completed == 0) return false;
    for (int i = 0; i < completed; ++i) {
      auto& r = testing[indices[i]];
      r->request = MPI_REQUEST_NULL;
      r->finished = true;
      active_.erase(std::find(active_.begin(), active_.end(), r));
    }
    return true;
  }

  MpiRuntime& runtime_;
  MPI_Comm comm_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable done_;
  std::deque<std::shared_ptr<AllreduceRequest>> queued_;
  std::vector<std::shared_ptr<AllreduceRequest>> active_;
  bool stop_ = false;
  int waiters_ = 0;
  std::thread thread_;
};

namespace {

class ThreadedAllreduce final : public PendingCollective {
 public:
  ThreadedAllreduce(std::shared_ptr<MpiCommunicator::ProgressEngine> engine,
                    std::shared_ptr<AllreduceRequest> request)
      : engine_(std::move(engine)), request_(std::move(request)) {}
  ~ThreadedAllreduce() override {
    // The buffer belongs to the caller: never let the reduction outlive the handle.
    if (!waited_) engine_->wait(*request_);
  }
  bool done() override { return engine_->finished(*request_); }
  void wait() override {
    engine_->wait(*request_);
    waited_ = true;
    if (!request_->error.empty()) throw CommunicatorError(request_->error);
  }

 private:
  std::shared_ptr<MpiCommunicator::ProgressEngine> engine_;
  std::shared_ptr<AllreduceRequest> request_;
  bool waited_ = false;
};

// The no-overlap baseline: the request advances only inside done()/wait().
class DirectAllreduce final : public PendingCollective {
 public:
  DirectAllreduce(MpiRuntime& runtime, MPI_Request request)
      : runtime_(runtime), request_(request) {}
  ~DirectAllreduce() override {
    if (request_ != MPI_REQUEST_NULL) {
      auto lock = runtime_.lock_if_needed();
      MPI_Wait(&request_, MPI_STATUS_IGNORE);
    }
  }
  bool done() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int flag = 0;
    auto lock = runtime_.lock_if_needed();
    check_mpi(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    return flag != 0;
  }
  void wait() override {
    if (request_ == MPI_REQUEST_NULL) return;
    auto lock = runtime_.lock_if_needed();
    check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
  }

 private:
  MpiRuntime& runtime_;
  MPI_Request request_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// communicator

MpiCommunicator::MpiCommunicator(MpiRuntime& runtime, MPI_Comm comm, MpiProgress progress)
    : runtime_(runtime), comm_(comm), progress_mode_(progress) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  if (progress_mode_ == MpiProgress::thread)
    engine_ = std::make_shared<ProgressEngine>(runtime_, comm_);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world(MpiRuntime& runtime, MpiProgress progress) {
  MPI_Comm comm;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(runtime, comm, progress));
}

MpiCommunicator::~MpiCommunicator() {
  engine_.reset();  // joins the progress thread before the communicator goes away
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::unique_ptr<PendingCollective> MpiCommunicator::allreduce_async(void* data, std::size_t count,
                                                                    DataType type, ReduceOp op) {
  auto request = std::make_shared<AllreduceRequest>();
  request->data = data;
  request->count = checked_count(count);
  request->type = mpi_type(type);
  request->op = mpi_op(op);
  if (engine_) return std::make_unique<ThreadedAllreduce>(engine_, engine_->submit(request));
  MPI_Request handle = MPI_REQUEST_NULL;
  {
    auto lock = runtime_.lock_if_needed();
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data, request->count, request->type, request->op, comm_,
                             &handle),
              "MPI_Iallreduce");
  }
  return std::make_unique<DirectAllreduce>(runtime_, handle);
}

void MpiCommunicator::allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  auto lock = runtime_.lock_if_needed();
  check_mpi(MPI_Allgather(send, checked_count(bytes_per_rank), MPI_BYTE, recv,
                          checked_count(bytes_per_rank), MPI_BYTE, comm_),
            "MPI_Allgather");
}

std::vector<std::vector<std::byte>> MpiCommunicator::allgatherv(std::span<const std::byte> send) {
  const std::int64_t my_size = static_cast<std::int64_t>(send.size());
  std::vector<std::int64_t> sizes(size_);
  allgather(&my_size, sizes.data(), sizeof(my_size));
  std::vector<int> counts(size_), displacements(size_);
  std::int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    counts[r] = checked_count(static_cast<std::size_t>(sizes[r]));
    displacements[r] = checked_count(static_cast<std::size_t>(total));
    total += sizes[r];
  }
  std::vector<std::byte> all(static_cast<std::size_t>(total));
  {
    auto lock = runtime_.lock_if_needed();
    check_mpi(MPI_Allgatherv(send.data(), counts[rank_], MPI_BYTE, all.data(), counts.data(),
                             displacements.data(), MPI_BYTE, comm_),
              "MPI_Allgatherv");
  }
  std::vector<std::vector<std::byte>> blocks(size_);
  for (int r = 0; r < size_; ++r)
    blocks[r].assign(all.begin() + displacements[r], all.begin() + displacements[r] + counts[r]);
  return blocks;
}

void MpiCommunicator::broadcast(void* data, std::size_t bytes, int root) {
  auto lock = runtime_.lock_if_needed();
  check_mpi(MPI_Bcast(data, checked_count(bytes), MPI_BYTE, root, comm_), "MPI_Bcast");
}

void MpiCommunicator::barrier() {
  auto lock = runtime_.lock_if_needed();
  check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  MPI_Comm sub;
  {
    auto lock = runtime_.lock_if_needed();
    check_mpi(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
  }
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(runtime_, sub, progress_mode_));
}

void MpiCommunicator::abort(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort should not return; make sure the process ends regardless
}

}  // namespace mlbert::harness
