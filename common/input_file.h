// Input files named on a command line or in a config: opened only after checking that they can be
// read as files, so that the error names the file and says why.
//
// On Linux a folder opens as a stream and only its first read fails; libstdc++ then either throws
// "basic_filebuf::underflow error reading the file: Is a directory" from inside a parser (no file
// named) or lets a getline loop read the folder as an empty file.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace mlbert::files {

// Why `path` cannot be read as a file ("no such file", "is a directory, not a file", or the
// system's reason for refusing to open it), or an empty string when it can.
std::string unreadable_reason(const std::filesystem::path& path);

// `path` opened for reading (binary), or std::runtime_error("<path>: cannot open <what>:
// <reason>").
std::ifstream open_input(const std::filesystem::path& path, std::string_view what);

}  // namespace mlbert::files
