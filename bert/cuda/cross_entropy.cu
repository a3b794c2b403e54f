// Softmax cross-entropy forward + backward + accuracy counts (see cross_entropy.h).
#include "bert/cuda/cross_entropy.h"

#include <stdexcept>
#include <string>

#include "bert/cuda/common.cuh"
#include "bert/cuda/launch_config.h"

namespace mlbert::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kStatsThreads = 256;
constexpr int kStatsPerRow = 2;  // loss, hit

struct RowState {
  float max;   // running maximum
  float sum;   // sum of exp(x - max)
  float best;  // argmax value
  int best_index;
};

__device__ __forceinline__ void absorb(RowState& s, float x, int index) {
  if (x > s.max) {
    s.sum = s.sum * __expf(s.max - x) + 1.0f;
    s.max = x;
  } else {
    s.sum += __expf(x - s.max);
  }
  if (x > s.best || (x == s.best && index < s.best_index)) {
    s.best = x;
    s.best_index = index;
  }
}

__device__ __forceinline__ RowState merge(const RowState& a, const RowState& b) {
  RowState r;
  r.max = fmaxf(a.max, b.max);
  r.sum = (a.sum == 0.0f ? 0.0f : a.sum * __expf(a.max - r.max)) +
          (b.sum == 0.0f ? 0.0f : b.sum * __expf(b.max - r.max));
  const bool take_b = b.best > a.best || (b.best == a.best && b.best_index < a.best_index);
  r.best = take_b ? b.best : a.best;
  r.best_index = take_b ? b.best_index : a.best_index;
  return r;
}

__device__ __forceinline__ RowState shuffle(const RowState& s, int offset) {
  RowState o;
  o.max = __shfl_xor_sync(kFullWarpMask, s.max, offset);
  o.sum = __shfl_xor_sync(kFullWarpMask, s.sum, offset);
  o.best = __shfl_xor_sync(kFullWarpMask, s.best, offset);
  o.best_index = __shfl_xor_sync(kFullWarpMask, s.best_index, offset);
  return o;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    cross_entropy_kernel(const CrossEntropyArgs a, float* __restrict__ row_stats) {
  __shared__ RowState warp_states[kWarps];
  const int64_t row = blockIdx.x;
  const T* logits = static_cast<const T*>(a.logits) + row * a.row_stride;
  T* d_logits = static_cast<T*>(a.d_logits) + row * a.row_stride;
  const int classes = static_cast<int>(a.classes);

  // Element by element, consecutive threads on consecutive logits (coalesced): a 16-byte packed
  // path needs a class count that is a multiple of 8, which BERT's 30,522 is not.
  RowState state{-INFINITY, 0.0f, -INFINITY, 0x7fffffff};
  for (int c = threadIdx.x; c < classes; c += kThreads) absorb(state, to_float(logits[c]), c);
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    state = merge(state, shuffle(state, offset));
  if (threadIdx.x % kWarpSize == 0) warp_states[threadIdx.x / kWarpSize] = state;
  __syncthreads();
  state = warp_states[0];
  for (int w = 1; w < kWarps; ++w) state = merge(state, warp_states[w]);

  const int label = a.labels[row];
  const bool label_ok = label >= 0 && label < classes;
  if (!label_ok && threadIdx.x == 0 && a.error_flags != nullptr)
    atomicOr(a.error_flags, a.error_bit);
  const float log_sum = logf(state.sum) + state.max;
  const float inv_sum = 1.0f / state.sum;
  const float scale = label_ok ? a.grad_scale : 0.0f;
  // Every thread reads the label logit before any thread overwrites it (d_logits may alias).
  const float label_logit = label_ok ? to_float(logits[label]) : 0.0f;
  __syncthreads();
  if (threadIdx.x == 0) {
    row_stats[row * kStatsPerRow] = label_ok ? log_sum - label_logit : 0.0f;
    row_stats[row * kStatsPerRow + 1] = label_ok && state.best_index == label ? 1.0f : 0.0f;
  }

  const int row_stride = static_cast<int>(a.row_stride);
  for (int c = threadIdx.x; c < row_stride; c += kThreads) {
    const float g =
        c < classes
            ? (__expf(to_float(logits[c]) - state.max) * inv_sum - (c == label ? 1.0f : 0.0f)) *
                  scale
            : 0.0f;
    d_logits[c] = from_float<T>(g);
  }
}

// One block sums the per-row statistics in row order (double accumulators).
__global__ void __launch_bounds__(kStatsThreads)
    cross_entropy_stats_kernel(const float* __restrict__ row_stats, int64_t rows,
                               float* __restrict__ stats) {
  __shared__ double2 scratch[kStatsThreads / kWarpSize];
  double loss = 0.0, hits = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += kStatsThreads) {
    loss += row_stats[r * kStatsPerRow];
    hits += row_stats[r * kStatsPerRow + 1];
  }
  loss = warp_sum(loss);
  hits = warp_sum(hits);
  if (threadIdx.x % kWarpSize == 0) scratch[threadIdx.x / kWarpSize] = make_double2(loss, hits);
  __syncthreads();
  if (threadIdx.x == 0) {
    double total_loss = 0.0, total_hits = 0.0;
    for (int w = 0; w < kStatsThreads / kWarpSize; ++w) {
      total_loss += scratch[w].x;
      total_hits += scratch[w].y;
    }
    stats[0] = static_cast<float>(total_loss);
    stats[1] = static_cast<float>(total_hits);
  }
}

}  // namespace

size_t cross_entropy_workspace_bytes(int64_t rows) {
  return static_cast<size_t>(rows) * kStatsPerRow * sizeof(float);
}

void cross_entropy(const CrossEntropyArgs& a, float* workspace, size_t workspace_bytes,
                   cudaStream_t stream) {
  if (a.stats == nullptr) throw std::invalid_argument("cross_entropy: stats is null");
  if (a.rows == 0) {
    CUDA_CHECK(cudaMemsetAsync(a.stats, 0, 2 * sizeof(float), stream));
    return;
  }
  if (a.classes <= 0 || a.classes > a.row_stride)
    throw std::invalid_argument("cross_entropy: classes " + std::to_string(a.classes) +
                                " must be in [1, row_stride = " + std::to_string(a.row_stride) +
                                "]");
  if (a.row_stride > 0x7fffffff || a.rows > 0x7fffffff)
    throw std::invalid_argument("cross_entropy: problem too large");
  if (a.logits == nullptr || a.labels == nullptr || a.d_logits == nullptr)
    throw std::invalid_argument("cross_entropy: logits, labels and d_logits are required");
  if (workspace == nullptr || workspace_bytes < cross_entropy_workspace_bytes(a.rows))
    throw std::invalid_argument("cross_entropy: workspace too small");
  const unsigned grid = static_cast<unsigned>(a.rows);
  if (a.type == ComputeType::f16)
    cross_entropy_kernel<__half><<<grid, kThreads, 0, stream>>>(a, workspace);
  else
    cross_entropy_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(a, workspace);
  CUDA_CHECK_LAUNCH();
  cross_entropy_stats_kernel<<<1, kStatsThreads, 0, stream>>>(workspace, a.rows, a.stats);
  CUDA_CHECK_LAUNCH();
}

}  // namespace mlbert::cuda
