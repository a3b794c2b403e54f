// The trainer's data path: shard discovery and streams, the prefetching loader, the sample
// exchange (multiset kept, batch sizes kept, the deal exact), global-deal's loader and its length
// index checks, the eval split (every sample once over the ranks), and the parameter names the
// MLPerf weights_initialization rule expects.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "bert/parameters.h"
#include "data_prep/hdf5_io.h"
#include "data_prep/sample_codec.h"
#include "harness/data/load_balance.h"
#include "harness/data/training_data.h"
#include "mlperf_logging/rules/bert_tensors.h"
#include "tests/common/processes.h"
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
  // A folder named like a bin with a bound past int (std::stoi threw out_of_range on it) is no
  // bin: every row is then binned by its length.
  fs::create_directories(binned.path / "len_385-99999999999");
  data::write_shard(binned.path / "len_385-99999999999" / "part_0-of-1.hdf5",
                    data::Layout::kVarlen, std::vector<data::Sample>{make_sample(4, 40)});
  const auto by_length =
      harness::open_training_data(binned.path, run_with(harness::SamplerKind::stratified, 4));
  CHECK(by_length.streams[0].size() == 3);
  CHECK(by_length.streams[2].size() == 1);
}

TEST_CASE("missing or empty data is named in the error", "[data][errors]") {
  TempDir dir("empty");
  CHECK_THROWS_WITH(
      harness::open_training_data(dir.path, run_with(harness::SamplerKind::random, 2)),
      Catch::Contains("no HDF5 shards"));
  CHECK_THROWS_WITH(
      harness::open_training_data(dir.path / "nope", run_with(harness::SamplerKind::random, 2)),
      Catch::Contains("nope: no such file or directory"));
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
      before[r].push_back(make_sample(r * 100 + i, 8 + 30 * r + static_cast<int>(rng() % 20)));
  group.run([&](int rank) {
    test::ThreadGroupCommunicator comm(group, rank);
    after[rank] = harness::exchange_samples(comm, before[rank]);
  });
  std::multiset<int> in, out;
  std::vector<std::int64_t> tokens_before, tokens_after;
  std::vector<std::vector<int>> lengths(group_size);
  for (int r = 0; r < group_size; ++r) {
    CHECK(after[r].size() == static_cast<std::size_t>(batch));
    std::int64_t tb = 0, ta = 0;
    for (const auto& s : before[r]) {
      in.insert(id_of(s));
      tb += s.length();
      lengths[r].push_back(s.length());
    }
    for (const auto& s : after[r]) {
      out.insert(id_of(s));
      ta += s.length();
    }
    tokens_before.push_back(tb);
    tokens_after.push_back(ta);
  }
  CHECK(in == out);
  // Each rank holds exactly its share of the snake deal of the pooled lengths, in deal order...
  const auto plan = harness::plan_group_exchange(lengths);
  for (int r = 0; r < group_size; ++r) {
    REQUIRE(plan[r].size() == after[r].size());
    for (std::size_t i = 0; i < plan[r].size(); ++i)
      CHECK(id_of(after[r][i]) == id_of(before[plan[r][i].rank][plan[r][i].index]));
  }
  // ...which evens out a draw that is far from even (a no-op exchange would keep 1.2 here).
  const double ratio_before = harness::straggler_ratio(tokens_before);
  const double ratio_after = harness::straggler_ratio(tokens_after);
  INFO("max/mean tokens before " << ratio_before << ", after " << ratio_after);
  REQUIRE(ratio_before > 1.15);
  CHECK(ratio_after < 1.05);
}

