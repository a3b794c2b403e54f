// In-process timing of the audit library calls behind `mlbert score | rcp | package`, for
// audit_bench.py, which times the official Python tools in the same run and prints the ratios.
// usage: logging_audit_bench REPEAT (score|rcp|package) RULESET DIR  -> median milliseconds
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mlperf_logging/package/package.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/package/score.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s REPEAT (score|rcp|package) RULESET DIR\n", argv[0]);
    return 2;
  }
  const int repeat = std::max(1, std::atoi(argv[1]));
  const std::string what = argv[2];
  const std::string ruleset = argv[3];
  const std::string dir = argv[4];
  namespace lg = mlbert::logging;
  auto once = [&]() -> bool {
    if (what == "score") return lg::score_system(dir, {ruleset, true}).score.has_value();
    if (what == "rcp") {
      lg::RcpOptions options;
      options.ruleset = ruleset;
      return lg::check_rcp_directory(dir, options).passed;
    }
    if (what == "package") {
      lg::PackageOptions options;
      options.ruleset = ruleset;
      return lg::check_package(dir, options).passed;
    }
    std::fprintf(stderr, "unknown command %s\n", what.c_str());
    std::exit(2);
  };
  try {
    once();  // warm the page cache and the RCP statistics' code paths
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i) {
      const auto start = std::chrono::steady_clock::now();
      once();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%.3f\n", ms[ms.size() / 2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "logging_audit_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
