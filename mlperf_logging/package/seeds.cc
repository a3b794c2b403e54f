// The seed rule (see seeds.h). Every record of a log is validated, as the official checker parses
// the whole log, but only seed records are decoded.
#include "mlperf_logging/package/seeds.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <tuple>

#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/log/pyops.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;

std::string number_key(const nlohmann::json& value) {
  if (value.is_number_float()) {
    const double x = value.get<double>();
    if (std::isfinite(x) && x == std::trunc(x) && std::fabs(x) < 1e18) {
      return std::to_string(static_cast<long long>(x));
    }
  }
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

// Every record is validated (a parse error anywhere fails the seed check, as officially) but only
// seed records are decoded.
mllog::ParseOptions seed_records_only() {
  mllog::ParseOptions options;
  options.wanted = [](std::string_view key, bool key_is_string) {
    return key_is_string && key == "seed" ? mllog::ParseOptions::Want::all
                                          : mllog::ParseOptions::Want::skip;
  };
  return options;
}

}  // namespace

std::vector<std::pair<fs::path, std::string>> check_seeds(const std::vector<fs::path>& files) {
  std::vector<std::pair<fs::path, std::string>> errors;
  std::map<std::tuple<std::string, std::string, std::string>, fs::path> seen;
  for (const fs::path& file : files) {
    struct Seed {
      std::string file, lineno, value;
      std::size_t line;
    };
    std::vector<Seed> seeds;
    std::vector<std::string> problems;
    try {
      mllog::for_each_record(
          file,
          [&](const mllog::LogRecord& record) {
            if (record.key != "seed") return;
            const std::string at = "line " + std::to_string(record.line);
            const auto& meta = record.metadata;
            if (!meta.is_object() || !meta.contains("file") || !meta.contains("lineno")) {
              problems.push_back(at + ": seed record lacks metadata.file or metadata.lineno");
              return;
            }
            std::string why;
            const auto value = mllog::py::int_text(record.value, why);
            if (!value) {
              problems.push_back(at + ": seed value: " + why);
              return;
            }
            seeds.push_back(
                {number_key(meta["file"]), number_key(meta["lineno"]), *value, record.line});
          },
          [&](const mllog::ParseError& error) {
            problems.push_back("line " + std::to_string(error.line) + ": " + error.message);
          },
          seed_records_only());
    } catch (const std::exception& e) {
      problems.push_back(e.what());
    }
    if (!problems.empty()) {
      // As officially: a file with unreadable seed records is an error and contributes no seeds.
      std::string text = "cannot read seeds: " + problems.front();
      if (problems.size() > 1) text += " (and " + std::to_string(problems.size() - 1) + " more)";
      errors.emplace_back(file, text);
      continue;
    }
    if (seeds.empty()) errors.emplace_back(file, "logs no seed");
    for (const Seed& seed : seeds) {
      const auto key = std::make_tuple(seed.file, seed.lineno, seed.value);
      const auto [it, inserted] = seen.emplace(key, file);
      if (!inserted) {
        errors.emplace_back(file, "logs seed " + seed.value + " from " + seed.file + ":" +
                                      seed.lineno + " (line " + std::to_string(seed.line) +
                                      "), the same seed from "
                                      "the same source line as " +
                                      it->second.filename().string());
      }
    }
  }
  return errors;
}

}  // namespace mlbert::logging
