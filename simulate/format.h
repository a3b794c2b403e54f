// Numbers as the simulator's assumptions and convergence source write them (internal).
#pragma once

#include <cmath>
#include <sstream>
#include <string>

#include "common/thousands.h"

namespace mlbert::simulate {

// A count rounded to a whole number, its thousands grouped ("2,932,736").
inline std::string format_count(double x) {
  return group_thousands(std::to_string(std::llround(x)));
}

// `x` to `precision` significant digits, as a stream writes it ("172", "0.7").
inline std::string format_number(double x, int precision) {
  std::ostringstream s;
  s.precision(precision);
  s << x;
  return s.str();
}

}  // namespace mlbert::simulate
