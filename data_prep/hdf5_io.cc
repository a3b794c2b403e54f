// The three shard layouts over the HDF5 dataset reads (hdf5_datasets.h): a shard's datasets
// opened and shape-checked once, rows read column by column and decoded into samples
// (shard_rows.h), which checks every row before it is handed out. These readers run in the shard
// reader process (hdf5_direct.h); the writers are in shard_writer.cc.
#include "data_prep/hdf5_io.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <stdexcept>

#include "data_prep/hdf5_datasets.h"
#include "data_prep/hdf5_direct.h"
#include "data_prep/shard_rows.h"

namespace mlbert::data {
namespace {

// The datasets of one shard, opened and shape-checked once for any number of reads. `d` holds
// them in the order of the layout's dataset names below.
const char* const kFixedNames[] = {"input_ids",           "input_mask",    "segment_ids",
                                   "masked_lm_positions", "masked_lm_ids", "next_sentence_labels"};
const char* const kVarlenNames[] = {"input_ids", "segment_ids", "masked_lm_positions",
                                    "masked_lm_ids", "next_sentence_labels"};
const char* const kPackedNames[] = {
    "input_ids",           "segment_ids",          "masked_lm_positions",
    "masked_lm_ids",       "next_sentence_labels", "packed_input_len",
    "packed_masked_lm_len"};

struct ShardDatasets {
  Layout layout = Layout::kVarlen;
  std::vector<Dataset> d;
  hsize_t rows = 0;
  hsize_t width = 0, predictions = 0;  // fixed layout: S of [N,S], P of [N,P]
};

// The fixed layout's input_ids: [N, S] with S >= 1. Rows of no tokens store no bytes, so no check
// of the stored size would bound their count.
void check_fixed_ids(const Dataset& ids, const std::filesystem::path& path) {
  if (ids.dims[1] == 0) {
    throw std::runtime_error(dataset_where(path, "input_ids") +
                             ": fixed layout needs [N, max_seq_length >= 1], found [N, 0]");
  }
}

// input_mask and segment_ids: 2-D integers as wide as input_ids.
void check_like_ids(const Dataset& d, const Dataset& ids, const std::filesystem::path& path) {
  if (d.vlen || d.rank != 2 || d.dims[1] != ids.dims[1]) {
    throw std::runtime_error(path.string() + ": input_mask/segment_ids must be [N, " +
                             std::to_string(ids.dims[1]) + "] like input_ids");
  }
}

ShardDatasets open_fixed(const File& f, const std::filesystem::path& path) {
  ShardDatasets s;
  s.layout = Layout::kFixed;
  for (const char* name : kFixedNames) s.d.push_back(open_dataset(f.get(), path, name));
  Dataset &ids = s.d[0], &mask = s.d[1], &seg = s.d[2], &pos = s.d[3], &mids = s.d[4],
          &nsp = s.d[5];
  check_fixed_ids(ids, path);
  s.rows = ids.dims[0];
  s.width = ids.dims[1];
  for (const Dataset* d : {&mask, &seg}) check_like_ids(*d, ids, path);
  if (pos.vlen || mids.vlen || pos.rank != 2 || mids.rank != 2 || pos.dims[1] != mids.dims[1]) {
    throw std::runtime_error(path.string() +
                             ": masked_lm_positions/masked_lm_ids must both be [N, P]");
  }
  if (nsp.vlen || !(nsp.rank == 1 || (nsp.rank == 2 && nsp.dims[1] == 1))) {
    throw std::runtime_error(dataset_where(path, "next_sentence_labels") +
                             ": must be [N] or [N, 1]");
  }
  for (size_t k = 1; k < s.d.size(); ++k) expect_rows(s.d[k], path, kFixedNames[k], s.rows);
  s.predictions = pos.dims[1];
  return s;
}

ShardDatasets open_varlen(const File& f, const std::filesystem::path& path) {
  ShardDatasets s;
  s.layout = Layout::kVarlen;
  for (const char* name : kVarlenNames) s.d.push_back(open_dataset(f.get(), path, name));
  s.rows = s.d[0].dims[0];
  for (size_t k = 0; k < 4; ++k) {
    if (!s.d[k].vlen || s.d[k].rank != 1) {
      throw std::runtime_error(dataset_where(path, kVarlenNames[k]) +
                               ": varlen layout needs a 1-D vlen dataset");
    }
    expect_rows(s.d[k], path, kVarlenNames[k], s.rows);
  }
  if (s.d[4].vlen || s.d[4].rank != 1) {
    throw std::runtime_error(dataset_where(path, "next_sentence_labels") +
                             ": must be a 1-D integer [N]");
  }
  expect_rows(s.d[4], path, "next_sentence_labels", s.rows);
  return s;
}

ShardDatasets open_packed(const File& f, const std::filesystem::path& path) {
  ShardDatasets s;
  s.layout = Layout::kPacked;
  for (const char* name : kPackedNames) s.d.push_back(open_dataset(f.get(), path, name));
  s.rows = s.d[0].dims[0];
  for (size_t k = 0; k < s.d.size(); ++k) {
    if (!s.d[k].vlen || s.d[k].rank != 1) {
      throw std::runtime_error(dataset_where(path, kPackedNames[k]) +
                               ": packed layout needs a 1-D vlen dataset");
    }
    expect_rows(s.d[k], path, kPackedNames[k], s.rows);
  }
  return s;
}

ShardDatasets open_datasets(const File& f, const std::filesystem::path& path) {
  switch (detect(f, path)) {
    case Layout::kFixed:
      return open_fixed(f, path);
    case Layout::kVarlen:
      return open_varlen(f, path);
    case Layout::kPacked:
      return open_packed(f, path);
  }
  throw std::logic_error("unknown layout");
}

void check_range(const ShardDatasets& s, const std::filesystem::path& path, hsize_t begin,
                 hsize_t count) {
  if (begin + count > s.rows) {
    throw std::runtime_error(path.string() + ": rows [" + std::to_string(begin) + ", " +
                             std::to_string(begin + count) + ") beyond the " +
                             std::to_string(s.rows) + " rows of the shard");
  }
}

std::vector<Sample> read_fixed_rows(ShardDatasets& sd, const std::filesystem::path& path,
                                    hsize_t begin, hsize_t count, const ReadOptions& o) {
  check_fixed_width(sd.width, path, o);
  check_range(sd, path, begin, count);
  FixedColumns c;
  c.rows = count;
  c.width = sd.width;
  c.predictions = sd.predictions;
  c.ids = read_fixed(sd.d[0], path, "input_ids", begin, count);
  c.mask = read_fixed(sd.d[1], path, "input_mask", begin, count);
  c.segments = read_fixed(sd.d[2], path, "segment_ids", begin, count);
  c.positions = read_fixed(sd.d[3], path, "masked_lm_positions", begin, count);
  c.masked_ids = read_fixed(sd.d[4], path, "masked_lm_ids", begin, count);
  c.labels = read_fixed(sd.d[5], path, "next_sentence_labels", begin, count);
  return decode_fixed_rows(c, path, static_cast<int64_t>(begin), o);
}

std::vector<Sample> read_varlen_rows(ShardDatasets& sd, const std::filesystem::path& path,
                                     hsize_t begin, hsize_t count, const ReadOptions& o) {
  check_range(sd, path, begin, count);
  std::array<VlenColumn, 4> c;
  for (size_t k = 0; k < c.size(); ++k)
    read_vlen(sd.d[k], path, kVarlenNames[k], begin, count, c[k].values, c[k].offsets);
  const auto labels = read_fixed(sd.d[4], path, "next_sentence_labels", begin, count);
  return decode_varlen_rows(c, labels, path, static_cast<int64_t>(begin), o);
}

std::vector<PackedRow> read_packed_rows(ShardDatasets& sd, const std::filesystem::path& path,
                                        hsize_t begin, hsize_t count, const ReadOptions& o) {
  check_range(sd, path, begin, count);
  std::array<VlenColumn, 7> c;
  for (size_t k = 0; k < c.size(); ++k)
    read_vlen(sd.d[k], path, kPackedNames[k], begin, count, c[k].values, c[k].offsets);
  return decode_packed_rows(c, path, static_cast<int64_t>(begin), o);
}

std::vector<Sample> read_range_in(ShardDatasets& sd, const std::filesystem::path& path,
                                  int64_t begin, int64_t count, const ReadOptions& o) {
  if (begin < 0 || count < 0) throw std::invalid_argument(path.string() + ": negative row range");
  const auto b = static_cast<hsize_t>(begin), n = static_cast<hsize_t>(count);
  switch (sd.layout) {
    case Layout::kFixed:
      return read_fixed_rows(sd, path, b, n, o);
    case Layout::kVarlen:
      return read_varlen_rows(sd, path, b, n, o);
    case Layout::kPacked: {
      std::vector<Sample> out;
      for (PackedRow& row : read_packed_rows(sd, path, b, n, o)) {
        for (Sample& s : row.samples) out.push_back(std::move(s));
      }
      return out;
    }
  }
  return {};
}

}  // namespace

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kFixed:
      return "fixed";
    case Layout::kVarlen:
      return "varlen";
    case Layout::kPacked:
      return "packed";
  }
  return "?";
}

