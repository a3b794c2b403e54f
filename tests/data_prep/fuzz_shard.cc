// libFuzzer target: arbitrary bytes as an HDF5 training shard, through every reader entry point
// (inspect_shard, read_lengths, read_shard, read_rows, read_row_range, read_packed_shard).
//
// Each input is read twice. First through hdf5_io.h, as every caller does: HDF5 then runs in the
// shard reader process, so a file that crashes or hangs the library must come back as an error
// naming the file. That process is mlbert-shard-reader-fuzz, built with the same sanitizers as
// this target, so a memory error HDF5 makes on the file (an uninstrumented library, caught by
// ASan's interceptors) crashes it there, contained. When the library survived it, the same calls
// run in this process through hdf5_direct.h, so the coverage of the readers' own checks guides the
// fuzzer, and must return exactly what the reader process returned. Every result must keep the
// readers' promises: each sample valid for the format (length, segment ids, ascending masked
// positions inside the sequence, ids below the vocabulary size, NSP label 0/1), read_lengths
// agreeing with the rows, read_rows agreeing with read_shard, rows past the end refused.
#include <hdf5.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "data_prep/hdf5_direct.h"
#include "data_prep/hdf5_io.h"
#include "tests/data_prep/sample_promises.h"
#include "tests/fuzz/fuzz_scratch.h"

// Under ASan, a malloc inside HDF5 larger than any real shard needs returns null (HDF5 then reports
// an error): a corrupt vlen length makes HDF5 1.10 ask for a conversion buffer of up to 16 GiB. The
// reader process gets the same options (kAsanOptions, set for it in LLVMFuzzerInitialize), so both
// sides of the comparison see the same failures. The library's own leaks on its error paths are
// not this project's.
constexpr const char* kAsanOptions = "allocator_may_return_null=1:max_allocation_size_mb=512";
extern "C" const char* __asan_default_options() {
  return kAsanOptions;
}
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libhdf5_serial.so\n";
}

