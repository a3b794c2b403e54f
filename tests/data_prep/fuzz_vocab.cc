// libFuzzer target: arbitrary bytes as a vocab.txt through Vocab::load, then both tokenizers with
// the loaded vocabulary. A load gives an exception or a vocabulary that keeps its promises
// ([PAD] at 0, every special token found, lookups returning a token's last line, the random-word
// list holding each distinct token once), and tokenizing with it yields only ids of that
// vocabulary.
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <optional>
#include <set>
#include <string>

#include "common/utf8.h"
#include "data_prep/text_input.h"
#include "data_prep/tokenizer.h"
#include "data_prep/vocab.h"
#include "tests/fuzz/fuzz_scratch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlbert;
  using namespace mlbert::data;
  const auto path = mlbert::fuzz::scratch_dir() / "vocab.txt";
  mlbert::fuzz::write_file(path, data, size);
  std::optional<Vocab> loaded;
  try {
    loaded = Vocab::load(path);
  } catch (const std::exception&) {
    return 0;
  }
  const Vocab& vocab = *loaded;
  const int32_t n = vocab.size();
  if (n < 5 || n > 32767 || vocab.special().pad != 0) std::abort();
  const SpecialIds& sp = vocab.special();
  for (int32_t id : {sp.unk, sp.cls, sp.sep, sp.mask})
    if (id < 0 || id >= n) std::abort();
  size_t longest = 0;
  std::set<std::string> distinct;
  for (int32_t i = 0; i < n; ++i) {
    const std::string& t = vocab.token(i);
    const int32_t last = vocab.find(t);
    if (last < i || vocab.token(last) != t) std::abort();
    longest = std::max(longest, t.size());
    distinct.insert(t);
  }
  if (longest != vocab.max_token_bytes()) std::abort();
  if (vocab.random_word_ids().size() != distinct.size()) std::abort();
  for (int32_t id : vocab.random_word_ids())
    if (id < 0 || id >= n || vocab.find(vocab.token(id)) != id) std::abort();

  // Text made of the vocabulary's own tokens (WordPiece continuations included) and a fixed line.
  std::string text = "The quick brown fox, unaffable [MASK] jumps; caf\xC3\xA9 \xE6\x9D\xB1 ";
  for (int32_t i = 0; i < n && i < 64; ++i) text += vocab.token(i) + (i % 3 ? " " : "");
  if (!is_valid_utf8(text)) std::abort();  // vocabulary lines were validated on load
  for (TokenizerFlavor flavor : {TokenizerFlavor::kReference, TokenizerFlavor::kHuggingFace}) {
    const Tokenizer tokenizer(vocab, flavor);
    for (int32_t id : tokenizer.tokenize(text))
      if (id < 0 || id >= n) std::abort();
  }
  return 0;
}
