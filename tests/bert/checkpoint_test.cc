// Checkpoints: CRC32C, snappy, the TF tensor-bundle reader on files TensorFlow wrote, safetensors,
// Hugging Face mapping, and the all-problems-at-once import errors.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "bert/checkpoint/checkpoint.h"
#include "bert/checkpoint/crc32c.h"
#include "bert/checkpoint/safetensors.h"
#include "bert/checkpoint/tf_bundle.h"
#include "bert/cpu/cpu_ops.h"
#include "tests/bert/test_util.h"
#include "tests/common/shared_fixtures.h"

using namespace mlbert::bert;
namespace fs = std::filesystem;

namespace {

fs::path bundle_dir() {
  return mlbert::test::source_dir() / "tests/bert/data/tf_bundle";
}

fs::path scratch_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("mlbert_bert_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void flip_byte(const fs::path& path, std::streamoff offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c;
  f.read(&c, 1);
  c ^= 0x5A;
  f.seekp(offset);
  f.write(&c, 1);
}

}  // namespace

TEST_CASE("crc32c matches the standard check value and masking round-trips") {
  CHECK(crc32c("123456789", 9) == 0xE3069283u);
  CHECK(crc32c("", 0) == 0u);
  CHECK(crc32c_extend(crc32c("1234", 4), "56789", 5) == 0xE3069283u);
  CHECK(crc32c_unmask(crc32c_mask(0xDEADBEEFu)) == 0xDEADBEEFu);
  CHECK(crc32c_mask(0xDEADBEEFu) != 0xDEADBEEFu);
}

TEST_CASE("snappy decompression handles literals and overlapping copies, rejects corrupt input") {
  const unsigned char stream[] = {0x11, 0x0C, 'a', 'b', 'c', 'd', 0x2E, 0x04, 0x00, 0x00, 'X'};
  CHECK(snappy_uncompress(reinterpret_cast<const char*>(stream), sizeof(stream)) ==
        "abcdabcdabcdabcdX");
  // copy with a 1-byte offset: "xy" then 5 bytes from offset 2 -> "xyxyxyx"
  const unsigned char copy1[] = {0x07, 0x04, 'x', 'y', 0x05, 0x02};
  CHECK(snappy_uncompress(reinterpret_cast<const char*>(copy1), sizeof(copy1)) == "xyxyxyx");
  const unsigned char bad_offset[] = {0x07, 0x04, 'x', 'y', 0x05, 0x09};
  CHECK_THROWS_WITH(
      snappy_uncompress(reinterpret_cast<const char*>(bad_offset), sizeof(bad_offset)),
      Catch::Contains("offset"));
  const unsigned char short_out[] = {0x09, 0x04, 'x', 'y'};
  CHECK_THROWS_WITH(snappy_uncompress(reinterpret_cast<const char*>(short_out), sizeof(short_out)),
                    Catch::Contains("shorter"));
}

TEST_CASE("the TF bundle reader returns exactly what TensorFlow saved") {
  TfBundleReader reader(bundle_dir() / "model.ckpt-7");
  SafetensorsReader expected(bundle_dir() / "expected.safetensors");
  CHECK(reader.num_shards() == 1);
  CHECK(reader.entries().size() == 46 * 3 + 1);
  size_t compared = 0;
  for (const SafetensorsEntry& e : expected.entries()) {
    if (e.name.rfind("dtypes/", 0) == 0) continue;
    const TfBundleEntry* entry = reader.find(e.name);
    REQUIRE(entry);
    CHECK(entry->shape == e.shape);
    CHECK(entry->dtype == static_cast<int>(TfDataType::float32));
    CHECK(entry->crc32c.has_value());
    CHECK(reader.read_f32(*entry) == expected.read_f32(e));
    ++compared;
  }
  CHECK(compared == 46);
  const TfBundleEntry* step = reader.find("global_step");
  REQUIRE(step);
  CHECK(is_tf_optimizer_slot(step->name));
  CHECK(reader.read_f32(*step) == std::vector<float>{7.0f});
  CHECK(is_tf_optimizer_slot("bert/encoder/layer_3/output/dense/kernel/adam_m"));
  CHECK_FALSE(is_tf_optimizer_slot("bert/encoder/layer_3/output/dense/kernel"));
}

