// The prep output folder's lock, its earlier shards, and the undoing of a failed run.
#include "data_prep/prep_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>

#include "data_prep/length_index.h"

namespace mlbert::data {
namespace fs = std::filesystem;

PrepFolderLock::PrepFolderLock(const fs::path& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) {
    throw std::runtime_error(dir.string() + ": cannot open the output folder to lock it: " +
                             std::strerror(errno));
  }
  int rc;
  while ((rc = ::flock(fd_, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    if (error == EWOULDBLOCK) {
      throw std::runtime_error(dir.string() +
                               ": another `mlbert data prep` is writing to this folder; wait "
                               "for it to finish or choose another --output");
    }
    // Some NFS and Lustre mounts have no flock: the prep goes on, as it did before the lock.
    std::fprintf(stderr,
                 "mlbert: warning: %s: cannot lock the output folder (%s); a second prep into it "
                 "would not be refused\n",
                 dir.c_str(), std::strerror(error));
  }
}

PrepFolderLock::~PrepFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

std::vector<fs::path> shards_not_planned(const fs::path& dir,
                                         const std::vector<fs::path>& planned) {
  std::set<std::string> planned_names;
  for (const auto& p : planned) planned_names.insert(indexed_path(dir, p));
  std::vector<fs::path> stale;
  for (auto& shard : find_shards(dir)) {
    if (!planned_names.contains(indexed_path(dir, shard))) stale.push_back(std::move(shard));
  }
  return stale;
}

std::string earlier_shards_message(const fs::path& dir, const std::vector<fs::path>& stale) {
  constexpr size_t kNamed = 3;
  std::string names;
  for (size_t i = 0; i < std::min(stale.size(), kNamed); ++i)
    names += (i ? ", " : "") + indexed_path(dir, stale[i]);
  if (stale.size() > kNamed) names += ", ...";
  return dir.string() + ": holds " + std::to_string(stale.size()) +
         " shard(s) that these inputs do not produce (" + names +
         "), which the new length index would list beside this run's; remove them, choose "
         "another --output, or pass --replace to remove them when this run succeeds";
}

std::string undo_failed_run(const fs::path& dir, const std::vector<fs::path>& written) {
  std::string done;
  std::error_code ec;
  size_t removed = 0;
  for (const auto& shard : written) {
    if (fs::remove(shard, ec)) ++removed;
    if (ec) done += "; could not remove " + shard.string() + ": " + ec.message();
  }
  if (removed) done += "; removed the " + std::to_string(removed) + " shard(s) it had written";
  const fs::path index = length_index_path(dir);
  try {
    const std::vector<fs::path> left = find_shards(dir);
    if (!left.empty()) {
      // Shards of an earlier run (or ones this run had replaced, now gone): the index must say
      // what is there now, not what was.
      index_shards(dir);
      return done + "; " + std::to_string(left.size()) + " shard(s) of an earlier run are left, " +
             "indexed in " + index.string();
    }
  } catch (const std::exception& e) {
    done += "; could not index the shards left (" + std::string(e.what()) + ")";
  }
  if (fs::remove(index, ec)) done += "; removed " + index.string();
  return done;
}

}  // namespace mlbert::data
