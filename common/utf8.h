// UTF-8 as the project's Python references read and write it: strict validation as CPython's
// decoder, U+FFFD replacement of its maximal invalid subparts, a lenient decoder that reads an
// invalid byte as Latin-1, and encoding (surrogates too, as three bytes, so a lone \ud800 from JSON
// survives a round trip), and Python's whitespace.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mlbert {

// Offset of the first byte that starts an invalid UTF-8 sequence (overlong forms, surrogates and
// code points above U+10FFFF are invalid, as in Python's strict decoder), or npos when valid.
size_t find_invalid_utf8(std::string_view text);
inline bool is_valid_utf8(std::string_view text) {
  return find_invalid_utf8(text) == std::string_view::npos;
}
// Python's `bytes.decode("utf-8", "replace")`: each maximal invalid subpart becomes U+FFFD.
std::string replace_invalid_utf8(std::string_view text);

// Decodes one code point at `pos` of valid UTF-8 and advances `pos`.
inline char32_t decode_utf8(std::string_view s, size_t& pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  if (b0 < 0xE0) {
    const char32_t cp = ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(s[pos + 1]) & 0x3Fu);
    pos += 2;
    return cp;
  }
  if (b0 < 0xF0) {
    const char32_t cp = ((b0 & 0x0Fu) << 12) |
                        ((static_cast<unsigned char>(s[pos + 1]) & 0x3Fu) << 6) |
                        (static_cast<unsigned char>(s[pos + 2]) & 0x3Fu);
    pos += 3;
    return cp;
  }
  const char32_t cp = ((b0 & 0x07u) << 18) |
                      ((static_cast<unsigned char>(s[pos + 1]) & 0x3Fu) << 12) |
                      ((static_cast<unsigned char>(s[pos + 2]) & 0x3Fu) << 6) |
                      (static_cast<unsigned char>(s[pos + 3]) & 0x3Fu);
  pos += 4;
  return cp;
}
void append_utf8(std::string& out, char32_t cp);

// Decodes one UTF-8 sequence at s[i] and advances `i`; an invalid byte decodes as itself (Latin-1).
char32_t decode_utf8_lenient(std::string_view s, std::size_t& i);

// Python's str.isspace() for one code point (what str.strip() and float() strip).
bool is_python_space(char32_t c);

}  // namespace mlbert
