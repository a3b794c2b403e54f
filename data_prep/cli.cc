// `mlbert data <sub>`: tokenize, prep, eval-set, stratify, pack, index, demo-corpus, inspect.
// Each subcommand parses its options into the library's option structs and prints a short summary;
// errors propagate as exceptions (main prints them as one line, exit 2).
#include "data_prep/cli.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/input_file.h"
#include "common/standard_output.h"
#include "data_prep/check_cli.h"
#include "data_prep/demo_corpus.h"
#include "data_prep/eval_set.h"
#include "data_prep/hdf5_io.h"
#include "data_prep/length_index.h"
#include "data_prep/packing.h"
#include "data_prep/prep_pipeline.h"
#include "data_prep/shard_verdict.h"
#include "data_prep/stratify.h"
#include "data_prep/text_input.h"
#include "data_prep/tokenizer.h"
#include "common/cli.h"

namespace mlbert::data {
namespace {

TokenizerFlavor parse_flavor(const std::string& s) {
  if (s == "reference") return TokenizerFlavor::kReference;
  if (s == "hf") return TokenizerFlavor::kHuggingFace;
  throw std::invalid_argument("--flavor must be 'reference' or 'hf', got '" + s + "'");
}

InvalidUtf8Policy parse_utf8_policy(const std::string& s) {
  if (s == "error") return InvalidUtf8Policy::kError;
  if (s == "replace") return InvalidUtf8Policy::kReplace;
  throw std::invalid_argument("--invalid-utf8 must be 'error' or 'replace', got '" + s + "'");
}

int parse_progress(const std::string& s) {
  if (s == "auto") return -1;
  if (s == "never") return 0;
  if (s == "always") return 1;
  throw std::invalid_argument("--progress must be auto, always or never");
}

std::vector<std::filesystem::path> to_paths(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

// Writes to stdout and fails loudly when stdout cannot take it (closed pipe, full disk).
void check_stdout(const char* what) {
  std::fflush(stdout);
  if (std::ferror(stdout)) {
    throw std::runtime_error(std::string(what) + ": write to standard output failed");
  }
}

void add_tokenize(CLI::App& data, int& exit_code) {
  auto* cmd =
      data.add_subcommand("tokenize", "WordPiece ids of each input line, one line out per line in");
  auto vocab = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>();
  auto flavor = std::make_shared<std::string>("reference");
  auto utf8 = std::make_shared<std::string>("error");
  auto tokens = std::make_shared<bool>(false);
  cmd->add_option("--vocab", *vocab, "vocab.txt")->required()->check(cli::existing_file());
  cmd->add_option("--input", *input, "text file (default: standard input)")
      ->check(cli::existing_file());
  cmd->add_option("--flavor", *flavor, "reference (Google BERT, MLPerf) or hf (HF tokenizers)");
  cmd->add_option("--invalid-utf8", *utf8, "error (default) or replace with U+FFFD");
  cmd->add_flag("--tokens", *tokens, "print word pieces instead of ids");
  cmd->callback([=, &exit_code] {
    const Vocab v = Vocab::load(*vocab);
    const Tokenizer tok(v, parse_flavor(*flavor));
    const InvalidUtf8Policy policy = parse_utf8_policy(*utf8);
    std::ifstream file;
    std::istream* in = &std::cin;
    const std::string name = input->empty() ? "<stdin>" : *input;
    if (!input->empty()) {
      file = files::open_input(*input, "input file");
      in = &file;
    }
    std::string line, out;
    std::vector<int32_t> ids;
    int64_t line_no = 0;
    while (std::getline(*in, line)) {
      ++line_no;
      if (!is_valid_utf8(line)) {
        if (policy == InvalidUtf8Policy::kError) {
          throw std::runtime_error(
              name + ":" + std::to_string(line_no) + ": invalid UTF-8 at byte " +
              std::to_string(find_invalid_utf8(line)) + " (use --invalid-utf8 replace)");
        }
        std::fprintf(stderr, "mlbert: warning: %s:%lld: invalid UTF-8 replaced by U+FFFD\n",
                     name.c_str(), static_cast<long long>(line_no));
        line = replace_invalid_utf8(line);
      }
      ids.clear();
      tok.tokenize(line, ids);
      out.clear();
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i) out.push_back(' ');
        out += *tokens ? v.token(ids[i]) : std::to_string(ids[i]);
      }
      out.push_back('\n');
      if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) {
        throw std::runtime_error("tokenize: write to standard output failed");
      }
    }
    if (in->bad()) throw std::runtime_error(name + ": read error");
    check_stdout("tokenize");
    exit_code = 0;
  });
  cmd->footer(
      "Example:\n  echo 'The quick brown fox.' | mlbert data tokenize --vocab vocab.txt --tokens");
}

