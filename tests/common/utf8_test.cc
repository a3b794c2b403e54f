// common/utf8.h: CPython's strict decoder, its "replace" error handler, the lenient decoder the
// MLLOG reader uses for Latin-1 bytes, the encoder, and Python's whitespace.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/utf8.h"

TEST_CASE("invalid UTF-8 is found at its first byte, as CPython's strict decoder refuses it") {
  CHECK(mlbert::find_invalid_utf8("plain ascii, longer than eight bytes") == std::string::npos);
  CHECK(mlbert::find_invalid_utf8("caf\xC3\xA9") == std::string::npos);
  CHECK(mlbert::find_invalid_utf8("hello \xC3\x28 world") == 6);  // lead byte without continuation
  CHECK(mlbert::find_invalid_utf8("\xC0\xAF") == 0);              // overlong form
  CHECK(mlbert::find_invalid_utf8("ab\xED\xA0\x80") == 2);        // a surrogate
  CHECK(mlbert::find_invalid_utf8("\xF4\x90\x80\x80") == 0);      // above U+10FFFF
  CHECK(mlbert::find_invalid_utf8("\xE2\x82") == 0);              // cut short
  CHECK_FALSE(mlbert::is_valid_utf8("x\xFF"));
}

TEST_CASE("each maximal invalid subpart becomes one U+FFFD, as bytes.decode(errors='replace')") {
  CHECK(mlbert::replace_invalid_utf8("a\xFF"
                                     "b") ==
        "a\xEF\xBF\xBD"
        "b");
  // b"\xe2\x82x".decode("utf-8", "replace") == "\ufffdx": one replacement for the cut sequence.
  CHECK(mlbert::replace_invalid_utf8("\xE2\x82x") == "\xEF\xBF\xBDx");
  // b"\xed\xa0\x80" is three maximal subparts (the surrogate's second byte is out of range).
  CHECK(mlbert::replace_invalid_utf8("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE(
    "encoding and strict decoding round-trip every plane, and surrogates encode as three bytes") {
  for (char32_t cp : {U'\x41', U'\xE9', U'\x20AC', U'\x1F600', U'\x10FFFF'}) {
    std::string s;
    mlbert::append_utf8(s, cp);
    REQUIRE(mlbert::is_valid_utf8(s));
    std::size_t pos = 0;
    CHECK(mlbert::decode_utf8(s, pos) == cp);
    CHECK(pos == s.size());
  }
  std::string lone;
  mlbert::append_utf8(lone, 0xD800);
  CHECK(lone == "\xED\xA0\x80");
}

TEST_CASE("the lenient decoder reads an invalid byte as its Latin-1 code point") {
  const std::string s = "\xC3\xA9\xE9\xF0\x9F\x98\x80";  // é, a lone Latin-1 é, U+1F600
  std::size_t i = 0;
  CHECK(mlbert::decode_utf8_lenient(s, i) == U'\xE9');
  CHECK(i == 2);
  CHECK(mlbert::decode_utf8_lenient(s, i) == U'\xE9');
  CHECK(i == 3);
  CHECK(mlbert::decode_utf8_lenient(s, i) == U'\x1F600');
  CHECK(i == s.size());
  std::size_t j = 0;
  // U+0080 in three bytes (overlong): read byte by byte.
  CHECK(mlbert::decode_utf8_lenient("\xE0\x82\x80", j) == U'\xE0');
  CHECK(j == 1);
}

TEST_CASE("is_python_space holds for exactly the 29 code points Python's str.isspace() accepts") {
  // [c for c in range(0x110000) if chr(c).isspace()] in CPython 3.11.
  const std::vector<std::uint32_t> python = {
      0x9,    0xa,    0xb,    0xc,    0xd,    0x1c,   0x1d,   0x1e,   0x1f,   0x20,
      0x85,   0xa0,   0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
      0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000};
  std::vector<std::uint32_t> ours;
  for (char32_t c = 0; c < 0x110000; ++c)
    if (mlbert::is_python_space(c)) ours.push_back(c);
  CHECK(ours == python);
}
