// The power layout rule (see power.h). Findings come in the official checker's order: each run's
// folder in result order, then the runs whose node counts, then switch counts, differ from the
// most common one.
#include "mlperf_logging/package/power.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

#include "mlperf_logging/package/layout.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;

// The node_<i> and sw_<i> indices of one run's power folder.
struct PowerFiles {
  std::vector<long> node_index, sw_index;
  bool names_ok = true;  // every node/sw file ends in _<index>
};

PowerFiles read_power_folder(const fs::path& folder, PackageFindings& findings) {
  PowerFiles files;
  std::size_t total = 0;
  for (const fs::path& entry : sorted_entries(folder)) {
    ++total;
    const std::string file = entry.filename().string();
    const bool node = file.starts_with("node");
    const bool sw = file.starts_with("sw");
    if (!node && !sw) continue;
    const std::string stem = entry.stem().string();
    const std::string suffix =
        stem.substr(stem.rfind('_') == std::string::npos ? 0 : stem.rfind('_') + 1);
    long index = -1;
    const auto [ptr, ec] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), index);
    if (ec != std::errc() || ptr != suffix.data() + suffix.size()) {
      findings.error(entry, "power file name does not end in _<index>");
      files.names_ok = false;
      continue;
    }
    (node ? files.node_index : files.sw_index).push_back(index);
  }
  if (total > files.node_index.size() + files.sw_index.size()) {
    findings.warning(folder, std::to_string(total) + " files, some not named node_<i> or sw_<i>");
  }
  return files;
}

bool in_range(const std::vector<long>& indices) {
  return std::all_of(indices.begin(), indices.end(),
                     [&](long i) { return i >= 0 && i < static_cast<long>(indices.size()); });
}

using RunCounts = std::vector<std::pair<std::string, std::size_t>>;  // (result_N, files)

// Runs whose node (switch) count differs from the most common one (the first of equals).
void flag_outliers(const fs::path& power_folder, const RunCounts& counts, const char* what,
                   PackageFindings& findings, std::set<std::string>& bad) {
  std::map<std::size_t, int> tally;
  std::vector<std::size_t> order;
  for (const auto& [name, count] : counts) {
    if (tally[count]++ == 0) order.push_back(count);
  }
  std::size_t mode = 0;
  int best = -1;
  for (std::size_t count : order) {
    if (tally[count] > best) {
      best = tally[count];
      mode = count;
    }
  }
  for (const auto& [name, count] : counts) {
    if (count != mode) {
      findings.warning(power_folder / name, std::string("inconsistent number of ") + what + " (" +
                                                std::to_string(count) + ", most runs have " +
                                                std::to_string(mode) + ")");
      bad.insert(name);
    }
  }
}

}  // namespace

std::set<std::string> check_power(const fs::path& power_folder,
                                  const std::vector<fs::path>& results, PackageFindings& findings) {
  std::set<std::string> bad;
  RunCounts node_counts, sw_counts;
  for (const fs::path& result : results) {
    const std::string name = result.stem().string();
    const fs::path folder = power_folder / name;
    if (!fs::is_directory(folder)) {
      findings.warning(folder, "package does not contain the power result for " + name);
      bad.insert(name);
      continue;
    }
    const PowerFiles files = read_power_folder(folder, findings);
    if (!files.names_ok || !in_range(files.node_index)) {
      findings.warning(folder, "node power files must be node_<i> with i in [0, " +
                                   std::to_string(files.node_index.size()) + ")");
      bad.insert(name);
    }
    if (!in_range(files.sw_index)) {
      findings.warning(folder, "switch power files must be sw_<i> with i in [0, " +
                                   std::to_string(files.sw_index.size()) + ")");
      bad.insert(name);
    }
    node_counts.emplace_back(name, files.node_index.size());
    sw_counts.emplace_back(name, files.sw_index.size());
  }
  flag_outliers(power_folder, node_counts, "node power files", findings, bad);
  flag_outliers(power_folder, sw_counts, "switch power files", findings, bad);
  return bad;
}

}  // namespace mlbert::logging
