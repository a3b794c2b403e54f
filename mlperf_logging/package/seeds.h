// The package checker's seed rule for a closed-division result folder: every run logs a seed, and
// no two runs log the same seed from the same source line (file and lineno of the seed record).
// Design choice: seeds compare as Python's int() of the logged value, as the official checker
// compares them, so "42", 42 and 42.0 are one seed.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace mlbert::logging {

// The errors of the seed rule over `files` (the result logs of one folder), each naming its file.
// A file with an unreadable seed record is an error and contributes no seeds, as officially.
std::vector<std::pair<std::filesystem::path, std::string>> check_seeds(
    const std::vector<std::filesystem::path>& files);

}  // namespace mlbert::logging