void add_prep(CLI::App& data, int& exit_code) {
  auto* cmd = data.add_subcommand(
      "prep", "text -> pretraining samples -> HDF5 shards (reference-identical)");
  auto o = std::make_shared<PrepOptions>();
  auto vocab = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  auto layout = std::make_shared<std::string>("varlen");
  auto flavor = std::make_shared<std::string>("reference");
  auto utf8 = std::make_shared<std::string>("error");
  auto progress = std::make_shared<std::string>("auto");
  cmd->add_option("--vocab", *vocab, "vocab.txt")->required()->check(cli::existing_file());
  cmd->add_option("--input", *inputs, "text files or directories (one sentence per line)")
      ->check(cli::existing_path())
      ->required();
  cmd->add_option("--output", *output, "output directory (output file with --joint)")->required();
  cmd->add_option("--layout", *layout,
                  "fixed or varlen (default); pack afterwards with `data pack`");
  cmd->add_option("--max-seq-length", o->pretraining.max_seq_length, "default 512");
  cmd->add_option("--max-predictions-per-seq", o->pretraining.max_predictions_per_seq,
                  "default 76");
  cmd->add_option("--masked-lm-prob", o->pretraining.masked_lm_prob, "default 0.15");
  cmd->add_option("--dupe-factor", o->pretraining.dupe_factor, "default 10");
  cmd->add_option("--short-seq-prob", o->pretraining.short_seq_prob, "default 0.1");
  cmd->add_option("--seed", o->pretraining.random_seed, "default 12345");
  cmd->add_option("--threads", o->threads, "worker threads (default 0: all cores)")
      ->check(CLI::Range(0, 4096));
  cmd->add_flag("--joint", o->joint, "all inputs form one reference run and one output file");
  cmd->add_flag("--replace", o->replace,
                "remove the output folder's shards that these inputs do not produce (an earlier "
                "run's) once this run succeeds");
  cmd->add_option("--flavor", *flavor, "tokenizer: reference (default) or hf");
  cmd->add_option("--invalid-utf8", *utf8, "error (default) or replace");
  cmd->add_option("--progress", *progress, "auto (terminal only), always, never");
  cmd->callback([=, &exit_code] {
    o->inputs = to_paths(*inputs);
    o->output = *output;
    o->layout = parse_layout(*layout);
    if (o->layout == Layout::kPacked) {
      throw std::invalid_argument(
          "prep writes fixed or varlen shards; pack them with `mlbert data pack`");
    }
    o->flavor = parse_flavor(*flavor);
    o->invalid_utf8 = parse_utf8_policy(*utf8);
    o->progress = parse_progress(*progress);
    o->on_skipped = [](const SkippedInput& s) {
      std::fprintf(stderr, "mlbert: note: skipped %s: %s\n", s.file.c_str(), s.reason.c_str());
    };
    const Vocab v = Vocab::load(*vocab);
    const PrepResult r = run_prep(*o, v);
    std::printf(
        "prep: %lld files, %lld documents -> %lld samples (%lld tokens, %.1f per sample) in %.2f "
        "s; "
        "%lld shard(s) in %s\n",
        static_cast<long long>(r.files), static_cast<long long>(r.documents),
        static_cast<long long>(r.samples), static_cast<long long>(r.tokens),
        r.samples ? static_cast<double>(r.tokens) / static_cast<double>(r.samples) : 0.0, r.seconds,
        static_cast<long long>(r.outputs.size()), output->c_str());
    for (const auto& shard : r.removed_earlier) {
      std::fprintf(stderr, "mlbert: removed %s (--replace: not produced by these inputs)\n",
                   shard.c_str());
    }
    if (const std::string unknown = unknown_token_warning(r, v); !unknown.empty()) {
      std::fprintf(stderr, "mlbert: warning: %s\n", unknown.c_str());
    }
    if (r.replaced_lines) {
      std::fprintf(stderr, "mlbert: warning: %lld line(s) had invalid UTF-8 replaced by U+FFFD\n",
                   static_cast<long long>(r.replaced_lines));
    }
    check_stdout("prep");
    exit_code = 0;
  });
  cmd->footer("Example:\n  mlbert data prep --vocab vocab.txt --input text/ --output shards/");
}

