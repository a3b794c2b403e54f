// libFuzzer target: arbitrary bytes as a lengths.index through parse_length_index, twice: as
// given, and with the trailing checksum rewritten to match (so that inputs the mutator made get
// past the checksum and reach the accepted path). A parse gives an exception, or an index that
// keeps its promises: at least one shard, paths distinct and relative, first_row the running sum
// of the row counts, every length non-zero, and serializing it gives back the input's bytes.
#include <xxhash.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <set>
#include <span>
#include <vector>

#include "data_prep/length_index.h"

namespace {

void check(std::span<const std::byte> bytes) {
  using namespace mlbert::data;
  LengthIndex index;
  try {
    index = parse_length_index(bytes, "fuzz.lengths.index");
  } catch (const std::exception&) {
    return;
  }
  if (index.shards.empty()) std::abort();
  std::set<std::string> paths;
  uint64_t rows = 0;
  for (const IndexedShard& s : index.shards) {
    if (s.path.empty() || s.path.front() == '/' || !paths.insert(s.path).second) std::abort();
    if (s.first_row != rows) std::abort();
    rows += s.rows;
  }
  if (rows != index.lengths.size()) std::abort();
  for (uint16_t length : index.lengths)
    if (length == 0) std::abort();
  for (std::size_t i = 0; i < index.shards.size(); ++i)
    if (index.lengths_of(i).size() != index.shards[i].rows) std::abort();
  const std::vector<std::byte> again = serialize_length_index(index);
  if (again.size() != bytes.size() || std::memcmp(again.data(), bytes.data(), bytes.size()) != 0)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  check({bytes, size});
  if (size >= sizeof(uint64_t)) {
    std::vector<std::byte> fixed(bytes, bytes + size);
    const uint64_t sum = XXH3_64bits(fixed.data(), size - sizeof(uint64_t));
    std::memcpy(fixed.data() + size - sizeof(uint64_t), &sum, sizeof(sum));  // little-endian host
    check(fixed);
  }
  return 0;
}
