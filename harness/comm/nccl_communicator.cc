// NCCL communicator over a dedicated CUDA stream, bootstrapped over MPI (see nccl_communicator.h).
#include "harness/comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <thread>

namespace mlbert::harness {
namespace {

void check_cuda(cudaError_t code, const char* what) {
  if (code != cudaSuccess)
    throw CommunicatorError(std::string(what) + " failed: " + cudaGetErrorString(code));
}

void check_nccl(ncclResult_t code, const char* what) {
  if (code != ncclSuccess)
    throw CommunicatorError(std::string(what) + " failed: " + ncclGetErrorString(code));
}

ncclDataType_t nccl_type(DataType type) {
  switch (type) {
    case DataType::f32:
      return ncclFloat32;
    case DataType::f64:
      return ncclFloat64;
    case DataType::i32:
      return ncclInt32;
    case DataType::i64:
      return ncclInt64;
    case DataType::f16:
      return ncclFloat16;
    case DataType::bf16:
      return ncclBfloat16;
    case DataType::u8:
      return ncclUint8;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
  }
  return ncclSum;
}

// True for memory NCCL can reduce (device or managed); host memory, pageable or pinned, is not.
bool on_device(const void* data) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    cudaGetLastError();  // an address CUDA has never seen: host memory
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

}  // namespace

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t ready = nullptr;  // recorded on the compute stream before each collective
  int rank = 0;
  int size = 1;
  bool aborted = false;  // ncclCommAbort ran: the communicator is gone, never destroy it again
  std::chrono::steady_clock::time_point aborted_at;

  void abort_comm() {
    if (aborted) return;
    if (comm) ncclCommAbort(comm);
    aborted = true;
    aborted_at = std::chrono::steady_clock::now();
  }
  // NCCL's asynchronous error on the communicator (a rank gone, the network failing), if any.
  std::optional<ncclResult_t> async_error() const {
    if (aborted || !comm) return std::nullopt;
    ncclResult_t async = ncclSuccess;
    const ncclResult_t got = ncclCommGetAsyncError(comm, &async);
    if (got != ncclSuccess) return got;
    if (async == ncclSuccess || async == ncclInProgress) return std::nullopt;
    return async;
  }
};

namespace {

using State = NcclCommunicator::State;

// How long waits go on, all together, after the communicator was aborted (its kernels stop).
constexpr auto kAfterAbort = std::chrono::seconds(10);

// Waits until `event` completes. NCCL reports a rank that died or a network that failed as an
// asynchronous error of the communicator while its kernels spin on, so the wait polls for one
// instead of blocking in cudaEventSynchronize: then the communicator is aborted (its kernels stop)
// and the error returned, and the rank ends the run instead of hanging in it. Returns the error's
// text, empty when the event completed.
std::string wait_event(cudaEvent_t event, State& state) {
  std::string error;
  for (;;) {
    const cudaError_t code = cudaEventQuery(event);
    if (code == cudaSuccess) return error;
    if (code != cudaErrorNotReady) {
      state.abort_comm();
      return error.empty() ? std::string("cudaEventQuery failed: ") + cudaGetErrorString(code)
                           : error;
    }
    if (const auto async = state.async_error()) {
      error = std::string("NCCL reported \"") + ncclGetErrorString(*async) +
              "\" during a collective (a rank gone or the network failing); communicator aborted";
      state.abort_comm();
    }
    if (state.aborted && std::chrono::steady_clock::now() - state.aborted_at > kAfterAbort)
      return error.empty() ? "a collective did not finish after its communicator was aborted"
                           : error;
    std::this_thread::yield();
  }
}

// Waits for everything queued on `stream` so far (see wait_event); errors are dropped: for
// destructors, which must not throw.
void wait_event_on(cudaStream_t stream, State& state) {
  cudaEvent_t event = nullptr;
  if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) return;
  if (cudaEventRecord(event, stream) == cudaSuccess) wait_event(event, state);
  cudaEventDestroy(event);
}

// Completion of one collective: an event recorded on the communication stream after it.
class NcclPending final : public PendingCollective {
 public:
  NcclPending(cudaStream_t stream, State& state) : state_(state) {
    check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
    check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord");
  }
  ~NcclPending() override {
    if (!waited_) {
      // Unwinding past a collective a peer may never join: abort rather than wait for it.
      if (std::uncaught_exceptions() > 0) state_.abort_comm();
      wait_event(event_, state_);
    }
    cudaEventDestroy(event_);  // released once the device completes it, if it has not
  }
  bool done() override {
    const cudaError_t code = cudaEventQuery(event_);
    if (code == cudaSuccess) return true;
    if (code == cudaErrorNotReady && !state_.async_error()) return false;
    wait();  // the error: aborts the communicator and throws
    return true;
  }
  void wait() override {
    waited_ = true;
    const std::string error = wait_event(event_, state_);
    if (!error.empty()) throw CommunicatorError(error);
  }

 private:
  State& state_;
  cudaEvent_t event_ = nullptr;
  bool waited_ = false;
};

