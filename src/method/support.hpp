// Small numerical helpers of the integrator: the error norm, Hairer's starting step, the
// domain test and the failure message. Free functions over raw arrays so each is testable.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "esi/method/integrator.hpp"
#include "method/linear_system.hpp"

namespace esi::method::detail {

/// State i's absolute tolerance: atol_each[i] when per-state tolerances are given, else atol.
inline double atol_at(double atol, const double* atol_each, std::size_t i) { return atol_each ? atol_each[i] : atol; }

/// Hairer's RMS norm sqrt(mean((e_i / (atol + rtol max(|u0_i|, |u1_i|)))^2)), summed in index
/// order in double. 0 for an empty state.
double weighted_rms(const double* err, const double* u0, const double* u1, std::size_t n,
                    double rtol, double atol, const double* atol_each = nullptr);

/// Index of the largest |v_i| / (atol + rtol max(|u0_i|, |u1_i|)); a non-finite v_i wins.
std::size_t largest_weighted(const double* v, const double* u0, const double* u1, std::size_t n,
                             double rtol, double atol, const double* atol_each = nullptr);

/// Hairer, Nørsett & Wanner, Solving ODEs I, II.4 (starting step size) for a method of
/// `order`; `scratch_u` and `scratch_f` hold n values. Costs one rhs evaluation.
double hairer_initial_step(const Evaluator& eval, double t0, const double* u0, const double* f0,
                           int order, double rtol, double atol, double* scratch_u,
                           double* scratch_f, const double* atol_each = nullptr);

/// True when some component named by `components` (empty = all) of v is negative.
bool leaves_nonnegative_domain(std::span<const double> v, std::span<const int> components);

/// "problem.names[i]" or "u[i]".
std::string state_name(const OdeProblem& problem, std::size_t i);

/// 16 ulp of |t| (the default dt_min), never 0.
double default_dt_min(double t);

}  // namespace esi::method::detail
