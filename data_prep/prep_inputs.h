// Which files `data prep` reads as training text. A folder given as input is read for its text
// files only: a previous step often writes the vocabulary and the held-out eval text beside the
// training parts (`data demo-corpus` does, as MLPerf's results4/ folder holds eval.txt), and
// read as training text they would become training shards, the eval text leaking into training.
//
// Design choice: what is skipped in a folder is decided by content where content can tell (a
// NUL byte in the first 64 KiB: binary; one token a line with [UNK], [CLS] and [SEP] among them:
// a WordPiece vocabulary) and by name only for eval text, which reads like any other text; every
// skipped file is named with its reason. A file named on the command line is read, eval text
// included (that is how eval shards are made), unless it is a vocabulary.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace mlbert::data {

struct SkippedInput {
  std::filesystem::path file;
  std::string reason;
};

struct PrepInputs {
  std::vector<std::filesystem::path> files;  // to read, in order: folders' text files sorted
  std::vector<SkippedInput> skipped;         // files of input folders that are not training text
};

// Expands folders and checks that every input is a readable, non-empty regular file; `vocab`
// (the vocabulary file, possibly empty) is never read as text.
PrepInputs expand_inputs(const std::vector<std::filesystem::path>& inputs,
                         const std::filesystem::path& vocab = {});

}  // namespace mlbert::data
