// The mark of an unfinished prep (see unfinished_prep.h). Its text: a first line
// "mlbert data prep <machine key> <pid>", then one planned shard per line as the index names it.
#include "data_prep/unfinished_prep.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/atomic_file.h"
#include "data_prep/length_index.h"

namespace mlbert::data {
namespace {

namespace fs = std::filesystem;

constexpr char kMarkName[] = ".mlbert-prep-unfinished";
constexpr char kHeader[] = "mlbert data prep";

struct Mark {
  std::string machine;
  long pid = 0;
  std::vector<std::string> shards;  // as the index names them: relative to the folder
};

// Reads the mark in `dir`; false when there is none. A mark that cannot be parsed still counts
// (as one of no known writer).
bool read_mark(const fs::path& dir, Mark& mark) {
  std::error_code ec;
  if (!fs::exists(unfinished_prep_mark(dir), ec)) return false;
  std::ifstream in(unfinished_prep_mark(dir));
  std::string line;
  if (std::getline(in, line) && line.starts_with(kHeader)) {
    std::istringstream words(line.substr(sizeof kHeader - 1));
    words >> mark.machine >> mark.pid;
  }
  while (std::getline(in, line))
    if (!line.empty()) mark.shards.push_back(line);
  return true;
}

bool written_by_this_process(const Mark& mark) {
  return mark.machine == files::machine_key() && mark.pid == static_cast<long>(::getpid());
}

}  // namespace

fs::path unfinished_prep_mark(const fs::path& dir) {
  return dir / kMarkName;
}

void refuse_unfinished_prep(const fs::path& dir) {
  Mark mark;
  if (!read_mark(dir, mark) || written_by_this_process(mark)) return;
  if (mark.machine == files::machine_key() && files::process_alive(mark.pid))
    throw std::runtime_error(
        dir.string() + ": `mlbert data prep` (pid " + std::to_string(mark.pid) +
        ") is writing this folder now; its shards are not whole until it ends");
  throw std::runtime_error(dir.string() +
                           ": a `mlbert data prep` into this folder did not finish (killed?): its "
                           "shards and length index may not match; rerun the prep into it (" +
                           unfinished_prep_mark(dir).filename().string() + " marks it)");
}

std::vector<fs::path> unfinished_prep_shards(const fs::path& dir) {
  Mark mark;
  std::vector<fs::path> shards;
  if (!read_mark(dir, mark)) return shards;
  for (const std::string& name : mark.shards) {
    const fs::path shard = (dir / name).lexically_normal();
    // Only what lies inside the folder: a damaged mark must not remove files elsewhere.
    if (!fs::path(name).is_absolute() && indexed_path(dir, shard).find("..") != 0)
      shards.push_back(shard);
  }
  return shards;
}

void mark_prep_unfinished(const fs::path& dir, const std::vector<fs::path>& planned) {
  std::string text =
      std::string(kHeader) + " " + files::machine_key() + " " + std::to_string(::getpid()) + "\n";
  for (const fs::path& shard : planned) text += indexed_path(dir, shard) + "\n";
  files::write_file_atomically(unfinished_prep_mark(dir), text);  // fsynced with its folder
}

void mark_prep_finished(const fs::path& dir) {
  std::error_code ec;
  fs::remove(unfinished_prep_mark(dir), ec);
  if (ec)
    throw std::runtime_error(unfinished_prep_mark(dir).string() +
                             ": cannot remove it: " + ec.message());
  files::sync_directory(dir);
}

}  // namespace mlbert::data
