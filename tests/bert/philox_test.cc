// Philox 4x32-10 against Random123's known answers, and the dropout keying built on it.
#include <catch2/catch.hpp>

#include <set>

#include "bert/philox.h"

using namespace mlbert::bert;

TEST_CASE("philox4x32_10 reproduces Random123's known-answer vectors") {
  const Philox4x32 zero = philox4x32_10(0, 0, 0, 0, 0, 0);
  CHECK(zero.v[0] == 0x6627e8d5u);
  CHECK(zero.v[1] == 0xe169c58du);
  CHECK(zero.v[2] == 0xbc57ac4cu);
  CHECK(zero.v[3] == 0x9b00dbd8u);
  const Philox4x32 ones =
      philox4x32_10(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu);
  CHECK(ones.v[0] == 0x408f276du);
  CHECK(ones.v[1] == 0x41c83b0eu);
  CHECK(ones.v[2] == 0xa20bc7c6u);
  CHECK(ones.v[3] == 0x6d5451fdu);
  const Philox4x32 pi =
      philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  CHECK(pi.v[0] == 0xd16cfe09u);
  CHECK(pi.v[1] == 0x94fdccebu);
  CHECK(pi.v[2] == 0x5001e420u);
  CHECK(pi.v[3] == 0x24126ea1u);
}

TEST_CASE("dropout masks follow the documented (seed, step, site, element) mapping") {
  const DropoutMask mask = make_dropout_mask(0x0123456789abcdefull, 42, 7, 0.1);
  REQUIRE(mask.enabled);
  CHECK(mask.keep_threshold == 58982u);  // floor(0.9 * 2^16)
  CHECK(mask.scale == Approx(1.0 / 0.9));
  // Element 8*g + i uses the 16-bit half (i % 2) of word i / 2 of philox(counter = (g lo, g hi,
  // site, step), key = seed), the low half first.
  const uint64_t group = (uint64_t{5} << 32) + 3;
  const Philox4x32 r =
      philox4x32_10(static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32), 7, 42,
                    0x89abcdefu, 0x01234567u);
  for (uint32_t i = 0; i < 8; ++i) {
    const uint64_t element = 8 * group + i;
    const uint32_t word = i % 2 == 0 ? r.v[i / 2] & 0xffffu : r.v[i / 2] >> 16;
    INFO("element " << i << " of the block");
    CHECK(dropout_keep(mask, element) == (word < mask.keep_threshold));
    CHECK(dropout_factor(mask, element) == (word < mask.keep_threshold ? mask.scale : 0.0f));
  }
  // p close to 0 still drops: the threshold stops below 2^16.
  CHECK(make_dropout_mask(1, 1, 1, 1e-9).keep_threshold == 65535u);
}

TEST_CASE("dropout keeps about 1-p of the elements and differs across sites and steps") {
  const DropoutMask a = make_dropout_mask(1, 1, dropout_site(0, DropoutSiteKind::ffn_output), 0.1);
  const DropoutMask b = make_dropout_mask(1, 1, dropout_site(1, DropoutSiteKind::ffn_output), 0.1);
  const DropoutMask c = make_dropout_mask(1, 2, dropout_site(0, DropoutSiteKind::ffn_output), 0.1);
  const int n = 200000;
  int kept = 0, same_site = 0, same_step = 0;
  for (int e = 0; e < n; ++e) {
    const bool ka = dropout_keep(a, e);
    kept += ka;
    same_site += ka == dropout_keep(b, e);
    same_step += ka == dropout_keep(c, e);
  }
  CHECK(kept / double(n) == Approx(0.9).margin(0.005));
  // Independent masks agree on 0.9^2 + 0.1^2 = 0.82 of the elements.
  CHECK(same_site / double(n) == Approx(0.82).margin(0.01));
  CHECK(same_step / double(n) == Approx(0.82).margin(0.01));
  const DropoutMask off = make_dropout_mask(1, 1, 1, 0.0);
  CHECK_FALSE(off.enabled);
  CHECK(dropout_factor(off, 123) == 1.0f);
}

TEST_CASE("dropout sites are distinct for every layer and kind") {
  std::set<uint32_t> sites{kEmbeddingDropoutSite};
  for (int layer = 0; layer < 24; ++layer) {
    for (auto kind : {DropoutSiteKind::attention_probs, DropoutSiteKind::attention_output,
                      DropoutSiteKind::ffn_output}) {
      CHECK(sites.insert(dropout_site(layer, kind)).second);
    }
  }
  CHECK(attention_dropout_row_stride(5) == 8);
  CHECK(attention_dropout_row_stride(9) == 16);  // a Philox block (8 elements) never spans rows
  CHECK(attention_dropout_row_stride(512) == 512);
  CHECK(attention_dropout_element(10, 1, 16, 8, 3) == (10 * 16 + 1) * 8 + 3);
}
