// The launch line a published BERT log echoes: the flags of NVIDIA's run_pretraining.py, which
// most GPU submissions derive from, and of Samsung's changes to it, as found in the text around
// the MLLOG records.
//
// Design choice: this is what the line says and nothing more; what the flags imply for how the
// implementation ran (its gradient path, the host's issue, the shapes, the read-backs) is derived
// once by derive_launch (published_launch.h). A flag counts only as a word of its own (--unpad is
// not found in --unpad_fmha).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mlbert::simulate {

struct LaunchLine {
  // The recognized flags found, in the order they are looked for, as written ("--unpad",
  // "--optimizer=FusedAdam", "--split_batch_cnt 6 3 2 5").
  std::vector<std::string> flags;
  // NVIDIA's run_pretraining.py with --train_batch_size=: a stated launch of its model.
  bool nvidia_run_pretraining = false;
  bool exchange_padding = false;        // --exchange_padding: samples exchanged over the world
  bool group_exchange_padding = false;  // --group_exchange_padding: over the node
  bool local_gradient_clip = false;     // --local_gradient_clip
  bool distributed_lamb = false;        // --distributed_lamb: apex DistributedFusedLAMB
  bool baseline = false;                // Samsung's --baseline: NVIDIA's gradient path
  bool use_cuda_graph = false;          // --use_cuda_graph
  bool pad_fmha = false;                // --pad_fmha: static padded shapes
  bool unpad_fmha = false;              // --unpad_fmha: the FMHA module (QKV weights as buffers)
  bool unpad = false;                   // --unpad or --unpad_fmha: sequence lengths read back
  bool dense_seq_output = false;        // --dense_seq_output: masked positions as a dynamic shape
  // --packed_samples, looked for only where it decides whether the model removes the padding: on
  // run_pretraining.py's line without --unpad, --unpad_fmha or --pad_fmha.
  bool packed_samples = false;
  bool use_apex_amp = false;                      // --use_apex_amp: amp O2, dynamic loss scaler
  bool allreduce_post_accumulation = false;       // one allreduce of all gradients after backward
  bool allreduce_post_accumulation_fp16 = false;  // ... in fp16
  bool adam = false;                              // --optimizer= names an Adam
  std::optional<int> eval_batch_size;             // --eval_batch_size, when positive
  // --eval_iter_samples / --eval_iter_start_samples, when positive: the run's eval cadence.
  std::optional<std::int64_t> eval_every_samples, eval_first_samples;
  std::optional<std::vector<int>> stratified_quotas;  // --split_batch_cnt Q1 Q2 ...
};

// The launch line of `log`: only its lines that look like a command line (no MLLOG record, a
// " --" in them; the first 1 MiB of them). A log without one gives a LaunchLine with no flags.
LaunchLine read_launch_line(const std::filesystem::path& log);

}  // namespace mlbert::simulate
