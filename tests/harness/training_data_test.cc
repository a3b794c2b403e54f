// The trainer's data path: shard discovery and streams, the prefetching loader, the sample
// exchange (multiset kept, batch sizes kept), the eval split (every sample once over the ranks),
// and the parameter names the MLPerf weights_initialization rule expects.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "bert/parameters.h"
#include "data_prep/hdf5_io.h"
#include "data_prep/sample_codec.h"
#include "harness/load_balance.h"
#include "harness/training_data.h"
#include "mlperf_logging/bert_tensors.h"
#include "tests/harness/thread_group.h"

using namespace mlbert;
namespace fs = std::filesystem;

namespace {

// A sample whose first token encodes (id) so tests can tell samples apart; length `length`.
data::Sample make_sample(int id, int length) {
  data::Sample s;
  s.input_ids.assign(length, 5);
  s.input_ids[0] = 101;
  s.input_ids[1] = 1000 + id;
  s.input_ids[length - 1] = 102;
  s.segment_ids.assign(length, 0);
  for (int i = length / 2; i < length; ++i) s.segment_ids[i] = 1;
  s.masked_lm_positions = {2};
  s.masked_lm_ids = {7};
  s.next_sentence_label = static_cast<std::int8_t>(id % 2);
  return s;
}

int id_of(const data::Sample& s) {
  return s.input_ids[1] - 1000;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("mlbert_harness_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

harness::RunSpec run_with(harness::SamplerKind sampler, int per_rank_batch) {
  harness::RunSpec run;
  run.sampler = sampler;
  run.per_rank_batch = per_rank_batch;
  if (sampler == harness::SamplerKind::stratified) run.stratified_quotas = {2, 1, 1, 0};
  return run;
}

data::ReadOptions read_options() {
  data::ReadOptions options;
  options.vocab_size = 30522;
  return options;
}

}  // namespace

TEST_CASE("the 398 bert-large tensor names are the ones weights_initialization expects",
          "[names]") {
  const auto layout = bert::bert_parameter_layout(bert::BertConfig::preset("bert-large"));
  std::vector<std::string> ours;
  for (const auto& info : layout) ours.push_back(info.name);
  std::vector<std::string> rule = mllog::bert_weight_tensor_names();
  CHECK(ours.size() == 398);
  CHECK(rule.size() == 398);
  std::sort(ours.begin(), ours.end());
  std::sort(rule.begin(), rule.end());
  CHECK(ours == rule);
}

TEST_CASE("shards are found recursively and form one stream for the random sampler", "[data]") {
  TempDir dir("shards");
  std::vector<data::Sample> a, b;
  for (int i = 0; i < 10; ++i) a.push_back(make_sample(i, 20));
  for (int i = 10; i < 16; ++i) b.push_back(make_sample(i, 30));
  fs::create_directories(dir.path / "sub");
  data::write_shard(dir.path / "part_0.hdf5", data::Layout::kVarlen, a);
  data::write_shard(dir.path / "sub" / "part_1.hdf5", data::Layout::kVarlen, b);
  std::ofstream(dir.path / "notes.txt") << "not a shard";
  const auto dataset =
      harness::open_training_data(dir.path, run_with(harness::SamplerKind::random, 2));
  REQUIRE(dataset.shards.size() == 2);
  CHECK(dataset.samples == 16);
  REQUIRE(dataset.streams.size() == 1);
  CHECK(dataset.streams[0].size() == 16);
  CHECK(dataset.quotas == std::vector<int>{2});
}

TEST_CASE("stratified streams come from length bins, on disk or computed", "[data]") {
  TempDir dir("bins");
  std::vector<data::Sample> mixed;
  const int lengths[] = {50, 200, 300, 100, 140, 260, 30, 129};  // bins 0 1 2 0 1 2 0 1
  for (int i = 0; i < 8; ++i) mixed.push_back(make_sample(i, lengths[i]));
  data::write_shard(dir.path / "mixed.hdf5", data::Layout::kVarlen, mixed);
  const auto computed =
      harness::open_training_data(dir.path, run_with(harness::SamplerKind::stratified, 4));
  REQUIRE(computed.streams.size() == 4);
  CHECK(computed.streams[0].size() == 3);
  CHECK(computed.streams[1].size() == 3);
  CHECK(computed.streams[2].size() == 2);
  CHECK(computed.streams[3].size() == 0);  // quota 0: allowed to be empty
  CHECK(computed.streams[1].at(0) == harness::SampleRef{0, 1});

  TempDir binned("binned");
  fs::create_directories(binned.path / "len_1-128");
  fs::create_directories(binned.path / "len_129-256");
  fs::create_directories(binned.path / "len_257-384");
  data::write_shard(binned.path / "len_1-128" / "part_0-of-1.hdf5", data::Layout::kVarlen,
                    std::vector<data::Sample>{make_sample(0, 50), make_sample(1, 60)});
  data::write_shard(binned.path / "len_129-256" / "part_0-of-1.hdf5", data::Layout::kVarlen,
                    std::vector<data::Sample>{make_sample(2, 150)});
  data::write_shard(binned.path / "len_257-384" / "part_0-of-1.hdf5", data::Layout::kVarlen,
                    std::vector<data::Sample>{make_sample(3, 300)});
  const auto on_disk =
      harness::open_training_data(binned.path, run_with(harness::SamplerKind::stratified, 4));
  CHECK(on_disk.streams[0].size() == 2);
  CHECK(on_disk.streams[1].size() == 1);
  CHECK(on_disk.streams[2].size() == 1);
  CHECK(on_disk.stream_names[1] == "len_129-256");
}

TEST_CASE("missing or empty data is named in the error", "[data][errors]") {
  TempDir dir("empty");
  CHECK_THROWS_WITH(
      harness::open_training_data(dir.path, run_with(harness::SamplerKind::random, 2)),
      Catch::Contains("no HDF5 shards"));
  CHECK_THROWS_WITH(
      harness::open_training_data(dir.path / "nope", run_with(harness::SamplerKind::random, 2)),
      Catch::Contains("nope: does not exist"));
  data::write_shard(dir.path / "short.hdf5", data::Layout::kVarlen,
                    std::vector<data::Sample>{make_sample(0, 40)});
  auto run = run_with(harness::SamplerKind::stratified, 4);
  CHECK_THROWS_WITH(harness::open_training_data(dir.path, run),
                    Catch::Contains("length bin len_129-256 has no samples"));
}

TEST_CASE("the loader delivers the sampler's samples in order", "[data]") {
  TempDir dir("loader");
  std::vector<data::Sample> samples;
  for (int i = 0; i < 40; ++i) samples.push_back(make_sample(i, 10 + i));
  data::write_shard(dir.path / "a.hdf5", data::Layout::kVarlen,
                    std::span<const data::Sample>(samples.data(), 25));
  data::write_shard(dir.path / "b.hdf5", data::Layout::kVarlen,
                    std::span<const data::Sample>(samples.data() + 25, 15));
  const auto dataset =
      harness::open_training_data(dir.path, run_with(harness::SamplerKind::random, 4));
  const harness::Sampler sampler(dataset.streams, dataset.quotas, 2, 9);
  harness::BatchLoader loader(dataset, sampler, 1, read_options(), 0);
  for (std::int64_t m = 0; m < 7; ++m) {
    const auto got = loader.next();
    const auto refs = sampler.batch(1, m);
    REQUIRE(got.size() == refs.size());
    for (std::size_t i = 0; i < refs.size(); ++i) {
      const int expected_id =
          refs[i].shard == 0 ? static_cast<int>(refs[i].row) : 25 + static_cast<int>(refs[i].row);
      CHECK(id_of(got[i]) == expected_id);
      CHECK(got[i] == samples[expected_id]);
    }
  }
}

TEST_CASE("the loader reports a read error of its thread", "[data][errors]") {
  TempDir dir("loader_error");
  std::vector<data::Sample> samples;
  for (int i = 0; i < 8; ++i) samples.push_back(make_sample(i, 12));
  data::write_shard(dir.path / "a.hdf5", data::Layout::kVarlen, samples);
  const auto dataset =
      harness::open_training_data(dir.path, run_with(harness::SamplerKind::random, 2));
  const harness::Sampler sampler(dataset.streams, dataset.quotas, 1, 1);
  data::ReadOptions strict = read_options();
  strict.vocab_size = 500;  // token 1000 + id is out of range: the reader must refuse it
  harness::BatchLoader loader(dataset, sampler, 0, strict, 0);
  CHECK_THROWS_WITH(loader.next(), Catch::Contains("a.hdf5"));
}

TEST_CASE("samples survive serialization, empty arrays included, and corrupt blocks are errors",
          "[exchange]") {
  std::vector<data::Sample> samples = {make_sample(1, 9), make_sample(2, 33), make_sample(3, 5)};
  samples[2].masked_lm_positions.clear();  // empty arrays: the decoder must not memcpy into null
  samples[2].masked_lm_ids.clear();
  const auto bytes = data::serialize_samples(samples);
  CHECK(data::deserialize_samples(bytes, "test") == samples);
  auto truncated = bytes;
  truncated.resize(truncated.size() - 3);
  CHECK_THROWS_WITH(data::deserialize_samples(truncated, "block from rank 1"),
                    Catch::Contains("block from rank 1: truncated"));
  auto trailing = bytes;
  trailing.push_back(std::byte{0});
  CHECK_THROWS_WITH(data::deserialize_samples(trailing, "x"), Catch::Contains("trailing bytes"));
}

TEST_CASE("the exchange keeps the group's samples and balances tokens", "[exchange]") {
  const int group_size = 4, batch = 6;
  test::ThreadGroup group(group_size);
  std::vector<std::vector<data::Sample>> before(group_size), after(group_size);
  std::mt19937 rng(3);
  for (int r = 0; r < group_size; ++r)
    for (int i = 0; i < batch; ++i)
      before[r].push_back(make_sample(r * 100 + i, 8 + static_cast<int>(rng() % 120)));
  group.run([&](int rank) {
    test::ThreadGroupCommunicator comm(group, rank);
    after[rank] = harness::exchange_samples(comm, before[rank]);
  });
  std::multiset<int> in, out;
  std::vector<std::int64_t> tokens_before, tokens_after;
  for (int r = 0; r < group_size; ++r) {
    CHECK(after[r].size() == static_cast<std::size_t>(batch));
    std::int64_t tb = 0, ta = 0;
    for (const auto& s : before[r]) {
      in.insert(id_of(s));
      tb += s.length();
    }
    for (const auto& s : after[r]) {
      out.insert(id_of(s));
      ta += s.length();
    }
    tokens_before.push_back(tb);
    tokens_after.push_back(ta);
  }
  CHECK(in == out);
  CHECK(harness::straggler_ratio(tokens_after) <= harness::straggler_ratio(tokens_before));
}

TEST_CASE("the eval set is split so every sample is evaluated once over the ranks", "[eval]") {
  TempDir dir("eval");
  std::vector<data::Sample> samples;
  for (int i = 0; i < 23; ++i) samples.push_back(make_sample(i, 10));
  data::write_shard(dir.path / "eval.hdf5", data::Layout::kVarlen, samples);
  for (int world : {1, 2, 3, 4, 7}) {
    INFO("world " << world);
    std::int64_t covered = 0;
    std::set<int> first_tokens;
    for (int r = 0; r < world; ++r) {
      const auto share =
          harness::load_eval_share(dir.path / "eval.hdf5", r, world, 4, 23, read_options());
      CHECK(share.total_samples == 23);
      covered += share.local_samples;
      for (const auto& batch : share.batches)
        for (std::size_t s = 0; s < batch.num_sequences(); ++s)
          CHECK(first_tokens.insert(batch.input_ids[batch.cu_seqlens[s] + 1]).second);
    }
    CHECK(covered == 23);
    CHECK(first_tokens.size() == 23);
  }
  CHECK_THROWS_WITH(
      harness::load_eval_share(dir.path / "eval.hdf5", 0, 1, 4, 10000, read_options()),
      Catch::Contains("the eval set has 23 samples but run.eval.eval_samples is 10000"));
}
