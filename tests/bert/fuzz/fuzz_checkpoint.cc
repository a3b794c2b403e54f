// libFuzzer targets for the checkpoint readers: arbitrary bytes as a safetensors file, or as a TF
// bundle index (with a fixed small data shard), must give an exception or a result, never a crash,
// a hang or an unbounded allocation.
#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>

#include "bert/checkpoint/safetensors.h"
#include "bert/checkpoint/tf_bundle.h"
#include "tests/fuzz/fuzz_scratch.h"

using mlbert::fuzz::scratch_dir;
using mlbert::fuzz::write_file;

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
  try {
    mlbert::bert::snappy_uncompress(reinterpret_cast<const char*>(data), size);
  } catch (const std::exception&) {
  }
#endif
  return 0;
}
