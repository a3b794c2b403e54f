// Which run indices a new batch of runs takes in a result folder (`results/<system>/bert`).
//
// Design choice: runs are numbered after every earlier run's result_<N>.txt and train_<N>.out,
// so a second demo adds its logs beside the first one's and never empties the folder; replacing
// earlier results takes an explicit request, which removes only their files and lists them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace mlbert::harness {

// The run index in an earlier run's file name, result_<N>.txt or train_<N>.out, or -1. A killed
// run's result_<N>.txt.partial does not count: `mlbert train` reuses that index (result_log.h).
long earlier_run_index(const std::string& file_name);

struct RunNumbering {
  int first = 0;                                 // the new runs' first index
  std::vector<std::filesystem::path> removed;    // replace: the earlier runs' files, removed
  std::vector<std::filesystem::path> leftovers;  // killed runs' partial logs, removed
};

// Creates `result_dir` if needed. Without `replace`, the index after every earlier run's; with
// it, the earlier runs' files are removed and the runs start at 0. Throws naming the entry when
// something under an earlier run's name is not a file (replace removes only files). Either way
// the leftovers of killed runs, which no new run would reuse, are removed first: partial logs no
// live run holds (result_log.h), console temporaries whose writer died (atomic_file.h).
RunNumbering number_new_runs(const std::filesystem::path& result_dir, bool replace);

}  // namespace mlbert::harness
