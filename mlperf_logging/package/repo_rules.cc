// The repository checks of the official repo_checker (repo_rules.h).
#include "mlperf_logging/package/repo_rules.h"

#include <algorithm>
#include <system_error>

#include "mlperf_logging/package/layout.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;

// os.path.basename: what follows the last '/', "" for "pkg/".
std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool refused_name(const std::string& name) {
  return name.starts_with(".") || name.find(' ') != std::string::npos;
}

// os.path.exists(os.readlink(link)): the target as written, from the current directory.
bool link_target_exists(const std::string& link) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(link, ec);
  if (ec) return true;  // not readable as a link: nothing the official check would see
  return fs::exists(target, ec);
}

struct Walk {
  std::vector<std::string> dirs;
  std::vector<std::string> files;
};

// Top-down like os.walk: a folder, then its subfolders; links to folders are listed as folders by
// os.walk but never entered, and never reach its lists of folders walked or files.
void walk(const std::string& dir, Walk& out) {
  out.dirs.push_back(dir);
  std::error_code ec;
  std::vector<std::string> subdirs;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const std::string path = os_path_join(dir, name);
    const bool is_link = fs::is_symlink(fs::symlink_status(path, ec));
    if (fs::is_directory(path, ec)) {
      if (!is_link) subdirs.push_back(path);
    } else {
      out.files.push_back(path);
    }
  }
  for (const auto& sub : subdirs) walk(sub, out);
}

}  // namespace

RepoFindings check_repository(const std::string& folder) {
  std::error_code ec;
  if (!fs::exists(folder, ec)) throw AuditError(folder + ": no such directory");
  if (!fs::is_directory(folder, ec)) throw AuditError(folder + ": not a directory");
  Walk tree;
  walk(folder, tree);
  RepoFindings findings;
  for (const auto& dir : tree.dirs)
    if (refused_name(basename_of(dir))) findings.bad_names.push_back(dir);
  for (const auto& file : tree.files)
    if (refused_name(basename_of(file))) findings.bad_names.push_back(file);
  for (const auto& file : tree.files) {
    const auto status = fs::symlink_status(file, ec);
    if (fs::is_symlink(status)) {
      if (!link_target_exists(file)) findings.broken_links.push_back(file);
    } else if (fs::is_regular_file(status) && fs::file_size(file, ec) > kRepoFileSizeLimit) {
      findings.large_files.push_back(file);
    }
  }
  return findings;
}

}  // namespace mlbert::logging
