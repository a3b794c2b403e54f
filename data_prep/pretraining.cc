// create_pretraining_data.py's create_training_instances / create_instances_from_document /
// create_masked_lm_predictions / truncate_seq_pair on token ids, drawing from PyRandom in the
// reference's order (see pretraining.h). Token strings are never needed: WordPiece output tokens
// are vocabulary entries, so comparing ids is comparing tokens.
#include "data_prep/pretraining.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "common/input_file.h"
#include "data_prep/py_random.h"
#include "data_prep/text_input.h"

namespace mlbert::data {

void validate(const PretrainingOptions& o) {
  if (o.max_seq_length < 5 || o.max_seq_length > 32767) {
    throw std::invalid_argument("max_seq_length must be in [5, 32767], got " +
                                std::to_string(o.max_seq_length));
  }
  if (o.max_predictions_per_seq < 1 || o.max_predictions_per_seq > o.max_seq_length) {
    throw std::invalid_argument("max_predictions_per_seq must be in [1, max_seq_length], got " +
                                std::to_string(o.max_predictions_per_seq));
  }
  if (!(o.masked_lm_prob >= 0.0 && o.masked_lm_prob <= 1.0)) {
    throw std::invalid_argument("masked_lm_prob must be in [0, 1]");
  }
  if (!(o.short_seq_prob >= 0.0 && o.short_seq_prob <= 1.0)) {
    throw std::invalid_argument("short_seq_prob must be in [0, 1]");
  }
  if (o.dupe_factor < 1) throw std::invalid_argument("dupe_factor must be >= 1");
}

void read_documents(const std::filesystem::path& path, const Tokenizer& tokenizer,
                    InvalidUtf8Policy policy, std::vector<Document>& documents, ReadStats* stats,
                    const std::function<void(int64_t)>& on_bytes) {
  std::ifstream in = files::open_input(path, "input text file");
  if (documents.empty()) documents.emplace_back();
  std::string line;
  std::vector<int32_t> ids;
  int64_t line_no = 0;
  int64_t pending_bytes = 0;
  // Lines end at '\n' only, as TensorFlow's GFile.readline() splits them; '\r' is stripped later.
  while (std::getline(in, line)) {
    ++line_no;
    pending_bytes += static_cast<int64_t>(line.size()) + 1;
    if (stats) ++stats->lines, stats->bytes += static_cast<int64_t>(line.size()) + 1;
    if (!is_valid_utf8(line)) {
      if (policy == InvalidUtf8Policy::kError) {
        throw std::runtime_error(path.string() + ":" + std::to_string(line_no) +
                                 ": invalid UTF-8 at byte " +
                                 std::to_string(find_invalid_utf8(line)) +
                                 " of the line (use --invalid-utf8 replace to substitute U+FFFD)");
      }
      line = replace_invalid_utf8(line);
      if (stats) ++stats->replaced_lines;
    }
    const std::string_view stripped = python_strip(line);
    if (stripped.empty()) {
      documents.emplace_back();  // blank line: document boundary
      continue;
    }
    ids.clear();
    tokenizer.tokenize(stripped, ids);
    if (stats) {
      stats->word_pieces += static_cast<int64_t>(ids.size());
      stats->unknown += std::count(ids.begin(), ids.end(), tokenizer.vocab().special().unk);
    }
    if (!ids.empty()) documents.back().push_back(ids);
    if (on_bytes && pending_bytes >= (1 << 20)) {
      on_bytes(pending_bytes);
      pending_bytes = 0;
    }
  }
  if (in.bad())
    throw std::runtime_error(path.string() + ": read error after line " + std::to_string(line_no));
  if (on_bytes && pending_bytes) on_bytes(pending_bytes);
}

namespace {

struct Context {
  const std::vector<Document>& documents;
  const Vocab& vocab;
  const PretrainingOptions& options;
  PyRandom& rng;
};

void mask_tokens(Context& ctx, Sample& sample) {
  const SpecialIds& special = ctx.vocab.special();
  std::vector<int32_t> cand;
  cand.reserve(sample.input_ids.size());
  for (size_t i = 0; i < sample.input_ids.size(); ++i) {
    const int32_t id = sample.input_ids[i];
    if (id == special.cls || id == special.sep) continue;
    cand.push_back(static_cast<int32_t>(i));
  }
  ctx.rng.shuffle(cand);
  // Python's round() is round-half-to-even, as is nearbyint in the default rounding mode.
  const auto rounded = static_cast<int64_t>(
      std::nearbyint(static_cast<double>(sample.input_ids.size()) * ctx.options.masked_lm_prob));
  const int64_t num_to_predict =
      std::min<int64_t>(ctx.options.max_predictions_per_seq, std::max<int64_t>(1, rounded));

  const std::vector<int32_t>& words = ctx.vocab.random_word_ids();
  std::vector<std::pair<int32_t, int32_t>> predictions;  // (position, original id)
  std::vector<int32_t> output = sample.input_ids;
  for (int32_t index : cand) {
    if (static_cast<int64_t>(predictions.size()) >= num_to_predict) break;
    // Candidates are distinct positions, so the reference's covered-index check never fires.
    int32_t masked;
    if (ctx.rng.random() < 0.8) {
      masked = special.mask;
    } else if (ctx.rng.random() < 0.5) {
      masked = sample.input_ids[index];
    } else {
      masked =
          words[static_cast<size_t>(ctx.rng.randint(0, static_cast<int64_t>(words.size()) - 1))];
    }
    output[index] = masked;
    predictions.emplace_back(index, sample.input_ids[index]);
  }
  std::sort(predictions.begin(), predictions.end());
  sample.input_ids = std::move(output);
  sample.masked_lm_positions.clear();
  sample.masked_lm_ids.clear();
  for (const auto& [pos, id] : predictions) {
    sample.masked_lm_positions.push_back(pos);
    sample.masked_lm_ids.push_back(id);
  }
}

// truncate_seq_pair on [begin, end) windows: trims the longer side (B on ties) from the front or
// the back at random until the pair fits.
void truncate_pair(std::vector<int32_t>& a, std::vector<int32_t>& b, size_t max_num_tokens,
                   PyRandom& rng) {
  size_t a_begin = 0, a_end = a.size(), b_begin = 0, b_end = b.size();
  while ((a_end - a_begin) + (b_end - b_begin) > max_num_tokens) {
    const bool trim_a = (a_end - a_begin) > (b_end - b_begin);
    size_t& begin = trim_a ? a_begin : b_begin;
    size_t& end = trim_a ? a_end : b_end;
    if (rng.random() < 0.5) {
      ++begin;
    } else {
      --end;
    }
  }
  a = std::vector<int32_t>(a.begin() + static_cast<std::ptrdiff_t>(a_begin),
                           a.begin() + static_cast<std::ptrdiff_t>(a_end));
  b = std::vector<int32_t>(b.begin() + static_cast<std::ptrdiff_t>(b_begin),
                           b.begin() + static_cast<std::ptrdiff_t>(b_end));
}

void instances_from_document(Context& ctx, size_t document_index, std::vector<Sample>& out) {
  const Document& document = ctx.documents[document_index];
  const int64_t max_num_tokens = ctx.options.max_seq_length - 3;
  int64_t target_seq_length = max_num_tokens;
  if (ctx.rng.random() < ctx.options.short_seq_prob) {
    target_seq_length = ctx.rng.randint(2, max_num_tokens);
  }
  const SpecialIds& special = ctx.vocab.special();
  std::vector<size_t> chunk;  // sentence indexes of current_chunk
  int64_t current_length = 0;
  int64_t i = 0;
  const auto doc_len = static_cast<int64_t>(document.size());
  while (i < doc_len) {
    chunk.push_back(static_cast<size_t>(i));
    current_length += static_cast<int64_t>(document[static_cast<size_t>(i)].size());
    if (i == doc_len - 1 || current_length >= target_seq_length) {
      if (!chunk.empty()) {
        int64_t a_end = 1;
        if (chunk.size() >= 2) a_end = ctx.rng.randint(1, static_cast<int64_t>(chunk.size()) - 1);
        std::vector<int32_t> tokens_a, tokens_b;
        for (int64_t j = 0; j < a_end; ++j) {
          const auto& s = document[chunk[static_cast<size_t>(j)]];
          tokens_a.insert(tokens_a.end(), s.begin(), s.end());
        }
        bool is_random_next = false;
        if (chunk.size() == 1 || ctx.rng.random() < 0.5) {
          is_random_next = true;
          const int64_t target_b_length = target_seq_length - static_cast<int64_t>(tokens_a.size());
          int64_t random_document_index = 0;
          for (int attempt = 0; attempt < 10; ++attempt) {
            random_document_index =
                ctx.rng.randint(0, static_cast<int64_t>(ctx.documents.size()) - 1);
            if (random_document_index != static_cast<int64_t>(document_index)) break;
          }
          const Document& random_document =
              ctx.documents[static_cast<size_t>(random_document_index)];
          const int64_t random_start =
              ctx.rng.randint(0, static_cast<int64_t>(random_document.size()) - 1);
          for (size_t j = static_cast<size_t>(random_start); j < random_document.size(); ++j) {
            tokens_b.insert(tokens_b.end(), random_document[j].begin(), random_document[j].end());
            if (static_cast<int64_t>(tokens_b.size()) >= target_b_length) break;
          }
          i -= static_cast<int64_t>(chunk.size()) - a_end;  // put the unused sentences back
        } else {
          for (size_t j = static_cast<size_t>(a_end); j < chunk.size(); ++j) {
            const auto& s = document[chunk[j]];
            tokens_b.insert(tokens_b.end(), s.begin(), s.end());
          }
        }
        truncate_pair(tokens_a, tokens_b, static_cast<size_t>(max_num_tokens), ctx.rng);

        Sample sample;
        sample.input_ids.reserve(tokens_a.size() + tokens_b.size() + 3);
        sample.input_ids.push_back(special.cls);
        sample.input_ids.insert(sample.input_ids.end(), tokens_a.begin(), tokens_a.end());
        sample.input_ids.push_back(special.sep);
        const size_t a_part = sample.input_ids.size();
        sample.input_ids.insert(sample.input_ids.end(), tokens_b.begin(), tokens_b.end());
        sample.input_ids.push_back(special.sep);
        sample.segment_ids.assign(sample.input_ids.size(), 1);
        std::fill(sample.segment_ids.begin(),
                  sample.segment_ids.begin() + static_cast<std::ptrdiff_t>(a_part), 0);
        sample.next_sentence_label = is_random_next ? 1 : 0;
        mask_tokens(ctx, sample);
        out.push_back(std::move(sample));
      }
      chunk.clear();
      current_length = 0;
    }
    ++i;
  }
}

}  // namespace

std::vector<Sample> create_samples(std::vector<Document>& documents, const Vocab& vocab,
                                   const PretrainingOptions& options) {
  validate(options);
  std::erase_if(documents, [](const Document& d) { return d.empty(); });
  PyRandom rng(options.random_seed);
  rng.shuffle(documents);
  std::vector<Sample> samples;
  if (documents.empty()) return samples;
  Context ctx{documents, vocab, options, rng};
  for (int32_t dupe = 0; dupe < options.dupe_factor; ++dupe) {
    for (size_t d = 0; d < documents.size(); ++d) instances_from_document(ctx, d, samples);
  }
  rng.shuffle(samples);
  return samples;
}

}  // namespace mlbert::data
