// A generated corpus for the CPU demo: documents about recurring entities whose facts never change
// (home city, job, pet, favourite food, friend), written with templated sentences whose slots are
// fixed by other words in the same sentence (a city's country and weather, a job's tool, an
// animal's sound) or by grammatical agreement (number words, plural nouns and verbs). Most masked
// tokens are thus predictable from context, while the most frequent token stays far below 72% of
// predictions.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mlbert::data {

struct DemoCorpusOptions {
  int32_t train_documents = 4000;
  int32_t eval_documents = 400;
  int32_t parts = 4;  // training text files
  int64_t seed = 2024;
};

struct DemoCorpus {
  std::vector<std::string> vocab;               // vocab.txt lines, id order
  std::vector<std::vector<std::string>> parts;  // per part: lines (blank line between documents)
  std::vector<std::string> eval;                // eval.txt lines
};

DemoCorpus generate_demo_corpus(const DemoCorpusOptions& options);

struct DemoCorpusFiles {
  std::filesystem::path vocab, eval;
  std::vector<std::filesystem::path> parts;
};
// Writes vocab.txt, part-<k>-of-<n>.txt and eval.txt into `dir` (each via temp file + rename).
DemoCorpusFiles write_demo_corpus(const DemoCorpus& corpus, const std::filesystem::path& dir);

}  // namespace mlbert::data