TEST_CASE("the TF bundle reader converts float16, bfloat16, float64 and int32 tensors") {
  TfBundleReader reader(bundle_dir() / "dtypes.ckpt.index");
  SafetensorsReader expected(bundle_dir() / "expected.safetensors");
  for (const char* name : {"half", "bf16", "double", "int32"}) {
    INFO(name);
    const TfBundleEntry* entry = reader.find(name);
    REQUIRE(entry);
    const auto want = expected.read_f32(*expected.find(std::string("dtypes/") + name));
    const auto have = reader.read_f32(*entry);
    REQUIRE(have.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(have[i] == want[i]);
  }
}

TEST_CASE("corrupt TF bundles fail with the file and the reason") {
  const fs::path dir = scratch_dir("corrupt");
  for (const auto& entry : fs::directory_iterator(bundle_dir()))
    fs::copy(entry.path(), dir / entry.path().filename());
  const fs::path prefix = dir / "model.ckpt-7";
  SECTION("a flipped byte in the data shard fails that tensor's CRC32C") {
    TfBundleReader reader(prefix);
    const TfBundleEntry* e = reader.find("bert/pooler/dense/kernel");
    REQUIRE(e);
    flip_byte(dir / "model.ckpt-7.data-00000-of-00001", static_cast<std::streamoff>(e->offset + 3));
    CHECK_THROWS_WITH(reader.read_f32(*e), Catch::Contains("bert/pooler/dense/kernel") &&
                                               Catch::Contains("CRC32C") &&
                                               Catch::Contains("data-00000-of-00001"));
  }
  SECTION("a flipped byte in an index block fails the block CRC") {
    flip_byte(dir / "model.ckpt-7.index", 40);
    CHECK_THROWS_WITH(TfBundleReader(prefix),
                      Catch::Contains("model.ckpt-7.index") && Catch::Contains("CRC32C"));
  }
  SECTION("a truncated index has no valid footer") {
    fs::resize_file(dir / "model.ckpt-7.index", fs::file_size(dir / "model.ckpt-7.index") - 3);
    CHECK_THROWS_WITH(TfBundleReader(prefix), Catch::Contains("model.ckpt-7.index"));
  }
  SECTION("a missing data shard is named") {
    fs::remove(dir / "model.ckpt-7.data-00000-of-00001");
    TfBundleReader reader(prefix);
    CHECK_THROWS_WITH(reader.read_f32(reader.entries().front()),
                      Catch::Contains("data-00000-of-00001"));
  }
  SECTION("an index that is a folder is named, not read") {
    fs::create_directories(dir / "folder.index");
    CHECK_THROWS_WITH(TfBundleReader(dir / "folder"), Catch::Contains("folder.index: not a file"));
  }
  SECTION("a non-checkpoint file is rejected") {
    std::ofstream(dir / "junk.index") << std::string(100, 'x');
    CHECK_THROWS_WITH(TfBundleReader(dir / "junk"), Catch::Contains("magic"));
  }
  fs::remove_all(dir);
}

TEST_CASE("importing the TF checkpoint skips optimizer slots and pads the vocabulary") {
  CpuOps ops;
  const BertConfig config = BertConfig::from_file(bundle_dir() / "bert_config.json");
  ParameterStore params(config, ops);
  const ImportReport report = load_checkpoint(params, bundle_dir() / "model.ckpt-7");
  CHECK(report.format == CheckpointFormat::tf_bundle);
  CHECK(report.loaded == 46);
  CHECK(report.skipped.size() == 93);
  CHECK(report.padded.size() == 2);
  SafetensorsReader expected(bundle_dir() / "expected.safetensors");
  for (const ParameterInfo& info : params.infos()) {
    INFO(info.name);
    const auto want = expected.read_f32(*expected.find(info.name));
    const auto have = params.download_master(params.find(info.name));
    for (size_t i = 0; i < have.size(); ++i) REQUIRE(have[i] == (i < want.size() ? want[i] : 0.0f));
  }
}

TEST_CASE(
    "checking a checkpoint against a config reads its index only and reports what a load "
    "would") {
  const BertConfig config = BertConfig::from_file(bundle_dir() / "bert_config.json");
  const fs::path dir = scratch_dir("check_only");
  for (const char* file : {"model.ckpt-7.index", "model.ckpt-7.data-00000-of-00001"})
    fs::copy_file(bundle_dir() / file, dir / file);
  fs::resize_file(dir / "model.ckpt-7.data-00000-of-00001", 10);  // no tensor readable
  const ImportReport report = check_checkpoint(dir / "model.ckpt-7", config);
  CHECK(report.format == CheckpointFormat::tf_bundle);
  CHECK(report.loaded == 46);
  CHECK(report.skipped.size() == 93);
  CHECK(report.padded.size() == 2);
  CpuOps ops;
  ParameterStore params(config, ops);
  CHECK_THROWS_WITH(load_checkpoint(params, dir / "model.ckpt-7"),
                    Catch::Contains("model.ckpt-7.data-00000-of-00001"));

  BertConfig wider = config;
  wider.hidden_size = 32;
  wider.intermediate_size = 48;
  try {
    check_checkpoint(dir / "model.ckpt-7", wider);
    FAIL("a checkpoint of another model should fail the check");
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::StartsWith((dir / "model.ckpt-7.index").string() + ": "));
    CHECK_THAT(msg, Catch::Contains("importing a TensorFlow tensor bundle checkpoint"));
    CHECK_THAT(msg, Catch::Contains("tensor \"bert/encoder/layer_1/intermediate/dense/kernel\" "
                                    "has shape [16, 24], the model's "
                                    "\"bert/encoder/layer_1/intermediate/dense/kernel\" needs "
                                    "[32, 48]"));
  }
  fs::remove_all(dir);
}

