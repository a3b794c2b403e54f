// Pretraining-sample creation, reproducing MLPerf's create_pretraining_data.py (Google BERT's
// algorithm, whole-word masking off) call for call on a CPython-identical random stream.
//
// The reference's random-call order, which `create_samples` follows exactly (rng = Random(seed)):
//  1. Read documents: one sentence per line, blank line = new document; lines are str.strip()ped,
//     tokenized, and empty token lists dropped; empty documents removed.
//  2. rng.shuffle(all_documents).
//  3. for _ in range(dupe_factor): for each document_index: create_instances_from_document:
//     a. if rng.random() < short_seq_prob: target = rng.randint(2, max_seq_length - 3)
//     b. walk sentences into current_chunk until the last sentence or current_length >= target;
//     then
//        a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1 (no draw);
//        random next when len(chunk) == 1 (no draw) or rng.random() < 0.5:
//          up to 10 x rng.randint(0, len(all_documents) - 1) until != document_index,
//          random_start = rng.randint(0, len(random_document) - 1), take sentences until
//          len(B) >= target - len(A), and put back len(chunk) - a_end unused sentences (i -= ...);
//        truncate_seq_pair: while len(A) + len(B) > max - 3: trim the longer (B on ties), from the
//          front if rng.random() < 0.5 else from the back;
//     c. masking: cand = every position except [CLS]/[SEP]; rng.shuffle(cand);
//        num_to_predict = min(max_predictions, max(1, round(len(tokens) * masked_lm_prob)));
//        for each of the first num_to_predict candidates: rng.random() < 0.8 -> [MASK]; else
//        rng.random() < 0.5 -> keep; else vocab_words[rng.randint(0, len(vocab_words) - 1)];
//        predictions sorted by position.
//  4. rng.shuffle(instances) over everything produced from the input.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "data_prep/sample.h"
#include "data_prep/tokenizer.h"

namespace mlbert::data {

struct PretrainingOptions {  // MLPerf's values are the defaults
  int32_t max_seq_length = 512;
  int32_t max_predictions_per_seq = 76;
  double masked_lm_prob = 0.15;
  int32_t dupe_factor = 10;
  double short_seq_prob = 0.1;
  int64_t random_seed = 12345;
};

enum class InvalidUtf8Policy { kError, kReplace };

// A document is a list of tokenized sentences.
using Document = std::vector<std::vector<int32_t>>;

struct ReadStats {
  int64_t lines = 0;
  int64_t replaced_lines = 0;  // lines with invalid UTF-8 replaced by U+FFFD (policy kReplace)
  int64_t bytes = 0;
  int64_t word_pieces = 0, unknown = 0;  // WordPiece ids of the text, and how many are [UNK]
};

// Appends the documents of one text file to `documents` (the reference's `all_documents`, whose
// leading empty document is implicit). `documents` must hold at least one (possibly empty)
// document. Errors name the file and line.
void read_documents(const std::filesystem::path& path, const Tokenizer& tokenizer,
                    InvalidUtf8Policy policy, std::vector<Document>& documents,
                    ReadStats* stats = nullptr,
                    const std::function<void(int64_t bytes)>& on_bytes = {});

// Steps 2-4 above. `documents` is shuffled in place (as the reference does).
std::vector<Sample> create_samples(std::vector<Document>& documents, const Vocab& vocab,
                                   const PretrainingOptions& options);

// Validates options (ranges the reference implicitly assumes); throws with the option name.
void validate(const PretrainingOptions& options);

}  // namespace mlbert::data
