// The statistics behind the RCP check: Student's t distribution (via the regularized incomplete
// beta function), the pooled two-sample t-test and the bisection for the minimum acceptable mean.
// Everything follows the official rcp_checker's arithmetic step by step (same operand order), so
// the bisection walks the same path and lands within its 1e-4 tolerance of the official value.
#pragma once
#include <cstdint>
#include <span>

namespace mlbert::logging {

// I_x(a, b) for a, b > 0 and 0 <= x <= 1, by Lentz's continued fraction (relative error ~1e-15).
double regularized_incomplete_beta(double a, double b, double x);

// P(T <= t) for Student's t with `dof` > 0 degrees of freedom.
double student_t_cdf(double t, double dof);
// P(T > t), accurate in the far tail (no 1 - cdf cancellation).
double student_t_sf(double t, double dof);

// scipy.stats.ttest_ind_from_stats(..., equal_var=True): the pooled-variance t statistic.
struct TTest {
  double t;
  double dof;
  double p_two_sided;
};
TTest pooled_t_test(double mean1, double std1, double n1, double mean2, double std2, double n2);

// The RCP checker's one-sided p-value: P(T <= t), computed from the two-sided p as it does.
double rcp_one_sided_p_value(const TTest& test);

// Largest mean (to within `tolerance`) whose one-sided t-test against the reference still has
// p <= alpha, found by bisection on [0, mean]. `reference_runs` is the number of reference runs
// that entered the olympic mean, `submission_runs` the olympic-mean count of a submission (8 for
// BERT). Returns `mean` when stdev is 0, as the official checker does.
double min_acceptable_mean(double mean, double stdev, double reference_runs, double submission_runs,
                           double alpha = 0.05, double tolerance = 1e-4);

// The RCP checker's statistics of one set of reference runs: olympic mean over the sorted values
// without the `drop` lowest and highest, and the population standard deviation of all of them.
double rcp_olympic_mean(std::span<const double> sorted_values, int drop);
double population_stdev(std::span<const double> values);

// Python's round(x, 3) (round half to even on the exact binary value).
double round_to_3_decimals(double x);

}  // namespace mlbert::logging