void add_format_options(CLI::App* cmd, ReadOptions& r) {
  cmd->add_option("--vocab-size", r.vocab_size,
                  "reject token ids >= this (default: no upper check)");
  cmd->add_option("--max-seq-length", r.format.max_seq_length, "default 512");
  cmd->add_option("--max-predictions-per-seq", r.format.max_predictions_per_seq, "default 76");
}

void add_eval_set(CLI::App& data, int& exit_code) {
  auto* cmd =
      data.add_subcommand("eval-set", "pick the eval samples int(i*N/count) from HDF5 shards");
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  auto layout = std::make_shared<std::string>("varlen");
  auto count = std::make_shared<int64_t>(10000);
  auto r = std::make_shared<ReadOptions>();
  cmd->add_option("--input", *inputs, "shards in order")
      ->required()
      ->check(cli::existing_path());
  cmd->add_option("--output", *output, "output HDF5 file (a file: not standard output)")
      ->required();
  cmd->add_option("--layout", *layout, "fixed or varlen (default)");
  cmd->add_option("--count", *count, "samples to keep (default 10000)");
  add_format_options(cmd, *r);
  cmd->callback([=, &exit_code] {
    // HDF5 is written by offsets, not as a stream: a pipe or terminal cannot hold it.
    if (files::names_standard_output(*output))
      throw std::runtime_error("--output " + *output +
                               ": an eval set is an HDF5 file, which cannot go to standard "
                               "output; name a file");
    const auto res = make_eval_set(to_paths(*inputs), *output, parse_layout(*layout), *count, *r);
    std::printf("eval-set: picked %lld of %lld samples -> %s\n", static_cast<long long>(res.picked),
                static_cast<long long>(res.source_samples), output->c_str());
    check_stdout("eval-set");
    exit_code = 0;
  });
  cmd->footer("Example:\n  mlbert data eval-set --input eval_shards/*.hdf5 --output eval.hdf5");
}

void add_stratify(CLI::App& data, int& exit_code) {
  auto* cmd =
      data.add_subcommand("stratify", "split samples into length bins, each sharded into N files");
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  auto layout = std::make_shared<std::string>("varlen");
  auto o = std::make_shared<StratifyOptions>();
  cmd->add_option("--input", *inputs, "shards")->required()->check(cli::existing_path());
  cmd->add_option("--output", *output, "output directory")->required();
  cmd->add_option("--shards", o->shards_per_bin, "files per bin (default 1)");
  cmd->add_option("--bounds", o->upper_bounds, "bin upper bounds (default 128 256 384 512)")
      ->delimiter(',');
  cmd->add_option("--layout", *layout, "fixed or varlen (default)");
  auto memory_gb = std::make_shared<double>(8.0);
  cmd->add_option("--memory-gb", *memory_gb, "memory budget for shards built at once (default 8)");
  add_format_options(cmd, o->read_options);
  cmd->callback([=, &exit_code] {
    o->memory_budget_bytes = static_cast<int64_t>(*memory_gb * 1e9);
    o->layout = parse_layout(*layout);
    if (o->layout == Layout::kPacked)
      throw std::invalid_argument("stratify writes fixed or varlen");
    const auto res = stratify(to_paths(*inputs), *output, *o);
    int64_t total = 0;
    for (int64_t n : res.samples_per_bin) total += n;
    for (size_t b = 0; b < res.samples_per_bin.size(); ++b) {
      const int32_t lo = b == 0 ? 1 : o->upper_bounds[b - 1] + 1;
      const auto& shards = res.samples_per_shard[b];
      std::printf(
          "stratify: bin %d-%d: %lld samples (%.1f%%), %zu shard(s) of %lld..%lld\n", lo,
          o->upper_bounds[b], static_cast<long long>(res.samples_per_bin[b]),
          total ? 100.0 * static_cast<double>(res.samples_per_bin[b]) / static_cast<double>(total)
                : 0.0,
          shards.size(), static_cast<long long>(*std::min_element(shards.begin(), shards.end())),
          static_cast<long long>(*std::max_element(shards.begin(), shards.end())));
    }
    check_stdout("stratify");
    exit_code = 0;
  });
  cmd->footer("Example:\n  mlbert data stratify --input shards/*.hdf5 --output bins/ --shards 8");
}

