// BertConfig parsing and presets, the parameter layout (TF names, order, count) and Batch.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "bert/batch.h"
#include "bert/config.h"
#include "bert/parameters.h"

using namespace mlbert::bert;

TEST_CASE("bert-large has the MLPerf parameter count with the vocab padded to 30528") {
  const BertConfig c = BertConfig::preset("bert-large");
  CHECK(c.padded_vocab_size() == 30528);
  const auto layout = bert_parameter_layout(c);
  CHECK(layout.size() == 398);
  size_t total = 0;
  std::set<std::string> names;
  for (const auto& info : layout) {
    total += info.numel;
    names.insert(info.name);
    CHECK(info.offset % kParameterAlignment == 0);
  }
  CHECK(names.size() == 398);
  CHECK(total == 336232258u);
  // Unpadded (30522) is 6 * 1024 + 6 fewer: the logged count implies the padding.
  BertConfig unpadded = c;
  unpadded.vocab_pad_multiple = 1;
  size_t total_unpadded = 0;
  for (const auto& info : bert_parameter_layout(unpadded)) total_unpadded += info.numel;
  CHECK(total - total_unpadded == 6150u);
}

TEST_CASE(
    "parameters are laid out in backward-finish order: heads, layers last to first, embeddings") {
  const BertConfig c = BertConfig::preset("tiny");
  const auto layout = bert_parameter_layout(c);
  CHECK(layout.front().name == "cls/predictions/output_bias");
  CHECK(layout.back().name == "bert/embeddings/word_embeddings");
  auto position = [&](const std::string& name) {
    for (size_t i = 0; i < layout.size(); ++i)
      if (layout[i].name == name) return i;
    FAIL("missing " << name);
    return size_t{0};
  };
  CHECK(position("bert/pooler/dense/bias") <
        position("bert/encoder/layer_1/output/LayerNorm/gamma"));
  CHECK(position("bert/encoder/layer_1/attention/self/value/bias") <
        position("bert/encoder/layer_0/output/LayerNorm/gamma"));
  // Q, K, V kernels adjacent with a constant stride (one batched GEMM reads them).
  const size_t q = position("bert/encoder/layer_0/attention/self/query/kernel");
  CHECK(layout[q + 1].name == "bert/encoder/layer_0/attention/self/key/kernel");
  CHECK(layout[q + 2].name == "bert/encoder/layer_0/attention/self/value/kernel");
  CHECK(layout[q + 2].offset - layout[q + 1].offset == layout[q + 1].offset - layout[q].offset);
  // No decay on biases and LayerNorm; decay on kernels and embeddings.
  for (const auto& info : layout) {
    const bool no_decay = info.name.find("bias") != std::string::npos ||
                          info.name.find("LayerNorm") != std::string::npos;
    INFO(info.name);
    CHECK(info.weight_decay == !no_decay);
  }
  CHECK(layout[position("cls/seq_relationship/output_weights")].shape ==
        std::vector<int64_t>{2, 128});
  CHECK(layout[position("bert/encoder/layer_1/intermediate/dense/kernel")].shape ==
        std::vector<int64_t>{128, 512});
}

TEST_CASE("bert_config.json parsing: standard fields, defaults and clear errors") {
  const auto json = nlohmann::json::parse(R"({
    "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 4096,
    "max_position_embeddings": 512, "num_attention_heads": 16, "num_hidden_layers": 24,
    "type_vocab_size": 2, "vocab_size": 30522})");
  const BertConfig c = BertConfig::from_json(json, "bert_config.json");
  CHECK(c == BertConfig::preset("bert-large"));
  CHECK(BertConfig::from_json(c.to_json()) == c);
  auto bad = json;
  bad["num_attention_heads"] = 15;
  CHECK_THROWS_WITH(BertConfig::from_json(bad, "x.json"),
                    Catch::Contains("x.json") && Catch::Contains("hidden_size"));
  bad = json;
  bad.erase("vocab_size");
  CHECK_THROWS_WITH(BertConfig::from_json(bad, "x.json"),
                    Catch::Contains("\"vocab_size\" is missing"));
  bad = json;
  bad["hidden_dropout_prob"] = "0.1";
  CHECK_THROWS_WITH(BertConfig::from_json(bad, "x.json"), Catch::Contains("hidden_dropout_prob"));
  bad = json;
  bad["hidden_act"] = "relu";
  CHECK_THROWS_WITH(BertConfig::from_json(bad, "x.json"), Catch::Contains("hidden_act"));
  CHECK_THROWS_WITH(BertConfig::preset("huge"), Catch::Contains("unknown model preset"));
  CHECK_THROWS_WITH(BertConfig::from_file("/nonexistent/bert_config.json"),
                    Catch::Contains("/nonexistent/bert_config.json"));
}

