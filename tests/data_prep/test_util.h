// Helpers shared by the data_prep unit tests: temporary directories, small vocabularies, a test
// sample, and the message of what a call throws.
#pragma once
#include <unistd.h>

#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "data_prep/sample.h"
#include "data_prep/vocab.h"

namespace mlbert::test {

// A valid sample of `length` tokens (at most 5 predictions), varied by `seed`.
inline data::Sample make_sample(int seed, int length) {
  data::Sample s;
  for (int i = 0; i < length; ++i) {
    s.input_ids.push_back(i == 0 ? 101 : i == length - 1 ? 102 : 1000 + (seed * 31 + i) % 20000);
    s.segment_ids.push_back(i < length / 2 ? 0 : 1);
  }
  for (int p = 1; p < length - 1 && s.masked_lm_positions.size() < 5; p += 3 + seed % 3) {
    s.masked_lm_positions.push_back(p);
    s.masked_lm_ids.push_back(2000 + p);
  }
  s.next_sentence_label = static_cast<int8_t>(seed % 2);
  return s;
}

// What `f` throws, or "<no error>".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no error>";
}

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("mlbert-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Files in the directory (names), sorted.
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::recursive_directory_iterator(path_)) {
      if (e.is_regular_file()) names.push_back(std::filesystem::relative(e.path(), path_).string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// The tiny vocabulary of the golden reference run (ids 0..20).
inline data::Vocab tiny_vocab() {
  return data::Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",
                                   "sat",   "on",    "mat",   "dog",   "ran",    "far", "away",
                                   "a",     "big",   "red",   "ball",  ".",      ",",   "##s"});
}

}  // namespace mlbert::test
