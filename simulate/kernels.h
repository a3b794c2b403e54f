// The GPU kernels of one BERT micro-step as mlbert's model issues them, and the time a GPU and
// the thread that issues its work take for them.
//
// Design choice: the kernel list is not written down here but traced: the real bert::Model runs
// forward_backward (and evaluate) against a recording Ops that reserves address space instead of
// memory and computes nothing, so every op the model calls, with its GEMM shapes and the bytes it
// moves, is in the plan, and the plan follows the model when its code changes. Five traces at
// micro-batch shapes chosen to be linearly independent give each kernel's FLOPs, bytes and GEMM
// rows as affine functions of (tokens, sequences, masked predictions, sum of squared lengths); a
// sixth checks that they are. A micro-step is then timed kernel by kernel: a GEMM or attention
// kernel at the tensor rate (with wave quantization of its output tiles), a memory-bound one at
// the memory rate, each no earlier than the host has issued it, so small kernels cost the host's
// issue time when it exceeds theirs and a large batch hides it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bert/config.h"
#include "simulate/constants.h"

namespace mlbert::simulate {

// What a micro-batch on one rank holds.
struct MicroBatchShape {
  double tokens = 0;       // real (or, padded, sequences x max length) tokens
  double sequences = 0;    //
  double predictions = 0;  // masked-LM positions
  double squares = 0;      // sum over sequences of length^2 (attention)
};

// c0 + t * tokens + s * sequences + p * predictions + q * squares.
struct Affine {
  double c0 = 0, t = 0, s = 0, p = 0, q = 0;
  double at(const MicroBatchShape& b) const {
    return c0 + t * b.tokens + s * b.sequences + p * b.predictions + q * b.squares;
  }
};

enum class KernelKind { gemm, attention, memory };

struct Kernel {
  KernelKind kind = KernelKind::memory;
  std::string op;  // the Ops call it comes from, e.g. "linear_forward"
  Affine flops, bytes;
  // GEMMs: the output's rows (affine) and columns; wave quantization applies to tiles of the
  // output when its rows run over the micro-batch (forward and data gradient). Weight gradients
  // (the tokens are their reduction depth) are taken to fill the GPU (split-K).
  Affine rows;
  double cols = 0;
  bool quantized = false;
  bool synchronizes = false;  // the host waits for the GPU after it (a read back)
};

// Rates a kernel runs at and what issuing one costs the host.
struct KernelRates {
  double tensor_flops_per_second = 0;  // GEMM and attention kernels
  double memory_bytes_per_second = 0;  // memory-bound kernels (and every kernel's floor)
  int multiprocessors = 0;             // for wave quantization; 0 = none
  double host_seconds_per_kernel = 0;  // issue cost of one kernel on the host
};

// One micro-step's time, and how much of it the GPU waited for the host.
struct KernelTime {
  double seconds = 0;
  double gpu_seconds = 0;  // sum of the kernels' own times
  double host_bound_seconds() const { return seconds - gpu_seconds; }
};

// Fraction of the tensor rate a GEMM reaches with `tiles` output tiles (kGemmTileRows x
// kGemmTileCols) on `multiprocessors`: whole waves of one tile per multiprocessor, the last one
// possibly partial.
double wave_efficiency(double tiles, int multiprocessors);

// A point of the micro-step where the gradient buffer's prefix [0, flat_prefix) is final: after
// the first `kernels` kernels of KernelPlan::train (the model's on_grad_ready, traced).
struct GradReady {
  std::size_t kernels = 0;
  std::size_t flat_prefix = 0;
};

// What the host does before issuing kernel `before` of a micro-step, besides issuing it: `syncs`
// read-backs (each waits for every kernel issued so far, then costs a round trip) and
// `host_seconds` of its own work. Events of an implementation that synchronizes where mlbert's
// model does not (KernelPlan::time).
struct HostEvent {
  std::size_t before = 0;
  int syncs = 0;
  double host_seconds = 0;
};

struct KernelPlan {
  std::vector<Kernel> train;          // forward_backward of one micro-batch
  std::vector<Kernel> eval;           // evaluate of one batch
  std::vector<GradReady> grad_ready;  // in backward order, the last one the whole buffer
  std::size_t encoder_start = 0;      // the first kernel after the embeddings
  std::size_t heads_start = 0;        // the first kernel of the pretraining heads' forward
  int layers = 0;

  // `events` sorted by `before`.
  static KernelTime time(const std::vector<Kernel>& kernels, const MicroBatchShape& shape,
                         const KernelRates& rates, const std::vector<HostEvent>& events = {});
  // The GPU time alone at full wave efficiency, linear in tokens and squares: the cost the deal
  // ranks a rank's work by (seconds per token, per squared token).
  static double seconds_per_token(const std::vector<Kernel>& kernels, const KernelRates& rates);
  static double seconds_per_square(const std::vector<Kernel>& kernels, const KernelRates& rates);
  // Sums over the kernels of one kind.
  static Affine total_flops(const std::vector<Kernel>& kernels, KernelKind kind);
};

// Traces mlbert's model of `config` (see the design note). Throws std::logic_error when the
// traced work is not affine in the micro-batch shape (the plan would not describe the model).
KernelPlan trace_kernel_plan(const bert::BertConfig& config);

}  // namespace mlbert::simulate
