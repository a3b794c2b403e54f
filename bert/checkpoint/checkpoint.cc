// Checkpoint import/export: format detection, TF <-> HF name mapping, validation, layout changes.
#include "bert/checkpoint/checkpoint.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "bert/checkpoint/safetensors.h"
#include "bert/checkpoint/tf_bundle.h"
#include "common/input_file.h"

namespace mlbert::bert {

namespace {

constexpr const char* kExtraPrefix = "extra/";
constexpr const char* kConfigMetadataKey = "bert_config";

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_head(const std::string& tf_name) {
  return tf_name.rfind("cls/", 0) == 0 || tf_name.rfind("bert/pooler/", 0) == 0;
}

// Tensors whose first dimension is the vocabulary: a checkpoint may hold vocab_size rows where the
// model allocates padded_vocab_size.
bool is_vocab_tensor(const std::string& tf_name) {
  return tf_name == "bert/embeddings/word_embeddings" || tf_name == "cls/predictions/output_bias";
}

bool has_suffix(const std::string& s, std::string_view suffix) {
  return s.ends_with(suffix);
}

// One tensor of the source checkpoint, readable as floats.
struct SourceTensor {
  std::string key;
  std::vector<int64_t> shape;
  std::function<std::vector<float>()> read;
};

// The model an import is checked against: a ParameterStore's layout, or bert_parameter_layout()
// of a config when nothing is allocated (the preflight of `mlbert train`).
class ModelLayout {
 public:
  ModelLayout(const BertConfig& config, const std::vector<ParameterInfo>& infos)
      : config_(config), infos_(infos) {
    for (const ParameterInfo& info : infos_) names_.insert(info.name);
  }
  const BertConfig& config() const { return config_; }
  const std::vector<ParameterInfo>& infos() const { return infos_; }
  bool has(const std::string& name) const { return names_.count(name) > 0; }

