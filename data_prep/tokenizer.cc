// BERT basic tokenization + WordPiece. The line is cut into whitespace tokens while cleaning; each
// whitespace token is lower-cased and accent-stripped (in the flavour's order) and split at
// punctuation; each resulting word goes through greedy longest-match-first WordPiece.
#include "data_prep/tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "data_prep/text_input.h"

namespace mlbert::data {
namespace {

bool is_ascii_punct(char32_t cp) {
  return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
         (cp >= 123 && cp <= 126);
}

utf8proc_category_t category(char32_t cp) {
  return static_cast<utf8proc_category_t>(utf8proc_category(static_cast<utf8proc_int32_t>(cp)));
}

bool is_punctuation(char32_t cp) {
  if (cp < 0x80) return is_ascii_punct(cp);
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

// Characters removed by text cleaning. The reference removes Cc and Cf; HF also removes private-use
// (Co) and surrogates (Cs). Tab, newline and carriage return are whitespace, never removed.
bool is_removed(char32_t cp, TokenizerFlavor flavor) {
  if (cp == 0 || cp == 0xFFFD) return true;
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  if (cp < 0x80) return cp < 0x20 || cp == 0x7F;
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
      return true;
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
      return flavor == TokenizerFlavor::kHuggingFace;
    default:
      return false;
  }
}

// Separators after cleaning: BERT's whitespace (tab, newline, CR, space, Zs) plus the line and
// paragraph separators that Python's split() and Rust's is_whitespace() also break on.
bool is_separator(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r';
  if (cp == 0x2028 || cp == 0x2029) return true;
  return category(cp) == UTF8PROC_CATEGORY_ZS;
}

bool is_cased(char32_t cp) {
  const auto c = category(cp);
  if (c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT) {
    return true;
  }
  const auto i = static_cast<utf8proc_int32_t>(cp);
  if (utf8proc_tolower(i) != i || utf8proc_toupper(i) != i) return true;
  // Other_Lowercase / Other_Uppercase letters without case mappings (modifier letters, ordinals).
  return cp == 0xAA || cp == 0xBA || (cp >= 0x2B0 && cp <= 0x2B8) || cp == 0x2C0 || cp == 0x2C1 ||
         (cp >= 0x2E0 && cp <= 0x2E4) || cp == 0x345 || cp == 0x37A ||
         (cp >= 0x1D2C && cp <= 0x1D6A) || cp == 0x1D78 || (cp >= 0x1D9B && cp <= 0x1DBF) ||
         cp == 0x2071 || cp == 0x207F || (cp >= 0x2090 && cp <= 0x209C) ||
         (cp >= 0x2C7C && cp <= 0x2C7D) || (cp >= 0xA69C && cp <= 0xA69D) || cp == 0xA770 ||
         (cp >= 0xA7F8 && cp <= 0xA7F9) || (cp >= 0xAB5C && cp <= 0xAB5F);
}

bool is_case_ignorable(char32_t cp) {
  switch (cp) {  // Word_Break MidLetter, MidNumLet and Single_Quote
    case 0x27:
    case 0x2E:
    case 0x3A:
    case 0xB7:
    case 0x387:
    case 0x55F:
    case 0x5F4:
    case 0x2018:
    case 0x2019:
    case 0x2024:
    case 0x2027:
    case 0xFE13:
    case 0xFE52:
    case 0xFE55:
    case 0xFF07:
    case 0xFF0E:
    case 0xFF1A:
      return true;
    default:
      break;
  }
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      return false;
  }
}

// Full lower-case mapping of one code point (U+0130 is the one unconditional multi-char mapping).
void lower_char(char32_t cp, std::u32string& out) {
  if (cp == 0x130) {
    out.push_back(U'i');
    out.push_back(0x307);
    return;
  }
  out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
}

// Python's str.lower() on a whole token: like lower_char, plus the final-sigma rule.
void python_lower(const std::u32string& in, std::u32string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    const char32_t cp = in[i];
    if (cp != 0x3A3) {
      lower_char(cp, out);
      continue;
    }
    // Final sigma: preceded by a cased letter and not followed by one (case-ignorables skipped).
    bool final_sigma = false;
    size_t j = i;
    while (j > 0 && is_case_ignorable(in[j - 1])) --j;
    if (j > 0 && is_cased(in[j - 1])) {
      size_t k = i + 1;
      while (k < in.size() && is_case_ignorable(in[k])) ++k;
      final_sigma = k == in.size() || !is_cased(in[k]);
    }
    out.push_back(final_sigma ? 0x3C2 : 0x3C3);
  }
}

