// Sample creation: a golden run produced by Google BERT's create_pretraining_data.py
// (bert-tensorflow 1.0.4, Python 3.11) on a tiny corpus, plus the invariants every sample must
// satisfy. The large instance-by-instance comparison runs in tests/parity/data_samples_parity.py.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "data_prep/pretraining.h"
#include "test_util.h"

using namespace mlbert::data;
using mlbert::test::TempDir;

namespace {
const char* kGoldenCorpus =
    "The cat sat on the mat.\nThe dog ran far away.\nA big red ball.\n\nThe cats sat.\nA dog, a "
    "cat.\n\nRed balls ran away, far away.\nThe mat sat on a big dog.\nThe end.\n";

struct Golden {
  std::vector<int32_t> ids;
  std::vector<int8_t> seg;
  std::vector<int32_t> pos, mids;
  int8_t nsp;
};
// create_training_instances(corpus, tokenizer, 16, dupe 2, short 0.1, 0.15, 3, Random(12345))
const std::vector<Golden> kGolden = {
    {{2, 5, 10, 11, 12, 4, 18, 3, 4, 15, 16, 17, 18, 3},
     {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1},
     {5, 8},
     {13, 14},
     0},
    {{2, 5, 6, 7, 8, 5, 9, 4, 3, 5, 10, 11, 12, 13, 18, 3},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1},
     {3, 7},
     {7, 18},
     0},
    {{2, 5, 6, 20, 7, 18, 3, 12, 13, 18, 14, 15, 16, 17, 4, 3},
     {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1},
     {7, 14},
     {12, 18},
     1},
    {{2, 14, 10, 4, 14, 6, 18, 3, 5, 1, 4, 3},
     {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1},
     {3, 10},
     {19, 18},
     1},
    {{2, 5, 6, 20, 7, 18, 3, 14, 4, 4, 14, 6, 18, 3},
     {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1},
     {8, 9},
     {10, 19},
     0},
    {{2, 5, 6, 7, 8, 5, 4, 18, 3, 20, 4, 18, 14, 10, 19, 3},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1},
     {6, 10},
     {9, 7},
     1},
    {{2, 5, 1, 4, 3, 10, 11, 12, 13, 4, 14, 15, 16, 17, 18, 3},
     {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
     {3, 9},
     {18, 18},
     1},
    {{2, 17, 4, 11, 13, 19, 12, 13, 3, 7, 8, 14, 15, 4, 18, 3},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1},
     {2, 13},
     {20, 10},
     0},
    {{2, 14, 15, 16, 17, 4, 3, 5, 4, 7, 8, 14, 15, 10, 18, 3},
     {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1},
     {5, 8},
     {18, 9},
     1},
    {{2, 5, 9, 7, 8, 14, 15, 10, 18, 3, 5, 1, 4, 3},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1},
     {7, 12},
     {10, 18},
     0},
    {{2, 4, 17, 20, 11, 13, 19, 12, 13, 3, 5, 6, 20, 4, 18, 3},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1},
     {1, 13},
     {16, 7},
     1},
};

std::vector<Document> read_text(const TempDir& dir, const std::string& text, const Tokenizer& t) {
  mlbert::test::write_file(dir / "corpus.txt", text);
  std::vector<Document> docs;
  read_documents(dir / "corpus.txt", t, InvalidUtf8Policy::kError, docs);
  return docs;
}
}  // namespace

TEST_CASE("create_samples reproduces the reference script's instances exactly (golden run)") {
  TempDir dir;
  const Vocab v = mlbert::test::tiny_vocab();
  const Tokenizer t(v, TokenizerFlavor::kReference);
  auto docs = read_text(dir, kGoldenCorpus, t);
  PretrainingOptions o;
  o.max_seq_length = 16;
  o.max_predictions_per_seq = 3;
  o.dupe_factor = 2;
  const auto samples = create_samples(docs, v, o);
  REQUIRE(samples.size() == kGolden.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    INFO("instance " << i);
    CHECK(samples[i].input_ids == kGolden[i].ids);
    CHECK(samples[i].segment_ids == kGolden[i].seg);
    CHECK(samples[i].masked_lm_positions == kGolden[i].pos);
    CHECK(samples[i].masked_lm_ids == kGolden[i].mids);
    CHECK(samples[i].next_sentence_label == kGolden[i].nsp);
  }
}

