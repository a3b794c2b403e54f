// The system description fields of a reproduction and of the published result, side by side:
// which ones differ, and which of those make the two runs different experiments.
//
// Design choice: only the shape of the machine fails a comparison (number_of_nodes and
// accelerators_per_node: another accelerator count changes the batch each accelerator trains
// and the communication, so the time to train measures another setup); every other field
// (accelerator model, host processor, interconnect, framework, ...) is what a reproduction on
// another cluster is expected to change, and is reported, never judged.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace mlbert::harness::reproduce {

struct SystemFieldDifference {
  std::string field;
  std::string reproduced, published;  // the values as described, "(not stated)" when absent
  bool fails = false;                 // a field that changes the run's shape
};

// The system description fields compared, in the order they are reported: every field the
// official checker requires that describes the machine and its software.
const std::vector<std::string>& compared_system_fields();

// The compared fields whose values differ (strings compared trimmed; numbers as their text); an
// object field (other_software_stack) compared entry by entry, as "other_software_stack.<entry>".
std::vector<SystemFieldDifference> differing_system_fields(const nlohmann::json& reproduced,
                                                           const nlohmann::json& published);

// The system description of a result folder: `given` when not empty (a description or an mlbert
// system file, whose description fields sit at its top level), else the one `simulate --results`
// and `reproduce plan` find (logging::find_system_description). Sets `file` to the file read;
// returns null with `file` empty when there is none. Throws naming the file when it cannot be
// read or is not a JSON object.
nlohmann::json read_system_description(const std::filesystem::path& results_dir,
                                       const std::filesystem::path& given,
                                       std::filesystem::path& file);

}  // namespace mlbert::harness::reproduce
