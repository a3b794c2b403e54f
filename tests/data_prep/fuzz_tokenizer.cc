// libFuzzer target: arbitrary bytes through UTF-8 validation, replacement, Python-style stripping
// and both tokenizer flavours. Invalid UTF-8 must raise InvalidUtf8Error (never crash), replaced
// text must validate, and every id must be a vocabulary id.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/utf8.h"
#include "data_prep/text_input.h"
#include "data_prep/tokenizer.h"

namespace {
const mlbert::data::Vocab& fuzz_vocab() {
  static const mlbert::data::Vocab vocab = mlbert::data::Vocab::from_tokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a",   "b",  "ab", "##a",
       "##b",   "##ab",  "é",     "e",     "東",     "σ",   "ς",  ".",  ",",
       "!",     "[",     "]",     "mask",  "##s",    "the", "##é"});
  return vocab;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlbert;
  using namespace mlbert::data;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Vocab& vocab = fuzz_vocab();
  const bool valid = is_valid_utf8(text);
  const std::string usable = valid ? std::string(text) : replace_invalid_utf8(text);
  if (!is_valid_utf8(usable)) std::abort();
  (void)python_strip(usable);
  for (TokenizerFlavor flavor : {TokenizerFlavor::kReference, TokenizerFlavor::kHuggingFace}) {
    const Tokenizer tok(vocab, flavor);
    try {
      for (int32_t id : tok.tokenize(text)) {
        if (id < 0 || id >= vocab.size()) std::abort();
      }
      if (!valid) std::abort();  // invalid input must have been refused
    } catch (const InvalidUtf8Error&) {
      if (valid) std::abort();
    }
    for (int32_t id : tok.tokenize(usable)) {
      if (id < 0 || id >= vocab.size()) std::abort();
    }
  }
  return 0;
}
