// Reads a loss-curve run's batch file (see training_batches.h).
#include "tests/numerics/training_batches.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "common/input_file.h"

namespace mlbert::test {

namespace {

const nlohmann::json& field(const nlohmann::json& object, const char* name,
                            const std::string& where) {
  if (!object.is_object() || !object.contains(name))
    throw std::runtime_error(where + ": missing field \"" + name + "\"");
  return object.at(name);
}

int64_t positive(const nlohmann::json& json, const char* name, const std::string& where) {
  const nlohmann::json& value = field(json, name, where);
  if (!value.is_number_integer() || value.get<int64_t>() <= 0)
    throw std::runtime_error(where + ": " + name + " must be a positive integer, got " +
                             value.dump());
  return value.get<int64_t>();
}

std::vector<int32_t> int_array(const nlohmann::json& step, const char* name,
                               const std::string& where) {
  const nlohmann::json& value = field(step, name, where);
  if (!value.is_array()) throw std::runtime_error(where + "." + name + ": not an array");
  std::vector<int32_t> out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_number_integer())
      throw std::runtime_error(where + "." + name + "[" + std::to_string(i) +
                               "]: not an integer: " + value[i].dump());
    out.push_back(value[i].get<int32_t>());
  }
  return out;
}

}  // namespace

std::vector<bert::Batch> read_training_batches(const std::filesystem::path& path,
                                               const bert::BertConfig& config) {
  std::ifstream in = files::open_input(path, "batch file");
  nlohmann::json json;
  try {
    in >> json;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": not valid JSON: " + e.what());
  }
  const std::string file = path.string();
  const int64_t batch_size = positive(json, "batch_size", file);
  const int64_t seq_len = positive(json, "seq_len", file);
  const int64_t max_predictions = positive(json, "max_predictions", file);
  const nlohmann::json& steps = field(json, "steps", file);
  if (!steps.is_array() || steps.empty())
    throw std::runtime_error(file + ": steps must be a non-empty array");
  std::vector<bert::Batch> batches;
  batches.reserve(steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    const std::string where = file + ": steps[" + std::to_string(s) + "]";
    const auto ids = int_array(steps[s], "input_ids", where);
    const auto mask = int_array(steps[s], "input_mask", where);
    const auto segments = int_array(steps[s], "segment_ids", where);
    const auto positions = int_array(steps[s], "masked_lm_positions", where);
    const auto labels = int_array(steps[s], "masked_lm_ids", where);
    const auto nsp = int_array(steps[s], "next_sentence_labels", where);
    const bert::PaddedBatchView view{.batch = batch_size,
                                     .seq_len = seq_len,
                                     .max_predictions = max_predictions,
                                     .input_ids = ids,
                                     .input_mask = mask,
                                     .segment_ids = segments,
                                     .masked_lm_positions = positions,
                                     .masked_lm_ids = labels,
                                     .next_sentence_labels = nsp};
    try {
      batches.push_back(bert::batch_from_padded(view));
      batches.back().validate(config);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": " + e.what());
    }
  }
  return batches;
}

bert::ModelLimits limits_of(const std::vector<bert::Batch>& batches) {
  bert::ModelLimits limits;
  limits.max_seqlen = 1;
  limits.max_masked = 1;
  for (const bert::Batch& b : batches) {
    limits.max_tokens = std::max(limits.max_tokens, b.num_tokens());
    limits.max_sequences = std::max(limits.max_sequences, b.num_sequences());
    limits.max_masked = std::max(limits.max_masked, b.num_masked());
    limits.max_seqlen = std::max<int>(limits.max_seqlen, b.max_seqlen);
  }
  return limits;
}

}  // namespace mlbert::test
