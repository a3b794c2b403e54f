// `mlbert data check` (see check_cli.h). Exit status 0 when no shard repeats another, 1 when some
// do, 2 when the folder cannot be read. Each finding is one line an auditor's script can grep, in
// the form `mlbert audit` prints its advisories.
#include "data_prep/check_cli.h"

#include <cstdio>
#include <memory>
#include <string>

#include "common/cli.h"
#include "data_prep/length_index.h"
#include "data_prep/shard_repeats.h"

namespace mlbert::data {
namespace {

int run_check(const std::string& dir) {
  const auto shards = find_shards(dir);
  if (shards.empty()) throw std::runtime_error(dir + ": no HDF5 shards (*.hdf5, *.h5) to check");
  const LengthIndex index = build_length_index(std::filesystem::path(dir), shards);
  const std::vector<ShardRepeat> repeats = find_shard_repeats(index);
  std::size_t repeating = 0;
  for (const ShardRepeat& r : repeats) {
    repeating += r.shards.size() - 1;
    std::string others;
    for (std::size_t i = 1; i < r.shards.size(); ++i) others += (i > 1 ? ", " : "") + r.shards[i];
    std::printf("ADVISE shard-repeat %s/%s: %s %s (%zu rows)%s\n", dir.c_str(),
                r.shards.front().c_str(),
                r.same_bytes ? "is repeated byte for byte by" : "has the same row lengths in the "
                                                                "same order as",
                others.c_str(), r.rows,
                r.same_bytes ? ": the training data holds the same samples several times"
                             : ": probably the same samples written again");
  }
  std::printf("data check: %zu shards, %zu rows; %zu shard%s repeat%s another\n",
              index.shards.size(), index.lengths.size(), repeating, repeating == 1 ? "" : "s",
              repeating == 1 ? "s" : "");
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    throw std::runtime_error("data check: cannot write to standard output");
  return repeats.empty() ? 0 : 1;
}

}  // namespace

void add_check(CLI::App& data, int& exit_code) {
  auto* cmd = data.add_subcommand(
      "check", "find training shards that repeat one another (copies, or the same row lengths)");
  auto dir = std::make_shared<std::string>();
  cmd->add_option("dir", *dir, "a directory of training shards (searched recursively)")
      ->required()
      ->check(cli::existing_directory());
  cmd->callback([dir, &exit_code] { exit_code = run_check(*dir); });
  cmd->footer("Example:\n  mlbert data check /data/hdf5/training-4320/hdf5_4320_shards_varlength");
}

}  // namespace mlbert::data
