// SHA-256 against the FIPS 180-4 / NIST example vectors, piecewise updates, and whole files.
#include <catch2/catch.hpp>

#include <string>

#include "mlperf_logging/log/sha256.h"
#include "tests/mlperf_logging/audit_synthetic.h"

namespace lg = mlbert::logging;

TEST_CASE("SHA-256 gives the NIST example digests", "[sha256]") {
  CHECK(lg::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(lg::sha256_hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 448 bits: the padding then needs a second block.
  CHECK(lg::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(lg::sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                       "klmnopqrlmnopqrsmnopqrstnopqrstu") ==
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  CHECK(lg::sha256_hex(std::string(1'000'000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("SHA-256 of pieces of every size equals that of the whole", "[sha256]") {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>('a' + i * 7 % 26);
  const std::string whole = lg::sha256_hex(text);
  for (std::size_t piece : {1, 3, 55, 56, 63, 64, 65, 127, 999}) {
    lg::Sha256 sha;
    for (std::size_t at = 0; at < text.size(); at += piece) sha.update(text.substr(at, piece));
    CHECK(sha.hex() == whole);
  }
}

TEST_CASE("SHA-256 of a file is that of its bytes, an unreadable file is an error naming it",
          "[sha256]") {
  mlbert::test::TempDir dir;
  const std::string bytes = std::string("line\r\n\0\xff", 8) + std::string(3'000'000, 'x');
  mlbert::test::write_text(dir.path() / "log.txt", bytes);
  CHECK(lg::sha256_file_hex(dir.path() / "log.txt") == lg::sha256_hex(bytes));
  CHECK_THROWS_WITH(lg::sha256_file_hex(dir.path() / "missing.txt"),
                    Catch::Contains("missing.txt"));
  CHECK_THROWS_WITH(lg::sha256_file_hex(dir.path()), Catch::Contains(dir.path().string()));
}
