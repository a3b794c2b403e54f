// Data pipeline benchmark: in one run, (1) WordPiece throughput of mlbert against HF `tokenizers`
// (Rust, encode_batch) on the same text and thread count, and (2) pretraining-sample creation
// against the reference Python create_training_instances on the same text at MLPerf parameters;
// from the measured per-core rate it projects the full MLPerf build (500 parts, 156,726,829
// sequences) on a 64-core node. Baselines run in a Python helper (reference_bench.py) with the
// parity venv.
//
// Usage: data_bench --python PY [--vocab vocab.txt] [--mb 16] [--ref-mb 1] [--threads 1,2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "data_prep/prep_pipeline.h"
#include "data_prep/pretraining.h"
#include "data_prep/text_input.h"
#include "data_prep/tokenizer.h"

namespace fs = std::filesystem;
using namespace mlbert::data;

namespace {

constexpr double kMlperfSequences = 156'726'829.0;
constexpr int kNodeCores = 64;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run: " + cmd);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  if (pclose(p) != 0) throw std::runtime_error("helper failed: " + cmd + "\n" + out);
  return out;
}

double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos)
    throw std::runtime_error("no '" + key + "' in helper output: " + json);
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

// English prose for the benchmark: the copyright files of the installed Debian packages (licence
// texts, notices), one sentence per line, a blank line every 20 sentences, repeated to `bytes`.
std::vector<std::string> build_corpus(size_t bytes) {
  std::vector<std::string> sentences;
  for (const auto& e : fs::directory_iterator("/usr/share/doc")) {
    std::ifstream in(e.path() / "copyright", std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (!mlbert::is_valid_utf8(text)) text = mlbert::replace_invalid_utf8(text);
    for (char& c : text) {
      if (c == '\n' || c == '\t') c = ' ';
    }
    size_t start = 0;
    for (size_t i = 0; i + 1 < text.size(); ++i) {
      if ((text[i] == '.' || text[i] == '?' || text[i] == '!') && text[i + 1] == ' ') {
        std::string_view s = python_strip(std::string_view(text).substr(start, i + 1 - start));
        if (s.size() > 20) sentences.emplace_back(s);
        start = i + 2;
      }
    }
  }
  if (sentences.empty()) throw std::runtime_error("no text found under /usr/share/doc");
  std::vector<std::string> lines;
  size_t total = 0;
  for (size_t i = 0; total < bytes; ++i) {
    lines.push_back(sentences[i % sentences.size()]);
    total += lines.back().size() + 1;
    if (i % 20 == 19) lines.emplace_back();
  }
  return lines;
}

void write_lines(const fs::path& path, const std::vector<std::string>& lines, size_t count) {
  std::ofstream out(path, std::ios::binary);
  for (size_t i = 0; i < count && i < lines.size(); ++i) out << lines[i] << '\n';
}

// Best-of-3 seconds to tokenize every line with `threads` threads (lines split in equal blocks).
double time_tokenizer(const Tokenizer& tok, const std::vector<std::string>& lines, int threads,
                      int64_t& ids_out) {
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<int64_t> ids(static_cast<size_t>(threads), 0);
    const double t0 = now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        std::vector<int32_t> buf;
        const size_t begin = lines.size() * static_cast<size_t>(t) / static_cast<size_t>(threads);
        const size_t end = lines.size() * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
        for (size_t i = begin; i < end; ++i) {
          buf.clear();
          tok.tokenize(lines[i], buf);
          ids[static_cast<size_t>(t)] += static_cast<int64_t>(buf.size());
        }
      });
    }
    for (auto& th : pool) th.join();
    best = std::min(best, now() - t0);
    ids_out = 0;
    for (int64_t n : ids) ids_out += n;
  }
  return best;
}

std::string arg(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (name == argv[i]) return argv[i + 1];
  }
  return fallback;
}

struct Options {
  std::string python;
  double mb = 16, ref_mb = 1;
  std::vector<int> thread_counts;
  std::string vocab_path;  // empty: the helper writes bert-base-uncased's into the work folder
};

