// NCCL communicator over a dedicated CUDA stream, bootstrapped over MPI (see nccl_communicator.h).
#include "harness/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <string>

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

// Completion of one collective: an event recorded on the communication stream after it.
class NcclPending final : public PendingCollective {
 public:
  explicit NcclPending(cudaStream_t stream) {
    check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
    check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord");
  }
  ~NcclPending() override {
    if (!waited_) cudaEventSynchronize(event_);
    cudaEventDestroy(event_);
  }
  bool done() override {
    const cudaError_t code = cudaEventQuery(event_);
    if (code == cudaErrorNotReady) return false;
    check_cuda(code, "cudaEventQuery");
    return true;
  }
  void wait() override {
    check_cuda(cudaEventSynchronize(event_), "cudaEventSynchronize");
    waited_ = true;
  }

 private:
  cudaEvent_t event_ = nullptr;
  bool waited_ = false;
};

}  // namespace

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t ready = nullptr;  // recorded on the compute stream before each collective
  int rank = 0;
  int size = 1;
};

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
  if (state_->stream) cudaStreamSynchronize(state_->stream);
  if (state_->comm) ncclCommDestroy(state_->comm);
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
  order_after_compute();
  check_nccl(
      ncclAllReduce(data, data, count, nccl_type(type), nccl_op(op), state_->comm, state_->stream),
      "ncclAllReduce");
  return std::make_unique<NcclPending>(state_->stream);
}

void NcclCommunicator::allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  order_after_compute();
  check_nccl(ncclAllGather(send, recv, bytes_per_rank, ncclUint8, state_->comm, state_->stream),
             "ncclAllGather");
  check_cuda(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
}

std::vector<std::vector<std::byte>> NcclCommunicator::allgatherv(std::span<const std::byte> send) {
  // Host byte blocks travel over the bootstrap (MPI) communicator.
  return bootstrap_->allgatherv(send);
}

void NcclCommunicator::broadcast(void* data, std::size_t bytes, int root) {
  order_after_compute();
  check_nccl(ncclBroadcast(data, data, bytes, ncclUint8, root, state_->comm, state_->stream),
             "ncclBroadcast");
  check_cuda(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
}

void NcclCommunicator::barrier() {
  bootstrap_->barrier();
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  std::shared_ptr<Communicator> sub_bootstrap = bootstrap_->split(color, key);
  return std::make_unique<NcclCommunicator>(std::move(sub_bootstrap), device_, compute_stream_);
}

void NcclCommunicator::abort(int exit_code) {
  if (state_ && state_->comm) ncclCommAbort(state_->comm);
  bootstrap_->abort(exit_code);
  std::_Exit(exit_code);  // not reached: the bootstrap's abort does not return
}

}  // namespace mlbert::harness
