// Student's t distribution and the RCP bisection. The incomplete beta function is evaluated with
// the continued fraction on whichever side of its mean converges fast, so the t tail keeps full
// relative precision; p-values below 0.05 are all the bisection ever looks at.
#include "mlperf_logging/rcp/stats.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlbert::logging {
namespace {

// Continued fraction of I_x(a, b) (the part after the x^a (1-x)^b / (a B(a,b)) prefactor), by the
// modified Lentz method. Converges quickly for x < (a + 1) / (a + b + 2).
double incomplete_beta_fraction(double a, double b, double x) {
  constexpr int kMaxIterations = 1000;
  constexpr double kEpsilon = 1e-16;
  constexpr double kTiny = 1e-300;
  const double qab = a + b;
  const double qap = a + 1.0;
  const double qam = a - 1.0;
  double c = 1.0;
  double d = 1.0 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    // Even step.
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    // Odd step.
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < kEpsilon) return h;
  }
  // Only reachable for parameters far outside what a t-test produces (dof in the millions).
  throw std::runtime_error(
      "incomplete beta continued fraction did not converge for a=" + std::to_string(a) +
      " b=" + std::to_string(b) + " x=" + std::to_string(x));
}

double log_beta(double a, double b) {
  return std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b);
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0.0) || !(b > 0.0))
    throw std::invalid_argument("incomplete beta needs a > 0 and b > 0");
  if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double log_front = a * std::log(x) + b * std::log1p(-x) - log_beta(a, b);
  if (x < (a + 1.0) / (a + b + 2.0)) {
    return std::exp(log_front) * incomplete_beta_fraction(a, b, x) / a;
  }
  return 1.0 - std::exp(log_front) * incomplete_beta_fraction(b, a, 1.0 - x) / b;
}

double student_t_sf(double t, double dof) {
  if (!(dof > 0.0)) throw std::invalid_argument("Student t needs dof > 0");
  if (std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return t > 0 ? 0.0 : 1.0;
  // P(|T| > |t|) = I_{dof/(dof+t^2)}(dof/2, 1/2); for small |t| the complementary form keeps the
  // argument away from 1 where the subtraction would lose digits.
  const double t2 = t * t;
  double tail;  // P(T > |t|)
  if (t2 < dof) {
    const double x = t2 / (dof + t2);
    tail = 0.5 * (1.0 - regularized_incomplete_beta(0.5, 0.5 * dof, x));
  } else {
    const double x = dof / (dof + t2);
    tail = 0.5 * regularized_incomplete_beta(0.5 * dof, 0.5, x);
  }
  return t >= 0 ? tail : 1.0 - tail;
}

double student_t_cdf(double t, double dof) {
  return student_t_sf(-t, dof);
}

TTest pooled_t_test(double mean1, double std1, double n1, double mean2, double std2, double n2) {
  // scipy drops the variance of a one-observation sample (its (n-1) factor is 0 anyway).
  const double v1 = n1 == 1 ? 0.0 : std1 * std1;
  const double v2 = n2 == 1 ? 0.0 : std2 * std2;
  const double dof = n1 + n2 - 2.0;
  const double pooled_variance = ((n1 - 1) * v1 + (n2 - 1) * v2) / dof;
  const double denom = std::sqrt(pooled_variance * (1.0 / n1 + 1.0 / n2));
  const double t = (mean1 - mean2) / denom;
  return {t, dof, 2.0 * student_t_sf(std::fabs(t), dof)};
}

double rcp_one_sided_p_value(const TTest& test) {
  return test.t < 0 ? test.p_two_sided / 2 : 1 - test.p_two_sided / 2;
}

double min_acceptable_mean(double mean, double stdev, double reference_runs, double submission_runs,
                           double alpha, double tolerance) {
  if (stdev == 0) return mean;
  double mean_max = mean;
  double mean_min = 0.0;
  double mean_mid = (mean_min + mean_max) / 2;
  // The official checker passes the reference run count as the first sample's size and the
  // submission's as the second; both share the reference stdev. Kept in that order.
  while (mean_max - mean_min > tolerance) {
    const TTest test = pooled_t_test(mean_mid, stdev, reference_runs, mean, stdev, submission_runs);
    if (rcp_one_sided_p_value(test) > alpha) {
      mean_max = mean_mid;
    } else {
      mean_min = mean_mid;
    }
    mean_mid = (mean_min + mean_max) / 2;
  }
  return mean_mid;
}

namespace {
// numpy's pairwise summation (the order np.sum and np.mean add float64 values in), so means and
// standard deviations agree with the official checker to the last bit.
double numpy_pairwise_sum(const double* a, std::size_t n) {
  constexpr std::size_t kBlock = 128;
  if (n < 8) {
    double sum = -0.0;  // numpy starts from -0.0 so that a sum of -0.0s stays -0.0
    for (std::size_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= kBlock) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  std::size_t half = n / 2;
  half -= half % 8;
  return numpy_pairwise_sum(a, half) + numpy_pairwise_sum(a + half, n - half);
}
}  // namespace

double rcp_olympic_mean(std::span<const double> sorted_values, int drop) {
  if (sorted_values.size() <= static_cast<std::size_t>(2 * drop)) {
    return std::numeric_limits<double>::quiet_NaN();  // np.mean of an empty slice
  }
  const std::size_t count = sorted_values.size() - 2 * drop;
  return numpy_pairwise_sum(sorted_values.data() + drop, count) / static_cast<double>(count);
}

double population_stdev(std::span<const double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(values.size());
  const double mean = numpy_pairwise_sum(values.data(), values.size()) / n;
  std::vector<double> squared(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double deviation = values[i] - mean;
    squared[i] = deviation * deviation;
  }
  return std::sqrt(numpy_pairwise_sum(squared.data(), squared.size()) / n);
}

double round_to_3_decimals(double x) {
  if (!std::isfinite(x)) return x;
  if (std::fabs(x) >= 1e15) return x;  // no fractional digits left at this magnitude
  // printf rounds the exact binary value correctly (ties to even), as CPython's round() does.
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3f", x);
  return std::strtod(buffer, nullptr);
}

}  // namespace mlbert::logging