// An error an NCCL call returned: the communicator is aborted before it is thrown (peers may
// already be inside the collective).
void check_enqueued(State& state, ncclResult_t code, const char* what) {
  if (code == ncclSuccess) return;
  state.abort_comm();
  check_nccl(code, what);
}

}  // namespace

NcclCommunicator::NcclCommunicator(std::shared_ptr<Communicator> bootstrap, int device,
                                   void* compute_stream)
    : bootstrap_(std::move(bootstrap)),
      device_(device),
      compute_stream_(compute_stream),
      state_(std::make_unique<State>()) {
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  ncclUniqueId id{};
  if (bootstrap_->rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  bootstrap_->broadcast(&id, sizeof(id), 0);
  state_->rank = bootstrap_->rank();
  state_->size = bootstrap_->size();
  check_nccl(ncclCommInitRank(&state_->comm, state_->size, id, state_->rank), "ncclCommInitRank");
  // A high-priority stream so gradient buckets are not queued behind backward's kernels.
  int least = 0, greatest = 0;
  check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest),
             "cudaDeviceGetStreamPriorityRange");
  check_cuda(cudaStreamCreateWithPriority(&state_->stream, cudaStreamNonBlocking, greatest),
             "cudaStreamCreateWithPriority");
  check_cuda(cudaEventCreateWithFlags(&state_->ready, cudaEventDisableTiming), "cudaEventCreate");
}

NcclCommunicator::~NcclCommunicator() {
  if (!state_) return;
  // After an abort the communicator is gone and its stream may hold kernels that never finish.
  if (std::uncaught_exceptions() > 0) state_->abort_comm();  // the run is ending on an error
  if (!state_->aborted && state_->stream) wait_event_on(state_->stream, *state_);
  if (!state_->aborted && state_->comm) ncclCommDestroy(state_->comm);
  if (state_->ready) cudaEventDestroy(state_->ready);
  if (state_->stream) cudaStreamDestroy(state_->stream);
}

int NcclCommunicator::rank() const {
  return state_->rank;
}
int NcclCommunicator::size() const {
  return state_->size;
}
void* NcclCommunicator::stream() const {
  return state_->stream;
}

// Every collective reads data the compute stream may still be writing (a gradient bucket, weights
// just uploaded): the communication stream first waits for what was issued there so far.
void NcclCommunicator::order_after_compute() {
  check_cuda(cudaEventRecord(state_->ready, static_cast<cudaStream_t>(compute_stream_)),
             "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(state_->stream, state_->ready, 0), "cudaStreamWaitEvent");
}

std::unique_ptr<PendingCollective> NcclCommunicator::allreduce_async(void* data, std::size_t count,
                                                                     DataType type, ReduceOp op) {
  // Host values (the typed sum/max helpers' scalars) go over the bootstrap (MPI) communicator,
  // the same ranks in the same order: NCCL would read them as device addresses.
  if (!on_device(data)) return bootstrap_->allreduce_async(data, count, type, op);
  order_after_compute();
  check_enqueued(
      *state_,
      ncclAllReduce(data, data, count, nccl_type(type), nccl_op(op), state_->comm, state_->stream),
      "ncclAllReduce");
  return std::make_unique<NcclPending>(state_->stream, *state_);
}

void NcclCommunicator::allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  if (!on_device(send) && !on_device(recv)) return bootstrap_->allgather(send, recv, bytes_per_rank);
  if (!on_device(send) || !on_device(recv))
    throw CommunicatorError("NCCL allgather: the send and receive buffers must both be device "
                            "memory or both host memory");
  order_after_compute();
  check_enqueued(*state_,
                 ncclAllGather(send, recv, bytes_per_rank, ncclUint8, state_->comm, state_->stream),
                 "ncclAllGather");
  NcclPending(state_->stream, *state_).wait();
}

std::vector<std::vector<std::byte>> NcclCommunicator::allgatherv(std::span<const std::byte> send) {
  // Host byte blocks travel over the bootstrap (MPI) communicator.
  return bootstrap_->allgatherv(send);
}

void NcclCommunicator::broadcast(void* data, std::size_t bytes, int root) {
  if (!on_device(data)) return bootstrap_->broadcast(data, bytes, root);
  order_after_compute();
  check_enqueued(*state_,
                 ncclBroadcast(data, data, bytes, ncclUint8, root, state_->comm, state_->stream),
                 "ncclBroadcast");
  NcclPending(state_->stream, *state_).wait();
}

void NcclCommunicator::barrier() {
  bootstrap_->barrier();
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  std::shared_ptr<Communicator> sub_bootstrap = bootstrap_->split(color, key);
  return std::make_unique<NcclCommunicator>(std::move(sub_bootstrap), device_, compute_stream_);
}

void NcclCommunicator::abort(int exit_code) {
  if (state_) state_->abort_comm();
  bootstrap_->abort(exit_code);
  std::_Exit(exit_code);  // not reached: the bootstrap's abort does not return
}

}  // namespace mlbert::harness