Layout parse_layout(const std::string& name) {
  if (name == "fixed") return Layout::kFixed;
  if (name == "varlen") return Layout::kVarlen;
  if (name == "packed") return Layout::kPacked;
  throw std::invalid_argument("unknown HDF5 layout '" + name + "' (fixed, varlen or packed)");
}

namespace direct {

void initialize_hdf5() {
  H5open();
  quiet_hdf5();
}

ShardInfo inspect_shard(const std::filesystem::path& path) {
  File f(path);
  ShardInfo info;
  info.layout = detect(f, path);
  Dataset ids = open_dataset(f.get(), path, "input_ids");
  info.rows = static_cast<int64_t>(ids.dims[0]);
  if (info.layout == Layout::kFixed) info.row_width = static_cast<int32_t>(ids.dims[1]);
  return info;
}

// ------------------------------------------------------------------------------------------------
// ShardReader

struct ShardReader::Impl {
  std::filesystem::path path;
  File file;
  ShardDatasets datasets;
  explicit Impl(const std::filesystem::path& p)
      : path(p), file(p), datasets(open_datasets(file, p)) {}
};

ShardReader::ShardReader(const std::filesystem::path& path) : impl_(std::make_unique<Impl>(path)) {}
ShardReader::~ShardReader() = default;
ShardReader::ShardReader(ShardReader&&) noexcept = default;
ShardReader& ShardReader::operator=(ShardReader&&) noexcept = default;

const std::filesystem::path& ShardReader::path() const {
  return impl_->path;
}
Layout ShardReader::layout() const {
  return impl_->datasets.layout;
}
int64_t ShardReader::rows() const {
  return static_cast<int64_t>(impl_->datasets.rows);
}

std::vector<Sample> ShardReader::read_range(int64_t begin, int64_t count, const ReadOptions& o) {
  return read_range_in(impl_->datasets, impl_->path, begin, count, o);
}

std::vector<Sample> ShardReader::read_rows(std::span<const int64_t> rows, const ReadOptions& o) {
  // Rows are read in ascending runs (a sampler's random rows of one shard cost one hyperslab
  // read per run) and returned in the order asked for.
  std::vector<Sample> out;
  if (layout() == Layout::kPacked) {  // a packed row yields several sequences: keep the order
    for (size_t i = 0; i < rows.size();) {
      size_t j = i + 1;
      while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;
      for (Sample& s : read_range(rows[i], static_cast<int64_t>(j - i), o)) {
        out.push_back(std::move(s));
      }
      i = j;
    }
    return out;
  }
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rows[a] < rows[b]; });
  out.resize(rows.size());
  for (size_t i = 0; i < order.size();) {
    // A run of ascending distinct rows [first, last]; repeated rows share the sample read.
    const int64_t first = rows[order[i]];
    int64_t last = first;
    size_t j = i + 1;
    while (j < order.size() && rows[order[j]] <= last + 1) last = rows[order[j++]];
    std::vector<Sample> part = read_range(first, last - first + 1, o);
    for (size_t k = i; k < j; ++k)
      out[order[k]] = part[static_cast<size_t>(rows[order[k]] - first)];
    i = j;
  }
  return out;
}

