// Checkpoints of the BERT parameter store: mlbert's own safetensors files, the MLPerf reference TF
// bundle (model.ckpt-28252) and Hugging Face BertForPreTraining / BertModel safetensors.
//
// Design choice: every format is mapped onto the TF names of ParameterStore (TF layout, kernels
// [in, out]); an import first collects ALL problems (unknown, missing and mis-shaped tensors) and
// reports them in one error, and only then writes the master weights, so a failed import leaves
// the store untouched.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bert/config.h"
#include "bert/parameters.h"

namespace mlbert::bert {

enum class CheckpointFormat { mlbert_safetensors, hf_safetensors, tf_bundle };
const char* checkpoint_format_name(CheckpointFormat format);

// Sniffs the format: a TF bundle prefix (or its .index file), or a .safetensors whose tensor
// names are TF names (mlbert) or Hugging Face names.
CheckpointFormat detect_checkpoint_format(const std::filesystem::path& path);

// Where a checkpoint named by a path is: the path itself (a file or a TF bundle prefix), or for a
// folder, a Hugging Face folder's model.safetensors (config.json beside it) or the TF bundle its
// `checkpoint` file names, else its only one (bert_config.json beside it). Throws
// std::invalid_argument naming the folder and why for any other folder (pytorch_model.bin, a
// sharded safetensors index, several bundles, nothing).
struct CheckpointLocation {
  std::filesystem::path file;
  std::filesystem::path config_json;  // the folder's config, if it holds one
  bool config_is_hf = false;          // config.json (Hugging Face) rather than bert_config.json
};
CheckpointLocation locate_checkpoint(const std::filesystem::path& path);

struct ImportOptions {
  // Accept a checkpoint without the pretraining heads (e.g. a Hugging Face BertModel): the heads
  // keep their current values. The encoder and embeddings are always required.
  bool allow_missing_heads = false;
};

struct ImportReport {
  CheckpointFormat format = CheckpointFormat::mlbert_safetensors;
  size_t loaded = 0;                 // parameter tensors written
  std::vector<std::string> skipped;  // optimizer slots, step counters, tied duplicates (with why)
  std::vector<std::string> missing_heads;  // with allow_missing_heads
  std::vector<std::string> padded;  // tensors whose vocab rows were zero-padded to the model's
};

// Loads a checkpoint of any supported format into params' master weights (then sync_compute()).
// Throws std::runtime_error listing every unknown, missing or mis-shaped tensor at once.
ImportReport load_checkpoint(ParameterStore& params, const std::filesystem::path& path,
                             const ImportOptions& options = {});
// The same checks without loading: the checkpoint's index or header against the layout of a
// model of `config` (nothing allocated, no tensor data read). Throws what load_checkpoint would;
// the report counts the tensors it would load.
ImportReport check_checkpoint(const std::filesystem::path& path, const BertConfig& config,
                              const ImportOptions& options = {});

// The BertConfig stored in an mlbert safetensors file's metadata, if any.
std::optional<BertConfig> checkpoint_config(const std::filesystem::path& path);

// Extra named f32 tensors saved alongside the parameters (optimizer state, ...), stored under
// "extra/<name>" so they never collide with parameter names.
struct ExtraTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::span<const float> values;
};

// mlbert format: TF names, TF layout, f32, the config in the metadata ("bert_config") plus any
// caller metadata. Written atomically.
void save_checkpoint(const ParameterStore& params, const std::filesystem::path& path,
                     const std::map<std::string, std::string>& metadata = {},
                     std::span<const ExtraTensor> extras = {});
// Reads an extra tensor saved by save_checkpoint; nullopt when absent.
std::optional<std::vector<float>> load_extra_tensor(const std::filesystem::path& path,
                                                    const std::string& name);

// Hugging Face BertForPreTraining names and layouts ([out, in] Linear weights, vocab cut back to
// config.vocab_size), loadable with transformers' from_pretrained.
void export_hf_safetensors(const ParameterStore& params, const std::filesystem::path& path);

// The Hugging Face name of a TF parameter name and whether its 2-D layout is transposed
// (exposed for tests and the CLI).
struct HfName {
  std::string name;
  bool transpose = false;
};
HfName hf_name_for(const std::string& tf_name);

// True for TF checkpoint entries that are optimizer or bookkeeping state, not model weights
// (".../adam_m", ".../adam_v", LAMB slots, "global_step", ...).
bool is_tf_optimizer_slot(const std::string& name);

}  // namespace mlbert::bert

namespace mlbert::bert {

// A Hugging Face config.json as a BertConfig: HF's "gelu" is the exact erf form (-> "gelu_erf"),
// "gelu_new"/"gelu_pytorch_tanh" the tanh approximation; layer_norm_eps is kept.
BertConfig config_from_hf_json(const std::filesystem::path& config_json);
// The inverse, for export: a config.json transformers' BertForPreTraining loads.
std::string hf_config_json(const BertConfig& config);

}  // namespace mlbert::bert
