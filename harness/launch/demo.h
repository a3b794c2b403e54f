// `mlbert demo` (what `make demo` runs): the whole MLPerf BERT job on one CPU machine, in minutes.
//
// Design choice: the demo drives the same code paths as a real submission, not a shortcut: it
// generates the demo corpus and prepares it with the data library, starts the system's ranks with
// the launcher's own mpirun line (`mlbert bind` + `mlbert train` on every rank), and audits the
// result logs with the logging library's checker, scorer and package check.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace mlbert::harness {

struct DemoOptions {
  int runs = 1;
  std::filesystem::path results_dir = "results";
  std::filesystem::path systems_dir = "systems";
  std::string system = "cpu_demo";
  std::optional<std::int64_t> seed;
  // Remove the earlier runs' result logs and outputs first; without it the new runs take the next
  // free indices beside them.
  bool replace = false;
};

// Returns the exit status: 0 when every run reached the target and every log passed the check
// (and, with 10 runs, the package check).
int run_demo(const DemoOptions& options);

}  // namespace mlbert::harness
