// The derivative products a sensitivity sweep needs, over an OdeProblem's derivative callbacks:
// J v, J^T w, (df/dp) v, (df/dp)^T w and the second-order contractions of J, all from the CSR
// values the problem writes at one point (t, u). Values are evaluated once per point and kept
// for two points (a step's start and the stage in progress), so a sweep that asks several
// products at the same point pays one evaluation. Private to method.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "esi/method/problem.hpp"
#include "esi/method/sensitivity.hpp"

namespace esi::method::detail {

class Derivatives {
 public:
  explicit Derivatives(const OdeProblem& problem, SweepResult& counts);

  std::size_t size() const { return n_; }
  std::size_t parameter_count() const { return problem_.parameter_count; }
  bool has_second_derivatives() const { return problem_.second_derivatives != nullptr; }

  /// Whether the sweep wants derivatives by the parameters (a mu or dp was given): without,
  /// J is evaluated alone, not fused with df/dp (OdeProblem::first_derivatives).
  void want_parameters(bool wanted) { parameters_wanted_ = wanted; }

  /// Makes (t, u) the current point; values already evaluated there are kept.
  void at(double t, const double* u);
  /// Evaluates J, and df/dp when parameters are wanted, at all these points in one lane-
  /// vectorized call where the problem offers it (first_derivatives_lanes): a step's stage
  /// states are known before its sweep asks for any product, and one call over them costs
  /// little more than one point's. at() then finds them until the next at_points.
  void at_points(std::span<const double> times, std::span<const double* const> states);
  /// The same, taking J's values from `jacobian` (what the stepper's own linear system holds).
  void at(double t, const double* u, const double* jacobian);

  /// out += J v, out += J^T w at the current point.
  void jv(const double* v, double* out);
  void jtw(const double* w, double* out);
  /// out += (df/dp) dp, mu += (df/dp)^T w (nothing when there are no parameters).
  void pv(const double* dp, double* out);
  void ptw(const double* w, double* mu);
  /// out += J^T w and mu += (df/dp)^T w (mu null: not wanted) at the current point: from J and
  /// df/dp where the point holds them, else by the problem's vector_jacobian_product, which
  /// costs about an rhs evaluation instead of forming both matrices.
  void vjp(const double* w, double* out, double* mu);
  /// out += (dJ[du, dp]) v: J's directional derivative along (du, dp) applied to v.
  void hessian_tangent(const double* du, const double* dp, const double* v, double* out);
  /// grad_u += d(w^T J v)/du, grad_p += d(w^T J v)/dp.
  void hessian_adjoint(const double* w, const double* v, double* grad_u, double* grad_p);
  /// The same for a sum of such terms at one point: W[e] += w[row e] v[col e] per Jacobian
  /// entry (add_outer, once per term), then one pass over the second derivatives
  /// (hessian_adjoint_weighted) instead of one per term.
  void add_outer(const double* w, const double* v, double* W) const;
  void hessian_adjoint_weighted(const double* W, double* grad_u, double* grad_p);

 private:
  struct Point {
    double t = 0;     // the key: t, or 0 for an autonomous problem
    double time = 0;  // the time the callbacks are given
    std::vector<double> u, jac, pjac, hu, hp;
    bool valid = false, has_jac = false, has_pjac = false, has_hess = false;
  };
  Point& current() { return *current_; }
  Point* find(double key, const double* u);
  bool need_both();
  void need_jac();
  void need_pjac();
  void need_hess();

  const OdeProblem& problem_;
  SweepResult& counts_;
  std::size_t n_;
  std::vector<int> jac_row_, param_row_;  // row of each nonzero
  std::array<Point, 2> points_;  // evaluated one at a time, the older one replaced
  std::vector<Point> batch_;      // the last at_points
  Point* current_ = &points_[0];
  int next_ = 0;
  std::vector<double> batch_u_, batch_jac_, batch_pjac_;
  bool parameters_wanted_ = true;
  std::vector<double> vjp_u_, vjp_p_;
};

}  // namespace esi::method::detail
