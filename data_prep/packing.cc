// Best-fit decreasing: longest sequences first, each into the open row with the least room that
// still fits it (a multimap keyed by free tokens), a new row when none does.
#include "data_prep/packing.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "data_prep/length_index.h"
#include "data_prep/py_random.h"
#include "data_prep/shard_groups.h"

namespace mlbert::data {

double PackingReport::efficiency() const {
  return rows ? static_cast<double>(tokens) / (static_cast<double>(rows) * max_seq_length) : 0.0;
}
double PackingReport::padded_efficiency() const {
  return sequences ? static_cast<double>(tokens) / (static_cast<double>(sequences) * max_seq_length)
                   : 0.0;
}

std::string PackingReport::to_text() const {
  std::ostringstream out;
  char line[160];
  std::snprintf(line, sizeof line, "packing: %lld sequences, %lld tokens -> %lld rows of %d\n",
                static_cast<long long>(sequences), static_cast<long long>(tokens),
                static_cast<long long>(rows), max_seq_length);
  out << line;
  for (size_t k = 1; k < rows_with_k.size(); ++k) {
    std::snprintf(
        line, sizeof line, "  rows with %zu sequence%s: %lld (%.1f%%)\n", k, k == 1 ? "" : "s",
        static_cast<long long>(rows_with_k[k]),
        rows ? 100.0 * static_cast<double>(rows_with_k[k]) / static_cast<double>(rows) : 0.0);
    out << line;
  }
  std::snprintf(line, sizeof line,
                "  efficiency (real tokens / row tokens): packed %.2f%%, padded %.2f%%, "
                "%.2fx fewer rows\n",
                100.0 * efficiency(), 100.0 * padded_efficiency(),
                rows ? static_cast<double>(sequences) / static_cast<double>(rows) : 0.0);
  out << line;
  return out.str();
}

std::vector<std::vector<int64_t>> plan_packing(const std::vector<int32_t>& lengths,
                                               int32_t max_seq_length,
                                               int32_t max_sequences_per_row) {
  if (max_sequences_per_row < 1)
    throw std::invalid_argument("packing: sequences per row must be >= 1");
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
  });
  std::vector<std::vector<int64_t>> rows;
  std::multimap<int32_t, size_t> open;  // free tokens -> row
  for (int64_t i : order) {
    const int32_t len = lengths[static_cast<size_t>(i)];
    if (len < 1 || len > max_seq_length) {
      throw std::invalid_argument("packing: sequence " + std::to_string(i) + " has length " +
                                  std::to_string(len));
    }
    auto it = open.lower_bound(len);
    size_t row;
    int32_t free_tokens;
    if (it == open.end()) {
      row = rows.size();
      rows.emplace_back();
      free_tokens = max_seq_length;
    } else {
      row = it->second;
      free_tokens = it->first;
      open.erase(it);
    }
    rows[row].push_back(i);
    free_tokens -= len;
    if (static_cast<int32_t>(rows[row].size()) < max_sequences_per_row && free_tokens > 0) {
      open.emplace(free_tokens, row);
    }
  }
  return rows;
}

