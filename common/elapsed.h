// Seconds on the steady clock since a time point (progress lines, phase timings, benchmarks).
#pragma once
#include <chrono>

namespace mlbert {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace mlbert