void add_pack(CLI::App& data, int& exit_code) {
  auto* cmd = data.add_subcommand("pack", "pack up to 3 sequences per row (packed HDF5 layout)");
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  auto o = std::make_shared<PackingOptions>();
  cmd->add_option("--input", *inputs, "fixed or varlen shards")
      ->required()
      ->check(cli::existing_path());
  cmd->add_option("--output", *output, "output directory")->required();
  cmd->add_option("--shards", o->shards, "packed files to write (default 1)");
  cmd->add_option("--max-seq-length", o->max_seq_length, "row length (default 512)");
  cmd->add_option("--max-sequences-per-row", o->max_sequences_per_row, "default 3");
  cmd->add_option("--seed", o->seed, "row shuffle seed (default 12345)");
  auto memory_gb = std::make_shared<double>(8.0);
  cmd->add_option("--memory-gb", *memory_gb, "memory budget for shards built at once (default 8)");
  cmd->add_option("--vocab-size", o->read_options.vocab_size, "reject token ids >= this");
  cmd->add_option("--max-predictions-per-seq", o->read_options.format.max_predictions_per_seq,
                  "default 76");
  cmd->callback([=, &exit_code] {
    o->read_options.format.max_seq_length = o->max_seq_length;
    o->memory_budget_bytes = static_cast<int64_t>(*memory_gb * 1e9);
    const auto report = pack(to_paths(*inputs), *output, *o);
    std::fputs(report.to_text().c_str(), stdout);
    check_stdout("pack");
    exit_code = 0;
  });
  cmd->footer("Example:\n  mlbert data pack --input shards/*.hdf5 --output packed/ --shards 4");
}

void add_index(CLI::App& data, int& exit_code) {
  auto* cmd = data.add_subcommand(
      "index", "write the length index of training shards (what load_balancing global-deal reads)");
  auto paths = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  cmd->add_option("shards", *paths, "shard files, or directories of shards (searched recursively)")
      ->required();
  cmd->add_option("--output", *output,
                  "index file; default, for one argument: <dir>/lengths.index, or "
                  "<shard>.lengths.index for one file (where the trainer looks)");
  cmd->callback([=, &exit_code] {
    if (output->empty() && paths->size() != 1)
      throw std::invalid_argument("index: with several shard arguments, --output is required");
    const std::filesystem::path file =
        output->empty() ? length_index_path(paths->front()) : std::filesystem::path(*output);
    std::vector<std::filesystem::path> shards;
    for (const auto& p : *paths)
      for (auto& shard : find_shards(p)) shards.push_back(std::move(shard));
    if (shards.empty())
      throw std::runtime_error(paths->front() + ": no HDF5 shards (*.hdf5, *.h5) to index");
    const LengthIndex index = build_length_index(file.parent_path(), shards);
    write_length_index(index, file);
    int64_t tokens = 0;
    for (uint16_t length : index.lengths) tokens += length;
    std::printf("index: %zu shard(s), %zu rows, %lld tokens -> %s\n", index.shards.size(),
                index.lengths.size(), static_cast<long long>(tokens), file.c_str());
    check_stdout("index");
    exit_code = 0;
  });
  cmd->footer("Example:\n  mlbert data index shards/");
}

void add_demo_corpus(CLI::App& data, int& exit_code) {
  auto* cmd =
      data.add_subcommand("demo-corpus", "write the generated demo corpus and its vocab.txt");
  auto output = std::make_shared<std::string>();
  auto o = std::make_shared<DemoCorpusOptions>();
  cmd->add_option("--output", *output, "output directory")->required();
  cmd->add_option("--documents", o->train_documents, "training documents (default 4000)");
  cmd->add_option("--eval-documents", o->eval_documents, "eval documents (default 400)");
  cmd->add_option("--parts", o->parts, "training text files (default 4)");
  cmd->add_option("--seed", o->seed, "default 2024");
  cmd->callback([=, &exit_code] {
    const auto corpus = generate_demo_corpus(*o);
    const auto files = write_demo_corpus(corpus, *output);
    std::printf("demo-corpus: %zu-token vocab, %zu training part(s), eval.txt in %s\n",
                corpus.vocab.size(), files.parts.size(), output->c_str());
    check_stdout("demo-corpus");
    exit_code = 0;
  });
  cmd->footer("Example:\n  mlbert data demo-corpus --output demo/");
}

