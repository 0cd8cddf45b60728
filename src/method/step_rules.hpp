// The step rules the scalar Integrator and the lane-batched Rosenbrock step share, so a lane
// of a lane pool steps as the scalar Integrator would: rejection factors, landing on the end of
// an interval, Hairer's starting step and the step kept after a landing.
#pragma once

#include <algorithm>
#include <cmath>

namespace esi::method::detail {

inline constexpr double kNonFiniteFactor = 0.1;   // brief: non-finite -> dt * 0.1
inline constexpr double kSolverFailFactor = 0.5;  // OrdinaryDiffEq failfactor 2
inline constexpr double kDomainFactor = 0.5;
inline constexpr double kLandingSlack = 0.01;     // stretch a step by <= 1% to land on t_limit

/// The step to attempt from t with proposed step dt (capped by dt_max > 0); `lands` says
/// whether it ends exactly on t_limit (a step within 1 % of it is stretched to land).
inline double planned_step(double t, double dt, double dt_max, double t_limit, bool& lands) {
  const double h = dt_max > 0 ? std::min(dt, dt_max) : dt;
  lands = t + (1 + kLandingSlack) * h >= t_limit;
  return lands ? t_limit - t : h;
}

/// The step to propose after an accepted step h: a step shortened to land says little about
/// the step the problem allows, so the previous proposal dt is kept when it was larger.
inline double step_after_accept(double h, bool lands, double dt, double h_next, double dt_max) {
  if (lands && h < dt && h_next > h) h_next = std::max(h_next, dt);
  return dt_max > 0 ? std::min(h_next, dt_max) : h_next;
}

/// Hairer, Nørsett & Wanner, Solving ODEs I, II.4: the trial step h0 from the norms of u0 (d0)
/// and f0 (d1).
inline double hairer_trial_step(double d0, double d1) {
  return (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
}

/// ... and the starting step from h0, d1 and d2 = |f(t0 + h0, u0 + h0 f0) - f0| / h0.
inline double hairer_starting_step(double h0, double d1, double d2, int order) {
  const double dmax = std::max(d1, d2);
  const double h1 =
      dmax <= 1e-15 ? std::max(1e-6, h0 * 1e-3) : std::pow(0.01 / dmax, 1.0 / (order + 1));
  const double h = std::min(100 * h0, h1);
  return std::isfinite(h) ? h : 1e-6;
}

}  // namespace esi::method::detail
