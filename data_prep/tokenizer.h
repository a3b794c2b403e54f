// BERT's uncased WordPiece tokenizer: text cleaning, CJK splitting, lower-casing with accent
// stripping (NFD, drop Mn), splitting on whitespace and punctuation, then greedy
// longest-match-first WordPiece. Two flavours that differ in three small, documented ways:
//   kReference   = Google's tokenization.py as used by MLPerf's create_pretraining_data.py:
//                  removes Cc/Cf, lower-cases each whitespace token with Python's str.lower()
//                  (final-sigma rule included) BEFORE NFD, [UNK] for words over 200 characters;
//   kHuggingFace = HF `tokenizers` BertWordPieceTokenizer(lowercase=True) defaults: also removes
//                  Co/Cs, strips accents BEFORE lower-casing, lower-cases char by char (no final
//                  sigma), [UNK] for words over 100 characters.
// Unicode properties come from utf8proc; only non-ASCII text leaves the ASCII fast path.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "data_prep/vocab.h"

namespace mlbert::data {

enum class TokenizerFlavor { kReference, kHuggingFace };

// Thrown for text that is not valid UTF-8; `byte_offset` locates the first bad byte in the line.
struct InvalidUtf8Error : std::runtime_error {
  InvalidUtf8Error(size_t offset)
      : std::runtime_error("invalid UTF-8 at byte " + std::to_string(offset)),
        byte_offset(offset) {}
  size_t byte_offset;
};

class Tokenizer {
 public:
  // Longer words become [UNK]: Google's WordpieceTokenizer default vs HF's WordPiece default.
  static constexpr size_t kReferenceMaxCharsPerWord = 200;
  static constexpr size_t kHuggingFaceMaxCharsPerWord = 100;

  Tokenizer(const Vocab& vocab, TokenizerFlavor flavor)
      : vocab_(vocab),
        flavor_(flavor),
        max_chars_per_word_(flavor == TokenizerFlavor::kReference ? kReferenceMaxCharsPerWord
                                                                  : kHuggingFaceMaxCharsPerWord) {}

  // Appends the WordPiece ids of one line of valid UTF-8 (throws InvalidUtf8Error otherwise).
  void tokenize(std::string_view text, std::vector<int32_t>& ids) const;
  std::vector<int32_t> tokenize(std::string_view text) const {
    std::vector<int32_t> ids;
    tokenize(text, ids);
    return ids;
  }
  // The basic (pre-WordPiece) words, for tests and debugging.
  std::vector<std::string> basic_words(std::string_view text) const;

  const Vocab& vocab() const { return vocab_; }
  TokenizerFlavor flavor() const { return flavor_; }

 private:
  template <typename Sink>
  void for_each_word(std::string_view text, Sink&& sink) const;
  void wordpiece(std::string_view word, std::vector<int32_t>& ids) const;

  const Vocab& vocab_;
  TokenizerFlavor flavor_;
  size_t max_chars_per_word_;
};

// True for code points BERT treats as CJK ideographs (each becomes its own word).
bool is_cjk_ideograph(char32_t cp);

}  // namespace mlbert::data