 private:
  const BertConfig& config_;
  const std::vector<ParameterInfo>& infos_;
  std::set<std::string> names_;
};

// A checkpoint's tensors by the TF parameter name they fill (with whether the source layout is
// transposed), the entries that fill none, and what was skipped on purpose.
struct Collected {
  std::map<std::string, std::pair<SourceTensor, bool>> by_tf_name;
  std::vector<std::string> unknown;
  ImportReport report;
};

// One parameter's import: which source tensor, transposed and/or vocab-padded.
struct Planned {
  size_t index;
  const SourceTensor* source;
  bool transpose;
  bool pad_rows;
};

// Matches every parameter of `model` with a source tensor; throws listing ALL unknown, missing
// and mis-shaped tensors at once. Reads no tensor data.
std::vector<Planned> plan_import(const ModelLayout& model, const std::string& source_name,
                                 CheckpointFormat format, Collected& source,
                                 const ImportOptions& options) {
  const BertConfig& c = model.config();
  std::vector<std::string> problems;
  for (const std::string& key : source.unknown)
    problems.push_back("unknown tensor \"" + key + "\"");
  std::vector<Planned> plan;
  for (size_t i = 0; i < model.infos().size(); ++i) {
    const ParameterInfo& info = model.infos()[i];
    auto it = source.by_tf_name.find(info.name);
    if (it == source.by_tf_name.end()) {
      if (options.allow_missing_heads && is_head(info.name)) {
        source.report.missing_heads.push_back(info.name);
      } else {
        problems.push_back("missing tensor \"" + info.name + "\" " + shape_string(info.shape));
      }
      continue;
    }
    const SourceTensor& src = it->second.first;
    const bool transpose = it->second.second;
    std::vector<int64_t> expected = info.shape;
    if (transpose) std::reverse(expected.begin(), expected.end());
    bool pad_rows = false;
    if (src.shape != expected) {
      std::vector<int64_t> unpadded = expected;
      if (is_vocab_tensor(info.name) && !unpadded.empty()) unpadded[0] = c.vocab_size;
      if (is_vocab_tensor(info.name) && src.shape == unpadded) {
        pad_rows = true;
        source.report.padded.push_back(info.name);
      } else {
        problems.push_back("tensor \"" + src.key + "\" has shape " + shape_string(src.shape) +
                           ", the model's \"" + info.name + "\" needs " + shape_string(expected) +
                           (is_vocab_tensor(info.name)
                                ? " (or vocab_size " + std::to_string(c.vocab_size) + " rows)"
                                : ""));
      }
    }
    plan.push_back(Planned{i, &src, transpose, pad_rows});
  }
  if (!problems.empty()) {
    std::ostringstream msg;
    msg << source_name << ": " << problems.size() << " problem(s) importing a "
        << checkpoint_format_name(format) << " checkpoint into the model:";
    for (const auto& p : problems) msg << "\n  " << p;
    throw std::runtime_error(msg.str());
  }
  source.report.format = format;
  return plan;
}

// Reads, re-lays out and writes each planned tensor into params' master weights.
void apply_import(ParameterStore& params, const std::vector<Planned>& plan, ImportReport& report) {
  for (const Planned& p : plan) {
    const ParameterInfo& info = params.infos()[p.index];
    std::vector<float> values = p.source->read();
    if (p.transpose) {
      const size_t rows = static_cast<size_t>(p.source->shape[0]);
      const size_t cols = static_cast<size_t>(p.source->shape[1]);
      std::vector<float> t(values.size());
      for (size_t r = 0; r < rows; ++r)
        for (size_t col = 0; col < cols; ++col) t[col * rows + r] = values[r * cols + col];
      values.swap(t);
    }
    if (p.pad_rows) values.resize(info.numel, 0.0f);
    params.upload_master(p.index, values);
    ++report.loaded;
  }
  params.sync_compute();
}

// HF name candidates for a TF parameter (with and without the "bert." prefix of BertModel files,
// and the old gamma/beta LayerNorm names).
std::vector<std::string> hf_candidates(const std::string& tf_name) {
  const HfName hf = hf_name_for(tf_name);
  std::vector<std::string> out{hf.name};
  auto add_variants = [&](const std::string& n) {
    if (has_suffix(n, "LayerNorm.weight")) out.push_back(n.substr(0, n.size() - 6) + "gamma");
    if (has_suffix(n, "LayerNorm.bias")) out.push_back(n.substr(0, n.size() - 4) + "beta");
  };
  add_variants(hf.name);
  if (hf.name.rfind("bert.", 0) == 0) {
    const std::string bare = hf.name.substr(5);
    out.push_back(bare);
    add_variants(bare);
  }
  return out;
}

Collected collect_tf_bundle(const TfBundleReader& reader, const ModelLayout& model) {
  Collected out;
  for (const TfBundleEntry& e : reader.entries()) {
    if (model.has(e.name)) {
      out.by_tf_name[e.name] = {
          SourceTensor{e.name, e.shape, [&reader, &e] { return reader.read_f32(e); }}, false};
    } else if (is_tf_optimizer_slot(e.name)) {
      out.report.skipped.push_back(e.name + " (optimizer/training state)");
    } else {
      out.unknown.push_back(e.name);
    }
  }
  return out;
}

Collected collect_safetensors(const SafetensorsReader& reader, const ModelLayout& model,
                              CheckpointFormat format) {
  Collected out;
  if (format == CheckpointFormat::mlbert_safetensors) {
    for (const SafetensorsEntry& e : reader.entries()) {
      if (e.name.rfind(kExtraPrefix, 0) == 0) {
        out.report.skipped.push_back(e.name + " (extra state, not a weight)");
      } else if (model.has(e.name)) {
        out.by_tf_name[e.name] = {
            SourceTensor{e.name, e.shape, [&reader, &e] { return reader.read_f32(e); }}, false};
      } else {
        out.unknown.push_back(e.name);
      }
    }
    return out;
  }
  std::set<std::string> used;
  for (const ParameterInfo& info : model.infos()) {
    for (const std::string& candidate : hf_candidates(info.name)) {
      const SafetensorsEntry* e = reader.find(candidate);
      if (!e) continue;
      out.by_tf_name[info.name] = {
          SourceTensor{e->name, e->shape, [&reader, e] { return reader.read_f32(*e); }},
          hf_name_for(info.name).transpose};
      used.insert(e->name);
      break;
    }
  }
  for (const SafetensorsEntry& e : reader.entries()) {
    if (used.count(e.name)) continue;
    if (e.name == "cls.predictions.decoder.weight") {
      out.report.skipped.push_back(e.name + " (tied to the word embeddings)");
    } else if (e.name == "cls.predictions.decoder.bias") {
      out.report.skipped.push_back(e.name + " (the same tensor as cls.predictions.bias)");
    } else if (has_suffix(e.name, "embeddings.position_ids")) {
      out.report.skipped.push_back(e.name + " (a buffer, not a weight)");
    } else {
      out.unknown.push_back(e.name);
    }
  }
  return out;
}

// Opens the checkpoint at `path`, plans its import into `model` (throwing every problem at once)
// and, when `into` is given, loads it there while the reader is open.
ImportReport import_checkpoint(const std::filesystem::path& path, const ModelLayout& model,
                               const ImportOptions& options, ParameterStore* into) {
  const CheckpointFormat format = detect_checkpoint_format(path);
  auto finish = [&](Collected source, const std::string& source_name) {
    const std::vector<Planned> plan = plan_import(model, source_name, format, source, options);
    if (into)
      apply_import(*into, plan, source.report);
    else
      source.report.loaded = plan.size();  // what a load would write
    return source.report;
  };
  if (format == CheckpointFormat::tf_bundle) {
    const TfBundleReader reader(path);
    return finish(collect_tf_bundle(reader, model), reader.index_path().string());
  }
  const SafetensorsReader reader(path);
  return finish(collect_safetensors(reader, model, format), path.string());
}

std::vector<float> padded_to_vocab(const ParameterStore& params, size_t i, std::vector<float> v) {
  const ParameterInfo& info = params.infos()[i];
  if (!is_vocab_tensor(info.name)) return v;
  const size_t row = info.shape.size() == 2 ? static_cast<size_t>(info.shape[1]) : 1;
  v.resize(static_cast<size_t>(params.config().vocab_size) * row);
  return v;
}

}  // namespace

const char* checkpoint_format_name(CheckpointFormat format) {
  switch (format) {
    case CheckpointFormat::mlbert_safetensors:
      return "mlbert safetensors";
    case CheckpointFormat::hf_safetensors:
      return "Hugging Face safetensors";
    case CheckpointFormat::tf_bundle:
      return "TensorFlow tensor bundle";
  }
  return "?";
}

HfName hf_name_for(const std::string& tf_name) {
  if (tf_name == "cls/predictions/output_bias") return {"cls.predictions.bias", false};
  if (tf_name == "cls/seq_relationship/output_weights")
    return {"cls.seq_relationship.weight", false};
  if (tf_name == "cls/seq_relationship/output_bias") return {"cls.seq_relationship.bias", false};
  std::string name;
  std::string part;
  std::vector<std::string> parts;
  std::istringstream in(tf_name);
  while (std::getline(in, part, '/')) parts.push_back(part);
  bool transpose = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string p = parts[i];
    if (p.rfind("layer_", 0) == 0) p = "layer." + p.substr(6);
    if (i + 1 == parts.size()) {
      if (p == "kernel") {
        p = "weight";
        transpose = true;
      } else if (p == "gamma") {
        p = "weight";
      } else if (p == "beta") {
        p = "bias";
      } else if (has_suffix(p, "_embeddings")) {
        p += ".weight";
      }
    }
    name += (name.empty() ? "" : ".") + p;
  }
  return {name, transpose};
}

