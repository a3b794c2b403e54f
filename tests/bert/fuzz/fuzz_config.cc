// libFuzzer target: arbitrary bytes as a bert_config.json through BertConfig::from_file, then the
// parameter layout the model would allocate from it. A config gives an exception or a model that
// can be laid out: validate() passes, the JSON round trip is exact, the padded vocabulary is a
// multiple of vocab_pad_multiple covering vocab_size, and the tensors' element counts add up to
// the layout's total without overflow.
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <optional>

#include <nlohmann/json.hpp>

#include "bert/config.h"
#include "bert/parameters.h"
#include "tests/fuzz/fuzz_scratch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using mlbert::bert::BertConfig;
  const auto path = mlbert::fuzz::scratch_dir() / "bert_config.json";
  mlbert::fuzz::write_file(path, data, size);
  std::optional<BertConfig> config;
  try {
    config = BertConfig::from_file(path);
  } catch (const std::exception&) {
    return 0;
  }
  config->validate();  // must not throw for a config from_file accepted
  if (!(BertConfig::from_json(config->to_json(), "round trip") == *config)) std::abort();
  const int64_t padded = config->padded_vocab_size();
  if (padded < config->vocab_size || padded % config->vocab_pad_multiple != 0 ||
      padded - config->vocab_size >= config->vocab_pad_multiple)
    std::abort();
  if (config->head_dim() * config->num_attention_heads != config->hidden_size) std::abort();
  const auto layout = mlbert::bert::bert_parameter_layout(*config);
  size_t end = 0;
  for (const auto& p : layout) {
    size_t numel = 1;
    for (int64_t d : p.shape) {
      if (d <= 0) std::abort();
      numel *= static_cast<size_t>(d);
    }
    if (numel != p.numel || p.offset < end) std::abort();
    end = p.offset + p.numel;
  }
  return 0;
}
