// Parity helper: replays random.Random calls read from stdin and prints one result line per call,
// so tests/parity/data_rng_parity.py can compare them with CPython. Commands: `seed S`, `random`,
// `getrandbits K`, `randbelow N`, `randint A B`, `randrange A B`, `shuffle N` (prints the
// permutation of range(N)).
#include <cstdio>
#include <iostream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "data_prep/py_random.h"

int main() {
  std::unique_ptr<mlbert::data::PyRandom> rng;
  std::string line, cmd;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    in >> cmd;
    if (cmd == "seed") {
      long long s;
      in >> s;
      rng = std::make_unique<mlbert::data::PyRandom>(s);
      std::printf("seeded\n");
      continue;
    }
    if (!rng) {
      std::fprintf(stderr, "rng_dump: 'seed' must come first\n");
      return 2;
    }
    if (cmd == "random") {
      std::printf("%.17g\n", rng->random());
    } else if (cmd == "getrandbits") {
      int k;
      in >> k;
      std::printf("%llu\n", static_cast<unsigned long long>(rng->getrandbits(k)));
    } else if (cmd == "randbelow") {
      unsigned long long n;
      in >> n;
      std::printf("%llu\n", static_cast<unsigned long long>(rng->randbelow(n)));
    } else if (cmd == "randint" || cmd == "randrange") {
      long long a, b;
      in >> a >> b;
      std::printf("%lld\n", static_cast<long long>(cmd == "randint" ? rng->randint(a, b)
                                                                    : rng->randrange(a, b)));
    } else if (cmd == "shuffle") {
      size_t n;
      in >> n;
      std::vector<long long> v(n);
      std::iota(v.begin(), v.end(), 0);
      rng->shuffle(v);
      std::string out;
      for (size_t i = 0; i < n; ++i) out += (i ? " " : "") + std::to_string(v[i]);
      std::printf("%s\n", out.c_str());
    } else {
      std::fprintf(stderr, "rng_dump: unknown command '%s'\n", cmd.c_str());
      return 2;
    }
  }
  return 0;
}
