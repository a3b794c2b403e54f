// Loads PyTorch reference dumps into the CPU backend and compares losses, gradients and hidden
// states with the tolerances of the acceptance criteria.
#include "tests/bert/parity_compare.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bert/checkpoint/checkpoint.h"
#include "bert/checkpoint/safetensors.h"
#include "bert/cpu/cpu_ops.h"
#include "bert/model.h"

namespace mlbert::test {

namespace {

using namespace mlbert::bert;

Batch read_batch(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  const nlohmann::json json = nlohmann::json::parse(in);
  Batch batch;
  for (const auto& s : json.at("sequences")) {
    const auto ids = s.at("input_ids").get<std::vector<int32_t>>();
    const auto seg = s.at("segment_ids").get<std::vector<int32_t>>();
    const auto pos = s.value("masked_lm_positions", std::vector<int32_t>{});
    const auto lab = s.value("masked_lm_labels", std::vector<int32_t>{});
    batch.append_sequence(ids, seg, pos, lab, s.value("next_sentence_label", 0));
  }
  return batch;
}

ModelLimits limits_for(const Batch& b) {
  return ModelLimits{b.num_tokens(), b.num_sequences(), std::max<size_t>(b.num_masked(), 1),
                     b.max_seqlen};
}

double relative_norm_error(const std::vector<float>& ours, const std::vector<float>& ref,
                           size_t n) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    diff += (double(ours[i]) - ref[i]) * (double(ours[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

}  // namespace

int compare_torch_dump(const std::filesystem::path& dir, std::ostream& log, QkvLayout qkv) {
  constexpr double kLossTolerance = 1e-5, kGradTolerance = 1e-4, kHiddenTolerance = 1e-4;
  const BertConfig config = config_from_hf_json(dir / "config.json");
  CpuOps ops;
  ParameterStore params(config, ops, qkv);
  load_checkpoint(params, dir / "model.safetensors");
  const Batch batch = read_batch(dir / "batch.json");
  Model model(params, limits_for(batch));
  ForwardBackwardOptions options;
  options.dropout = false;
  const StepResult r = model.forward_backward(batch, DropoutKey{}, {}, options);
  const std::vector<float> hidden = model.encode(batch);
  SafetensorsReader expected(dir / "expected.safetensors");
  int failures = 0;
  auto loss = [&](const char* name, double ours) {
    const double ref = expected.read_f32(*expected.find(std::string("loss/") + name))[0];
    const double rel = std::fabs(ours - ref) / std::fabs(ref);
    const bool ok = rel <= kLossTolerance;
    failures += !ok;
    log << (ok ? "  ok   " : "  FAIL ") << "loss " << name << ": mlbert " << ours << " torch "
        << ref << " rel " << rel << "\n";
  };
  loss("total", r.total_loss);
  loss("mlm", r.mlm_loss);
  loss("nsp", r.nsp_loss);
  {
    const SafetensorsEntry* e = expected.find("hidden");
    const auto ref = expected.read_f32(*e);
    const double rel = relative_norm_error(hidden, ref, ref.size());
    const bool ok = hidden.size() == ref.size() && rel <= kHiddenTolerance;
    failures += !ok;
    log << (ok ? "  ok   " : "  FAIL ") << "final hidden states: rel norm error " << rel << "\n";
  }
  // Some gradients are exactly zero in exact arithmetic (the key biases: softmax is shift
  // invariant along keys); their relative error is meaningless, so norms below this floor, a tiny
  // fraction of the whole gradient's norm, count as zero on both sides.
  double global_norm_sq = 0;
  for (const auto& e : expected.entries()) {
    if (e.name.rfind("grad/", 0) != 0) continue;
    for (float g : expected.read_f32(e)) global_norm_sq += double(g) * g;
  }
  const double zero_floor = 1e-6 * std::sqrt(global_norm_sq);
  double worst = 0;
  std::string worst_name;
  size_t compared = 0;
  for (size_t i = 0; i < params.infos().size(); ++i) {
    const ParameterInfo& info = params.infos()[i];
    const SafetensorsEntry* e = expected.find("grad/" + info.name);
    if (!e) {
      log << "  FAIL no reference gradient for " << info.name << "\n";
      ++failures;
      continue;
    }
    const auto ref = expected.read_f32(*e);
    const auto ours = params.download_grad(i);
    double ours_sq = 0, ref_sq = 0;
    for (size_t k = 0; k < ref.size(); ++k) {
      ours_sq += double(ours[k]) * ours[k];
      ref_sq += double(ref[k]) * ref[k];
    }
    double rel = relative_norm_error(ours, ref, ref.size());
    if (std::sqrt(ref_sq) < zero_floor) rel = std::sqrt(ours_sq) < zero_floor ? 0.0 : INFINITY;
    for (size_t k = ref.size(); k < ours.size(); ++k) {
      if (ours[k] != 0.0f) rel = INFINITY;  // padded vocab rows must get no gradient
    }
    ++compared;
    if (rel > worst) {
      worst = rel;
      worst_name = info.name;
    }
    if (rel > kGradTolerance) {
      log << "  FAIL gradient " << info.name << ": rel norm error " << rel << "\n";
      ++failures;
    }
  }
  log << (failures ? "  FAIL " : "  ok   ") << compared << " gradients, worst rel norm error "
      << worst << " (" << worst_name << ")\n";
  return failures ? 1 : 0;
}

int compare_encoder(const std::filesystem::path& weights, const std::filesystem::path& config_json,
                    const std::filesystem::path& batch_json,
                    const std::filesystem::path& hidden_safetensors, std::ostream& log) {
  const BertConfig config = config_from_hf_json(config_json);
  CpuOps ops;
  ParameterStore params(config, ops);
  params.init_truncated_normal(0);
  ImportOptions options;
  options.allow_missing_heads = true;
  const ImportReport report = load_checkpoint(params, weights, options);
  const Batch batch = read_batch(batch_json);
  Model model(params, limits_for(batch));
  const std::vector<float> hidden = model.encode(batch);
  SafetensorsReader expected(hidden_safetensors);
  const auto ref = expected.read_f32(*expected.find("hidden"));
  if (ref.size() != hidden.size()) {
    log << "  FAIL hidden states: " << hidden.size() << " values, reference " << ref.size() << "\n";
    return 1;
  }
  double max_abs = 0, max_ref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(double(hidden[i]) - ref[i]));
    max_ref = std::max(max_ref, std::fabs(double(ref[i])));
  }
  const double rel = relative_norm_error(hidden, ref, ref.size());
  const bool ok = max_abs <= 1e-4 * std::max(1.0, max_ref);
  log << (ok ? "  ok   " : "  FAIL ") << "pretrained encoder (" << report.loaded << " tensors, "
      << batch.num_tokens() << " tokens): max abs error " << max_abs << " (max |ref| " << max_ref
      << "), rel norm error " << rel << "\n";
  return ok ? 0 : 1;
}

}  // namespace mlbert::test