TEST_CASE("safetensors checkpoints round-trip parameters, config and extra state") {
  CpuOps ops;
  BertConfig config = BertConfig::preset("tiny");
  config.vocab_size = 100;
  ParameterStore params(config, ops);
  params.init_truncated_normal(42);
  const fs::path dir = scratch_dir("roundtrip");
  const std::vector<float> adam_m = mlbert::test::random_vector(10, 3);
  const ExtraTensor extra{"adam_m", {10}, adam_m};
  save_checkpoint(params, dir / "model.safetensors", {{"step", "12"}}, std::span(&extra, 1));
  CHECK(detect_checkpoint_format(dir / "model.safetensors") ==
        CheckpointFormat::mlbert_safetensors);
  CHECK(checkpoint_config(dir / "model.safetensors") == config);
  CHECK(SafetensorsReader(dir / "model.safetensors").metadata().at("step") == "12");
  CHECK(load_extra_tensor(dir / "model.safetensors", "adam_m") == adam_m);
  CHECK_FALSE(load_extra_tensor(dir / "model.safetensors", "adam_v").has_value());
  ParameterStore copy(config, ops);
  const ImportReport report = load_checkpoint(copy, dir / "model.safetensors");
  CHECK(report.loaded == params.infos().size());
  CHECK(copy.download_master() == params.download_master());
  fs::remove_all(dir);
}

TEST_CASE("Hugging Face export and import are inverse, with [out,in] layouts and the vocab cut") {
  CpuOps ops;
  BertConfig config = BertConfig::preset("tiny");
  config.vocab_size = 101;  // padded to 104 inside, 101 rows in the HF file
  ParameterStore params(config, ops);
  params.init_truncated_normal(7);
  // Make the padded rows zero as an import would, so the round trip is exact.
  const size_t word = params.index().word_embeddings;
  auto w = params.download_master(word);
  std::fill(w.begin() + 101 * 128, w.end(), 0.0f);
  params.upload_master(word, w);
  const size_t bias = params.index().mlm_output_bias;
  params.upload_master(bias, std::vector<float>(104, 0.0f));
  const fs::path dir = scratch_dir("hf");
  export_hf_safetensors(params, dir / "model.safetensors");
  SafetensorsReader hf(dir / "model.safetensors");
  const SafetensorsEntry* q = hf.find("bert.encoder.layer.1.attention.self.query.weight");
  REQUIRE(q);
  CHECK(q->shape == std::vector<int64_t>{128, 128});
  const SafetensorsEntry* ffn = hf.find("bert.encoder.layer.0.intermediate.dense.weight");
  REQUIRE(ffn);
  CHECK(ffn->shape == std::vector<int64_t>{512, 128});  // [out, in]
  const auto kernel =
      params.download_master(params.index().layers[0].intermediate_kernel);  // [128, 512]
  const auto hf_values = hf.read_f32(*ffn);
  CHECK(hf_values[3 * 128 + 5] == kernel[5 * 512 + 3]);
  CHECK(hf.find("bert.embeddings.word_embeddings.weight")->shape == std::vector<int64_t>{101, 128});
  CHECK(hf.find("cls.seq_relationship.weight")->shape == std::vector<int64_t>{2, 128});
  CHECK(detect_checkpoint_format(dir / "model.safetensors") == CheckpointFormat::hf_safetensors);
  ParameterStore back(config, ops);
  const ImportReport report = load_checkpoint(back, dir / "model.safetensors");
  CHECK(report.format == CheckpointFormat::hf_safetensors);
  CHECK(back.download_master() == params.download_master());
  fs::remove_all(dir);
}

TEST_CASE("HF names: the mapping of each kind of tensor") {
  CHECK(hf_name_for("bert/encoder/layer_11/attention/output/LayerNorm/gamma").name ==
        "bert.encoder.layer.11.attention.output.LayerNorm.weight");
  CHECK(hf_name_for("bert/embeddings/LayerNorm/beta").name == "bert.embeddings.LayerNorm.bias");
  CHECK(hf_name_for("bert/embeddings/token_type_embeddings").name ==
        "bert.embeddings.token_type_embeddings.weight");
  const HfName k = hf_name_for("cls/predictions/transform/dense/kernel");
  CHECK(k.name == "cls.predictions.transform.dense.weight");
  CHECK(k.transpose);
  CHECK(hf_name_for("cls/predictions/output_bias").name == "cls.predictions.bias");
  CHECK_FALSE(hf_name_for("cls/seq_relationship/output_weights").transpose);
}

