// `mlbert train --init-checkpoint`: what the preflight accepts (init_checkpoint_for). MLPerf runs
// start from the phase-1 TF bundle (a prefix, no file under that name) or its folder; an mlbert
// file must hold the system's model (its architecture: dropout may differ); every form's tensors
// must fit the model.
#include <catch2/catch.hpp>

#include <filesystem>

#include "bert/checkpoint/checkpoint.h"
#include "bert/cpu/cpu_ops.h"
#include "bert/parameters.h"
#include "harness/config/model_spec.h"
#include "tests/common/shared_fixtures.h"

namespace fs = std::filesystem;
using mlbert::harness::init_checkpoint_for;

TEST_CASE(
    "the init checkpoint: a TF bundle prefix, a folder holding a checkpoint, an mlbert file "
    "of the system's model",
    "[trainer][checkpoint]") {
  const fs::path bundle_dir = mlbert::test::source_dir() / "tests/bert/data/tf_bundle";
  const fs::path prefix = bundle_dir / "model.ckpt-7";
  const auto config = mlbert::bert::BertConfig::from_file(bundle_dir / "bert_config.json");
  const fs::path dir = mlbert::test::binary_dir() / "test-work" / "harness" / "init_checkpoint";
  fs::remove_all(dir);
  fs::create_directories(dir / "tf");
  fs::create_directories(dir / "hf");

  // The TF bundle stores no model config: its index is checked against the model, before init.
  CHECK(init_checkpoint_for(prefix, config, "sys") == prefix);
  for (const char* file : {"model.ckpt-7.index", "model.ckpt-7.data-00000-of-00001"})
    fs::copy_file(bundle_dir / file, dir / "tf" / file);
  CHECK(init_checkpoint_for(dir / "tf", config, "sys") == dir / "tf" / "model.ckpt-7");

  mlbert::bert::CpuOps ops;
  mlbert::bert::ParameterStore params(config, ops);
  params.init_truncated_normal(7);
  mlbert::bert::save_checkpoint(params, dir / "a.safetensors");
  CHECK(init_checkpoint_for(dir / "a.safetensors", config, "sys") == dir / "a.safetensors");
  mlbert::bert::export_hf_safetensors(params, dir / "hf" / "model.safetensors");
  CHECK(init_checkpoint_for(dir / "hf", config, "sys") == dir / "hf" / "model.safetensors");

  auto other = config;
  other.intermediate_size *= 2;
  CHECK_THROWS_WITH(init_checkpoint_for(dir / "a.safetensors", other, "sys"),
                    Catch::EndsWith("a.safetensors: its model differs from system sys's: "
                                    "intermediate_size 24 in the checkpoint, 48 in the system"));
  auto gelu_erf = config;
  gelu_erf.hidden_act = "gelu_erf";  // the same shapes, another function
  CHECK_THROWS_WITH(init_checkpoint_for(dir / "a.safetensors", gelu_erf, "sys"),
                    Catch::EndsWith("hidden_act \"gelu\" in the checkpoint, \"gelu_erf\" in the "
                                    "system"));
  // Dropout and the init range are the run's settings, not the model's: a checkpoint saved with
  // others is the same model.
  auto no_dropout = config;
  no_dropout.hidden_dropout_prob = 0;
  no_dropout.attention_probs_dropout_prob = 0;
  no_dropout.initializer_range = 0.05;
  CHECK(init_checkpoint_for(dir / "a.safetensors", no_dropout, "sys") == dir / "a.safetensors");
  CHECK_THROWS_WITH(init_checkpoint_for(prefix, other, "sys"),
                    Catch::StartsWith(prefix.string() + ".index: 6 problem(s) importing") &&
                        Catch::Contains("intermediate/dense/kernel\" has shape [16, 24]"));
  CHECK_THROWS_WITH(init_checkpoint_for(dir / "hf", other, "sys"),
                    Catch::Contains("hf/model.safetensors: ") &&
                        Catch::Contains("intermediate.dense.weight\" has shape [24, 16]"));
  CHECK_THROWS_WITH(init_checkpoint_for(dir / "absent.safetensors", config, "sys"),
                    Catch::EndsWith("absent.safetensors: no such checkpoint"));
  CHECK_THROWS_WITH(init_checkpoint_for(dir, config, "sys"),
                    Catch::Contains("no model.safetensors and no single TF bundle"));
  fs::remove_all(dir);
}