bool is_tf_optimizer_slot(const std::string& name) {
  static const char* kSuffixes[] = {"/adam_m", "/adam_v",   "/Adam",   "/Adam_1", "/LAMB",
                                    "/LAMB_1", "/Momentum", "/lamb_m", "/lamb_v"};
  for (const char* s : kSuffixes)
    if (has_suffix(name, s)) return true;
  static const char* kNames[] = {"global_step", "beta1_power", "beta2_power",
                                 "loss_scale",  "good_steps",  "current_loss_scale"};
  for (const char* n : kNames)
    if (name == n || has_suffix(name, std::string("/") + n)) return true;
  return name.find("ExponentialMovingAverage") != std::string::npos;
}

namespace {

// The TF bundle a folder's `checkpoint` file names as the latest (model_checkpoint_path), else
// the folder's only `.index`; empty when it holds neither or several.
std::filesystem::path tf_bundle_in(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(dir / "checkpoint", ec)) {
    std::ifstream in = files::open_input(dir / "checkpoint", "TF checkpoint list");
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with("model_checkpoint_path:")) continue;
      const size_t open = line.find('"'), close = line.rfind('"');
      if (open == std::string::npos || close <= open) break;
      const fs::path named = line.substr(open + 1, close - open - 1);
      return named.is_absolute() ? named : dir / named;
    }
  }
  fs::path found;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (it->path().extension() != ".index") continue;
    if (!found.empty()) return {};
    found = it->path().parent_path() / it->path().stem();
  }
  return found;
}

}  // namespace

CheckpointLocation locate_checkpoint(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return {path, {}, false};
  if (fs::is_regular_file(path / "model.safetensors", ec)) {
    const bool config = fs::is_regular_file(path / "config.json", ec);
    return {path / "model.safetensors", config ? path / "config.json" : fs::path(), config};
  }
  if (const fs::path bundle = tf_bundle_in(path); !bundle.empty()) {
    const bool config = fs::is_regular_file(path / "bert_config.json", ec);
    return {bundle, config ? path / "bert_config.json" : fs::path(), false};
  }
  std::string why = "a folder with no model.safetensors and no single TF bundle (.index)";
  if (fs::exists(path / "pytorch_model.bin", ec))
    why =
        "holds pytorch_model.bin, a pickle mlbert does not read (write model.safetensors with "
        "save_pretrained(..., safe_serialization=True))";
  else if (fs::exists(path / "model.safetensors.index.json", ec))
    why =
        "holds a sharded safetensors checkpoint (model.safetensors.index.json), which mlbert "
        "does not read";
  throw std::invalid_argument(path.string() + ": " + why +
                              "; give a safetensors file, a TF bundle (model.ckpt-N) or a folder "
                              "holding one");
}

