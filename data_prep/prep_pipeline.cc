// Worker threads pull input files from a shared counter; the first error stops the others and is
// rethrown with its file named. A failed run takes back the shards it had finished, so that the
// folder never holds shards its length index does not describe (see prep_folder.h).
#include "data_prep/prep_pipeline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "common/atomic_file.h"
#include "data_prep/length_index.h"
#include "data_prep/prep_folder.h"
#include "data_prep/progress.h"
#include "data_prep/unfinished_prep.h"

namespace mlbert::data {

std::filesystem::path shard_name_for(const std::filesystem::path& output_dir,
                                     const std::filesystem::path& input) {
  return output_dir / (input.filename().string() + ".hdf5");
}

void check_output_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir, ec)) {
    throw std::runtime_error(dir.string() + ": cannot create output directory");
  }
  try {
    files::AtomicFile probe(dir / ".mlbert-write-probe");  // never committed: removed again
  } catch (const std::exception& e) {
    throw std::runtime_error(dir.string() + ": output directory is not writable (" + e.what() +
                             ")");
  }
}

namespace {

// The folder a run writes to: the output directory, or the joint output file's.
std::filesystem::path output_folder(const PrepOptions& options) {
  if (!options.joint) return options.output;
  return options.output.has_parent_path() ? options.output.parent_path() : ".";
}

// The output directory (or the joint output's) can be written, and no two inputs share a shard.
void check_outputs(const PrepOptions& options, const std::vector<std::filesystem::path>& files) {
  check_output_dir(output_folder(options));
  if (options.joint) return;
  std::vector<std::filesystem::path> names;
  for (const auto& f : files) names.push_back(shard_name_for(options.output, f));
  std::sort(names.begin(), names.end());
  if (auto dup = std::adjacent_find(names.begin(), names.end()); dup != names.end()) {
    throw std::runtime_error("two inputs would both write " + dup->string() +
                             "; give inputs distinct file names or use --joint");
  }
}

// Turns groups of input files into shards; safe to call from several threads at once.
class ShardMaker {
 public:
  ShardMaker(const PrepOptions& options, const Vocab& vocab, Progress& progress)
      : options_(options), vocab_(vocab), tokenizer_(vocab, options.flavor), progress_(progress) {}

  // Some input files -> one shard at `out_path`.
  void make(const std::vector<std::filesystem::path>& group,
            const std::filesystem::path& out_path) {
    std::vector<Document> documents;
    ReadStats stats;
    for (const auto& f : group) {
      read_documents(f, tokenizer_, options_.invalid_utf8, documents, &stats,
                     [&](int64_t b) { progress_.add_bytes(b); });
    }
    int64_t doc_count = 0;
    for (const auto& d : documents) doc_count += d.empty() ? 0 : 1;
    if (doc_count == 0) {
      std::string names;
      for (const auto& f : group) names += (names.empty() ? "" : ", ") + f.string();
      throw std::runtime_error(names +
                               ": no text to make samples from (empty, or only blank lines)");
    }
    std::vector<Sample> samples = create_samples(documents, vocab_, options_.pretraining);
    documents.clear();
    documents.shrink_to_fit();
    std::vector<int32_t> lengths = write_shard(out_path, std::move(samples));
    const int64_t n = static_cast<int64_t>(lengths.size());
    const int64_t tokens = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
    progress_.add_samples(n);
    std::lock_guard lock(mutex_);
    result_.documents += doc_count;
    result_.samples += n;
    result_.tokens += tokens;
    result_.replaced_lines += stats.replaced_lines;
    result_.bytes += stats.bytes;
    result_.word_pieces += stats.word_pieces;
    result_.unknown += stats.unknown;
    result_.files += static_cast<int64_t>(group.size());
    result_.outputs.push_back(out_path);
    lengths_of_shard_[out_path] = std::move(lengths);
  }

  PrepResult& result() { return result_; }
  // The shards written so far; read once every worker has stopped.
  const std::vector<std::filesystem::path>& written() const { return result_.outputs; }
  // Every shard's sample lengths, for the length index.
  const std::map<std::filesystem::path, std::vector<int32_t>>& lengths_of_shard() const {
    return lengths_of_shard_;
  }

 private:
  // Writes the shard; returns its samples' lengths.
  std::vector<int32_t> write_shard(const std::filesystem::path& out_path,
                                   std::vector<Sample> samples) const {
    ShardFormat format;
    format.max_seq_length = options_.pretraining.max_seq_length;
    format.max_predictions_per_seq = options_.pretraining.max_predictions_per_seq;
    ShardWriter writer(out_path, options_.layout, format);
    std::vector<int32_t> lengths;
    lengths.reserve(samples.size());
    for (Sample& s : samples) {
      lengths.push_back(s.length());
      writer.add(std::move(s));
    }
    samples.clear();
    writer.commit();
    return lengths;
  }