namespace {

// Pass 1's result: the lengths of all input sequences as one global sequence index.
struct InputLengths {
  std::vector<int32_t> lengths;
  std::vector<int64_t> first_index;  // [f] = global index of row 0 of inputs[f]; [n] = total
};

InputLengths read_input_lengths(const std::vector<std::filesystem::path>& inputs) {
  InputLengths in;
  for (const auto& path : inputs) {
    if (inspect_shard(path).layout == Layout::kPacked) {
      throw std::runtime_error(path.string() + ": already packed");
    }
    in.first_index.push_back(static_cast<int64_t>(in.lengths.size()));
    const auto file_lengths = read_lengths(path);
    in.lengths.insert(in.lengths.end(), file_lengths.begin(), file_lengths.end());
  }
  in.first_index.push_back(static_cast<int64_t>(in.lengths.size()));
  return in;
}

PackingReport report_of(const std::vector<int32_t>& lengths,
                        const std::vector<std::vector<int64_t>>& rows, const PackingOptions& o) {
  PackingReport report;
  report.max_seq_length = o.max_seq_length;
  report.sequences = static_cast<int64_t>(lengths.size());
  report.rows = static_cast<int64_t>(rows.size());
  report.rows_with_k.assign(static_cast<size_t>(o.max_sequences_per_row) + 1, 0);
  for (int32_t l : lengths) report.tokens += l;
  for (const auto& r : rows) ++report.rows_with_k[r.size()];
  return report;
}

// The sequences of the group's rows (row r goes to shard r % shards), read from every input once
// and keyed by their global index.
std::unordered_map<int64_t, Sample> read_group_sequences(
    const std::vector<std::filesystem::path>& inputs, const InputLengths& in,
    const std::vector<std::vector<int64_t>>& rows, size_t shards, size_t first, size_t last,
    const ReadOptions& read_options) {
  std::vector<int64_t> wanted;  // global indexes of the group's sequences, ascending
  for (size_t r = first; r < rows.size(); ++r) {
    if (r % shards >= first && r % shards < last) {
      wanted.insert(wanted.end(), rows[r].begin(), rows[r].end());
    }
  }
  std::sort(wanted.begin(), wanted.end());
  std::unordered_map<int64_t, Sample> held;
  held.reserve(wanted.size());
  auto next = wanted.begin();
  for (size_t f = 0; f < inputs.size(); ++f) {
    std::vector<int64_t> file_rows;
    for (; next != wanted.end() && *next < in.first_index[f + 1]; ++next) {
      file_rows.push_back(*next - in.first_index[f]);
    }
    if (file_rows.empty()) continue;
    std::vector<Sample> samples = read_rows(inputs[f], file_rows, read_options);
    for (size_t k = 0; k < file_rows.size(); ++k) {
      const int64_t i = in.first_index[f] + file_rows[k];
      if (samples[k].length() != in.lengths[static_cast<size_t>(i)]) {
        throw std::runtime_error(inputs[f].string() + ": row " + std::to_string(file_rows[k]) +
                                 " changed length between passes");
      }
      held.emplace(i, std::move(samples[k]));
    }
  }
  return held;
}

}  // namespace

PackingReport pack(const std::vector<std::filesystem::path>& inputs,
                   const std::filesystem::path& output_dir, const PackingOptions& o) {
  if (o.shards < 1) throw std::invalid_argument("packing: shards must be >= 1");
  const InputLengths in = read_input_lengths(inputs);
  const std::vector<int32_t>& lengths = in.lengths;
  auto rows = plan_packing(lengths, o.max_seq_length, o.max_sequences_per_row);
  PyRandom rng(o.seed);
  rng.shuffle(rows);
  PackingReport report = report_of(lengths, rows, o);

  std::error_code ec;
  std::filesystem::create_directories(output_dir, ec);
  ShardFormat format = o.read_options.format;
  format.max_seq_length = o.max_seq_length;
  format.max_sequences_per_row = o.max_sequences_per_row;
  const auto shards = static_cast<size_t>(o.shards);
  std::vector<int64_t> shard_bytes(shards, 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int64_t i : rows[r]) shard_bytes[r % shards] += held_bytes(lengths[static_cast<size_t>(i)]);
  }

  // Pass 2, group by group: just the sequences of the group's rows, then the rows written in
  // order and the group committed.
  for (const auto& [first, last] : shard_groups(shard_bytes, o.memory_budget_bytes)) {
    std::vector<std::unique_ptr<ShardWriter>> writers;
    for (size_t s = first; s < last; ++s) {
      char name[64];
      std::snprintf(name, sizeof name, "packed_%05zu-of-%05zu.hdf5", s, shards);
      writers.push_back(std::make_unique<ShardWriter>(output_dir / name, Layout::kPacked, format));
    }
    auto held = read_group_sequences(inputs, in, rows, shards, first, last, o.read_options);
    for (size_t r = first; r < rows.size(); ++r) {
      const size_t s = r % shards;
      if (s < first || s >= last) continue;
      PackedRow row;
      for (int64_t i : rows[r]) {
        auto it = held.find(i);
        row.samples.push_back(std::move(it->second));
        held.erase(it);
      }
      writers[s - first]->add(row);
    }
    for (auto& w : writers) {
      w->commit();
      report.outputs.push_back(w->path());
    }
    ++report.groups;
  }
  // The length index of the output: a packed row's length is the tokens of its sequences.
  std::map<std::filesystem::path, std::vector<int32_t>> lengths_of_shard;
  for (size_t r = 0; r < rows.size(); ++r) {
    int32_t tokens = 0;
    for (int64_t i : rows[r]) tokens += lengths[static_cast<size_t>(i)];
    lengths_of_shard[report.outputs[r % shards]].push_back(tokens);
  }
  index_shards(output_dir, lengths_of_shard);
  return report;
}

}  // namespace mlbert::data
