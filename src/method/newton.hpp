// The simplified Newton iteration shared by the ESDIRK, IMEX Euler and additive Runge-Kutta
// steppers (Hairer-Wanner IV.8): the caller holds the factorization of M = I/(h gamma) - J, and
// the iteration stops by the convergence-rate test eta * ||dY|| <= kappa
// (eta = theta / (1 - theta)). A diverging or slow iteration is a failed attempt.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "method/linear_system.hpp"
#include "method/support.hpp"
#include "method/stepper.hpp"

namespace esi::method::detail {

inline constexpr int kMaxNewtonIterations = 10;
inline constexpr double kNewtonKappa = 0.01;  // OrdinaryDiffEq's default κ

/// Solves Y = psi + hg * g(t, Y) for Y with the factorization held by `system` (alpha = 1/hg).
class NewtonSolver {
 public:
  NewtonSolver(const Evaluator& eval, JacobianOf of, const IntegratorOptions& options)
      : eval_(eval), of_(of), rtol_(options.rtol), atol_(options.atol), atol_each_(options.atol_each) {
    const std::size_t n = eval.problem->size;
    g_.resize(n), delta_.resize(n), weights_.resize(n), scratch_.resize(n);
  }

  void set_weights(const double* u0) {
    for (std::size_t m = 0; m < weights_.size(); ++m)
      weights_[m] = 1.0 / (atol_at(atol_, atol_each_.empty() ? nullptr : atol_each_.data(), m) + rtol_ * std::abs(u0[m]));
  }

  /// Y holds the initial guess and receives the solution; slope receives (Y - psi) / hg.
  AttemptStatus solve(LinearSystem& system, double t, double hg, const double* psi, double* Y,
                      double* slope) {
    const std::size_t n = g_.size();
    double eta = std::pow(std::max(eta_, std::numeric_limits<double>::epsilon()), 0.8);
    double previous_norm = 0;
    for (int iteration = 0; iteration < kMaxNewtonIterations; ++iteration) {
      evaluate(t, Y);
      for (std::size_t m = 0; m < n; ++m) delta_[m] = g_[m] - (Y[m] - psi[m]) / hg;
      if (!system.solve(delta_.data())) return AttemptStatus::LinearSolveFailed;
      const double norm = weighted_norm(delta_.data());
      if (!std::isfinite(norm)) return AttemptStatus::NonFinite;
      for (std::size_t m = 0; m < n; ++m) Y[m] += delta_[m];
      if (iteration > 0) {
        const double theta = norm / previous_norm;
        if (theta >= 1) return AttemptStatus::NewtonFailed;
        eta = theta / (1 - theta);
      }
      if (eta * norm <= kNewtonKappa || norm == 0) {
        eta_ = eta;
        for (std::size_t m = 0; m < n; ++m) slope[m] = (Y[m] - psi[m]) / hg;
        return AttemptStatus::Ok;
      }
      previous_norm = norm;
    }
    return AttemptStatus::NewtonFailed;
  }

  void reset_rate() { eta_ = 1; }
  /// The rate estimate the next solve starts from (a replay restores it).
  double rate() const { return eta_; }
  void set_rate(double eta) { eta_ = eta; }

 private:
  void evaluate(double t, const double* Y) {
    if (of_ == JacobianOf::Rhs)
      eval_.rhs(t, Y, g_.data());
    else
      eval_.implicit_part(t, Y, g_.data(), scratch_.data());
  }
  double weighted_norm(const double* v) const {
    double sum = 0;
    for (std::size_t m = 0; m < weights_.size(); ++m) sum += (v[m] * weights_[m]) * (v[m] * weights_[m]);
    return weights_.empty() ? 0.0 : std::sqrt(sum / double(weights_.size()));
  }

  Evaluator eval_;
  JacobianOf of_;
  double rtol_, atol_;
  std::vector<double> atol_each_;
  double eta_ = 1;  // last converged rate estimate, seeds the first iteration's test
  std::vector<double> g_, delta_, weights_, scratch_;
};

}  // namespace esi::method::detail
