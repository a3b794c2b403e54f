// `mlbert data prep`: text files -> pretraining samples -> one HDF5 shard per input file, on a pool
// of worker threads. Each input file is one independent reference run (its own Random(seed)), which
// is how MLPerf builds its 500 training parts; `joint` treats all inputs as one run (the reference
// invoked with a comma-separated input list). Peak memory is a few input files, not the corpus.
// One run writes a folder at a time, and a folder holds one run's shards (prep_folder.h).
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "data_prep/hdf5_io.h"
#include "data_prep/prep_inputs.h"
#include "data_prep/pretraining.h"
#include "data_prep/tokenizer.h"

namespace mlbert::data {

struct PrepOptions {
  std::vector<std::filesystem::path> inputs;  // files, or directories (their files, sorted)
  std::filesystem::path output;               // directory (or the output file when joint)
  Layout layout = Layout::kVarlen;
  PretrainingOptions pretraining;
  TokenizerFlavor flavor = TokenizerFlavor::kReference;
  InvalidUtf8Policy invalid_utf8 = InvalidUtf8Policy::kError;
  int threads = 0;  // 0: hardware concurrency
  bool joint = false;
  // Shards in the output folder that these inputs do not produce are removed once the run
  // succeeds; without it they make the run fail before it starts.
  bool replace = false;
  int progress = -1;  // see Progress
  // Told of each file of an input folder that is not read as training text (prep_inputs.h).
  std::function<void(const SkippedInput&)> on_skipped;
};

struct PrepResult {
  int64_t files = 0, documents = 0, samples = 0, tokens = 0, replaced_lines = 0, bytes = 0;
  int64_t word_pieces = 0, unknown = 0;  // of the text read (ReadStats), before sampling
  double seconds = 0;
  std::vector<std::filesystem::path> outputs;
  std::vector<std::filesystem::path> removed_earlier;  // an earlier run's (PrepOptions::replace)
};

// Output shard name for an input file: `<dir>/<input file name>.hdf5`.
std::filesystem::path shard_name_for(const std::filesystem::path& output_dir,
                                     const std::filesystem::path& input);
// Fails early, with the directory named, when shards cannot be created there.
void check_output_dir(const std::filesystem::path& dir);

PrepResult run_prep(const PrepOptions& options, const Vocab& vocab);

// A warning when more than 5% of the text's word pieces are [UNK] (a vocabulary that does not fit
// the text: another language or casing, or a vocabulary file for another model), else "".
std::string unknown_token_warning(const PrepResult& result, const Vocab& vocab);

}  // namespace mlbert::data
