#include "common/thousands.h"

#include <catch2/catch.hpp>

TEST_CASE("group_thousands puts a comma between digit triples from the right, after any sign",
          "[common]") {
  using mlbert::group_thousands;
  CHECK(group_thousands("") == "");
  CHECK(group_thousands("0") == "0");
  CHECK(group_thousands("999") == "999");
  CHECK(group_thousands("1000") == "1,000");
  CHECK(group_thousands("4608") == "4,608");
  CHECK(group_thousands("123456") == "123,456");
  CHECK(group_thousands("2932736") == "2,932,736");
  CHECK(group_thousands("-123") == "-123");
  CHECK(group_thousands("-1234567") == "-1,234,567");
  CHECK(group_thousands("9223372036854775807") == "9,223,372,036,854,775,807");
}