CheckpointFormat detect_checkpoint_format(const std::filesystem::path& path) {
  const std::string p = path.string();
  if (p.ends_with(".index") || std::filesystem::exists(p + ".index"))
    return CheckpointFormat::tf_bundle;
  SafetensorsReader reader(path);
  for (const auto& e : reader.entries()) {
    if (e.name.find('/') != std::string::npos) return CheckpointFormat::mlbert_safetensors;
  }
  return CheckpointFormat::hf_safetensors;
}

ImportReport load_checkpoint(ParameterStore& params, const std::filesystem::path& path,
                             const ImportOptions& options) {
  return import_checkpoint(path, ModelLayout(params.config(), params.infos()), options, &params);
}

ImportReport check_checkpoint(const std::filesystem::path& path, const BertConfig& config,
                              const ImportOptions& options) {
  const std::vector<ParameterInfo> layout = bert_parameter_layout(config);
  return import_checkpoint(path, ModelLayout(config, layout), options, nullptr);
}

std::optional<BertConfig> checkpoint_config(const std::filesystem::path& path) {
  SafetensorsReader reader(path);
  auto it = reader.metadata().find(kConfigMetadataKey);
  if (it == reader.metadata().end()) return std::nullopt;
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": metadata bert_config is not JSON: " + e.what());
  }
  return BertConfig::from_json(json, path.string() + " (metadata bert_config)");
}

void save_checkpoint(const ParameterStore& params, const std::filesystem::path& path,
                     const std::map<std::string, std::string>& metadata,
                     std::span<const ExtraTensor> extras) {
  const std::vector<float> flat = params.download_master();
  std::vector<SafetensorsTensorF32> tensors;
  std::vector<std::vector<float>> relaid;  // tensors stored in another layout than TF's
  relaid.reserve(params.infos().size());
  for (const ParameterInfo& info : params.infos()) {
    std::span<const float> values = std::span<const float>(flat).subspan(info.offset, info.numel);
    if (info.stored_transposed) values = relaid.emplace_back(to_tf_layout(info, values));
    tensors.push_back({info.name, info.shape, values});
  }
  for (const ExtraTensor& extra : extras) {
    tensors.push_back({kExtraPrefix + extra.name, extra.shape, extra.values});
  }
  std::map<std::string, std::string> meta = metadata;
  meta["format"] = "mlbert";
  meta[kConfigMetadataKey] = params.config().to_json().dump();
  write_safetensors(path, tensors, meta);
}

std::optional<std::vector<float>> load_extra_tensor(const std::filesystem::path& path,
                                                    const std::string& name) {
  SafetensorsReader reader(path);
  const SafetensorsEntry* e = reader.find(kExtraPrefix + name);
  if (!e) return std::nullopt;
  return reader.read_f32(*e);
}

void export_hf_safetensors(const ParameterStore& params, const std::filesystem::path& path) {
  std::vector<std::vector<float>> storage;
  std::vector<SafetensorsTensorF32> tensors;
  storage.reserve(params.infos().size());
  for (size_t i = 0; i < params.infos().size(); ++i) {
    const ParameterInfo& info = params.infos()[i];
    const HfName hf = hf_name_for(info.name);
    std::vector<float> v = padded_to_vocab(params, i, params.download_master(i));
    std::vector<int64_t> shape = info.shape;
    if (is_vocab_tensor(info.name)) shape[0] = params.config().vocab_size;
    if (hf.transpose) {
      const size_t rows = static_cast<size_t>(shape[0]), cols = static_cast<size_t>(shape[1]);
      std::vector<float> t(v.size());
      for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
      v.swap(t);
      std::swap(shape[0], shape[1]);
    }
    storage.push_back(std::move(v));
    tensors.push_back({hf.name, shape, storage.back()});
  }
  write_safetensors(path, tensors, {{"format", "pt"}});
}

BertConfig config_from_hf_json(const std::filesystem::path& config_json) {
  std::ifstream in = files::open_input(config_json, "model config");
  nlohmann::json json;
  try {
    in >> json;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(config_json.string() + ": not valid JSON: " + e.what());
  }
  if (json.is_object() && json.contains("hidden_act") && json["hidden_act"] == "gelu") {
    json["hidden_act"] = "gelu_erf";
  }
  return BertConfig::from_json(json, config_json.string());
}

std::string hf_config_json(const BertConfig& config) {
  nlohmann::json json = config.to_json();
  json.erase("vocab_pad_multiple");
  json["hidden_act"] = config.uses_erf_gelu() ? "gelu" : "gelu_new";
  json["architectures"] = {"BertForPreTraining"};
  json["model_type"] = "bert";
  json["pad_token_id"] = 0;
  return json.dump(2);
}

}  // namespace mlbert::bert
