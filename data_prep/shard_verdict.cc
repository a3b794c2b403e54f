// The shard's verdict: valid, and what its length index says of it.
#include "data_prep/shard_verdict.h"

#include <algorithm>
#include <exception>

#include "data_prep/length_index.h"

namespace mlbert::data {
namespace fs = std::filesystem;
namespace {

// What `index_file` records of `shard` against the file as it is now; "" when it matches.
std::string index_mismatch(const fs::path& index_file, const fs::path& shard,
                           const ShardInfo& info) {
  LengthIndex index;
  try {
    index = read_length_index(index_file);
  } catch (const std::exception& e) {
    return "cannot be read (" + std::string(e.what()) + ")";
  }
  const std::string name = indexed_path(index_file.parent_path(), shard);
  const auto entry = std::find_if(index.shards.begin(), index.shards.end(),
                                  [&](const IndexedShard& s) { return s.path == name; });
  if (entry == index.shards.end()) return "does not list it";
  if (entry->rows != static_cast<uint64_t>(info.rows))
    return "records " + std::to_string(entry->rows) + " rows";
  if (entry->layout != info.layout)
    return std::string("records the ") + layout_name(entry->layout) + " layout";
  std::error_code ec;
  const auto bytes = fs::file_size(shard, ec);
  if (ec || entry->file_bytes != bytes || entry->content_hash != shard_content_hash(shard))
    return "records other content (the shard changed after it was indexed)";
  return "";
}

}  // namespace

std::string shard_verdict(const fs::path& shard, const ShardInfo& info, int64_t sequences) {
  const std::string valid = std::string("verdict: valid ") + layout_name(info.layout) +
                            " shard, " + std::to_string(info.rows) + " rows, " +
                            std::to_string(sequences) + " sequences";
  const fs::path folder = shard.has_parent_path() ? shard.parent_path() : fs::path(".");
  std::error_code ec;
  for (const fs::path& index : {length_index_path(shard), folder / "lengths.index"}) {
    if (!fs::exists(index, ec)) continue;
    const std::string mismatch = index_mismatch(index, shard, info);
    if (mismatch.empty()) return valid + "; " + index.string() + " describes it as it is";
    return valid + "; but " + index.string() + " " + mismatch +
           ": a trainer refuses it until `mlbert data index " + folder.string() + "` rebuilds it";
  }
  return valid + "; no length index beside it (`mlbert data index " + folder.string() +
         "` writes one)";
}

}  // namespace mlbert::data
