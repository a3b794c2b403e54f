// Tokenizer behaviour pinned on small vocabularies; identity with HF tokenizers and Google BERT on
// the real vocabulary is checked by tests/parity/data_tokenizer_parity.py.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "data_prep/text_input.h"
#include "data_prep/tokenizer.h"
#include "test_util.h"

using mlbert::data::Tokenizer;
using mlbert::data::TokenizerFlavor;
using mlbert::data::Vocab;

namespace {
Vocab word_vocab() {
  return Vocab::from_tokens({"[PAD]",  "[UNK]", "[CLS]",    "[SEP]", "[MASK]", "un",   "##aff",
                             "##able", "hello", ",",        "world", "!",      "cafe", "οδος",
                             "οδοσ",   "東",    "京",       "a",     "##a",    "[",    "]",
                             "mask",   "i",     "istanbul", "##b"});
}
std::vector<std::string> pieces(const Tokenizer& t, const std::string& text) {
  std::vector<std::string> out;
  for (int32_t id : t.tokenize(text)) out.push_back(t.vocab().token(id));
  return out;
}
}  // namespace

TEST_CASE("WordPiece is greedy longest-match-first with ## continuations") {
  const Vocab v = word_vocab();
  const Tokenizer t(v, TokenizerFlavor::kReference);
  CHECK(pieces(t, "unaffable") == std::vector<std::string>{"un", "##aff", "##able"});
  CHECK(pieces(t, "Hello, WORLD!") == std::vector<std::string>{"hello", ",", "world", "!"});
  CHECK(pieces(t, "unknownword") == std::vector<std::string>{"[UNK]"});
}

TEST_CASE(
    "accents are stripped, CJK ideographs split, controls and zero-width characters removed") {
  const Vocab v = word_vocab();
  const Tokenizer t(v, TokenizerFlavor::kReference);
  CHECK(pieces(t, "Café") == std::vector<std::string>{"cafe"});
  CHECK(pieces(t, "Cafe\u0301") == std::vector<std::string>{"cafe"});
  CHECK(pieces(t, "東京") == std::vector<std::string>{"東", "京"});
  CHECK(pieces(t, "hel\u200Blo\x07") == std::vector<std::string>{"hello"});
  CHECK(pieces(t, "hello\u00A0world\u3000!") == std::vector<std::string>{"hello", "world", "!"});
  CHECK(pieces(t, "İstanbul") == std::vector<std::string>{"istanbul"});
  CHECK(t.tokenize("").empty());
  CHECK(t.tokenize(" \t\r ").empty());
}

TEST_CASE("final sigma follows Python's str.lower() only in the reference flavour") {
  const Vocab v = word_vocab();  // has both "οδος" (final ς) and "οδοσ"
  const Tokenizer ref(v, TokenizerFlavor::kReference), hf(v, TokenizerFlavor::kHuggingFace);
  CHECK(pieces(ref, "ΟΔΟΣ") == std::vector<std::string>{"οδος"});
  CHECK(pieces(hf, "ΟΔΟΣ") == std::vector<std::string>{"οδοσ"});
  CHECK(ref.basic_words("ΟΣΑ") == std::vector<std::string>{"οσα"});      // medial: σ
  CHECK(ref.basic_words("ΑΣ.") == std::vector<std::string>{"ας", "."});  // '.' is case-ignorable
  CHECK(ref.basic_words("Σ") == std::vector<std::string>{"σ"});          // nothing cased before it
}

TEST_CASE("words longer than 200 (reference) or 100 (HF) characters become [UNK]") {
  const Vocab v = word_vocab();
  const std::string a101 = std::string(101, 'a'), a201 = std::string(201, 'a');
  const Tokenizer ref(v, TokenizerFlavor::kReference), hf(v, TokenizerFlavor::kHuggingFace);
  CHECK(ref.tokenize(a101).size() == 101);
  CHECK(ref.tokenize(a201) == std::vector<int32_t>{v.special().unk});
  CHECK(hf.tokenize(std::string(100, 'a')).size() == 100);
  CHECK(hf.tokenize(a101) == std::vector<int32_t>{v.special().unk});
}

TEST_CASE("HF flavour matches special tokens in raw text, the reference splits them") {
  const Vocab v = word_vocab();
  CHECK(pieces(Tokenizer(v, TokenizerFlavor::kHuggingFace), "a[MASK]b") ==
        std::vector<std::string>{"a", "[MASK]", "[UNK]"});
  CHECK(pieces(Tokenizer(v, TokenizerFlavor::kReference), "[MASK]") ==
        std::vector<std::string>{"[", "mask", "]"});
}

TEST_CASE("invalid UTF-8 is rejected with the byte offset") {
  const Vocab v = word_vocab();
  const Tokenizer t(v, TokenizerFlavor::kReference);
  try {
    t.tokenize("hello \xC3\x28 world");
    FAIL("no exception");
  } catch (const mlbert::data::InvalidUtf8Error& e) {
    CHECK(e.byte_offset == 6);
  }
  CHECK_THROWS(t.tokenize("\xED\xA0\x80"));      // a UTF-16 surrogate encoded in UTF-8
  CHECK_THROWS(t.tokenize("\xF4\x90\x80\x80"));  // above U+10FFFF
}

TEST_CASE("python_strip removes exactly Python's whitespace") {
  CHECK(mlbert::data::python_strip(" \t\x1c\u00A0x y\u3000\u2029\r") == "x y");
  CHECK(mlbert::data::python_strip("\u200Bx") == "\u200Bx");  // ZWSP is not whitespace
  CHECK(mlbert::data::python_strip("  ").empty());
}

TEST_CASE("a vocabulary without a special token is refused, naming the token") {
  try {
    Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"}, "v.txt");
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("[MASK]") != std::string::npos);
    CHECK(std::string(e.what()).find("v.txt") != std::string::npos);
  }
}

TEST_CASE("a repeated vocabulary token maps to its last line, random words list each token once") {
  const Vocab v = Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "x", "y", "x"});
  CHECK(v.find("x") == 7);
  CHECK(v.random_word_ids() == std::vector<int32_t>{0, 1, 2, 3, 4, 7, 6});
}
