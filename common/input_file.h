// Input files named on a command line, in a config or found in a folder: opened only after checking
// that they can be read as regular files, so that the error names the file and says why.
//
// On Linux a folder opens as a stream and only its first read fails; libstdc++ then either throws
// "basic_filebuf::underflow error reading the file: Is a directory" from inside a parser (no file
// named) or lets a getline loop read the folder as an empty file. A FIFO blocks the open until a
// writer comes, a device like /dev/zero never ends: anything but a regular file is refused.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace mlbert::files {

// "a directory", "a FIFO", "a character device", "a block device", "a socket", "a symlink" or
// "a regular file": a file type (st_mode) as a message names it.
std::string file_type_name(mode_t mode);

// Why `path` cannot be read as a regular file ("no such file", "is a directory, not a file",
// "is a FIFO, not a regular file", or the system's reason, e.g. "Too many levels of symbolic
// links" or "Permission denied"), or an empty string when it can.
std::string unreadable_reason(const std::filesystem::path& path);

// Why `path` is no folder to read ("no such directory", "not a directory", or the system's
// reason, e.g. "Too many levels of symbolic links"), or an empty string when it is one.
std::string directory_reason(const std::filesystem::path& path);

// `path` opened for reading (binary), or std::runtime_error("<path>: cannot open <what>:
// <reason>").
std::ifstream open_input(const std::filesystem::path& path, std::string_view what);

// A read-only descriptor of the regular file `path` (close-on-exec), opened without blocking on a
// FIFO; std::runtime_error("<path>: <reason>") otherwise.
int open_regular_file(const std::filesystem::path& path);

}  // namespace mlbert::files