  const PrepOptions& options_;
  const Vocab& vocab_;
  const Tokenizer tokenizer_;
  Progress& progress_;
  std::mutex mutex_;
  PrepResult result_;
  std::map<std::filesystem::path, std::vector<int32_t>> lengths_of_shard_;
};

// Calls `work(i)` for i in [0, count) on `threads` threads (this one included), each taking the
// next index; the first error stops the others from taking more and is rethrown here.
void for_each_on_threads(std::size_t count, int threads, const std::function<void(size_t)>& work) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto worker = [&] {
    while (!failed) {
      const size_t i = next++;
      if (i >= count) return;
      try {
        work(i);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

// The shards of this run and their index; the earlier shards it replaces are removed only once it
// succeeded and returned.
std::vector<std::filesystem::path> make_shards(const PrepOptions& options,
                                               const std::vector<std::filesystem::path>& files,
                                               ShardMaker& maker, Progress& progress) {
  std::vector<std::filesystem::path> planned;
  for (const auto& f : files) planned.push_back(shard_name_for(options.output, f));
  // A run killed before its index: this run takes its mark over, and the shards it planned that
  // this run does not write again go now, as that run never finished them.
  std::set<std::string> unfinished;
  for (const auto& shard : unfinished_prep_shards(options.output))
    unfinished.insert(indexed_path(options.output, shard));
  if (std::filesystem::exists(unfinished_prep_mark(options.output)))
    mark_prep_unfinished(options.output, planned);
  std::vector<std::filesystem::path> stale, removed;
  for (auto& shard : shards_not_planned(options.output, planned))
    (unfinished.contains(indexed_path(options.output, shard)) ? removed : stale)
        .push_back(std::move(shard));
  for (const auto& shard : removed) std::filesystem::remove(shard);
  if (!stale.empty() && !options.replace)
    throw std::runtime_error(earlier_shards_message(options.output, stale));
  mark_prep_unfinished(options.output, planned);
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads =
      std::min<int>(options.threads > 0 ? options.threads : hw, static_cast<int>(files.size()));
  try {
    for_each_on_threads(files.size(), threads, [&](size_t i) {
      maker.make({files[i]}, planned[i]);
      progress.file_done();
    });
    for (const auto& shard : stale) std::filesystem::remove(shard);
    index_shards(options.output, maker.lengths_of_shard());
    mark_prep_finished(options.output);
  } catch (const std::exception& e) {
    const std::string undone = undo_failed_run(options.output, maker.written());
    mark_prep_finished(options.output);  // what is left is indexed again
    throw std::runtime_error(e.what() + undone);
  }
  stale.insert(stale.end(), removed.begin(), removed.end());
  return stale;
}

}  // namespace

PrepResult run_prep(const PrepOptions& options, const Vocab& vocab) {
  validate(options.pretraining);
  PrepInputs inputs = expand_inputs(options.inputs, vocab.origin());
  if (options.on_skipped) {
    for (const auto& skipped : inputs.skipped) options.on_skipped(skipped);
  }
  const std::vector<std::filesystem::path> files = std::move(inputs.files);
  check_outputs(options, files);
  const PrepFolderLock lock(output_folder(options));
  int64_t total_bytes = 0;
  for (const auto& f : files) total_bytes += static_cast<int64_t>(std::filesystem::file_size(f));

  const auto start = std::chrono::steady_clock::now();
  Progress progress("prep", static_cast<int64_t>(files.size()), total_bytes, options.progress);
  ShardMaker maker(options, vocab, progress);
  std::vector<std::filesystem::path> removed_earlier;
  if (options.joint) {
    mark_prep_unfinished(output_folder(options), {options.output});
    try {
      maker.make(files, options.output);
    } catch (const std::exception&) {
      mark_prep_finished(output_folder(options));  // the joint file was never committed
      throw;
    }
    for (size_t i = 0; i < files.size(); ++i) progress.file_done();
    index_shards(options.output, maker.lengths_of_shard());
    mark_prep_finished(output_folder(options));
  } else {
    removed_earlier = make_shards(options, files, maker, progress);
  }
  progress.finish();
  PrepResult result = std::move(maker.result());
  result.removed_earlier = std::move(removed_earlier);
  std::sort(result.outputs.begin(), result.outputs.end());
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::string unknown_token_warning(const PrepResult& result, const Vocab& vocab) {
  if (result.unknown * 20 <= result.word_pieces) return "";
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f%%",
                100.0 * static_cast<double>(result.unknown) /
                    static_cast<double>(result.word_pieces));
  return std::string(rate) + " of the text's word pieces are [UNK] (" +
         std::to_string(result.unknown) + " of " + std::to_string(result.word_pieces) +
         "): the vocabulary " + vocab.origin() +
         " does not fit this text (another language or casing?)";
}

}  // namespace mlbert::data
