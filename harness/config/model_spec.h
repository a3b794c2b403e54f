// The model a system file's run.model names: a bert/config.h preset or a bert_config.json, with the
// file's overrides applied.
//
// Design choice: one function for everything that reads run.model (the trainer, the simulator), so
// a system file names the same model wherever it is read; what depends on the data (the vocabulary
// of run.model.vocab_from_data) stays with the caller that has the data.
#pragma once

#include <filesystem>

#include "bert/config.h"
#include "harness/config/system_config.h"

namespace mlbert::harness {

// The preset or file of `spec`, then spec.overrides merged field by field; `origin` (the system
// file) names the overrides in errors.
bert::BertConfig model_from_spec(const ModelSpec& spec, const std::filesystem::path& origin);

// The checkpoint `mlbert train --init-checkpoint` names (a file, a TF bundle prefix, or a folder
// holding one: bert::locate_checkpoint), checked before init: it exists, where it stores its
// model config (mlbert safetensors) that config is `model`, and every tensor of its index or
// header (a TF bundle such as MLPerf's phase-1 checkpoint, a Hugging Face file) has a parameter
// of `model` with its shape and the other way round (bert::check_checkpoint; no tensor data is
// read). Throws naming the checkpoint.
std::filesystem::path init_checkpoint_for(const std::filesystem::path& given,
                                          const bert::BertConfig& model,
                                          const std::string& system_name);

}  // namespace mlbert::harness
