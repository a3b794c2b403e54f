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

#include "data_prep/py_random.h"

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

PackingReport pack(const std::vector<std::filesystem::path>& inputs,
                   const std::filesystem::path& output_dir, const PackingOptions& o) {
  if (o.shards < 1) throw std::invalid_argument("packing: shards must be >= 1");
  std::vector<Sample> samples;
  for (const auto& in : inputs) {
    if (inspect_shard(in).layout == Layout::kPacked) {
      throw std::runtime_error(in.string() + ": already packed");
    }
    for (Sample& s : read_shard(in, o.read_options)) samples.push_back(std::move(s));
  }
  std::vector<int32_t> lengths;
  lengths.reserve(samples.size());
  for (const Sample& s : samples) lengths.push_back(s.length());
  auto rows = plan_packing(lengths, o.max_seq_length, o.max_sequences_per_row);
  PyRandom rng(o.seed);
  rng.shuffle(rows);

  PackingReport report;
  report.max_seq_length = o.max_seq_length;
  report.sequences = static_cast<int64_t>(samples.size());
  report.rows = static_cast<int64_t>(rows.size());
  report.rows_with_k.assign(static_cast<size_t>(o.max_sequences_per_row) + 1, 0);
  for (int32_t l : lengths) report.tokens += l;
  for (const auto& r : rows) ++report.rows_with_k[r.size()];

  std::error_code ec;
  std::filesystem::create_directories(output_dir, ec);
  ShardFormat format = o.read_options.format;
  format.max_seq_length = o.max_seq_length;
  format.max_sequences_per_row = o.max_sequences_per_row;
  std::vector<std::unique_ptr<ShardWriter>> writers;
  for (int32_t s = 0; s < o.shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "packed_%05d-of-%05d.hdf5", s, o.shards);
    writers.push_back(std::make_unique<ShardWriter>(output_dir / name, Layout::kPacked, format));
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    PackedRow row;
    for (int64_t i : rows[r]) row.samples.push_back(std::move(samples[static_cast<size_t>(i)]));
    writers[r % writers.size()]->add(row);
  }
  for (auto& w : writers) {
    w->commit();
    report.outputs.push_back(w->path());
  }
  return report;
}

}  // namespace mlbert::data