void add_inspect(CLI::App& data, int& exit_code) {
  auto* cmd =
      data.add_subcommand("inspect",
                          "validate an HDF5 shard, summarise it (or dump samples), and end with "
                          "a verdict on it and its length index");
  auto file = std::make_shared<std::string>();
  auto r = std::make_shared<ReadOptions>();
  auto dump = std::make_shared<bool>(false);
  cmd->add_option("file", *file, "HDF5 shard")->required()->check(cli::existing_file());
  cmd->add_flag("--dump", *dump, "print every sample as one JSON line");
  add_format_options(cmd, *r);
  cmd->callback([=, &exit_code] {
    const ShardInfo info = inspect_shard(*file);
    const auto samples = read_shard(*file, *r);
    if (*dump) {
      std::string line;
      for (const Sample& s : samples) {
        line = "{\"input_ids\": [";
        for (size_t i = 0; i < s.input_ids.size(); ++i)
          line += (i ? ", " : "") + std::to_string(s.input_ids[i]);
        line += "], \"segment_ids\": [";
        for (size_t i = 0; i < s.segment_ids.size(); ++i)
          line += (i ? ", " : "") + std::to_string(s.segment_ids[i]);
        line += "], \"masked_lm_positions\": [";
        for (size_t i = 0; i < s.masked_lm_positions.size(); ++i)
          line += (i ? ", " : "") + std::to_string(s.masked_lm_positions[i]);
        line += "], \"masked_lm_ids\": [";
        for (size_t i = 0; i < s.masked_lm_ids.size(); ++i)
          line += (i ? ", " : "") + std::to_string(s.masked_lm_ids[i]);
        line += "], \"next_sentence_label\": " + std::to_string(s.next_sentence_label) + "}\n";
        std::fputs(line.c_str(), stdout);
      }
      // Standard output stays one JSON object a line; the verdict follows the samples.
      std::fflush(stdout);
      std::fprintf(stderr, "%s\n", shard_verdict(*file, info, std::ssize(samples)).c_str());
    } else {
      int64_t tokens = 0;
      std::map<int, int64_t> bins;
      for (const Sample& s : samples) {
        tokens += s.length();
        ++bins[(s.length() - 1) / 128];
      }
      std::printf("%s: %s layout, %lld rows, %zu sequences, %lld tokens (%.1f per sequence)\n",
                  file->c_str(), layout_name(info.layout), static_cast<long long>(info.rows),
                  samples.size(), static_cast<long long>(tokens),
                  samples.empty()
                      ? 0.0
                      : static_cast<double>(tokens) / static_cast<double>(samples.size()));
      for (const auto& [b, n] : bins) {
        std::printf("  length %d-%d: %lld\n", b * 128 + 1, b * 128 + 128,
                    static_cast<long long>(n));
      }
      std::printf("%s\n", shard_verdict(*file, info, std::ssize(samples)).c_str());
    }
    check_stdout("inspect");
    exit_code = 0;
  });
  cmd->footer("Example:\n  mlbert data inspect shards/part_00000.hdf5");
}

}  // namespace

void register_cli(CLI::App& app, int& exit_code) {
  auto* data =
      app.add_subcommand("data", "tokenize, prep, eval-set, stratify, pack, index, inspect shards")
          ->group("data");
  data->require_subcommand(1);
  add_tokenize(*data, exit_code);
  add_prep(*data, exit_code);
  add_eval_set(*data, exit_code);
  add_stratify(*data, exit_code);
  add_pack(*data, exit_code);
  add_index(*data, exit_code);
  add_demo_corpus(*data, exit_code);
  add_inspect(*data, exit_code);
  add_check(*data, exit_code);
  // After the subcommands: CLI11 copies a parent's footer into subcommands added later.
  data->footer("Example:\n  mlbert data prep --vocab vocab.txt --input text/ --output shards/");
}

}  // namespace mlbert::data
