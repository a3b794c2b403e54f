// Text from files shown on a terminal: control bytes escaped, everything else as in the file.
#include <catch2/catch.hpp>

#include <string>

#include "common/visible_text.h"

using mlbert::text::visible;

TEST_CASE("control bytes and DEL are shown as hex escapes, text, backslashes and UTF-8 as they are",
          "[visible_text]") {
  using namespace std::string_literals;
  CHECK(visible("va\0lue"s) == "va\\x00lue");
  CHECK(visible("\x1b[31mred\r\n\t\x7f") == "\\x1b[31mred\\x0d\\x0a\\x09\\x7f");
  CHECK(visible(R"({"key": "a\"b\\c"})") == R"({"key": "a\"b\\c"})");
  CHECK(visible("h\xc3\xa9llo \xe2\x9c\x93") == "h\xc3\xa9llo \xe2\x9c\x93");
  CHECK(visible("").empty());
}
