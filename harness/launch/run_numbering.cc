#include "harness/launch/run_numbering.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string_view>

#include "common/atomic_file.h"

namespace mlbert::harness {

namespace fs = std::filesystem;

long earlier_run_index(const std::string& file_name) {
  std::string_view rest = file_name;
  std::string_view suffix;
  if (rest.starts_with("result_")) {
    rest.remove_prefix(7);
    suffix = ".txt";
  } else if (rest.starts_with("train_")) {
    rest.remove_prefix(6);
    suffix = ".out";
  } else {
    return -1;
  }
  long index = -1;
  const char* last = rest.data() + rest.size();
  const auto [end, ec] = std::from_chars(rest.data(), last, index);
  const bool whole = ec == std::errc() && end != rest.data() && index >= 0 &&
                     std::string_view(end, static_cast<std::size_t>(last - end)) == suffix;
  return whole ? index : -1;
}

namespace {

// True when `log` (a result_<N>.txt.partial) is held by no live run, and then removes it. A live
// run holds its partial log under an exclusive flock until it renames it.
bool remove_if_abandoned(const fs::path& log) {
  const int fd = ::open(log.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const bool abandoned = ::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::unlink(log.c_str()) == 0;
  ::close(fd);
  return abandoned;
}

std::vector<fs::path> remove_killed_runs_leftovers(const fs::path& result_dir) {
  std::vector<fs::path> removed;
  for (const auto& entry : fs::directory_iterator(result_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".partial") && earlier_run_index(name.substr(0, name.size() - 8)) >= 0) {
      if (remove_if_abandoned(entry.path())) removed.push_back(entry.path());
    } else if (files::is_partial_name(entry.path())) {
      // ".train_<N>.out.partial-<machine>-<pid>-<random>": the final name is before the tag.
      const std::string final_name = name.substr(1, name.find(".partial-") - 1);
      if (earlier_run_index(final_name) >= 0)
        files::remove_dead_temporaries(result_dir, final_name);
    }
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace

RunNumbering number_new_runs(const fs::path& result_dir, bool replace) {
  fs::create_directories(result_dir);
  RunNumbering numbering;
  numbering.leftovers = remove_killed_runs_leftovers(result_dir);
  std::vector<fs::path> earlier;
  long next = 0;
  for (const auto& entry : fs::directory_iterator(result_dir)) {
    const long index = earlier_run_index(entry.path().filename().string());
    if (index < 0) continue;
    next = std::max(next, index + 1);
    earlier.push_back(entry.path());
  }
  if (!replace) {
    numbering.first = static_cast<int>(next);
    return numbering;
  }
  std::sort(earlier.begin(), earlier.end());
  for (const auto& file : earlier)
    if (!fs::is_regular_file(fs::symlink_status(file)))
      throw std::runtime_error(file.string() + ": not a file, so not an earlier run's output; " +
                               "--replace removes only files: move it away first");
  for (const auto& file : earlier) fs::remove(file);
  numbering.removed = std::move(earlier);
  return numbering;
}

}  // namespace mlbert::harness
