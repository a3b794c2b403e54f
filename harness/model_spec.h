// The model a system file's run.model names: a bert/config.h preset or a bert_config.json, with the
// file's overrides applied.
//
// Design choice: one function for everything that reads run.model (the trainer, the simulator), so
// a system file names the same model wherever it is read; what depends on the data (the vocabulary
// of run.model.vocab_from_data) stays with the caller that has the data.
#pragma once

#include <filesystem>

#include "bert/config.h"
#include "harness/system_config.h"

namespace mlbert::harness {

// The preset or file of `spec`, then spec.overrides merged field by field; `origin` (the system
// file) names the overrides in errors.
bert::BertConfig model_from_spec(const ModelSpec& spec, const std::filesystem::path& origin);

// The checkpoint `mlbert train --init-checkpoint` names (a file, a TF bundle prefix, or a folder
// holding one: bert::locate_checkpoint), checked before init: it exists, and where it stores its
// model config (mlbert safetensors) that config is `model`. A TF bundle (MLPerf's phase-1
// checkpoint) or a Hugging Face file stores none: its tensors are checked against the model as
// they are loaded. Throws naming the checkpoint.
std::filesystem::path init_checkpoint_for(const std::filesystem::path& given,
                                          const bert::BertConfig& model,
                                          const std::string& system_name);

}  // namespace mlbert::harness
