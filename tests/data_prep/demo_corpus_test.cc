// The demo corpus: deterministic, fully covered by its vocabulary, and learnable: a model that only
// counts the two words on each side of a position (backing off to one on each side) already
// predicts most eval masks, while always answering the most frequent label stays far below MLPerf's
// 0.72.
#include <array>
#include <catch2/catch.hpp>
#include <map>

#include "data_prep/demo_corpus.h"
#include "data_prep/prep_pipeline.h"
#include "data_prep/pretraining.h"
#include "test_util.h"

using namespace mlbert::data;
using mlbert::test::TempDir;

TEST_CASE("the demo corpus is deterministic and its vocabulary covers every word") {
  DemoCorpusOptions o;
  o.train_documents = 200;
  o.eval_documents = 20;
  const auto a = generate_demo_corpus(o), b = generate_demo_corpus(o);
  CHECK(a.parts == b.parts);
  CHECK(a.vocab == b.vocab);
  CHECK(a.vocab.size() > 150);
  CHECK(a.vocab.size() < 2000);
  const Vocab v = Vocab::from_tokens(a.vocab);
  const Tokenizer t(v, TokenizerFlavor::kReference);
  for (const auto& part : a.parts) {
    for (const auto& line : part) {
      for (int32_t id : t.tokenize(line)) REQUIRE(id != v.special().unk);
    }
  }
  o.seed = 99;
  CHECK(generate_demo_corpus(o).parts != a.parts);
}

TEST_CASE("demo corpus masks are predictable from context but not from frequency alone") {
  TempDir dir;
  DemoCorpusOptions o;
  o.train_documents = 2000;
  o.eval_documents = 300;
  const auto files = write_demo_corpus(generate_demo_corpus(o), dir.path());
  const Vocab v = Vocab::load(files.vocab);
  const Tokenizer t(v, TokenizerFlavor::kReference);
  PretrainingOptions p;
  p.max_seq_length = 128;
  p.max_predictions_per_seq = 20;
  p.dupe_factor = 2;
  auto samples_of = [&](const std::vector<std::filesystem::path>& paths) {
    std::vector<Document> docs;
    for (const auto& f : paths) read_documents(f, t, InvalidUtf8Policy::kError, docs);
    return create_samples(docs, v, p);
  };
  // Unmasked context: the original token at each position (masked labels restored).
  auto original = [](const Sample& s) {
    auto ids = s.input_ids;
    for (size_t k = 0; k < s.masked_lm_positions.size(); ++k) {
      ids[static_cast<size_t>(s.masked_lm_positions[k])] = s.masked_lm_ids[k];
    }
    return ids;
  };
  using Context = std::array<int32_t, 4>;  // two tokens left, two right (-1 past the ends)
  auto context_at = [](const std::vector<int32_t>& ids, size_t k, bool wide) {
    auto at = [&](std::ptrdiff_t i) {
      return i < 0 || i >= static_cast<std::ptrdiff_t>(ids.size()) ? -1
                                                                   : ids[static_cast<size_t>(i)];
    };
    const auto i = static_cast<std::ptrdiff_t>(k);
    return Context{wide ? at(i - 2) : -2, at(i - 1), at(i + 1), wide ? at(i + 2) : -2};
  };
  std::map<Context, std::map<int32_t, int64_t>> context_counts;
  std::map<int32_t, int64_t> label_counts;
  for (const Sample& s : samples_of(files.parts)) {
    const auto ids = original(s);
    for (size_t k = 1; k + 1 < ids.size(); ++k) {
      ++context_counts[context_at(ids, k, true)][ids[k]];
      ++context_counts[context_at(ids, k, false)][ids[k]];
    }
    for (int32_t label : s.masked_lm_ids) ++label_counts[label];
  }
  int32_t most_frequent = 0;
  for (const auto& [label, n] : label_counts) {
    if (n > label_counts[most_frequent]) most_frequent = label;
  }
  int64_t total = 0, context_right = 0, frequent_right = 0;
  for (const Sample& s : samples_of({files.eval})) {
    const auto ids = original(s);
    for (size_t k = 0; k < s.masked_lm_positions.size(); ++k) {
      const auto pos = static_cast<size_t>(s.masked_lm_positions[k]);
      auto it = context_counts.find(context_at(ids, pos, true));
      if (it == context_counts.end()) it = context_counts.find(context_at(ids, pos, false));
      static const std::map<int32_t, int64_t> kNone;
      const auto& counts = it == context_counts.end() ? kNone : it->second;
      int32_t guess = most_frequent;
      int64_t best = 0;
      for (const auto& [label, n] : counts) {
        if (n > best) best = n, guess = label;
      }
      context_right += guess == s.masked_lm_ids[k];
      frequent_right += most_frequent == s.masked_lm_ids[k];
      ++total;
    }
  }
  const double context_accuracy = static_cast<double>(context_right) / static_cast<double>(total);
  const double frequent_accuracy = static_cast<double>(frequent_right) / static_cast<double>(total);
  INFO("context-count accuracy " << context_accuracy << ", most-frequent " << frequent_accuracy);
  CHECK(context_accuracy > 0.72);
  CHECK(frequent_accuracy < 0.25);
}
