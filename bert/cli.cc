// `mlbert checkpoint inspect|import|export`: look inside checkpoints of every supported format and
// convert between them through the model's parameter store (so every conversion is validated
// against the architecture).
#include "bert/cli.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "bert/checkpoint/checkpoint.h"
#include "bert/checkpoint/safetensors.h"
#include "bert/checkpoint/tf_bundle.h"
#include "bert/cpu/cpu_ops.h"
#include "bert/parameters.h"
#include "common/atomic_file.h"

namespace mlbert::bert {

namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void inspect(const std::string& path, bool as_json) {
  const CheckpointFormat format = detect_checkpoint_format(path);
  nlohmann::ordered_json out;
  out["path"] = path;
  out["format"] = checkpoint_format_name(format);
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  size_t weights = 0, slots = 0, elements = 0;
  if (format == CheckpointFormat::tf_bundle) {
    TfBundleReader reader(path);
    out["num_shards"] = reader.num_shards();
    for (const auto& e : reader.entries()) {
      const bool slot = is_tf_optimizer_slot(e.name);
      (slot ? slots : weights) += 1;
      if (!slot) elements += e.numel();
      tensors.push_back({{"name", e.name},
                         {"dtype", tf_dtype_name(e.dtype)},
                         {"shape", e.shape},
                         {"optimizer_slot", slot}});
    }
  } else {
    SafetensorsReader reader(path);
    for (const auto& e : reader.entries()) {
      const bool extra = e.name.rfind("extra/", 0) == 0;
      (extra ? slots : weights) += 1;
      if (!extra) elements += e.numel();
      tensors.push_back({{"name", e.name}, {"dtype", e.dtype}, {"shape", e.shape}});
    }
    out["metadata"] = reader.metadata();
  }
  out["weight_tensors"] = weights;
  out["other_tensors"] = slots;
  out["weight_elements"] = elements;
  if (as_json) {
    out["tensors"] = tensors;
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("%s: %s, %zu weight tensors (%zu elements), %zu optimizer/extra tensors\n",
              path.c_str(), checkpoint_format_name(format), weights, elements, slots);
  for (const auto& t : tensors) {
    std::printf("  %-70s %-8s %s%s\n", t["name"].get<std::string>().c_str(),
                t["dtype"].get<std::string>().c_str(),
                shape_string(t["shape"].get<std::vector<int64_t>>()).c_str(),
                t.value("optimizer_slot", false) ? "  (optimizer slot, skipped on import)" : "");
  }
}

// A checkpoint given as a folder (locate_checkpoint): its file, and the folder's config as the
// architecture when neither --config nor --hf-config is given.
std::string checkpoint_file(const std::string& source, std::string* config,
                            std::string* hf_config) {
  const CheckpointLocation where = locate_checkpoint(source);
  if (config && hf_config && config->empty() && hf_config->empty() && !where.config_json.empty())
    *(where.config_is_hf ? hf_config : config) = where.config_json.string();
  return where.file.string();
}

BertConfig resolve_config(const std::string& config, const std::string& hf_config,
                          const std::string& source) {
  if (!hf_config.empty()) return config_from_hf_json(hf_config);
  if (!config.empty()) return BertConfig::from_preset_or_file(config);
  if (detect_checkpoint_format(source) == CheckpointFormat::mlbert_safetensors) {
    if (auto c = checkpoint_config(source)) return *c;
  }
  throw std::invalid_argument(source +
                              ": give the architecture with --config (preset or "
                              "bert_config.json) or --hf-config (Hugging Face config.json)");
}

void print_report(const ImportReport& r, const std::string& source) {
  std::printf("%s: loaded %zu tensors from a %s checkpoint\n", source.c_str(), r.loaded,
              checkpoint_format_name(r.format));
  if (!r.skipped.empty()) {
    std::printf("  skipped %zu tensors that are not model weights:\n", r.skipped.size());
    const size_t shown = std::min<size_t>(r.skipped.size(), 8);
    for (size_t i = 0; i < shown; ++i) std::printf("    %s\n", r.skipped[i].c_str());
    if (shown < r.skipped.size()) std::printf("    ... and %zu more\n", r.skipped.size() - shown);
  }
  for (const auto& p : r.padded)
    std::printf("  %s: vocabulary rows zero-padded to a multiple of 8\n", p.c_str());
  if (!r.missing_heads.empty()) {
    std::printf("  %zu head tensors absent (kept at their initial values)\n",
                r.missing_heads.size());
  }
}

struct ConvertArgs {
  std::string source, out, config, hf_config, format = "mlbert";
  bool allow_missing_heads = false;
  uint64_t seed = 0;
};

void register_inspect(CLI::App* cmd, int& exit_code) {
  auto* inspect_cmd = cmd->add_subcommand("inspect", "List the tensors of a checkpoint");
  auto inspect_path = std::make_shared<std::string>();
  auto inspect_json = std::make_shared<bool>(false);
  inspect_cmd
      ->add_option("path", *inspect_path,
                   "checkpoint: model.safetensors, a TF prefix (model.ckpt-28252) / its "
                   ".index, or a folder holding one")
      ->required();
  inspect_cmd->add_flag("--json", *inspect_json, "machine-readable output");
  inspect_cmd->callback([inspect_path, inspect_json, &exit_code] {
    inspect(checkpoint_file(*inspect_path, nullptr, nullptr), *inspect_json);
    exit_code = 0;
  });
  inspect_cmd->footer("Example:\n  mlbert checkpoint inspect phase1/model.ckpt-28252");
}

void register_import(CLI::App* cmd, int& exit_code) {
  auto import_args = std::make_shared<ConvertArgs>();
  auto* import_cmd = cmd->add_subcommand(
      "import", "Convert a TF bundle or Hugging Face checkpoint into an mlbert safetensors file");
  import_cmd
      ->add_option("source", import_args->source,
                   "checkpoint to import: a file, or a Hugging Face or TF folder (its "
                   "config.json / bert_config.json is the default architecture)")
      ->required();
  import_cmd->add_option("--out", import_args->out, "mlbert .safetensors to write")->required();
  import_cmd->add_option("--config", import_args->config, "model preset or bert_config.json");
  import_cmd->add_option("--hf-config", import_args->hf_config, "Hugging Face config.json");
  import_cmd->add_flag("--allow-missing-heads", import_args->allow_missing_heads,
                       "accept an encoder-only checkpoint; heads are initialized from --seed");
  import_cmd->add_option("--seed", import_args->seed, "init seed for absent heads");
  import_cmd->callback([import_args, &exit_code] {
    ConvertArgs a = *import_args;
    a.source = checkpoint_file(a.source, &a.config, &a.hf_config);
    const BertConfig config = resolve_config(a.config, a.hf_config, a.source);
    CpuOps ops;
    ParameterStore params(config, ops);
    params.init_truncated_normal(a.seed);
    ImportOptions options;
    options.allow_missing_heads = a.allow_missing_heads;
    const ImportReport report = load_checkpoint(params, a.source, options);
    print_report(report, a.source);
    const std::filesystem::path out_dir = std::filesystem::path(a.out).parent_path();
    if (!out_dir.empty()) std::filesystem::create_directories(out_dir);
    save_checkpoint(params, a.out, {{"imported_from", a.source}});
    std::printf("wrote %s (%zu parameters)\n", a.out.c_str(), params.parameter_count());
    exit_code = 0;
  });
  import_cmd->footer(
      "Example:\n  mlbert checkpoint import phase1/model.ckpt-28252 --config "
      "phase1/bert_config.json --out phase1/model.safetensors");
}

void register_export(CLI::App* cmd, int& exit_code) {
  auto export_args = std::make_shared<ConvertArgs>();
  auto* export_cmd = cmd->add_subcommand(
      "export", "Write a checkpoint as Hugging Face BertForPreTraining (or mlbert) safetensors");
  export_cmd->add_option("source", export_args->source, "checkpoint to export (a file or a folder)")
      ->required();
  export_cmd->add_option("--out", export_args->out, "output .safetensors")->required();
  export_cmd->add_option("--format", export_args->format, "hf (default for export) or mlbert")
      ->check(CLI::IsMember({"hf", "mlbert"}));
  export_cmd->add_option("--config", export_args->config, "model preset or bert_config.json");
  export_cmd->add_option("--hf-config", export_args->hf_config, "Hugging Face config.json");
  export_args->format = "hf";
  export_cmd->callback([export_args, &exit_code] {
    ConvertArgs a = *export_args;
    a.source = checkpoint_file(a.source, &a.config, &a.hf_config);
    const BertConfig config = resolve_config(a.config, a.hf_config, a.source);
    CpuOps ops;
    ParameterStore params(config, ops);
    print_report(load_checkpoint(params, a.source), a.source);
    const std::filesystem::path out_dir = std::filesystem::path(a.out).parent_path();
    if (!out_dir.empty()) std::filesystem::create_directories(out_dir);
    if (a.format == "hf") {
      export_hf_safetensors(params, a.out);
      const std::filesystem::path config_path = out_dir / "config.json";
      files::write_file_atomically(config_path, hf_config_json(config) + "\n");
      std::printf("wrote %s and %s\n", a.out.c_str(), config_path.c_str());
    } else {
      save_checkpoint(params, a.out);
      std::printf("wrote %s\n", a.out.c_str());
    }
    exit_code = 0;
  });
  export_cmd->footer(
      "Example:\n  mlbert checkpoint export phase1/model.safetensors --out hf/model.safetensors");
}

}  // namespace

void register_cli(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("checkpoint",
                                     "inspect, import and export BERT checkpoints (TF, HF, mlbert)")
                      ->group("model");
  cmd->require_subcommand(1);
  register_inspect(cmd, exit_code);
  register_import(cmd, exit_code);
  register_export(cmd, exit_code);
  // After the subcommands: CLI11 copies a parent's footer into subcommands added later.
  cmd->footer("Example:\n  mlbert checkpoint inspect phase1/model.ckpt-28252");
}

}  // namespace mlbert::bert
