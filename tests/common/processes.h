// The process table as tests and benches see it: which processes a process has started (the
// shard reader, its watcher, keeper and read forks), from /proc.
#pragma once
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace mlbert::test {

struct ProcessEntry {
  pid_t pid = -1;
  pid_t ppid = -1;
  char state = '?';  // R, S, D, Z, ...
  std::string comm;  // the executable's name, cut to 15 characters by the kernel
};

// Every process /proc lists now (one that ends while it is read is left out).
inline std::vector<ProcessEntry> process_table() {
  std::vector<ProcessEntry> table;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so up to the last ')'.
    const auto open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    ProcessEntry p;
    p.pid = static_cast<pid_t>(std::stol(pid));
    p.comm = stat.substr(open + 1, close - open - 1);
    std::istringstream rest(stat.substr(close + 1));
    if (rest >> p.state >> p.ppid) table.push_back(p);
  }
  return table;
}

// The processes whose parent is `parent`.
inline std::vector<ProcessEntry> children_of(pid_t parent) {
  std::vector<ProcessEntry> children;
  for (const ProcessEntry& p : process_table())
    if (p.ppid == parent) children.push_back(p);
  return children;
}

// `root`'s live descendants, children before grandchildren.
inline std::vector<ProcessEntry> descendants_of(pid_t root) {
  const std::vector<ProcessEntry> table = process_table();
  std::vector<ProcessEntry> found;
  std::vector<pid_t> parents{root};
  for (std::size_t next = 0; next < parents.size(); ++next)
    for (const ProcessEntry& p : table)
      if (p.ppid == parents[next]) {
        found.push_back(p);
        parents.push_back(p.pid);
      }
  return found;
}

}  // namespace mlbert::test
