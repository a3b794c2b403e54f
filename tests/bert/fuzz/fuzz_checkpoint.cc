// libFuzzer targets for the checkpoint readers: arbitrary bytes as a safetensors file, or as a TF
// bundle index (with a fixed small data shard), must give an exception or a result, never a crash,
// a hang or an unbounded allocation. Then the import's planner on the same file against a small
// BERT (check_checkpoint, what `mlbert train --init-checkpoint` runs before init): names, shapes,
// vocab padding, Hugging Face transposes.
#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>

#include "bert/checkpoint/checkpoint.h"
#include "bert/checkpoint/safetensors.h"
#include "bert/checkpoint/tf_bundle.h"
#include "tests/fuzz/fuzz_scratch.h"

using mlbert::fuzz::scratch_dir;
using mlbert::fuzz::write_file;

namespace {

// The committed test bundle's model (tests/bert/data/tf_bundle/bert_config.json), which the seeds
// hold: 2 layers of 16, 45 tokens, 12 positions.
const mlbert::bert::BertConfig& small_model() {
  static const mlbert::bert::BertConfig config = [] {
    mlbert::bert::BertConfig c;
    c.vocab_size = 45;
    c.hidden_size = 16;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 2;
    c.intermediate_size = 24;
    c.max_position_embeddings = 12;
    return c;
  }();
  return config;
}

void check_against_small_model(const std::filesystem::path& path) {
  try {
    mlbert::bert::check_checkpoint(path, small_model());
  } catch (const std::exception&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
#if defined(MLBERT_FUZZ_SAFETENSORS)
  const auto path = scratch_dir() / "input.safetensors";
  write_file(path, data, size);
  try {
    mlbert::bert::SafetensorsReader reader(path);
    for (const auto& e : reader.entries()) {
      try {
        reader.read_f32(e);
      } catch (const std::exception&) {
      }
    }
  } catch (const std::exception&) {
  }
  check_against_small_model(path);
#else
  const auto prefix = scratch_dir() / "model.ckpt";
  write_file(prefix.string() + ".index", data, size);
  static const bool shard_written = [&] {
    const uint8_t shard[64] = {1, 2, 3, 4, 5, 6, 7, 8};
    write_file(prefix.string() + ".data-00000-of-00001", shard, sizeof(shard));
    return true;
  }();
  (void)shard_written;
  try {
    mlbert::bert::TfBundleReader reader(prefix);
    for (const auto& e : reader.entries()) {
      try {
        reader.read_f32(e);
      } catch (const std::exception&) {
      }
    }
  } catch (const std::exception&) {
  }
  check_against_small_model(prefix);
  try {
    mlbert::bert::snappy_uncompress(reinterpret_cast<const char*>(data), size);
  } catch (const std::exception&) {
  }
#endif
  return 0;
}
