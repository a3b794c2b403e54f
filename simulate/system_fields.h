// The fields of a submission's system description (system.json) as `mlbert simulate --results`
// reads them: counts, texts, and whether the accelerator is one the simulator models.
//
// Design choice: the MLPerf schema writes every field as a string, and submitters write counts as
// "8", 8 or "8.0"; a count is accepted only as a whole number, and a field that is wrong is named
// with its file, never replaced by a default.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace mlbert::simulate {

// `field` of `system` as a whole number >= 1 ("8", 8, "8.0"); throws std::invalid_argument naming
// `file` and the field otherwise.
int positive_count(const nlohmann::json& system, const char* field,
                   const std::filesystem::path& file);

// `field` of `system` when it is a string, else "".
std::string string_field(const nlohmann::json& system, const char* field);

// Why the network model cannot describe this accelerator (a TPU or IPU, a PCIe card), naming
// `system_file`, or nullopt.
std::optional<std::string> unmodelled_accelerator(const std::string& accelerator,
                                                  const std::filesystem::path& system_file);

}  // namespace mlbert::simulate