TEST_CASE(
    "an import with unknown, missing and mis-shaped tensors lists them all and changes nothing") {
  CpuOps ops;
  BertConfig config = BertConfig::preset("tiny");
  config.vocab_size = 100;
  ParameterStore params(config, ops);
  params.init_truncated_normal(1);
  const auto flat = params.download_master();
  std::vector<std::vector<float>> storage;
  std::vector<SafetensorsTensorF32> tensors;
  storage.reserve(params.infos().size() + 1);
  for (const ParameterInfo& info : params.infos()) {
    if (info.name == "bert/pooler/dense/bias") continue;  // missing
    std::vector<int64_t> shape = info.shape;
    if (info.name == "bert/encoder/layer_1/output/dense/kernel")
      std::swap(shape[0], shape[1]);  // mis-shaped
    storage.emplace_back(flat.begin() + info.offset, flat.begin() + info.offset + info.numel);
    tensors.push_back({info.name, shape, storage.back()});
  }
  storage.push_back({1.0f, 2.0f});
  tensors.push_back({"bert/encoder/layer_9/output/dense/bias", {2}, storage.back()});  // unknown
  const fs::path dir = scratch_dir("problems");
  write_safetensors(dir / "bad.safetensors", tensors);
  ParameterStore target(config, ops);
  target.init_truncated_normal(2);
  const auto before = target.download_master();
  std::string checked;
  try {
    check_checkpoint(dir / "bad.safetensors", config);
  } catch (const std::runtime_error& e) {
    checked = e.what();
  }
  try {
    load_checkpoint(target, dir / "bad.safetensors");
    FAIL("the import should have failed");
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    CHECK(checked == msg);  // the check without loading finds the same problems
    CHECK_THAT(msg, Catch::Contains("3 problem(s)"));
    CHECK_THAT(msg, Catch::Contains("unknown tensor \"bert/encoder/layer_9/output/dense/bias\""));
    CHECK_THAT(msg, Catch::Contains("missing tensor \"bert/pooler/dense/bias\""));
    CHECK_THAT(msg,
               Catch::Contains("bert/encoder/layer_1/output/dense/kernel\" has shape [128, 512]"));
    CHECK_THAT(msg, Catch::Contains("bad.safetensors"));
  }
  CHECK(target.download_master() == before);
  fs::remove_all(dir);
}

TEST_CASE("malformed safetensors headers are rejected with the file and the tensor named") {
  const fs::path dir = scratch_dir("malformed");
  auto write_raw = [&](const std::string& name, const std::string& header, size_t data_bytes) {
    std::ofstream out(dir / name, std::ios::binary);
    const uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << std::string(data_bytes, '\0');
    return dir / name;
  };
  CHECK_THROWS_WITH(
      SafetensorsReader(
          write_raw("a", R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}})", 12)),
      Catch::Contains("\"t\"") && Catch::Contains("need 8 bytes"));
  CHECK_THROWS_WITH(
      SafetensorsReader(
          write_raw("b", R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8)),
      Catch::Contains("outside"));
  CHECK_THROWS_WITH(SafetensorsReader(write_raw(
                        "c", R"({"t": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 1]}})", 1)),
                    Catch::Contains("unknown dtype"));
  CHECK_THROWS_WITH(SafetensorsReader(write_raw(
                        "d", R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                        12)),
                    Catch::Contains("overlap"));
  // A zero dimension is a valid tensor of no elements (found by fuzz_bert_safetensors: its read
  // passed null to memcpy, undefined behaviour that UBSan reports in the sanitizer run).
  for (const char* dtype : {"F32", "F16", "BF16", "F64"}) {
    INFO(dtype);
    const SafetensorsReader empty(write_raw(std::string("empty_") + dtype,
                                            std::string(R"({"t": {"dtype": ")") + dtype +
                                                R"(", "shape": [0, 2], "data_offsets": [0, 0]}})",
                                            0));
    REQUIRE(empty.find("t") != nullptr);
    CHECK(empty.read_f32(*empty.find("t")).empty());
  }
  CHECK_THROWS_WITH(SafetensorsReader(write_raw("e", "{not json", 0)),
                    Catch::Contains("not valid JSON"));
  {
    std::ofstream out(dir / "f", std::ios::binary);
    const uint64_t n = 1ull << 40;
    out.write(reinterpret_cast<const char*>(&n), 8);
  }
  CHECK_THROWS_WITH(SafetensorsReader(dir / "f"), Catch::Contains("header length"));
  CHECK_THROWS_WITH(SafetensorsReader(dir / "missing.safetensors"),
                    Catch::Contains("missing.safetensors"));
  fs::remove_all(dir);
}
