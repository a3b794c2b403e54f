// The training batches of a loss-curve run, read from the JSON file the PyTorch side writes, so
// both sides train on the same sequences in the same order.
//
// Design choice: each step is stored padded, in the fields and layout of the MLPerf fixed HDF5
// format (flat row-major [batch, seq_len] and [batch, max_predictions] arrays), and converted by
// bert::batch_from_padded, the conversion mlbert's own data path uses; PyTorch feeds the same
// padded arrays with an attention mask.
//   {"batch_size": B, "seq_len": S, "max_predictions": P,
//    "steps": [{"input_ids": [B*S], "input_mask": [B*S], "segment_ids": [B*S],
//               "masked_lm_positions": [B*P], "masked_lm_ids": [B*P],
//               "next_sentence_labels": [B]}, ...]}
#pragma once

#include <filesystem>
#include <vector>

#include "bert/batch.h"
#include "bert/config.h"
#include "bert/model.h"

namespace mlbert::test {

// Every step's batch, validated against `config`. Throws std::runtime_error naming the file, the
// step and the field on any malformed or out-of-range entry.
std::vector<bert::Batch> read_training_batches(const std::filesystem::path& path,
                                               const bert::BertConfig& config);

// The smallest arena that holds every one of `batches`.
bert::ModelLimits limits_of(const std::vector<bert::Batch>& batches);

}  // namespace mlbert::test
