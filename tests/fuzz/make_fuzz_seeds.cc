// make_fuzz_seeds <out_dir>: writes the seeds of the fuzz targets that read files, one folder per
// target, from the project's own writers (shards of the three layouts from demo-corpus samples,
// their length index, the demo vocab.txt, example result logs) and from real files (systems/*.json,
// the test bert_config.json, and ../shared's real system descriptions and result logs when
// present). Seeds are made at build time, never committed: the real files stay where they are.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "data_prep/demo_corpus.h"
#include "data_prep/hdf5_io.h"
#include "data_prep/length_index.h"
#include "data_prep/pretraining.h"
#include "data_prep/tokenizer.h"
#include "data_prep/vocab.h"
#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/example_log.h"
#include "tests/data_prep/shard_spec.h"

namespace fs = std::filesystem;

namespace {

const fs::path kSource = MLBERT_SOURCE_DIR;
const fs::path kShared = MLBERT_SHARED_DIR;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot read");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error(path.string() + ": cannot write");
}

void copy_json_files(const fs::path& from, const fs::path& to) {
  if (!fs::is_directory(from)) return;
  for (const auto& entry : fs::directory_iterator(from))
    if (entry.path().extension() == ".json")
      write_text(to / entry.path().filename(), read_text(entry.path()));
}

// Shards of every layout holding real pretraining samples of the demo corpus.
void shard_and_vocab_seeds(const fs::path& out) {
  using namespace mlbert::data;
  DemoCorpusOptions corpus_options;
  corpus_options.train_documents = 12;
  corpus_options.eval_documents = 2;
  corpus_options.parts = 1;
  const DemoCorpus corpus = generate_demo_corpus(corpus_options);
  const fs::path text_dir = out / "corpus-tmp";
  const DemoCorpusFiles files = write_demo_corpus(corpus, text_dir);
  fs::create_directories(out / "fuzz_data_vocab");
  write_text(out / "fuzz_data_vocab" / "demo_vocab.txt", read_text(files.vocab));

  const Vocab vocab = Vocab::load(files.vocab);
  const Tokenizer tokenizer(vocab, TokenizerFlavor::kReference);
  std::vector<Document> documents(1);
  read_documents(files.parts.at(0), tokenizer, InvalidUtf8Policy::kError, documents);
  PretrainingOptions options;
  options.max_seq_length = 64;
  options.max_predictions_per_seq = 10;
  options.dupe_factor = 1;
  std::vector<Sample> samples = create_samples(documents, vocab, options);
  fs::remove_all(text_dir);
  if (samples.size() < 6) throw std::runtime_error("demo corpus gave too few samples");
  samples.resize(6);

  const fs::path dir = out / "fuzz_data_shard";
  fs::create_directories(dir);
  ShardFormat format;
  format.max_seq_length = options.max_seq_length;
  format.max_predictions_per_seq = options.max_predictions_per_seq;
  write_shard(dir / "fixed.hdf5", Layout::kFixed, std::span(samples).first(3), format);
  write_shard(dir / "varlen.hdf5", Layout::kVarlen, samples, format);
  ShardWriter packed(dir / "packed.hdf5", Layout::kPacked, format);
  PackedRow row;
  for (const Sample& s : samples) {
    if (row.samples.size() == 3 || row.length() + s.length() > format.max_seq_length) {
      packed.add(row);
      row.samples.clear();
    }
    row.samples.push_back(s);
  }
  packed.add(row);
  packed.commit();

  // The same three shards described for fuzz_data_shard_built (tests/data_prep/shard_spec.h).
  fs::create_directories(out / "fuzz_data_shard_built");
  ReadOptions read_options;
  read_options.vocab_size = 30522;
  read_options.format = format;
  for (const char* name : {"fixed", "varlen", "packed"}) {
    const auto spec = mlbert::fuzz::encode_spec(
        mlbert::fuzz::describe_shard(dir / (std::string(name) + ".hdf5"), read_options));
    std::ofstream(out / "fuzz_data_shard_built" / (std::string(name) + ".spec"), std::ios::binary)
        .write(reinterpret_cast<const char*>(spec.data()),
               static_cast<std::streamsize>(spec.size()));
  }

  // The length index of those three shards, as `data index` writes it.
  fs::create_directories(out / "fuzz_data_length_index");
  write_length_index(build_length_index(dir), out / "fuzz_data_length_index" / "lengths.index");
}