// NFD with canonical reordering, then drops nonspacing marks (Mn).
void nfd_strip_accents(const std::u32string& in, std::u32string& out) {
  out.clear();
  utf8proc_int32_t buf[32];
  std::u32string decomposed;
  for (char32_t cp : in) {
    int boundclass = UTF8PROC_BOUNDCLASS_START;
    const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 32,
                                                       UTF8PROC_DECOMPOSE, &boundclass);
    if (n <= 0 || n > 32) {
      decomposed.push_back(cp);
      continue;
    }
    for (utf8proc_ssize_t k = 0; k < n; ++k) decomposed.push_back(static_cast<char32_t>(buf[k]));
  }
  // Canonical ordering: stable sort each run of non-starters by combining class.
  auto ccc = [](char32_t c) {
    return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
  };
  for (size_t i = 0; i < decomposed.size();) {
    if (ccc(decomposed[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < decomposed.size() && ccc(decomposed[j]) != 0) ++j;
    std::stable_sort(decomposed.begin() + static_cast<std::ptrdiff_t>(i),
                     decomposed.begin() + static_cast<std::ptrdiff_t>(j),
                     [&](char32_t a, char32_t b) { return ccc(a) < ccc(b); });
    i = j;
  }
  for (char32_t cp : decomposed) {
    if (cp >= 0x80 && category(cp) == UTF8PROC_CATEGORY_MN) continue;
    out.push_back(cp);
  }
}

}  // namespace

bool is_cjk_ideograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

namespace {

// Cuts one line of valid UTF-8 into its basic words, handing each to `sink` as it completes.
// A whitespace token of ASCII only takes the fast path: lower-cased byte by byte as it is read,
// split at ASCII punctuation. The first non-ASCII code point moves the token (its ASCII prefix
// included) to code points, normalized as a whole when the token ends: the flavour's lower-casing
// and accent stripping, then the split at punctuation.
template <typename Sink>
class WordSplitter {
 public:
  WordSplitter(TokenizerFlavor flavor, Sink& sink) : flavor_(flavor), sink_(sink) {}

  void split(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size()) {
      const auto byte = static_cast<unsigned char>(text[pos]);
      if (byte < 0x80 && token_ascii_) {
        ++pos;
        if (byte == ' ' || byte == '\t' || byte == '\n' || byte == '\r') {
          finish_token();
        } else if (byte < 0x20 || byte == 0x7F || byte == 0) {
          // control character: removed
        } else {
          ascii_token_.push_back(static_cast<char>(byte >= 'A' && byte <= 'Z' ? byte + 32 : byte));
        }
        continue;
      }
      code_point(decode_utf8(text, pos));
    }
    finish_token();
  }

 private:
  void code_point(char32_t cp) {
    if (is_removed(cp, flavor_)) return;
    if (is_separator(cp)) {
      finish_token();
      return;
    }
    if (is_cjk_ideograph(cp)) {  // a word of its own
      finish_token();
      token_ascii_ = false;
      token_.push_back(cp);
      finish_token();
      return;
    }
    if (token_ascii_) {
      // Switch to the code point path; the (already lower-cased) ASCII prefix moves along.
      token_ascii_ = false;
      token_.clear();
      for (char c : ascii_token_) token_.push_back(static_cast<unsigned char>(c));
      ascii_token_.clear();
    }
    token_.push_back(cp);
  }

  void finish_token() {
    if (token_ascii_) {
      if (!ascii_token_.empty()) emit_ascii(ascii_token_);
      ascii_token_.clear();
      return;
    }
    if (flavor_ == TokenizerFlavor::kReference) {
      python_lower(token_, lowered_);
      nfd_strip_accents(lowered_, stripped_);
    } else {
      nfd_strip_accents(token_, lowered_);
      stripped_.clear();
      for (char32_t cp : lowered_) lower_char(cp, stripped_);
    }
    emit_normalized(stripped_);
    token_.clear();
    token_ascii_ = true;
  }