namespace {

namespace data = mlbert::data;
using data::Layout;
using data::ReadOptions;
using data::Sample;

constexpr int32_t kVocabSize = 30522;

struct Contained {
  static auto inspect(const auto& p) { return data::inspect_shard(p); }
  static auto lengths(const auto& p) { return data::read_lengths(p); }
  static auto shard(const auto& p, const auto& o) { return data::read_shard(p, o); }
  static auto packed(const auto& p, const auto& o) { return data::read_packed_shard(p, o); }
  static auto rows(const auto& p, const auto& r, const auto& o) { return data::read_rows(p, r, o); }
  static auto range(const auto& p, int64_t b, int64_t n, const auto& o) {
    return data::read_row_range(p, b, n, o);
  }
};
struct Direct {
  static auto inspect(const auto& p) { return data::direct::inspect_shard(p); }
  static auto lengths(const auto& p) { return data::direct::read_lengths(p); }
  static auto shard(const auto& p, const auto& o) { return data::direct::read_shard(p, o); }
  static auto packed(const auto& p, const auto& o) { return data::direct::read_packed_shard(p, o); }
  static auto rows(const auto& p, const auto& r, const auto& o) {
    return data::direct::read_rows(p, r, o);
  }
  static auto range(const auto& p, int64_t b, int64_t n, const auto& o) {
    return data::direct::read_row_range(p, b, n, o);
  }
};

struct Reads {
  std::optional<data::ShardInfo> info;
  std::optional<std::vector<int32_t>> lengths;
  std::optional<std::vector<Sample>> samples, picked, past_end;
  std::optional<std::vector<data::PackedRow>> packed;
  bool hdf5_failed = false;  // the reader process crashed or timed out
};

template <typename Api>
Reads read_all(const std::filesystem::path& path, const ReadOptions& o) {
  Reads r;
  auto attempt = [&](auto& slot, auto&& f) {
    if (r.hdf5_failed) return;  // it would fail again, one timeout later
    try {
      slot = f();
    } catch (const std::exception& e) {
      const std::string what = e.what();
      if (what.find(path.string()) == std::string::npos) std::abort();  // errors name the file
      if (what.find("HDF5 crashed") != std::string::npos ||
          what.find("HDF5 did not finish") != std::string::npos)
        r.hdf5_failed = true;
    }
  };
  attempt(r.info, [&] { return Api::inspect(path); });
  attempt(r.lengths, [&] { return Api::lengths(path); });
  attempt(r.samples, [&] { return Api::shard(path, o); });
  attempt(r.packed, [&] { return Api::packed(path, o); });
  if (r.info && r.info->rows > 0) {
    // The last row, the first, and the last again (a repeat), in that order.
    const std::vector<int64_t> rows = {r.info->rows - 1, 0, r.info->rows - 1};
    attempt(r.picked, [&] { return Api::rows(path, rows, o); });
  }
  if (r.info) attempt(r.past_end, [&] { return Api::range(path, r.info->rows, 1, o); });
  return r;
}

bool same_info(const std::optional<data::ShardInfo>& a, const std::optional<data::ShardInfo>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || (a->layout == b->layout && a->rows == b->rows && a->row_width == b->row_width);
}

template <typename T>
bool same(const std::optional<std::vector<T>>& a, const std::optional<std::vector<T>>& b) {
  return a.has_value() == b.has_value() && (!a || *a == *b);
}

bool same_packed(const std::optional<std::vector<data::PackedRow>>& a,
                 const std::optional<std::vector<data::PackedRow>>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  if (a->size() != b->size()) return false;
  for (size_t i = 0; i < a->size(); ++i)
    if ((*a)[i].samples != (*b)[i].samples) return false;
  return true;
}

void check_sample(const Sample& s, const ReadOptions& o) {
  mlbert::fuzz::check_sample_promises(s, o, o.format.max_predictions_per_seq);
}

void check_promises(const Reads& r, const ReadOptions& o) {
  if (r.samples) {
    if (!r.info) std::abort();  // read_shard inspects the shard first
    for (const Sample& s : *r.samples) check_sample(s, o);
  }
  if (r.packed) {
    if (!r.info || r.info->layout != Layout::kPacked) std::abort();
    if (static_cast<int64_t>(r.packed->size()) != r.info->rows) std::abort();
    for (const auto& row : *r.packed) {
      if (row.samples.empty() ||
          static_cast<int32_t>(row.samples.size()) > o.format.max_sequences_per_row ||
          row.length() > o.format.max_seq_length)
        std::abort();
      for (const Sample& s : row.samples) check_sample(s, o);
    }
  }
  // Lengths read alone must match the lengths of the rows read whole.
  if (r.lengths && r.samples && r.info->layout != Layout::kPacked) {
    if (r.lengths->size() != r.samples->size()) std::abort();
    for (size_t i = 0; i < r.samples->size(); ++i)
      if ((*r.lengths)[i] != (*r.samples)[i].length()) std::abort();
  }
  if (r.lengths && r.packed) {
    if (r.lengths->size() != r.packed->size()) std::abort();
    for (size_t i = 0; i < r.packed->size(); ++i)
      if ((*r.lengths)[i] != (*r.packed)[i].length()) std::abort();
  }
  if (r.picked) {
    for (const Sample& s : *r.picked) check_sample(s, o);
    if (r.samples && r.info->layout != Layout::kPacked) {
      const auto& all = *r.samples;
      const auto& p = *r.picked;
      if (p.size() != 3 || p[0] != all.back() || p[1] != all.front() || p[2] != all.back())
        std::abort();
    }
  }
  if (r.past_end) std::abort();  // rows past the end are an error, never a read
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A hang inside HDF5 ends as a contained error well before libFuzzer's own -timeout. Reading a
  // seed-sized shard takes milliseconds; each input that hangs HDF5 costs the whole limit, spent
  // spinning in the reader (CI's rate: 12 executions a second with 3 s, 21 with 1 s; BENCHMARKS.md
  // for 0.25 s). A read cut short on a busy machine only skips that input's in-process pass.
  setenv("MLBERT_SHARD_READ_TIMEOUT", "0.25", 0);
  const auto reader =
      std::filesystem::read_symlink("/proc/self/exe").parent_path() / "mlbert-shard-reader-fuzz";
  setenv("MLBERT_SHARD_READER", reader.c_str(), 0);
  // These options reach only the reader processes (this process's sanitizer has read its own).
  // Their reports go to /dev/null unless MLBERT_SHARD_READER_LOG names a file, so they are not
  // symbolized then: each crash of the reader would otherwise start llvm-symbolizer.
  std::string asan = kAsanOptions;
  const char* log = std::getenv("MLBERT_SHARD_READER_LOG");
  if (!log || !*log) asan += ":symbolize=0";
  if (const char* given = std::getenv("ASAN_OPTIONS"); given && *given)
    asan += std::string(":") + given;
  setenv("ASAN_OPTIONS", asan.c_str(), 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const auto path = mlbert::fuzz::scratch_dir() / "shard.hdf5";
  mlbert::fuzz::write_file(path, bytes, size);
  ReadOptions o;
  o.vocab_size = kVocabSize;
  const Reads contained = read_all<Contained>(path, o);
  check_promises(contained, o);
  if (contained.hdf5_failed) return 0;  // the library would crash or hang this process too
  const Reads direct = read_all<Direct>(path, o);
  if (direct.hdf5_failed) std::abort();  // only the reader process reports these
  if (!same_info(contained.info, direct.info) || !same(contained.lengths, direct.lengths) ||
      !same(contained.samples, direct.samples) || !same_packed(contained.packed, direct.packed) ||
      !same(contained.picked, direct.picked) || !same(contained.past_end, direct.past_end))
    std::abort();
  H5garbage_collect();  // HDF5's free lists would otherwise grow with every input
  return 0;
}
