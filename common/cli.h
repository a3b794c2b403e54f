// What both mlbert binaries share around CLI11: help grouped by job, unknown-command suggestions,
// usage errors as one line and exit status 2, path checks while parsing, examples in every help.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert::cli {
// What `mlbert --help` groups the commands by. A subcommand joins one with CLI::App::group(); the
// help lists these groups in this order, any other group after them in registration order.
struct CommandGroup {
  std::string_view name;   // what registration passes to group()
  std::string_view title;  // the heading in `mlbert --help`
};
const std::vector<CommandGroup>& command_groups();

// What both mlbert binaries' main does with their registered subcommands, in order:
//  - an unknown command word is an error naming it and the closest known command (exit 2);
//  - so is an option the command does not know, named before any argument is validated;
//  - --version prints what `version` returns (called only then);
//  - parse and run; a CLI11 usage error is one line "mlbert: error: <command>: ..." plus a hint
//    (exit 2), any other exception one line "mlbert: error: ..." (exit 2);
//  - a write to standard output that failed (a full disk, a file size limit) is one line
//    "mlbert: error: writing to standard output failed..." (exit 2), whatever the command did;
//  - otherwise returns `exit_code` as the subcommand set it.
// The top-level help lists the commands by group, one line each.
int run_cli(CLI::App& app, int argc, char** argv, const int& exit_code,
            const std::function<std::string()>& version);

// The known command closest to `word` by edit distance, or "" when none is close enough to suggest.
std::string closest_command(std::string_view word, const std::vector<std::string>& known);

// Validators for path arguments, checked while the command line is parsed, so that a missing path
// is the first thing reported (before a missing option or anything the command would infer).
// They throw PathError, which run_cli prints as "mlbert: error: <path>: no such ...".
struct PathError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Anything that exists and is not a directory (a file, /dev/null, a pipe).
const CLI::Validator& existing_file();
const CLI::Validator& existing_directory();
const CLI::Validator& existing_path();

// "Example:\n  <command>": every command's help ends with one (set it after adding subcommands:
// CLI11 copies a parent's footer into subcommands added later).
void set_example(CLI::App& command, const std::string& example);
}  // namespace mlbert::cli
