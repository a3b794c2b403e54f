// libFuzzer target: shards that are well-formed HDF5 files of any content, read in this process
// through every entry point of hdf5_direct.h, the one-shot readers and the kept-open ShardReader.
//
// fuzz_data_shard feeds HDF5 arbitrary bytes; HDF5 itself then hangs or crashes on many of them,
// which the shard reader process contains, and that containment (a process and ~13 forks an input)
// holds it to tens of inputs a second. Here the input describes the file instead (shard_spec.h:
// datasets by name, type, variable-length or not, rank, shape, storage, values), and HDF5 writes
// it, so every file is one the library reads correctly: what is fuzzed is the project's handling of
// what a file holds (missing or extra datasets, wrong types, signs, widths and byte orders, ranks
// and shapes that disagree, variable-length columns of any lengths, values out of any range, the
// read options), in this process, at thousands of inputs a second. The promises are those of the
// other target (shard_read_checks.h), plus: on a well-formed file HDF5 defines every value, so rows
// read alone equal the whole shard's exactly in every layout, and the kept-open reader agrees with
// the one-shot readers (same rows, or both refuse).
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "data_prep/hdf5_direct.h"
#include "tests/data_prep/shard_read_checks.h"
#include "tests/data_prep/shard_spec.h"
#include "tests/fuzz/fuzz_scratch.h"

// HDF5's own free lists and type tables, kept until exit, are not this project's leaks.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libhdf5_serial.so\n";
}

namespace {

namespace data = mlbert::data;
namespace fuzz = mlbert::fuzz;
using data::Layout;
using data::Sample;

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

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_data_shard_built: %s\n", what);
  std::abort();
}

// Runs `read`; nullopt when it refused the shard with an error naming the file.
template <typename Read>
auto attempt(const std::filesystem::path& path, Read read) -> std::optional<decltype(read())> {
  try {
    return read();
  } catch (const std::exception& e) {
    if (std::string(e.what()).find(path.string()) == std::string::npos) {
      std::fprintf(stderr, "error: %s\n", e.what());
      fail("an error that does not name the file");
    }
    return std::nullopt;
  }
}

// The kept-open reader against the one-shot readers' results `r`.
void check_kept_open(const std::filesystem::path& path, const data::ReadOptions& o,
                     const fuzz::Reads& r) {
  auto reader = attempt(path, [&] { return data::direct::ShardReader(path); });
  if (!reader) {
    if (r.samples || r.packed)
      fail("the kept-open reader refused a shard the one-shot readers read");
    return;
  }
  if (!r.info) fail("the kept-open reader opened a shard inspect_shard refused");
  if (reader->layout() != r.info->layout || reader->rows() != r.info->rows)
    fail("the kept-open reader and inspect_shard differ in layout or rows");
  if (r.info->layout == Layout::kPacked) {
    const auto packed = attempt(path, [&] { return reader->read_packed(o); });
    if (!fuzz::same_packed(packed, r.packed)) fail("read_packed differs from read_packed_shard");
    return;
  }
  const auto all = attempt(path, [&] { return reader->read_range(0, reader->rows(), o); });
  if (!fuzz::same(all, r.samples)) fail("the kept-open read_range differs from read_shard");
  if (r.info->rows > 0) {
    const std::vector<int64_t> rows = {r.info->rows - 1, 0, r.info->rows - 1};
    const auto picked = attempt(path, [&] { return reader->read_rows(rows, o); });
    if (!fuzz::same(picked, r.picked)) fail("the kept-open read_rows differs from read_rows");
  }
  if (attempt(path, [&] { return reader->read_range(r.info->rows, 1, o); }))
    fail("the kept-open reader read a row past the end");
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

// Mostly one structure-aware change (shard_spec.h, mutate_spec); one time in four libFuzzer's own
// byte-level mutation, which also reaches specs the structured changes do not (framing cut short,
// counts past what follows).
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::minstd_rand rng(seed);
  if (rng() % 4 == 0) return LLVMFuzzerMutate(data, size, max_size);
  fuzz::ShardSpec spec = fuzz::parse_spec(data, size);
  const int changes = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < changes; ++i) fuzz::mutate_spec(spec, rng);
  const std::vector<uint8_t> bytes = fuzz::encode_spec(spec);
  if (bytes.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  data::direct::initialize_hdf5();  // also silences HDF5's error printing, for writing too
  // Larger limits on HDF5's free lists: with the defaults each open frees its metadata cache
  // (a calloc of ~1 MB) to the system at close, and under ASan every open then faults in fresh
  // zeroed pages (two thirds of the target's time in the kernel, 2026-12-04). Kept, the blocks
  // are reused. Bounded (64 MiB a kind, 16 MiB a list), as blocks of every size the inputs ask
  // for would otherwise be kept for good.
  constexpr int kMiB = 1 << 20;
  H5set_free_list_limits(64 * kMiB, 16 * kMiB, 64 * kMiB, 16 * kMiB, 64 * kMiB, 16 * kMiB);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const auto path = fuzz::scratch_dir() / "built.hdf5";
  const fuzz::ShardSpec spec = fuzz::parse_spec(bytes, size);
  fuzz::build_shard(spec, path);
  const data::ReadOptions o = spec.read_options();
  const fuzz::Reads r = fuzz::read_all<Direct>(path, o);
  fuzz::check_promises(r, o);
  // HDF5 defines every value of a well-formed file: rows read alone equal the whole shard's
  // exactly, variable-length values included (check_promises compares those only by length).
  if (r.picked && r.samples && r.info->layout == Layout::kVarlen) {
    const auto& all = *r.samples;
    const auto& p = *r.picked;
    if (p[0] != all.back() || p[1] != all.front() || p[2] != all.back())
      fail("varlen rows read alone differ from the whole shard's");
  }
  check_kept_open(path, o, r);
  return 0;
}