  void emit_ascii(std::string_view t) {
    size_t start = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      if (is_ascii_punct(static_cast<unsigned char>(t[i]))) {
        if (i > start) sink_(t.substr(start, i - start));
        sink_(t.substr(i, 1));
        start = i + 1;
      }
    }
    if (start < t.size()) sink_(t.substr(start));
  }

  void emit_normalized(const std::u32string& t) {
    word_.clear();
    for (char32_t cp : t) {
      if (is_punctuation(cp)) {
        if (!word_.empty()) sink_(std::string_view(word_));
        word_.clear();
        append_utf8(word_, cp);
        sink_(std::string_view(word_));
        word_.clear();
      } else {
        append_utf8(word_, cp);
      }
    }
    if (!word_.empty()) sink_(std::string_view(word_));
  }

  TokenizerFlavor flavor_;
  Sink& sink_;
  bool token_ascii_ = true;
  std::string ascii_token_;    // current whitespace token (ASCII fast path)
  std::u32string token_;       // current whitespace token (code point path)
  std::u32string lowered_, stripped_;
  std::string word_;           // current output word (UTF-8)
};

}  // namespace

template <typename Sink>
void Tokenizer::for_each_word(std::string_view text, Sink&& sink) const {
  if (const size_t bad = find_invalid_utf8(text); bad != std::string_view::npos) {
    throw InvalidUtf8Error(bad);
  }
  WordSplitter<std::remove_reference_t<Sink>>(flavor_, sink).split(text);
}

void Tokenizer::wordpiece(std::string_view w, std::vector<int32_t>& ids) const {
  // Code point boundaries of the word.
  size_t boundaries_buf[kReferenceMaxCharsPerWord + 2];
  size_t nchars = 0;
  for (size_t p = 0; p < w.size();) {
    if (nchars > max_chars_per_word_) break;
    boundaries_buf[nchars++] = p;
    const auto b = static_cast<unsigned char>(w[p]);
    p += b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  }
  if (nchars > max_chars_per_word_) {
    ids.push_back(vocab_.special().unk);
    return;
  }
  boundaries_buf[nchars] = w.size();
  const size_t first = ids.size();
  const size_t max_bytes = vocab_.max_token_bytes();
  std::string continuation;
  size_t start = 0;
  while (start < nchars) {
    int32_t found = -1;
    size_t end = nchars;
    for (; end > start; --end) {
      const size_t len = boundaries_buf[end] - boundaries_buf[start];
      if (len + (start > 0 ? 2 : 0) > max_bytes) continue;
      const std::string_view piece = w.substr(boundaries_buf[start], len);
      if (start == 0) {
        found = vocab_.find(piece);
      } else {
        continuation.assign("##");
        continuation.append(piece);
        found = vocab_.find(continuation);
      }
      if (found >= 0) break;
    }
    if (found < 0) {
      ids.resize(first);
      ids.push_back(vocab_.special().unk);
      return;
    }
    ids.push_back(found);
    start = end;
  }
}

void Tokenizer::tokenize(std::string_view text, std::vector<int32_t>& ids) const {
  auto words = [&](std::string_view part) {
    for_each_word(part, [&](std::string_view w) { wordpiece(w, ids); });
  };
  if (flavor_ == TokenizerFlavor::kReference) {
    words(text);
    return;
  }
  // HF registers the special tokens as "added tokens": their literal text in the raw input becomes
  // the token itself, before any normalization (so "[MASK]" in text is id 103, not "[", "mask",
  // "]").
  if (const size_t bad = find_invalid_utf8(text); bad != std::string_view::npos) {
    throw InvalidUtf8Error(bad);
  }
  const SpecialIds& sp = vocab_.special();
  const std::pair<std::string_view, int32_t> specials[] = {{"[MASK]", sp.mask},
                                                           {"[CLS]", sp.cls},
                                                           {"[SEP]", sp.sep},
                                                           {"[PAD]", sp.pad},
                                                           {"[UNK]", sp.unk}};
  size_t start = 0, pos = 0;
  while ((pos = text.find('[', pos)) != std::string_view::npos) {
    bool matched = false;
    for (const auto& [literal, id] : specials) {
      if (text.substr(pos, literal.size()) == literal) {
        words(text.substr(start, pos - start));
        ids.push_back(id);
        pos += literal.size();
        start = pos;
        matched = true;
        break;
      }
    }
    if (!matched) ++pos;
  }
  words(text.substr(start));
}

std::vector<std::string> Tokenizer::basic_words(std::string_view text) const {
  std::vector<std::string> words;
  for_each_word(text, [&](std::string_view w) { words.emplace_back(w); });
  return words;
}

}  // namespace mlbert::data
