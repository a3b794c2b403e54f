// mlbert: the one CLI.
//
// The log toolkit's subcommands (check, score, rcp, system-check, package, report, audit, and the
// official tools' command lines, also reached through a link named after a tool) run in this
// process, which links the toolkit and nothing else: an audit starts in about a millisecond, on an
// auditor's machine without CUDA, MPI or HDF5. Every other subcommand (data, checkpoint, train,
// launch, preflight, bind, demo, simulate, reproduce) is carried out by `mlbert-core`, built and installed next to this
// binary (it links the model, CUDA, NCCL, MPI, HDF5 and OpenBLAS, whose loading alone takes longer
// than checking a log): this process replaces itself with it, same arguments, same exit status.
// tests/harness checks that both list the same subcommands with the same descriptions.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "harness/cli/version.h"
#include "common/cli.h"
#include "mlperf_logging/cli/cli.h"
#include "mlperf_logging/cli/official_cli.h"

namespace {

struct Forwarded {
  const char* name;
  const char* group;        // its group in `mlbert --help` (mlperf_logging/cli/cli.h command_groups)
  const char* description;  // as mlbert-core registers it
};

// The subcommands mlbert-core carries out, in its registration order.
constexpr std::array<Forwarded, 9> kForwarded{{
    {"data", "data", "tokenize, prep, eval-set, stratify, pack, index, inspect shards"},
    {"checkpoint", "model", "inspect, import and export BERT checkpoints (TF, HF, mlbert)"},
    {"train", "train", "one rank of BERT training in an MPI job (see `mlbert launch`)"},
    {"launch", "train", "start `mlbert train` on every GPU of a system (mpirun or Slurm)"},
    {"preflight", "train", "a job's checks on every node: GPUs, NICs, data, allreduce"},
    {"bind", "train", "bind this rank to its GPU's CPUs, NUMA memory and NIC, then run"},
    {"demo", "train", "the whole job on this CPU: corpus, prep, 2-rank training, audit"},
    {"simulate", "train", "predict time to train from a system or a published result"},
    {"reproduce", "train", "plan a published result's reproduction, compare with it"},
}};

std::filesystem::path self_path() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : path;
}

// Runs mlbert-core with this process's arguments; returns only on failure.
int exec_core(int argc, char** argv) {
  const auto self = self_path();
  // mlbert-core's launch lines and the demo's ranks name this binary, the user-facing one.
  if (!self.empty()) ::setenv("MLBERT_EXE", self.c_str(), 1);
  std::filesystem::path core;
  if (const char* env = std::getenv("MLBERT_CORE"); env && *env) {
    core = env;
  } else if (!self.empty()) {
    core = self.parent_path() / "mlbert-core";
  } else {
    std::fprintf(stderr, "mlbert: error: cannot resolve /proc/self/exe to find mlbert-core\n");
    return 2;
  }
  std::vector<char*> args(argv, argv + argc);
  args.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(core.c_str(), args.data());
  std::fprintf(stderr,
               "mlbert: error: `%s` is carried out by mlbert-core, which cannot be run from %s: "
               "%s (set MLBERT_CORE to its path)\n",
               argv[1], core.c_str(), std::strerror(errno));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    for (const auto& f : kForwarded)
      if (std::string_view(argv[1]) == f.name) return exec_core(argc, argv);
    // The comparison is reproduce's, which only mlbert-core links.
    if (mlbert::logging::is_report_comparison(argc, argv)) return exec_core(argc, argv);
  }
  CLI::App app{"mlbert: prepare, run and audit MLPerf Training BERT submissions", "mlbert"};
  app.require_subcommand(1);
  int exit_code = 0;
  mlbert::logging::register_cli(app, exit_code);
  // Listed for --help and suggestions only: a forwarded name never reaches the parser.
  for (const auto& f : kForwarded) app.add_subcommand(f.name, f.description)->group(f.group);
  // A link named after an official tool (`compliance_checker`) runs `mlbert compliance_checker`.
  std::vector<std::string> words = mlbert::logging::command_line_by_program_name(argc, argv);
  mlbert::logging::adapt_official_arguments(app, words);
  std::vector<char*> args;
  for (auto& word : words) args.push_back(word.data());
  args.push_back(nullptr);
  return mlbert::cli::run_cli(app, static_cast<int>(words.size()), args.data(), exit_code,
                              mlbert::version_text);
}
