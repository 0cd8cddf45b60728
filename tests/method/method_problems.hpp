// Small ODE problems with known answers, shared by the method tests.
#pragma once

#include <cmath>
#include <vector>

#include "esi/method/integrator.hpp"

namespace esi::method::testing {

/// Nonlinear, non-autonomous 3-state system with exact solution x = 1/(1+t), y = cos t,
/// z = e^-t cos 2t + 1:
///   x' = -x^2 + (y - cos t),  y' = -sin t - (y^2 - cos^2 t),  z' = z_e'(t) - (z^3 - z_e(t)^3).
/// The explicit t-dependence exercises the Rosenbrock f_t term; the cubic z keeps the
/// fifth-order error terms of Tsit5 and DP5 visible (on x, y alone they look sixth order).
struct Smooth3 {
  static double z_exact(double t) { return std::exp(-t) * std::cos(2 * t) + 1; }
  static double z_exact_dot(double t) {
    return -std::exp(-t) * (std::cos(2 * t) + 2 * std::sin(2 * t));
  }
  static void rhs(void*, double t, const double* u, double* du) {
    const double c = std::cos(t), ze = z_exact(t);
    du[0] = -u[0] * u[0] + (u[1] - c);
    du[1] = -std::sin(t) - (u[1] * u[1] - c * c);
    du[2] = z_exact_dot(t) - (u[2] * u[2] * u[2] - ze * ze * ze);
  }
  static void jac(void*, double, const double* u, double* v) {
    // CSR: (0,0) (0,1) (1,1) (2,2)
    v[0] = -2 * u[0], v[1] = 1, v[2] = -2 * u[1], v[3] = -3 * u[2] * u[2];
  }
  static std::vector<double> exact(double t) { return {1 / (1 + t), std::cos(t), z_exact(t)}; }
  static OdeProblem problem(bool analytic_jacobian = true) {
    OdeProblem p;
    p.size = 3;
    p.rhs = rhs;
    if (analytic_jacobian) {
      p.jac_row_ptr = {0, 2, 3, 4};
      p.jac_col = {0, 1, 1, 2};
      p.jacobian = jac;
    }
    p.names = {"x", "y", "z"};
    return p;
  }
};

/// Split problem u' = [-sin t + lambda cos t] + [-lambda u], exact u = cos t (u(0) = 1); the
/// second bracket is the stiff implicit part.
struct SplitCos {
  static constexpr double kLambda = 50;
  static void rhs(void*, double t, const double* u, double* du) {
    du[0] = -std::sin(t) + kLambda * std::cos(t) - kLambda * u[0];
  }
  static void split(void*, double t, const double* u, double* fe, double* fi) {
    fe[0] = -std::sin(t) + kLambda * std::cos(t);
    fi[0] = -kLambda * u[0];
  }
  static OdeProblem problem() {
    OdeProblem p;
    p.size = 1;
    p.rhs = rhs;
    p.rhs_split = split;
    return p;
  }
};

/// Nonlinear split problem with exact solution x = cos t, y = sin t (u(0) = (1, 0)):
///   x' = [y - 2 sin t + x^2 - cos^2 t] + [-lambda (x - cos t)],
///   y' = [x y - cos t sin t + cos t]   + [-lambda (y - sin t)];
/// the first bracket is the non-stiff explicit part (it reads both states), the second the
/// linear, non-autonomous implicit part, stiff for large lambda (context: a double*, else 10).
struct SplitNonlinear {
  static double lambda(void* ctx) { return ctx ? *static_cast<double*>(ctx) : 10.0; }
  static void explicit_part(double t, const double* u, double* fe) {
    const double c = std::cos(t), s = std::sin(t);
    fe[0] = u[1] - 2 * s + u[0] * u[0] - c * c;
    fe[1] = u[0] * u[1] - c * s + c;
  }
  static void implicit_part(void* ctx, double t, const double* u, double* fi) {
    fi[0] = -lambda(ctx) * (u[0] - std::cos(t));
    fi[1] = -lambda(ctx) * (u[1] - std::sin(t));
  }
  static void rhs(void* ctx, double t, const double* u, double* du) {
    double fi[2];
    explicit_part(t, u, du);
    implicit_part(ctx, t, u, fi);
    du[0] += fi[0], du[1] += fi[1];
  }
  static void split(void* ctx, double t, const double* u, double* fe, double* fi) {
    explicit_part(t, u, fe);
    implicit_part(ctx, t, u, fi);
  }
  static void implicit_jac(void* ctx, double, const double*, double* v) {
    v[0] = v[1] = -lambda(ctx);  // CSR: (0,0) (1,1)
  }
  static std::vector<double> exact(double t) { return {std::cos(t), std::sin(t)}; }
  /// analytic: the CSR Jacobian of the implicit part and rhs_implicit; else both left out
  /// (the method differences rhs_split).
  static OdeProblem problem(double* lambda_value = nullptr, bool analytic = true) {
    OdeProblem p;
    p.size = 2;
    p.context = lambda_value;
    p.rhs = rhs;
    p.rhs_split = split;
    if (analytic) {
      p.jac_row_ptr = {0, 1, 2};
      p.jac_col = {0, 1};
      p.implicit_jacobian = implicit_jac;
      p.rhs_implicit = implicit_part;
    }
    p.names = {"x", "y"};
    return p;
  }
};

/// An OdeProblem of `names.size()` states; with `jac`, an analytic Jacobian on the CSR pattern
/// (row_ptr, col).
inline OdeProblem make_problem(decltype(OdeProblem::rhs) rhs, std::vector<std::string> names,
                               decltype(OdeProblem::jacobian) jac = nullptr, std::vector<int> row_ptr = {},
                               std::vector<int> col = {}) {
  OdeProblem p;
  p.size = names.size();
  p.rhs = rhs;
  p.names = std::move(names);
  if (jac) p.jacobian = jac, p.jac_row_ptr = std::move(row_ptr), p.jac_col = std::move(col);
  return p;
}

/// Van der Pol, x' = y, y' = mu ((1 - x^2) y - x): mildly stiff at mu = 10 (VanDerPol), stiff
/// at mu = 1000 (Hairer & Wanner's VDPOL with eps = 1 / mu: slow stiff branches joined by fast
/// jumps, period about 1.6).
template <int Mu>
struct VanDerPolOf {
  static constexpr double kMu = Mu;
  static void rhs(void*, double, const double* u, double* du) {
    du[0] = u[1];
    du[1] = kMu * ((1 - u[0] * u[0]) * u[1] - u[0]);
  }
  static void jac(void*, double, const double* u, double* v) {
    v[0] = 0, v[1] = 1, v[2] = kMu * (-2 * u[0] * u[1] - 1), v[3] = kMu * (1 - u[0] * u[0]);
  }
  static OdeProblem problem() { return make_problem(rhs, {"x", "y"}, jac, {0, 2, 4}, {0, 1, 0, 1}); }
};
using VanDerPol = VanDerPolOf<10>;

/// Linear decay u' = -k u with k from context (default 1).
struct Decay {
  static void rhs(void* ctx, double, const double* u, double* du) {
    const double k = ctx ? *static_cast<double*>(ctx) : 1.0;
    for (int i = 0; i < 1; ++i) du[i] = -k * u[i];
  }
  static OdeProblem problem(double* k = nullptr) {
    OdeProblem p;
    p.size = 1;
    p.context = k;
    p.rhs = rhs;
    p.names = {"c"};
    return p;
  }
};

/// Robertson's chemical kinetics (very stiff).
struct Robertson {
  static void rhs(void*, double, const double* u, double* du) {
    du[0] = -0.04 * u[0] + 1e4 * u[1] * u[2];
    du[1] = 0.04 * u[0] - 1e4 * u[1] * u[2] - 3e7 * u[1] * u[1];
    du[2] = 3e7 * u[1] * u[1];
  }
  static OdeProblem problem() {
    OdeProblem p;
    p.size = 3;
    p.rhs = rhs;
    p.names = {"A", "B", "C"};
    return p;
  }
};

/// Runs to t1 with repeated step(t1); returns the final code.
inline ReturnCode run_to(Integrator& integrator, double t1) {
  ReturnCode rc = ReturnCode::Success;
  while (integrator.t() < t1 && rc == ReturnCode::Success) rc = integrator.step(t1);
  return rc;
}

}  // namespace esi::method::testing