namespace {

// Shards with lengths that tell samples apart, their length index, and a global-deal run spec.
struct IndexedSet {
  TempDir dir;
  std::vector<data::Sample> samples;  // id i is samples[i]; shard a holds 0..29, b 30..49
  explicit IndexedSet(const std::string& name) : dir(name) {
    std::mt19937 rng(8);
    for (int i = 0; i < 50; ++i)
      samples.push_back(make_sample(i, 4 + static_cast<int>(rng() % 120)));
    fs::create_directories(dir.path / "sub");
    data::write_shard(dir.path / "a.hdf5", data::Layout::kVarlen,
                      std::span<const data::Sample>(samples.data(), 30));
    data::write_shard(dir.path / "sub" / "b.hdf5", data::Layout::kVarlen,
                      std::span<const data::Sample>(samples.data() + 30, 20));
    data::index_shards(dir.path);
  }
  static harness::RunSpec run(harness::SamplerKind sampler = harness::SamplerKind::random) {
    auto spec = run_with(sampler, 4);
    spec.load_balancing = harness::LoadBalancing::global_deal;
    return spec;
  }
  int id(const harness::SampleRef& ref) const {
    return ref.shard == 0 ? static_cast<int>(ref.row) : 30 + static_cast<int>(ref.row);
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("global-deal: each rank's loader reads its share of the global-exchange deal",
          "[data][deal]") {
  IndexedSet set("deal");
  const int world = 3;
  const auto dataset = harness::open_training_data(set.dir.path, IndexedSet::run());
  REQUIRE(dataset.row_lengths.size() == 50);
  harness::check_length_index(dataset, 0, 1);
  const harness::Sampler sampler(dataset.streams, dataset.quotas, world, 5);
  std::vector<std::unique_ptr<harness::BatchLoader>> loaders;
  for (int r = 0; r < world; ++r)
    loaders.push_back(std::make_unique<harness::BatchLoader>(
        dataset, harness::dealt_batches(sampler, dataset, r), read_options(), 0));
  for (std::int64_t m = 0; m < 8; ++m) {  // two epochs of 4 micro-steps
    INFO("micro-step " << m);
    std::vector<std::vector<int>> lengths(world);
    std::vector<std::vector<harness::SampleRef>> sampled(world);
    for (int r = 0; r < world; ++r) {
      sampled[r] = sampler.batch(r, m);
      for (const auto& ref : sampled[r])
        lengths[r].push_back(set.samples[static_cast<std::size_t>(set.id(ref))].length());
    }
    const auto plan = harness::plan_group_exchange(lengths);
    std::multiset<int> trained, drawn;
    for (int r = 0; r < world; ++r) {
      const auto got = loaders[r]->next();
      REQUIRE(got.size() == plan[r].size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        const int expected = set.id(sampled[plan[r][i].rank][plan[r][i].index]);
        CHECK(id_of(got[i]) == expected);
        CHECK(got[i] == set.samples[static_cast<std::size_t>(expected)]);
        trained.insert(id_of(got[i]));
      }
      for (const auto& ref : sampled[r]) drawn.insert(set.id(ref));
    }
    CHECK(trained == drawn);
  }
}

TEST_CASE("global-deal refuses a missing, stale or foreign length index, naming the shard",
          "[data][deal][errors]") {
  const auto run = IndexedSet::run();
  {
    IndexedSet set("deal_missing");
    fs::remove(set.dir.path / "lengths.index");
    CHECK_THAT(error_of([&] { harness::open_training_data(set.dir.path, run); }),
               Catch::Contains("lengths.index: missing; load_balancing global-deal"));
    // Other modes do not need it.
    CHECK_NOTHROW(
        harness::open_training_data(set.dir.path, run_with(harness::SamplerKind::random, 4)));
  }
  {
    IndexedSet set("deal_rows");  // a shard rewritten with one row more
    auto grown = std::vector<data::Sample>(set.samples.begin() + 30, set.samples.end());
    grown.push_back(make_sample(99, 10));
    data::write_shard(set.dir.path / "sub" / "b.hdf5", data::Layout::kVarlen, grown);
    CHECK_THAT(error_of([&] { harness::open_training_data(set.dir.path, run); }),
               Catch::Contains("sub/b.hdf5: ") &&
                   Catch::Contains("21 rows, but the length index") &&
                   Catch::Contains("recorded") && Catch::Contains("the shard changed"));
  }
  {
    IndexedSet set("deal_content");  // the same lengths and size, other tokens
    std::vector<data::Sample> other(set.samples.begin(), set.samples.begin() + 30);
    for (auto& s : other) s.input_ids[2] = 4242;
    data::write_shard(set.dir.path / "a.hdf5", data::Layout::kVarlen, other);
    const auto dataset = harness::open_training_data(set.dir.path, run);  // size and rows agree
    CHECK_THAT(error_of([&] { harness::check_length_index(dataset, 0, 1); }),
               Catch::Contains("a.hdf5: its content differs from when the length index"));
    // The hashing is shared out: rank 1 of 2 checks only sub/b.hdf5, which did not change.
    CHECK_NOTHROW(harness::check_length_index(dataset, 1, 2));
    CHECK_THAT(error_of([&] { harness::check_length_index(dataset, 0, 2); }),
               Catch::Contains("a.hdf5: its content differs"));
  }
  {
    IndexedSet set("deal_foreign");
    IndexedSet other("deal_other");
    fs::rename(other.dir.path / "a.hdf5", other.dir.path / "c.hdf5");
    fs::remove_all(other.dir.path / "sub");
    data::index_shards(other.dir.path);
    fs::copy_file(other.dir.path / "lengths.index", set.dir.path / "lengths.index",
                  fs::copy_options::overwrite_existing);
    CHECK_THAT(error_of([&] { harness::open_training_data(set.dir.path, run); }),
               Catch::Contains("none of its 1 shards is among the 2") &&
                   Catch::Contains("the length index of another data set"));
  }
  {
    IndexedSet set("deal_added");
    data::write_shard(set.dir.path / "c.hdf5", data::Layout::kVarlen,
                      std::vector<data::Sample>{make_sample(7, 9)});
    CHECK_THAT(error_of([&] { harness::open_training_data(set.dir.path, run); }),
               Catch::Contains("c.hdf5: not in the length index"));
    fs::remove(set.dir.path / "c.hdf5");
    fs::remove(set.dir.path / "sub" / "b.hdf5");
    CHECK_THAT(error_of([&] { harness::open_training_data(set.dir.path, run); }),
               Catch::Contains("lists shard sub/b.hdf5, which is not among the shards"));
  }
  {
    IndexedSet set("deal_corrupt");
    std::ofstream(set.dir.path / "lengths.index", std::ios::binary | std::ios::in) << "XX";
    CHECK_THAT(error_of([&] { harness::open_training_data(set.dir.path, run); }),
               Catch::Contains("lengths.index: not an mlbert length index"));
  }
}

TEST_CASE("global-deal: a row whose length differs from the index stops the loader, named",
          "[data][deal][errors]") {
  IndexedSet set("deal_late");
  const auto dataset = harness::open_training_data(set.dir.path, IndexedSet::run());
  // The shard changes after the preflight: row 0 of a.hdf5 is one token longer.
  auto changed = std::vector<data::Sample>(set.samples.begin(), set.samples.begin() + 30);
  changed[0] = make_sample(0, set.samples[0].length() + 1);
  data::write_shard(set.dir.path / "a.hdf5", data::Layout::kVarlen, changed);
  const harness::Sampler sampler(dataset.streams, dataset.quotas, 1, 5);
  harness::BatchLoader loader(dataset, harness::dealt_batches(sampler, dataset, 0), read_options(),
                              0);
  std::string error = "<no error>";
  for (int m = 0; m < 48 && error == "<no error>"; ++m) error = error_of([&] { loader.next(); });
  CHECK_THAT(error,
             Catch::Contains("a.hdf5: row 0 has " + std::to_string(set.samples[0].length() + 1) +
                             " tokens but the length index"));
}

// /proc/<pid> of this process's shard reader process mlbert-shard-reader and of its descendants,
// the keeper of the open shards among them (data_prep/shard_reader.h; REQUIREs the reader).
static std::vector<fs::path> shard_reader_processes() {
  std::vector<fs::path> readers;
  for (const auto& child : mlbert::test::children_of(::getpid()))
    if (child.comm == "mlbert-shard-re") readers.push_back("/proc/" + std::to_string(child.pid));
  REQUIRE(readers.size() == 1);
  auto all = readers;
  const auto reader = static_cast<pid_t>(std::stol(readers.front().filename().string()));
  for (const auto& p : mlbert::test::descendants_of(reader))
    all.push_back("/proc/" + std::to_string(p.pid));
  return all;
}

TEST_CASE("the loader keeps shards open and still reads the sampler's rows past its limit",
          "[data]") {
  // More shards than the loader may keep open at once (the limit follows RLIMIT_NOFILE): with
  // 300 one-row shards and a soft limit of 256 descriptors it keeps 64 open and reopens the rest.
  TempDir dir("many_shards");
  std::vector<data::Sample> samples;
  for (int i = 0; i < 300; ++i) {
    samples.push_back(make_sample(i, 6 + i % 50));
    char name[32];
    std::snprintf(name, sizeof name, "s%03d.hdf5", i);
    data::write_shard(dir.path / name, data::Layout::kVarlen,
                      std::span<const data::Sample>(&samples.back(), 1));
  }
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  rlimit low = saved;
  low.rlim_cur = std::min<rlim_t>(256, saved.rlim_max);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  {
    const auto dataset =
        harness::open_training_data(dir.path, run_with(harness::SamplerKind::random, 10));
    const harness::Sampler sampler(dataset.streams, dataset.quotas, 1, 2);
    harness::BatchLoader loader(dataset, sampler, 0, read_options(), 0);
    std::set<int> seen;
    for (std::int64_t m = 0; m < 30; ++m) {
      const auto got = loader.next();
      const auto refs = sampler.batch(0, m);
      for (std::size_t i = 0; i < refs.size(); ++i) {
        CHECK(id_of(got[i]) == refs[i].shard);
        seen.insert(id_of(got[i]));
      }
    }
    CHECK(seen.size() == 300);  // a whole epoch: every shard opened, most of them reopened
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the thread's read-ahead ends
    // The files are open in the keeper process of this process's shard reader (shard_reader.h).
    int open_shards = 0;
    auto processes = shard_reader_processes();
    processes.push_back("/proc/self");
    for (const fs::path& process : processes) {
      for (const auto& fd : fs::directory_iterator(process / "fd")) {
        std::error_code ec;
        if (fs::read_symlink(fd.path(), ec).extension() == ".hdf5") ++open_shards;
      }
    }
    CHECK(open_shards == 64);  // kept open, up to (256 - 128) / 2
  }
  ::setrlimit(RLIMIT_NOFILE, &saved);
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