// The command line; nullopt after printing why there is no --python.
std::optional<Options> parse_options(int argc, char** argv) {
  Options o;
  const char* env_python = std::getenv("MLBERT_PYTHON");
  o.python = arg(argc, argv, "--python", env_python ? env_python : "");
  if (o.python.empty()) {
    std::fprintf(stderr, "data_bench: pass --python (a venv with tests/parity/requirements.txt)\n");
    return std::nullopt;
  }
  o.mb = std::stod(arg(argc, argv, "--mb", "16"));
  o.ref_mb = std::stod(arg(argc, argv, "--ref-mb", "1"));
  std::stringstream ss(arg(argc, argv, "--threads", "1,2"));
  for (std::string t; std::getline(ss, t, ',');) o.thread_counts.push_back(std::stoi(t));
  o.vocab_path = arg(argc, argv, "--vocab", "");
  return o;
}

// The benchmark text, written to `text` in the work folder, and its size.
struct Corpus {
  fs::path work;
  std::string vocab_path;
  std::vector<std::string> lines;
  size_t bytes = 0;
  fs::path text;
};

// Section 1: each thread count, HF tokenizers against both mlbert flavors on the whole text.
void tokenizer_table(const Options& o, const Corpus& c, const Vocab& vocab) {
  std::printf("1. WordPiece tokenization (uncased BERT), best of 3\n");
  std::printf("   %-8s %-34s %10s %12s %8s\n", "threads", "implementation", "MB/s", "ids", "ratio");
  for (int threads : o.thread_counts) {
    const auto json =
        run_capture(o.python + " " + MLBERT_DATA_BENCH_HELPER + " hf " + c.vocab_path + " " +
                    c.text.string() + " " + std::to_string(threads));
    const double hf_s = json_number(json, "seconds");
    const auto hf_ids = static_cast<int64_t>(json_number(json, "ids"));
    int64_t ids_hf = 0, ids_ref = 0;
    const double ours_hf =
        time_tokenizer(Tokenizer(vocab, TokenizerFlavor::kHuggingFace), c.lines, threads, ids_hf);
    const double ours_ref =
        time_tokenizer(Tokenizer(vocab, TokenizerFlavor::kReference), c.lines, threads, ids_ref);
    const double mbytes = static_cast<double>(c.bytes) / 1e6;
    std::printf("   %-8d %-34s %10.1f %12lld %8s\n", threads, "HF tokenizers (Rust) encode_batch",
                mbytes / hf_s, static_cast<long long>(hf_ids), "1.00x");
    std::printf("   %-8d %-34s %10.1f %12lld %7.2fx%s\n", threads, "mlbert --flavor hf",
                mbytes / ours_hf, static_cast<long long>(ids_hf), hf_s / ours_hf,
                ids_hf == hf_ids ? "" : "  (id count differs!)");
    std::printf("   %-8d %-34s %10.1f %12lld %7.2fx\n", threads, "mlbert --flavor reference",
                mbytes / ours_ref, static_cast<long long>(ids_ref), hf_s / ours_ref);
  }
}

// Best-of-3 seconds for mlbert to read, tokenize and create samples from `input` (the work the
// reference timing covers); `samples` gets how many it created.
double time_sample_creation(const fs::path& input, const Vocab& vocab, size_t& samples) {
  const Tokenizer ref_tok(vocab, TokenizerFlavor::kReference);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = now();
    std::vector<Document> docs;
    read_documents(input, ref_tok, InvalidUtf8Policy::kError, docs);
    const auto created = create_samples(docs, vocab, PretrainingOptions{});
    best = std::min(best, now() - t0);
    samples = created.size();
  }
  return best;
}

// End to end on one core, over the whole text: read, tokenize, create, write varlen HDF5.
PrepResult prep_one_core(const Corpus& c, const Vocab& vocab) {
  PrepOptions prep;
  prep.inputs = {c.text};
  prep.output = c.work / "shards";
  prep.threads = 1;
  prep.progress = 0;
  return run_prep(prep, vocab);
}

// Samples a second on one core: the reference and mlbert prep end to end.
struct SampleRates {
  double reference = 0, prep = 0;
};

