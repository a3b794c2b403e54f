// bench/bert: one training step (forward + backward + AdamW) of a small BERT on the CPU backend,
// timed against PyTorch (transformers BertForPreTraining, same shapes, same thread count) in the
// same run. Prints real tokens/s for both and the ratio.
//
//   bert_bench [--python PATH] [--threads N] [--steps N] [--layers L --hidden H ...]
// Without --python (or MLBERT_PYTHON) only mlbert is timed and no ratio is printed.
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bert/cpu/cpu_ops.h"
#include "bert/model.h"

namespace {

using namespace mlbert::bert;

struct Case {
  std::string name;
  std::vector<int> lengths;
  std::vector<int> masked;
};

Batch make_batch(const Case& c, const BertConfig& config) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> token(1, static_cast<int32_t>(config.vocab_size) - 1);
  Batch b;
  for (size_t s = 0; s < c.lengths.size(); ++s) {
    std::vector<int32_t> ids(c.lengths[s]), seg(c.lengths[s], 0), pos, lab;
    for (auto& id : ids) id = token(rng);
    for (int i = 1; i <= c.masked[s]; ++i) {
      pos.push_back(i);
      lab.push_back(ids[i]);
    }
    b.append_sequence(ids, seg, pos, lab, static_cast<int32_t>(s % 2));
  }
  return b;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double time_mlbert(const BertConfig& config, const Case& c, int warmup, int steps) {
  CpuOps ops;
  ParameterStore params(config, ops);
  params.init_truncated_normal(0);
  const Batch batch = make_batch(c, config);
  Model model(params, ModelLimits{batch.num_tokens(), batch.num_sequences(), batch.num_masked(),
                                  batch.max_seqlen});
  Buffer m(ops, DType::f32, params.flat_size()), v(ops, DType::f32, params.flat_size());
  std::vector<double> times;
  for (int step = 1; step <= warmup + steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    model.forward_backward(batch, DropoutKey{1, static_cast<uint32_t>(step)});
    AdamParams p;
    p.master = params.master();
    p.grad = params.grad();
    p.exp_avg = m;
    p.exp_avg_sq = v;
    p.segments = params.segments();
    p.lr = 1e-4f;
    p.weight_decay = 0.01f;
    p.step = step;
    ops.adam_update(p);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (step > warmup) times.push_back(s);
  }
  return median(times);
}

// Runs bench/bert/torch_step.py; returns its median step time (or a negative value on failure).
double time_torch(const std::string& python, const std::string& script, const BertConfig& config,
                  const Case& c, int threads, int warmup, int steps, std::string* info) {
  nlohmann::json job{{"config", config.to_json()}, {"threads", threads}, {"lengths", c.lengths},
                     {"masked", c.masked},         {"steps", steps},     {"warmup", warmup}};
  const std::string cmd = python + " " + script + " '" + job.dump() + "' 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return -1;
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
  try {
    const auto j = nlohmann::json::parse(out.substr(out.rfind('{')));
    *info = "torch " + j["torch"].get<std::string>() + ", attention " +
            j["attention"].get<std::string>();
    return j["median_step_s"].get<double>();
  } catch (...) {
    return -1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string python = std::getenv("MLBERT_PYTHON") ? std::getenv("MLBERT_PYTHON") : "";
  std::string script = std::string(MLBERT_SOURCE_DIR) + "/bench/bert/torch_step.py";
  int threads = 2, steps = 8, warmup = 2;
  BertConfig config = BertConfig::preset("tiny");
  config.num_hidden_layers = 4;
  config.hidden_size = 256;
  config.num_attention_heads = 4;
  config.intermediate_size = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--python")
      python = value;
    else if (flag == "--threads")
      threads = std::stoi(value);
    else if (flag == "--steps")
      steps = std::stoi(value);
    else if (flag == "--layers")
      config.num_hidden_layers = std::stoi(value);
    else if (flag == "--hidden")
      config.hidden_size = std::stoi(value);
    else if (flag == "--heads")
      config.num_attention_heads = std::stoi(value);
    else if (flag == "--ffn")
      config.intermediate_size = std::stoi(value);
    else if (flag == "--vocab")
      config.vocab_size = std::stoi(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  omp_set_num_threads(threads);
  const std::vector<Case> cases{
      {"8 x 128 (no padding)", std::vector<int>(8, 128), std::vector<int>(8, 20)},
      {"8 mixed 31..128", {128, 31, 97, 64, 120, 45, 80, 110}, {20, 5, 15, 10, 18, 7, 12, 17}},
  };
  std::printf(
      "mlbert bench/bert: training step (fwd + bwd + AdamW), %lld layers, H %lld, %lld heads, "
      "FFN %lld, vocab %lld, dropout 0.1, %d threads\n",
      static_cast<long long>(config.num_hidden_layers), static_cast<long long>(config.hidden_size),
      static_cast<long long>(config.num_attention_heads),
      static_cast<long long>(config.intermediate_size), static_cast<long long>(config.vocab_size),
      threads);
  std::printf("%-22s %14s %14s %8s\n", "batch", "mlbert tok/s", "torch tok/s", "ratio");
  for (const Case& c : cases) {
    int tokens = 0;
    for (int n : c.lengths) tokens += n;
    // Interleave the two sides twice and keep each side's better median (a shared machine).
    double ours = 1e30, theirs = 1e30;
    std::string info;
    for (int round = 0; round < 2; ++round) {
      ours = std::min(ours, time_mlbert(config, c, warmup, steps));
      if (!python.empty()) {
        const double t = time_torch(python, script, config, c, threads, warmup, steps, &info);
        if (t > 0) theirs = std::min(theirs, t);
      }
    }
    if (theirs < 1e30) {
      std::printf("%-22s %14.0f %14.0f %7.2fx\n", c.name.c_str(), tokens / ours, tokens / theirs,
                  theirs / ours);
    } else {
      std::printf("%-22s %14.0f %14s %8s\n", c.name.c_str(), tokens / ours, "-", "-");
    }
  }
  if (!python.empty())
    std::printf("baseline: %s (padded to the longest sequence)\n",
                "transformers BertForPreTraining, torch.optim.AdamW");
  return 0;
}
