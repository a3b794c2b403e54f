// Vocabulary loading with the reference's stripping and duplicate rules, and the special-token
// check.
#include "data_prep/vocab.h"

#include <fstream>
#include <stdexcept>
#include <unordered_set>

#include "common/input_file.h"
#include "data_prep/text_input.h"

namespace mlbert::data {

Vocab Vocab::from_tokens(std::vector<std::string> tokens, const std::string& origin) {
  Vocab v;
  v.origin_ = origin;
  v.tokens_ = std::move(tokens);
  v.ids_.reserve(v.tokens_.size() * 2);
  for (size_t i = 0; i < v.tokens_.size(); ++i) {
    const std::string& t = v.tokens_[i];
    v.ids_.insert_or_assign(t, static_cast<int32_t>(i));  // a repeated token keeps its last id
    if (t.size() > v.max_token_bytes_) v.max_token_bytes_ = t.size();
  }
  // Distinct tokens in first-seen order, each resolved to the id a lookup returns (the last line).
  std::unordered_set<std::string_view> seen;
  for (const std::string& t : v.tokens_) {
    if (seen.insert(t).second) v.random_word_ids_.push_back(v.ids_.find(t)->second);
  }
  const char* names[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  int32_t* slots[] = {&v.special_.pad, &v.special_.unk, &v.special_.cls, &v.special_.sep,
                      &v.special_.mask};
  for (int i = 0; i < 5; ++i) {
    const int32_t id = v.find(names[i]);
    if (id < 0) {
      throw std::runtime_error(origin + ": vocabulary has no " + names[i] +
                               " token (BERT needs [PAD], [UNK], [CLS], [SEP] and [MASK])");
    }
    *slots[i] = id;
  }
  if (v.special_.pad != 0) {
    throw std::runtime_error(origin + ": [PAD] must be id 0 (line 1), found at line " +
                             std::to_string(v.special_.pad + 1) +
                             "; the HDF5 layouts use 0 as padding and as 'no prediction'");
  }
  if (v.tokens_.size() > 32767) {
    throw std::runtime_error(origin + ": " + std::to_string(v.tokens_.size()) +
                             " tokens; the NVIDIA HDF5 layouts store ids as int16 (at most 32767)");
  }
  return v;
}

Vocab Vocab::load(const std::filesystem::path& path) {
  std::ifstream in = files::open_input(path, "vocabulary file");
  std::vector<std::string> tokens;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!is_valid_utf8(line)) {
      throw std::runtime_error(path.string() + ":" + std::to_string(line_no) +
                               ": vocabulary line is not valid UTF-8");
    }
    tokens.emplace_back(python_strip(line));
  }
  if (in.bad()) throw std::runtime_error(path.string() + ": read error");
  if (tokens.empty()) throw std::runtime_error(path.string() + ": vocabulary file is empty");
  return from_tokens(std::move(tokens), path.string());
}

}  // namespace mlbert::data