TEST_CASE("read_documents: blank and whitespace-only lines separate documents, empty ones vanish") {
  TempDir dir;
  const Vocab v = mlbert::test::tiny_vocab();
  const Tokenizer t(v, TokenizerFlavor::kReference);
  auto docs = read_text(dir, "\n\nthe cat\n \t\nthe dog\n\x01\x02\nthe mat\n\n\n", t);
  // The reference's all_documents: the implicit leading document, then one new document per blank
  // or whitespace-only line; "\x01\x02" tokenizes to nothing and is dropped without ending one.
  REQUIRE(docs.size() == 6);
  CHECK(docs[0].empty());
  CHECK(docs[1].empty());
  CHECK(docs[2].size() == 1);
  CHECK(docs[3].size() == 2);
  CHECK(docs[4].empty());
  CHECK(docs[5].empty());
  // create_samples drops the empty ones before it shuffles (all_documents = [x for x in
  // all_documents if x]): the same samples as from the two real documents alone.
  PretrainingOptions o;
  o.max_seq_length = 16;
  o.max_predictions_per_seq = 3;
  auto real_only = docs;
  std::erase_if(real_only, [](const Document& d) { return d.empty(); });
  const auto from_real = create_samples(real_only, v, o);
  const auto from_all = create_samples(docs, v, o);
  CHECK(docs.size() == 2);
  REQUIRE(!from_real.empty());
  CHECK(from_all == from_real);
}

TEST_CASE("invalid UTF-8 in a corpus is an error naming file and line, or replaced on request") {
  TempDir dir;
  const Vocab v = mlbert::test::tiny_vocab();
  const Tokenizer t(v, TokenizerFlavor::kReference);
  mlbert::test::write_file(dir / "bad.txt", "the cat\nthe \xFF dog\n");
  std::vector<Document> docs;
  try {
    read_documents(dir / "bad.txt", t, InvalidUtf8Policy::kError, docs);
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("bad.txt:2") && Catch::Contains("invalid UTF-8"));
  }
  docs.clear();
  ReadStats stats;
  read_documents(dir / "bad.txt", t, InvalidUtf8Policy::kReplace, docs, &stats);
  CHECK(stats.replaced_lines == 1);
  CHECK(docs.back().size() == 2);
}

TEST_CASE("every sample is [CLS] A [SEP] B [SEP] with the reference's masking proportions") {
  TempDir dir;
  const Vocab v = mlbert::test::tiny_vocab();
  const Tokenizer t(v, TokenizerFlavor::kReference);
  std::string text;
  const char* words[] = {"the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", "big"};
  for (int d = 0; d < 60; ++d) {
    for (int s = 0; s < 2 + d % 7; ++s) {
      for (int w = 0; w < 3 + (d * 7 + s * 3) % 11; ++w)
        text += std::string(words[(d + s * w) % 10]) + " ";
      text += ".\n";
    }
    text += "\n";
  }
  auto docs = read_text(dir, text, t);
  PretrainingOptions o;
  o.max_seq_length = 32;
  o.max_predictions_per_seq = 5;
  o.dupe_factor = 5;
  const auto samples = create_samples(docs, v, o);
  REQUIRE(samples.size() > 300);
  int64_t predictions = 0, as_mask = 0, random_next = 0;
  for (const Sample& s : samples) {
    REQUIRE(s.length() <= 32);
    CHECK(s.input_ids.front() == v.special().cls);
    CHECK(s.input_ids.back() == v.special().sep);
    CHECK(s.segment_ids.front() == 0);
    CHECK(s.segment_ids.back() == 1);
    const auto expected = std::min<int64_t>(
        5, std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(s.length() * 0.15))));
    CHECK(static_cast<int64_t>(s.masked_lm_positions.size()) == expected);
    CHECK(std::is_sorted(s.masked_lm_positions.begin(), s.masked_lm_positions.end()));
    for (size_t k = 0; k < s.masked_lm_positions.size(); ++k) {
      const int32_t label = s.masked_lm_ids[k];
      CHECK(label != v.special().cls);
      CHECK(label != v.special().sep);
      as_mask += s.input_ids[static_cast<size_t>(s.masked_lm_positions[k])] == v.special().mask;
    }
    predictions += static_cast<int64_t>(s.masked_lm_positions.size());
    random_next += s.next_sentence_label;
  }
  const double mask_share = static_cast<double>(as_mask) / static_cast<double>(predictions);
  CHECK(mask_share > 0.75);
  CHECK(mask_share < 0.88);
  const double random_share =
      static_cast<double>(random_next) / static_cast<double>(samples.size());
  CHECK(random_share > 0.4);
  CHECK(random_share < 0.7);
}

TEST_CASE("the seed decides the samples") {
  TempDir dir;
  const Vocab v = mlbert::test::tiny_vocab();
  const Tokenizer t(v, TokenizerFlavor::kReference);
  auto run = [&](int64_t seed) {
    auto docs = read_text(dir, kGoldenCorpus, t);
    PretrainingOptions o;
    o.max_seq_length = 16;
    o.max_predictions_per_seq = 3;
    o.random_seed = seed;
    return create_samples(docs, v, o);
  };
  CHECK(run(1) == run(1));
  CHECK(run(1) != run(2));
}

TEST_CASE("options outside what the reference supports are refused by name") {
  PretrainingOptions o;
  o.max_seq_length = 4;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("max_seq_length"));
  o = {};
  o.max_predictions_per_seq = 0;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("max_predictions_per_seq"));
  o = {};
  o.dupe_factor = 0;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("dupe_factor"));
}
