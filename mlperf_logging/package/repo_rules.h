// What a public Git repository of MLPerf results refuses, as the official repo_checker tests it
// before a submission is pushed: names that start with "." or hold a space (folders, the submission
// folder as given included, and files), files over 50 MiB, and symbolic links whose target does
// not exist. Design choice: the folder is walked as Python's os.walk walks it (links to folders are
// not followed; a link is a file), and a link's target is looked up as the official tool looks it
// up, relative to the current directory, so the two tools name the same paths.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mlbert::logging {

inline constexpr std::uintmax_t kRepoFileSizeLimit = 50ull * 1024 * 1024;  // bytes, as officially

struct RepoFindings {
  std::vector<std::string> bad_names;     // folders, then files, as os.path.join spells them
  std::vector<std::string> large_files;   // regular files over kRepoFileSizeLimit
  std::vector<std::string> broken_links;  // links whose target does not exist
  bool passed() const { return bad_names.empty() && large_files.empty() && broken_links.empty(); }
};

// Walks `folder` (as given: its spelling starts every path named). Throws AuditError when it is
// not a folder.
RepoFindings check_repository(const std::string& folder);

}  // namespace mlbert::logging