std::vector<PackedRow> ShardReader::read_packed(const ReadOptions& o) {
  if (layout() != Layout::kPacked) {
    throw std::runtime_error(impl_->path.string() +
                             ": not a packed shard (no packed_input_len dataset)");
  }
  return read_packed_rows(impl_->datasets, impl_->path, 0, impl_->datasets.rows, o);
}

std::vector<Sample> read_shard(const std::filesystem::path& path, const ReadOptions& o) {
  ShardReader reader(path);
  return reader.read_range(0, reader.rows(), o);
}

std::vector<Sample> read_row_range(const std::filesystem::path& path, int64_t begin, int64_t count,
                                   const ReadOptions& o) {
  return ShardReader(path).read_range(begin, count, o);
}

std::vector<Sample> read_rows(const std::filesystem::path& path, std::span<const int64_t> rows,
                              const ReadOptions& o) {
  return ShardReader(path).read_rows(rows, o);
}

std::vector<PackedRow> read_packed_shard(const std::filesystem::path& path, const ReadOptions& o) {
  return ShardReader(path).read_packed(o);
}

std::vector<int32_t> read_lengths(const std::filesystem::path& path) {
  File f(path);
  const Layout layout = detect(f, path);
  if (layout == Layout::kFixed) {
    // The mask's shape as the full reader checks it: a mask of width 0 claims any row count.
    const Dataset ids = open_dataset(f.get(), path, "input_ids");
    Dataset mask = open_dataset(f.get(), path, "input_mask");
    check_fixed_ids(ids, path);
    check_like_ids(mask, ids, path);
    expect_rows(mask, path, "input_mask", ids.dims[0]);
    return mask_lengths(read_fixed(mask, path, "input_mask", 0, ids.dims[0]), ids.dims[0],
                        ids.dims[1]);
  }
  const char* name = layout == Layout::kVarlen ? "input_ids" : "packed_input_len";
  Dataset d = open_dataset(f.get(), path, name);
  if (!d.vlen || d.rank != 1)
    throw std::runtime_error(dataset_where(path, name) + ": must be 1-D vlen");
  VlenColumn c;
  read_vlen(d, path, name, 0, d.dims[0], c.values, c.offsets);
  return vlen_lengths(c, layout == Layout::kPacked, path, 0);
}

}  // namespace direct

}  // namespace mlbert::data
