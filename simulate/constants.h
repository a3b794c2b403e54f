// The simulator's constants: every figure it prices a run with that comes neither from an
// accelerator profile nor from a system file, each with its unit and the public source or
// measurement it comes from.
//
// Design choice: one table, grouped by what the constant prices (the host, the GPU, the network,
// what a published implementation's code does per step); code names a constant from here and never
// writes its figure again. Two tables of many rows stay beside the code that indexes them and are
// sourced there: the accelerators' datasheet figures (profile.cc, datasheet_for) and NCCL's
// per-protocol latencies (network.cc). Limits on what the simulator accepts (kMaxPacking,
// kMaxSimulatedRanks) are not figures of the model and stay with their readers.
#pragma once

namespace mlbert::simulate {

// ---- the host issuing kernels

// s. The host's cost of one direct kernel launch: cuLaunchKernel measured at 3.0-3.3 us
// (meta-pytorch/tritonbench#1017).
inline constexpr double kDriverLaunchSeconds = 3e-6;
// s. An eager PyTorch op from Python with autograd, before its launch: 6.8 us measured per op
// (pytorch/pytorch#41383; a maintainer's figure without autograd is ~2 us, half of it Python).
inline constexpr double kPytorchEagerOpSeconds = 7e-6;
// s. One read-back: the device-to-host copy's latency and the host resuming (assumed; also the
// host round trip of after-allreduce clipping's global norm).
inline constexpr double kReadBackSeconds = 20e-6;

// ---- the GPU

// Output tile rows and columns of the GEMM wave-quantization model (NVIDIA, "Matrix Multiplication
// Background User's Guide": a GEMM runs in waves of one tile per multiprocessor).
inline constexpr double kGemmTileRows = 128, kGemmTileCols = 128;
// Fraction of HBM peak a bandwidth-bound pass reaches (assumed, typical of STREAM-like kernels).
inline constexpr double kMemoryBandwidthFraction = 0.85;
// Fraction by which compute slows while a collective runs beside it on the same GPU (its kernels
// hold SMs and memory bandwidth): Lee et al., "Characterizing Compute-Communication Overlap in
// GPU-Accelerated Distributed Deep Learning" (arXiv 2507.03114, 2025), 18.9% on average and 40.0%
// at most (GPT and LLaMA training on 4 A100s, H100s, MI250s or MI210s).
inline constexpr double kOverlapComputeSlowdown = 0.189;
// bytes per parameter the optimizer moves in mlbert's kernels (bert/ops.h): Adam/AdamW read the
// f32 master, gradient and both moments and write master, moments and the compute copy (30); LAMB
// adds the update written as scratch and the per-tensor norm pass (50).
inline constexpr double kAdamBytesPerParameter = 30;
inline constexpr double kLambBytesPerParameter = 50;
// s. The run start a calibration records where its logs cannot separate it (rulesets 0.x): the one
// fitted to the v1.0 single-node NVIDIA result (systems/profiles/a100-sxm4-80gb.json), rounded.
inline constexpr double kUnseparatedRunStartSeconds = 2.57;

// ---- the network

// Fractions of the line rate collectives reach, from published nccl-tests figures (not
// calibrated): NVLink all_reduce busbw ~200-208 GB/s of 300 on 8 A100 SXM4 (NVIDIA/nccl-tests#149
// and #178); 24 GB/s per HDR NIC expected by the NCCL maintainers (NVIDIA/nccl#412), 96 GB/s busbw
// with 4 HDR per node (NVIDIA/nccl-tests#119).
inline constexpr double kNvlinkEfficiency = 0.70;
inline constexpr double kNicEfficiency = 0.96;
// Gb/s. The compute NIC per GPU assumed where neither host_networking nor a datasheet says: DGX
// A100's HDR InfiniBand.
inline constexpr double kDefaultReferenceNicGbps = 200;
// bytes. The evaluation's allreduce: the two int64 counts it sums over ranks.
inline constexpr double kEvalCountBytes = 16;

// ---- what a published implementation's code does (NVIDIA's and Samsung's run_pretraining.py,
// modeling.py, padding.py and fmha.py; apex at Samsung's pinned commit; PyTorch 1.9
// DistributedDataParallel)

// What NVIDIA's reference launch of its PyTorch BERT passes to every run, whatever the config: the
// `run_and_time.sh` of its v1.1 to v3.1 results puts `--distributed_lamb` (apex
// DistributedFusedLAMB) in the base command (the config's EXTRA_PARAMS, which add CUDA graphs,
// padding or packing per scale, are not in the result folder).
inline constexpr const char* kReferenceLaunchFlags = "--distributed_lamb";
// MiB. The bucket of a path that reduces the whole gradient at once (one bucket holds it all).
inline constexpr double kWholeGradientBucketMb = 1e9;
// MiB of fp16 gradients per bucket of Samsung's DDP (bucket_cap_mb=25).
inline constexpr double kDdpBucketCapMb = 25;
// bytes per element or parameter of the implementations' passes over the gradients per step.
// DistributedFusedLAMB (NVIDIA's optim/distributed_fused_lamb.py): flatten the fp16 gradients
// (read 2, write 2), their L2 norm (2), the pre-reduction scaling (2 + 2).
inline constexpr double kDistributedLambPassBytes = 10;
// --allreduce_post_accumulation (take_optimizer_step of NVIDIA's run_pretraining.py): amp's
// unscale of the fp16 gradients into f32 master gradients (2 + 4), the scaling into the flat fp16
// allreduce buffer (4 + 2) and back into the master gradients (2 + 4).
inline constexpr double kPostAccumulationPassBytes = 18;
// --local_gradient_clip in that path (Samsung's --baseline): the master gradients' norm (4) and
// scaling (4 + 4).
inline constexpr double kLocalClipPassBytes = 12;
// Samsung's own path (--local_gradient_clip without --baseline): a comm hook takes each fp16
// bucket's norm (2) and scales it in place (2 + 2) before its allreduce; after backward amp
// unscales the fp16 gradients into the f32 master gradients (2 + 4).
inline constexpr double kDdpBucketNormBytes = 6;
inline constexpr double kAmpUnscaleBytes = 6;
// Read-backs, each emptying the GPU's queue: unpadding's generate_mask reads back nonzero() of the
// mask, the longest sequence and the token count before the encoder;
inline constexpr int kUnpadReadBacks = 3;
// --dense_seq_output gathers the masked positions through nonzero() and a boolean-mask index.
inline constexpr int kDenseSeqOutputReadBacks = 2;
// Samsung's DDP communication hook passes the bucket's clip coefficient, a CUDA tensor, as the
// float argument of apex's multi_tensor_scale (a read-back per bucket), around six eager ops with a
// launch each (the bucket's L2 norm, clamp, scale, reciprocal, the in-place scaling, the NCCL
// allreduce).
inline constexpr int kBucketHookOps = 6;
// After backward apex amp's dynamic loss scaler reads its overflow flag (update_scale), then per
// parameter tensor amp allocates the f32 master gradient (empty_like, an eager op without a
// kernel) and Samsung's zero_grad detaches and zeroes the fp16 gradient (two eager ops, one
// launch).
inline constexpr int kAmpEagerOpsPerTensor = 3;
inline constexpr int kAmpLaunchesPerTensor = 1;
// bytes per element. DDP, constructed with broadcast_buffers on (its default), broadcasts every
// module buffer from rank 0 before each forward: the FMHA module registers each layer's fused QKV
// weight and bias (3H x H + 3H) as buffers, in fp16 under amp O2.
inline constexpr double kFmhaBufferBytesPerElement = 2;
// Samples per rank of an evaluation batch where the launch line states none: the
// --eval_batch_size=16 of NVIDIA's and Samsung's published launches.
inline constexpr int kAssumedEvalBatchSize = 16;

}  // namespace mlbert::simulate
