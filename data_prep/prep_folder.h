// The output folder of one `data prep` run: one run at a time, and never a mix of two runs'
// shards beside one length index.
//
// Design choice: the lock is an flock on the folder itself, taken without waiting. Nothing is
// written to take it, so a killed run leaves no stale lock, and a normal run's folder holds only
// its shards and their index. A second run is refused at once rather than queued: a prep runs for
// hours, and a queued one would then replace the first one's shards.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace mlbert::data {

class PrepFolderLock {
 public:
  // Throws naming `dir` when another process holds it; where the file system has no flock, warns
  // and goes on unlocked.
  explicit PrepFolderLock(const std::filesystem::path& dir);
  ~PrepFolderLock();
  PrepFolderLock(const PrepFolderLock&) = delete;
  PrepFolderLock& operator=(const PrepFolderLock&) = delete;

 private:
  int fd_ = -1;
};

// The shards under `dir` that are not among `planned` (this run's shard paths): an earlier run's,
// which the new length index would otherwise list beside this run's.
std::vector<std::filesystem::path> shards_not_planned(
    const std::filesystem::path& dir, const std::vector<std::filesystem::path>& planned);

// The refusal for `stale` shards of an earlier run in `dir`.
std::string earlier_shards_message(const std::filesystem::path& dir,
                                   const std::vector<std::filesystem::path>& stale);

// After a failed run: removes the shards it had written (`written`), then indexes the shards an
// earlier run left in `dir`, or removes the index when none is left, so that no shard is left
// without an index that describes it. Returns what was done, for the error message.
std::string undo_failed_run(const std::filesystem::path& dir,
                            const std::vector<std::filesystem::path>& written);

}  // namespace mlbert::data
