// A WordPiece vocabulary (`vocab.txt`, one token per line, id = line number), loaded the way BERT's
// reference `load_vocab` does: tokens are stripped, and a repeated token maps to its last line.
// The reference draws "random word" replacements from the list of distinct tokens in first-seen
// order (`list(vocab.keys())`); `random_word_ids()` keeps that list so the draws match exactly.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mlbert::data {

// The five tokens every BERT vocabulary needs; loading fails naming the one that is missing.
struct SpecialIds {
  int32_t pad = 0;
  int32_t unk = 100;
  int32_t cls = 101;
  int32_t sep = 102;
  int32_t mask = 103;
};

class Vocab {
 public:
  static Vocab load(const std::filesystem::path& path);
  // Builds from tokens in id order (tests, the demo corpus).
  static Vocab from_tokens(std::vector<std::string> tokens, const std::string& origin = "<memory>");

  // Id of `token`, or -1 when absent.
  int32_t find(std::string_view token) const {
    auto it = ids_.find(token);
    return it == ids_.end() ? -1 : it->second;
  }
  const std::string& token(int32_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  const SpecialIds& special() const { return special_; }
  const std::vector<int32_t>& random_word_ids() const { return random_word_ids_; }
  // Longest token in bytes (bounds the WordPiece search window).
  size_t max_token_bytes() const { return max_token_bytes_; }
  const std::string& origin() const { return origin_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
  std::vector<int32_t> random_word_ids_;
  SpecialIds special_;
  size_t max_token_bytes_ = 0;
  std::string origin_;
};

}  // namespace mlbert::data
