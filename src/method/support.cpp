#include "method/support.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "method/step_rules.hpp"

namespace esi::method::detail {

double weighted_rms(const double* err, const double* u0, const double* u1, std::size_t n,
                    double rtol, double atol, const double* atol_each) {
  if (n == 0) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = atol_at(atol, atol_each, i);
    const double scaled = err[i] / (a + rtol * std::max(std::abs(u0[i]), std::abs(u1[i])));
    sum += scaled * scaled;
  }
  return std::sqrt(sum / double(n));
}

std::size_t largest_weighted(const double* v, const double* u0, const double* u1, std::size_t n,
                             double rtol, double atol, const double* atol_each) {
  std::size_t best = 0;
  double best_value = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = atol_at(atol, atol_each, i);
    const double scaled = std::abs(v[i]) / (a + rtol * std::max(std::abs(u0[i]), std::abs(u1[i])));
    if (!std::isfinite(scaled)) return i;
    if (scaled > best_value) best = i, best_value = scaled;
  }
  return best;
}

// Solving ODEs I, II.4, "Starting step size": d0 = ||u0||, d1 = ||f0||, h0 = 0.01 d0/d1,
// one explicit Euler probe for d2 = ||f1 - f0|| / h0, h1 = (0.01 / max(d1, d2))^(1/(p+1)),
// h = min(100 h0, h1). Norms are weighted by atol + rtol |u0_i|.
double hairer_initial_step(const Evaluator& eval, double t0, const double* u0, const double* f0,
                           int order, double rtol, double atol, double* scratch_u,
                           double* scratch_f, const double* atol_each) {
  const std::size_t n = eval.problem->size;
  const double* none = u0;  // the norm's max(|u0|, |u1|) with u1 = u0
  const double d0 = weighted_rms(u0, u0, none, n, rtol, atol, atol_each);
  const double d1 = weighted_rms(f0, u0, none, n, rtol, atol, atol_each);
  const double h0 = hairer_trial_step(d0, d1);
  for (std::size_t i = 0; i < n; ++i) scratch_u[i] = u0[i] + h0 * f0[i];
  eval.rhs(t0 + h0, scratch_u, scratch_f);
  for (std::size_t i = 0; i < n; ++i) scratch_f[i] -= f0[i];
  const double d2 = weighted_rms(scratch_f, u0, none, n, rtol, atol, atol_each) / h0;
  return hairer_starting_step(h0, d1, d2, order);
}

bool leaves_nonnegative_domain(std::span<const double> v, std::span<const int> components) {
  if (components.empty()) return std::any_of(v.begin(), v.end(), [](double x) { return x < 0; });
  return std::any_of(components.begin(), components.end(),
                     [&](int i) { return v[std::size_t(i)] < 0; });
}

std::string state_name(const OdeProblem& problem, std::size_t i) {
  if (i < problem.names.size() && !problem.names[i].empty()) return problem.names[i];
  if (problem.names.empty() && problem.name_of && i < problem.size) return problem.name_of(i);
  return "u[" + std::to_string(i) + "]";
}

double default_dt_min(double t) {
  return 16 * std::numeric_limits<double>::epsilon() *
         std::max(std::abs(t), std::numeric_limits<double>::min());
}

}  // namespace esi::method::detail
