// The preflight of `mlbert train` (see preflight.h): the system, the backend, the data, the eval
// set, the checkpoint and the result file, in that order.
#include "harness/train/preflight.h"

#include <cstdio>
#include <fstream>
#include <span>

#include "common/input_file.h"
#include "harness/config/model_spec.h"
#include "harness/data/sampler.h"

#ifdef MLBERT_HAVE_CUDA
#include "bert/cuda/cuda_ops.h"
#endif

namespace mlbert::harness {
namespace {

std::int64_t count_lines(const std::filesystem::path& path) {
  std::ifstream in = files::open_input(path, "vocab file");
  std::int64_t lines = 0;
  std::string line;
  while (std::getline(in, line)) ++lines;
  return lines;
}

bert::BertConfig model_config(const TrainOptions& o, const SystemConfig& system) {
  const ModelSpec& spec = system.run.model;
  bert::BertConfig config = model_from_spec(spec, system.path);
  if (spec.vocab_from_data || !o.vocab.empty()) {
    const auto vocab = o.vocab.empty() ? o.data / "vocab.txt" : o.vocab;
    if (!std::filesystem::exists(vocab))
      throw std::runtime_error(vocab.string() +
                               ": missing (run.model.vocab_from_data takes the "
                               "vocabulary size from it; pass --vocab)");
    config.vocab_size = count_lines(vocab);
  }
  config.validate();
  return config;
}

void check_world_size(const SystemConfig& system, int world) {
  if (world == system.topology.world_size()) return;
  throw std::runtime_error(system.path.string() + ": system " + system.name + " has " +
                           std::to_string(system.topology.world_size()) + " ranks (" +
                           std::to_string(system.topology.nodes) + " nodes x " +
                           std::to_string(system.topology.ranks_per_node) +
                           ") but this job has " + std::to_string(world) +
                           "; start it with `mlbert launch --system " + system.name + "`");
}

// --backend, else the system's; one this build and this node can run.
std::string backend_for(const TrainOptions& o, const SystemConfig& system) {
  const std::string backend = o.backend.value_or(system.run.backend);
  if (backend != "cpu" && backend != "cuda")
    throw std::runtime_error("--backend: \"" + backend + "\" is not cpu or cuda");
#ifndef MLBERT_HAVE_CUDA
  if (backend == "cuda")
    throw std::runtime_error(
        "backend cuda: this mlbert was built without CUDA (no nvcc found at "
        "configure time); use --backend cpu");
#else
  if (backend == "cuda" && cuda::cuda_device_count() == 0)
    throw std::runtime_error("backend cuda: no CUDA device is visible on this node");
  if (backend == "cuda" && system.run.precision == Precision::fp32)
    throw std::runtime_error(system.path.string() +
                             ": run.precision fp32 is not a CUDA compute type (fp16 or bf16)");
#endif
  return backend;
}

void check_data_paths(const TrainOptions& o) {
  if (o.data.empty())
    throw std::runtime_error("--data: a directory of training shards is required");
  if (o.eval_data.empty()) throw std::runtime_error("--eval-data: the eval set is required");
  for (const auto& path : {o.data, o.eval_data})
    if (!std::filesystem::exists(path))
      throw std::runtime_error(path.string() + ": does not exist");
}

}  // namespace

Prepared preflight(const TrainOptions& o, int rank, int world) {
  Prepared p;
  p.system = load_system(o.system, o.systems_dir);
  const RunSpec& run = p.system.run;
  check_world_size(p.system, world);
  p.backend = backend_for(o, p.system);
  p.max_steps = o.max_steps.value_or(run.max_steps);
  if (p.max_steps < 1) throw std::runtime_error("--max-steps must be >= 1");
  check_data_paths(o);
  p.config = model_config(o, p.system);
  if (p.config.max_position_embeddings < run.max_seq_length)
    throw std::runtime_error(p.system.path.string() + ": run.max_seq_length " +
                             std::to_string(run.max_seq_length) + " exceeds the model's " +
                             std::to_string(p.config.max_position_embeddings) + " positions");
  p.read_options.vocab_size = static_cast<std::int32_t>(p.config.vocab_size);
  p.read_options.format.max_seq_length = run.max_seq_length;
  p.read_options.format.max_predictions_per_seq = run.max_predictions_per_seq;
  p.data = open_training_data(o.data, run);
  check_length_index(p.data, rank, world);  // global-deal: each rank hashes its share of shards
  // The sampler checks that every stream holds at least one micro-step.
  Sampler(p.data.streams, p.data.quotas, world, 0);
  p.eval = load_eval_share(o.eval_data, rank, world, run.eval.batch_size, run.eval.eval_samples,
                           p.read_options);
  if (!o.init_checkpoint.empty())
    p.init_checkpoint = init_checkpoint_for(o.init_checkpoint, p.config, p.system.name);
  if (!o.dump_dir.empty()) std::filesystem::create_directories(o.dump_dir);
  if (rank == 0) {
    p.log_file = ResultLogFile::claim(o.results_dir / p.system.name / "bert", o.run_index);
    if (!p.log_file->note().empty())
      std::fprintf(stderr, "mlbert train: %s\n", p.log_file->note().c_str());
  }
  return p;
}

void agree_on_preflight(Communicator& world, const std::string& error) {
  const auto blocks =
      world.allgatherv(std::as_bytes(std::span<const char>(error.data(), error.size())));
  for (std::size_t r = 0; r < blocks.size(); ++r) {
    if (blocks[r].empty()) continue;
    const std::string message(reinterpret_cast<const char*>(blocks[r].data()), blocks[r].size());
    throw PreflightFailed(world.size() > 1 ? "rank " + std::to_string(r) + ": " + message
                                           : message);
  }
}

}  // namespace mlbert::harness