TEST_CASE("bert_config.json sizes beyond any machine are refused with the field named") {
  const auto json = BertConfig::preset("tiny").to_json();
  for (const auto& [field, value] :
       std::vector<std::pair<const char*, int64_t>>{{"vocab_pad_multiple", INT64_MAX},
                                                    {"num_hidden_layers", 200000000000},
                                                    {"type_vocab_size", int64_t{1} << 40},
                                                    {"vocab_size", int64_t{1} << 40}}) {
    auto bad = json;
    bad[field] = value;
    INFO(field);
    CHECK_THROWS_WITH(BertConfig::from_json(bad, "x.json"),
                      Catch::Contains("x.json") && Catch::Contains(field) &&
                          Catch::Contains("implausibly large"));
  }
  // Each size alone is plausible, together they are not.
  auto wide = json;
  wide["hidden_size"] = 1 << 16;
  wide["num_attention_heads"] = 16;
  wide["num_hidden_layers"] = 1024;
  CHECK_THROWS_WITH(BertConfig::from_json(wide, "x.json"),
                    Catch::Contains("num_hidden_layers") && Catch::Contains("2^36"));
  CHECK_NOTHROW(BertConfig::from_json(BertConfig::preset("bert-large").to_json()));
}

TEST_CASE("padded arrays convert to an unpadded batch with flat masked positions") {
  // Two rows of length 6: lengths 4 and 6; row 0 has 2 predictions, row 1 has 1 (+padding).
  const std::vector<int32_t> ids{101, 7, 8, 102, 0, 0, 101, 9, 10, 11, 12, 102};
  const std::vector<int32_t> mask{1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1};
  const std::vector<int32_t> seg{0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1};
  const std::vector<int32_t> pos{1, 2, 0, 4, 0, 0}, lab{50, 60, 0, 70, 0, 0}, nsp{1, 0};
  PaddedBatchView v{2, 6, 3, ids, mask, seg, pos, lab, nsp};
  const Batch b = batch_from_padded(v);
  CHECK(b.num_tokens() == 10);
  CHECK(b.cu_seqlens == std::vector<int32_t>{0, 4, 10});
  CHECK(b.max_seqlen == 6);
  CHECK(b.masked_lm_positions == std::vector<int32_t>{1, 2, 8});
  CHECK(b.masked_lm_labels == std::vector<int32_t>{50, 60, 70});
  CHECK(b.position_ids == std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3, 4, 5});
  CHECK(b.next_sentence_labels == std::vector<int32_t>{1, 0});
  BertConfig c = BertConfig::preset("tiny");
  CHECK_NOTHROW(b.validate(c));

  auto bad_mask = mask;
  bad_mask[4] = 1;
  bad_mask[3] = 0;
  CHECK_THROWS_WITH(batch_from_padded(PaddedBatchView{2, 6, 3, ids, bad_mask, seg, pos, lab, nsp}),
                    Catch::Contains("row 0") && Catch::Contains("prefix"));
  auto bad_pos = pos;
  bad_pos[1] = 5;
  CHECK_THROWS_WITH(batch_from_padded(PaddedBatchView{2, 6, 3, ids, mask, seg, bad_pos, lab, nsp}),
                    Catch::Contains("masked_lm_positions[1] = 5"));
  CHECK_THROWS_WITH(batch_from_padded(PaddedBatchView{2, 6, 3, ids, mask, seg, pos, lab,
                                                      std::span(nsp).first(1)}),
                    Catch::Contains("next_sentence_labels"));
}

TEST_CASE("batch validation names the field and index of out-of-range values") {
  BertConfig c = BertConfig::preset("tiny");
  c.vocab_size = 100;
  Batch b;
  const std::vector<int32_t> ids{1, 2, 3}, seg{0, 0, 1}, mpos{1}, mlab{5};
  b.append_sequence(ids, seg, mpos, mlab, 0);
  CHECK_NOTHROW(b.validate(c));
  Batch bad = b;
  bad.input_ids[2] = 100;
  CHECK_THROWS_WITH(bad.validate(c), Catch::Contains("input_ids[2] = 100"));
  bad = b;
  bad.segment_ids[1] = 2;
  CHECK_THROWS_WITH(bad.validate(c), Catch::Contains("segment_ids[1] = 2"));
  bad = b;
  bad.next_sentence_labels[0] = 3;
  CHECK_THROWS_WITH(bad.validate(c), Catch::Contains("next_sentence_labels[0] = 3"));
  bad = b;
  bad.masked_lm_labels[0] = 100;
  CHECK_THROWS_WITH(bad.validate(c), Catch::Contains("masked_lm_labels[0] = 100"));
  bad = b;
  bad.max_seqlen = 2;
  CHECK_THROWS_WITH(bad.validate(c), Catch::Contains("max_seqlen"));
  const std::vector<int32_t> far{3};
  CHECK_THROWS_WITH(b.append_sequence(ids, seg, far, mlab, 1),
                    Catch::Contains("masked_lm_positions[0] = 3"));
  CHECK_THROWS_WITH(b.append_sequence({}, {}, {}, {}, 1), Catch::Contains("empty"));
}
