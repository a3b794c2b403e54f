// Output options that name standard output: `--out -` (or `/dev/stdout`) writes a text output to
// stdout instead of a file, as `report --out -` or `simulate --plot -` allow.
//
// Design choice: the names are recognised before the atomic writer sees them, because what
// /dev/stdout resolves to (a pipe, a terminal) is exactly what AtomicFile refuses, and a file
// named "-" is never what a user means. Every write to stdout is checked; a failed one throws the
// same words the final stdout check prints, so the command ends with one line and exit 2.
#pragma once

#include <filesystem>
#include <string_view>

namespace mlbert::files {

// True for "-" and "/dev/stdout" as given on a command line.
bool names_standard_output(const std::filesystem::path& path);

// Writes `content` to standard output (flushed) when `path` names it, else atomically to `path`
// (atomic_file.h). Throws on a failed write, with errno's text.
void write_output(const std::filesystem::path& path, std::string_view content);

}  // namespace mlbert::files