// A fuzz_mllog_package input: flag bytes, then "@@ <path>\n<bytes>" entries.
class TreeSeed {
 public:
  TreeSeed(const std::string& ruleset, unsigned char flags) {
    const auto& all = mlbert::mllog::supported_rulesets();
    const auto index = std::find(all.begin(), all.end(), ruleset) - all.begin();
    text_ += static_cast<char>(static_cast<unsigned char>(index) | flags);
    text_ += '\0';
  }
  void file(const std::string& path, const std::string& content) {
    text_ += "@@ " + path + "\n" + content;
    if (!content.empty() && content.back() != '\n') text_ += '\n';
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// The example log with its seed changed (the closed division needs one seed per run).
std::string example_log_with_seed(const std::string& ruleset, int seed) {
  mlbert::mllog::ExampleLogOptions options;
  options.ruleset = ruleset;
  options.evals = 2;
  options.weights_initialization = ruleset <= std::string("2.1.0");  // needed up to 2.1.0 only
  std::string log = mlbert::mllog::example_bert_log(options);
  const auto key = log.find("\"key\": \"seed\", \"value\": 12345");
  if (key == std::string::npos) throw std::runtime_error("example log has no seed 12345");
  const auto value = log.find("12345", key);
  return log.replace(value, 5, std::to_string(seed));
}

void package_seeds(const fs::path& out) {
  const fs::path dir = out / "fuzz_mllog_package";
  fs::create_directories(dir);
  // A complete closed package: a real system description when ../shared has one.
  std::string description = read_text(kSource / "systems" / "dgxa100_1x8.json");
  std::string system = "dgxa100_1x8";
  const fs::path real_system = kShared / "fixtures/mlperf_logs/v4.0/NVIDIA/h200_ngc23.09_pytorch";
  if (fs::exists(real_system / "system.json")) {
    description = read_text(real_system / "system.json");
    system = "h200_ngc23.09_pytorch";
  }
  TreeSeed closed("4.0.0", 0);
  closed.file("systems/" + system + ".json", description);
  closed.file("benchmarks/bert/implementations/pytorch/run_pretraining.py", "print('bert')\n");
  for (int i = 0; i < 10; ++i)
    closed.file("results/" + system + "/bert/result_" + std::to_string(i) + ".txt",
                example_log_with_seed("4.0.0", 1000 + i));
  write_text(dir / "closed_generated", closed.text());

  // Real result logs of a published open submission (three runs, so an input stays small).
  const fs::path real_open = kShared / "fixtures/mlperf_logs/v1.1/Graphcore/ipu-pod16-POPART-open";
  if (fs::exists(real_open / "system.json")) {
    TreeSeed open("1.1.0", 0x20);
    open.file("systems/ipu-pod16-POPART-open.json", read_text(real_open / "system.json"));
    open.file("benchmarks/bert/implementations/popart/bert.cc", "int main() {}\n");
    for (int i = 0; i < 3; ++i) {
      const std::string name = "result_" + std::to_string(i) + ".txt";
      open.file("results/ipu-pod16-POPART-open/bert/" + name, read_text(real_open / name));
    }
    open.file("results/ipu-pod16-POPART-open/bert/package_checker_params", "rcp-bypass");
    write_text(dir / "open_real_graphcore", open.text());
  } else {
    std::cerr << "make_fuzz_seeds: " << real_open << " absent; no real-log package seed\n";
  }
}

// A result log cut to what `mlbert simulate` reads (the records it times and sizes by, the
// launch line and the first 16 loss-scale overflow announcements), at most 32 KB: the logs of
// 1,024 ranks run to megabytes.
std::string timing_lines(const fs::path& log) {
  std::istringstream in(read_text(log));
  std::string kept, line;
  int overflows = 0;
  while (std::getline(in, line) && kept.size() < (32u << 10)) {
    bool keep = line.find(":::MLLOG") == std::string::npos && line.find(" --") != std::string::npos;
    if (line.find("loss scale to ") != std::string::npos && overflows < 16) {
      keep = true;
      ++overflows;
    }
    for (const char* key :
         {"run_start", "run_stop", "train_samples", "global_batch_size",
          "gradient_accumulation_steps", "opt_name", "submission_division", "eval_samples",
          "eval_accuracy", "d_batch_size", "eval_start", "eval_stop"})
      keep = keep || line.find(std::string("\"key\": \"") + key + "\"") != std::string::npos;
    if (keep) kept += line + "\n";
  }
  return kept;
}

void config_seeds(const fs::path& out) {
  fs::create_directories(out / "fuzz_bert_config");
  write_text(out / "fuzz_bert_config" / "tf_bundle_bert_config.json",
             read_text(kSource / "tests/bert/data/tf_bundle/bert_config.json"));
  const fs::path systems = out / "fuzz_harness_system";
  fs::create_directories(systems);
  copy_json_files(kSource / "systems", systems);
  copy_json_files(kSource / "tests/harness/data", systems);
  copy_json_files(kShared / "fixtures/systems", systems);
  // fuzz_simulate_inputs: byte 0 even = an accelerator profile, odd = a device measurement.
  const fs::path simulate = out / "fuzz_simulate_inputs";
  fs::create_directories(simulate);
  for (const auto& entry : fs::directory_iterator(kSource / "systems/profiles"))
    if (entry.path().extension() == ".json")
      write_text(simulate / ("profile_" + entry.path().filename().string()),
                 std::string(1, '\0') + read_text(entry.path()));
  write_text(
      simulate / "bench_synthetic.json",
      std::string(1, '\1') + read_text(kSource / "tests/simulate/data/device_bench_synthetic.json"));
  // fuzz_simulate_published: byte 0 the ruleset, then system.json, "@@ result", result_0.txt.
  const fs::path published = out / "fuzz_simulate_published";
  fs::create_directories(published);
  const auto& rulesets = mlbert::mllog::supported_rulesets();
  for (const char* logs : {"mlperf_logs", "mlperf_logs_early"}) {
    const fs::path root = kShared / "fixtures" / logs;
    if (!fs::is_directory(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const fs::path dir = entry.path();
      if (!entry.is_directory() || !fs::exists(dir / "system.json") ||
          !fs::exists(dir / "result_0.txt"))
        continue;
      const std::string version = dir.parent_path().parent_path().filename().string();  // "v1.1"
      const auto at = std::find(rulesets.begin(), rulesets.end(),
                                (version.empty() ? "" : version.substr(1)) + ".0");
      const auto index = at == rulesets.end() ? 0 : at - rulesets.begin();
      write_text(published / (version + "_" + dir.filename().string()),
                 std::string(1, static_cast<char>(index)) + read_text(dir / "system.json") +
                     "\n@@ result\n" + timing_lines(dir / "result_0.txt"));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fuzz_seeds <out_dir>\n";
    return 2;
  }
  try {
    const fs::path out = argv[1];
    fs::create_directories(out);
    shard_and_vocab_seeds(out);
    package_seeds(out);
    config_seeds(out);
  } catch (const std::exception& e) {
    std::cerr << "make_fuzz_seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