// Section 2: the reference on the first --ref-mb of the text against mlbert on the same input,
// and mlbert prep end to end on the whole text.
SampleRates sample_table(const Options& o, const Corpus& c, const Vocab& vocab) {
  std::printf(
      "\n2. Sample creation at MLPerf parameters (512, 76, 0.15, dupe 10, 0.1, seed 12345)\n");
  size_t ref_lines = 0, ref_bytes = 0;
  while (ref_lines < c.lines.size() && ref_bytes < static_cast<size_t>(o.ref_mb * 1e6)) {
    ref_bytes += c.lines[ref_lines++].size() + 1;
  }
  const fs::path small = c.work / "ref_corpus.txt";
  write_lines(small, c.lines, ref_lines);
  const auto ref_json = run_capture(o.python + " " + MLBERT_DATA_BENCH_HELPER + " prep " +
                                    c.vocab_path + " " + small.string());
  const double ref_s = json_number(ref_json, "seconds");
  const double ref_samples = json_number(ref_json, "samples");
  size_t ours_samples = 0;
  const double ours_s = time_sample_creation(small, vocab, ours_samples);
  const PrepResult full = prep_one_core(c, vocab);
  const double ref_rate = ref_samples / ref_s,
               ours_rate = static_cast<double>(ours_samples) / ours_s;
  const double e2e_rate = static_cast<double>(full.samples) / full.seconds;
  std::printf("   %-52s %10s %12s %8s\n", "", "samples", "samples/s", "ratio");
  std::printf("   %-52s %10.0f %12.0f %8s\n",
              "reference create_training_instances (Python, 1 core)", ref_samples, ref_rate,
              "1.00x");
  std::printf("   %-52s %10zu %12.0f %7.1fx%s\n",
              "mlbert read+tokenize+create (1 core, same input)", ours_samples, ours_rate,
              ours_rate / ref_rate,
              static_cast<double>(ours_samples) == ref_samples ? "" : "  (sample count differs!)");
  std::printf("   %-52s %10lld %12.0f %7.1fx\n", "mlbert prep end to end incl. HDF5 write (1 core)",
              static_cast<long long>(full.samples), e2e_rate, e2e_rate / ref_rate);
  return {ref_rate, e2e_rate};
}

// Section 3: the full MLPerf build on a kNodeCores-core node at the per-core rates measured.
void projection(const SampleRates& rates) {
  std::printf(
      "\n3. Projection: full MLPerf training set (%.0f sequences, 500 parts) on a %d-core node\n",
      kMlperfSequences, kNodeCores);
  auto hours = [](double rate) { return kMlperfSequences / (rate * kNodeCores) / 3600.0; };
  std::printf("   reference Python, 64 parts at a time:    %8.2f h\n", hours(rates.reference));
  std::printf("   mlbert prep, 64 worker threads:          %8.2f h  (%.1fx faster)\n",
              hours(rates.prep), rates.prep / rates.reference);
  std::printf(
      "   (per-core rates measured above on %u hardware threads; assumes linear scaling over\n"
      "    independent parts, which is how both tools parallelise)\n",
      std::thread::hardware_concurrency());
}

}  // namespace

int main(int argc, char** argv) try {
  const std::optional<Options> o = parse_options(argc, argv);
  if (!o) return 2;
  Corpus c;
  c.work = fs::temp_directory_path() / ("mlbert-data-bench-" + std::to_string(getpid()));
  fs::create_directories(c.work);
  c.vocab_path = o->vocab_path;
  if (c.vocab_path.empty()) {
    c.vocab_path =
        run_capture(o->python + " " + MLBERT_DATA_BENCH_HELPER + " vocab " + c.work.string());
    c.vocab_path.erase(c.vocab_path.find_last_not_of("\n") + 1);
  }
  const Vocab vocab = Vocab::load(c.vocab_path);
  c.lines = build_corpus(static_cast<size_t>(o->mb * 1e6));
  for (const auto& l : c.lines) c.bytes += l.size() + 1;
  c.text = c.work / "corpus.txt";
  write_lines(c.text, c.lines, c.lines.size());
  std::printf(
      "data_bench: %zu lines, %.1f MB of English prose (/usr/share/doc/*/copyright), "
      "vocab %s (%d tokens), %u hardware threads\n\n",
      c.lines.size(), static_cast<double>(c.bytes) / 1e6, c.vocab_path.c_str(), vocab.size(),
      std::thread::hardware_concurrency());
  tokenizer_table(*o, c, vocab);
  projection(sample_table(*o, c, vocab));
  fs::remove_all(c.work);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "data_bench: %s\n", e.what());
  return 2;
}
