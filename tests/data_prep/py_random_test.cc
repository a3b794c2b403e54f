// PyRandom against values printed by CPython 3.11 (random.Random); the full call-by-call comparison
// runs in tests/parity/data_rng_parity.py.
#include <catch2/catch.hpp>
#include <numeric>
#include <vector>

#include "data_prep/py_random.h"

using mlbert::data::PyRandom;

TEST_CASE("PyRandom(12345) reproduces CPython's random(), getrandbits(64) and randint") {
  PyRandom rng(12345);
  CHECK(rng.random() == 0.41661987254534116);
  CHECK(rng.random() == 0.010169169457068361);
  CHECK(rng.random() == 0.8252065092537432);
  CHECK(rng.getrandbits(64) == 15774518201988393282ULL);
  CHECK(rng.randint(2, 509) == 190);
}

TEST_CASE("PyRandom seeds like CPython for 0 and for seeds wider than 32 bits") {
  PyRandom zero(0);
  CHECK(zero.random() == 0.8444218515250481);
  PyRandom wide((1LL << 40) + 3);
  CHECK(wide.getrandbits(33) == 943978446ULL);
  CHECK(wide.randrange(-5, 5) == 3);
  PyRandom negative(-12345), positive(12345);  // CPython seeds with |seed|
  CHECK(negative.random() == positive.random());
}

TEST_CASE("PyRandom.shuffle matches random.Random(42).shuffle(range(10))") {
  PyRandom rng(42);
  std::vector<int> v(10);
  std::iota(v.begin(), v.end(), 0);
  rng.shuffle(v);
  CHECK(v == std::vector<int>{7, 3, 2, 8, 5, 6, 9, 4, 0, 1});
}

TEST_CASE("randbelow(1) still consumes one 32-bit word, as CPython's _randbelow does") {
  PyRandom a(7), b(7);
  CHECK(a.randbelow(1) == 0);
  b.next_u32();
  CHECK(a.next_u32() == b.next_u32());
}

TEST_CASE("PyRandom rejects empty ranges") {
  PyRandom rng(1);
  CHECK_THROWS_AS(rng.randrange(3, 3), std::invalid_argument);
  CHECK_THROWS_AS(rng.randbelow(0), std::invalid_argument);
  CHECK_THROWS_AS(rng.getrandbits(65), std::invalid_argument);
}
