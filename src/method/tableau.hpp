// Butcher and Rosenbrock tableaus as plain constexpr data (style-anchors §1 "tableau = plain
// struct + named factories"). One stepper per family reads these; nothing here runs code.
//
// Coefficients are copied from OrdinaryDiffEq.jl (each table cites its source file in
// tableaus_explicit.cpp / tableaus_implicit.cpp). Arrays are row-major, stage index first, and
// only the strictly lower triangle (plus the diagonal for SDIRK) is meaningful.
#pragma once

#include "esi/method/integrator.hpp"

namespace esi::method::detail {

inline constexpr int kMaxStages = 10;

/// Explicit Runge-Kutta: Y_i = u0 + h sum_{j<i} a[i][j] k_j, k_i = f(t + c[i] h, Y_i),
/// u1 = u0 + h sum b[j] k_j, local error estimate h sum btilde[j] k_j (all zero: none).
struct ErkTableau {
  int stages = 0;
  double a[kMaxStages][kMaxStages] = {};
  double b[kMaxStages] = {};
  double btilde[kMaxStages] = {};
  double c[kMaxStages] = {};
};

/// Rosenbrock in Hairer-Wanner's transformed variables (Solving ODEs II, IV.7 (7.25)), the
/// form OrdinaryDiffEq stores: with M = I/(gamma h) - J,
///   M k_i = f(t + c[i] h, u0 + sum_{j<i} a[i][j] k_j) + sum_{j<i} (C[i][j]/h) k_j + h d[i] f_t,
///   u1 = u0 + sum b[j] k_j,  error estimate sum btilde[j] k_j.
struct RosenbrockTableau {
  int stages = 0;
  double gamma = 0;
  double a[kMaxStages][kMaxStages] = {};
  double C[kMaxStages][kMaxStages] = {};
  double b[kMaxStages] = {};
  double btilde[kMaxStages] = {};
  double c[kMaxStages] = {};
  double d[kMaxStages] = {};
};

/// True when stage i evaluates f where stage i - 1 did: the same weights on the earlier slopes
/// (a[i][i-1] == 0) at the same time (Rodas3's second stage sits at u0, like its first). The
/// stage point is then formed by the same nonzero products summed in the same order, so f there
/// is the previous stage's f bit for bit, and a stepper reuses it instead of evaluating f again
/// (KPP's ros_NewF).
constexpr bool rosenbrock_stage_repeats_previous(const RosenbrockTableau& tab, int i) {
  if (i <= 0 || tab.c[i] != tab.c[i - 1] || tab.a[i][i - 1] != 0.0) return false;
  for (int j = 0; j + 1 < i; ++j)
    if (tab.a[i][j] != tab.a[i - 1][j]) return false;
  return true;
}

/// True when the last stage evaluates f at (t + h, u1) (c = 1, b = the last row of a, the
/// last weight 0): that f is the next step's f0 (first same as last).
constexpr bool rosenbrock_is_fsal(const RosenbrockTableau& tab) {
  const int last = tab.stages - 1;
  if (tab.c[last] != 1.0 || tab.b[last] != 0.0) return false;
  for (int j = 0; j < last; ++j)
    if (tab.a[last][j] != tab.b[j]) return false;
  return true;
}

/// Diagonally implicit RK whose first stage is explicit (ESDIRK; a[0][0] == 0) and whose
/// implicit stages share the diagonal gamma: Y_i = u0 + h sum_{j<i} a[i][j] k_j + h gamma k_i.
/// The error estimate h sum btilde[j] k_j is filtered by (I - h gamma J)^{-1} (Shampine).
struct SdirkTableau {
  int stages = 0;
  double gamma = 0;
  double a[kMaxStages][kMaxStages] = {};
  double b[kMaxStages] = {};
  double btilde[kMaxStages] = {};
  double c[kMaxStages] = {};
};

/// Additive Runge-Kutta (IMEX) for f = f_E + f_I: an explicit tableau `ae` and an ESDIRK tableau
/// `ai` (diagonal gamma, first stage explicit) sharing c and b. With kE_j = f_E(t + c_j h, Y_j)
/// and kI_j = f_I(t + c_j h, Y_j):
///   Y_i = u0 + h sum_{j<i} (ae[i][j] kE_j + ai[i][j] kI_j) + h gamma kI_i,
///   u1 = u0 + h sum b[j] (kE_j + kI_j),  error estimate h sum btilde[j] (kE_j + kI_j),
/// filtered by (I - h gamma J_I)^{-1} like the SDIRK estimate.
struct ArkTableau {
  int stages = 0;
  double gamma = 0;
  double ae[kMaxStages][kMaxStages] = {};
  double ai[kMaxStages][kMaxStages] = {};
  double b[kMaxStages] = {};
  double btilde[kMaxStages] = {};
  double c[kMaxStages] = {};
};

/// Continuous extension of an explicit RK step (its own dense output):
///   u(t0 + theta h) = u0 + h sum_i w_i(theta) k_i,  w_i(theta) = sum_{p=1..4} r[i][p-1] theta^p.
/// w_i(1) = b[i] up to rounding, so the polynomial meets the step end; `order` is its order
/// (error O(h^(order+1)) for one step from the exact state).
struct ErkDense {
  int order = 0;
  double r[kMaxStages][4] = {};
};

/// Dense output of a Rosenbrock step in OrdinaryDiffEq's Rodas form, built from both step ends
/// so it is continuous even when the accepted end was modified (clipping):
///   u(theta) = (1-theta) u0 + theta (u1 + (1-theta) (K_0 + theta (K_1 + theta K_2))),
///   K_r = sum_j H[r][j] k_j  (rows beyond `rows` are zero).
struct RosenbrockDense {
  int order = 0;
  int rows = 0;
  double H[3][kMaxStages] = {};
};

enum class Family { Explicit, Rosenbrock, Sdirk, Imex, Sundials };

Family family_of(MethodId id);
const ErkTableau& erk_tableau(MethodId id);
const RosenbrockTableau& rosenbrock_tableau(MethodId id);
const SdirkTableau& sdirk_tableau(MethodId id);
const ArkTableau& ark_tableau(MethodId id);  ///< KenCarp3, KenCarp4 (tableaus_imex.cpp)
/// The method's own dense output, or null when it has none (the Integrator then uses cubic
/// Hermite). Defined in dense_tableaus.cpp.
const ErkDense* erk_dense(MethodId id);
const RosenbrockDense* rosenbrock_dense(MethodId id);

}  // namespace esi::method::detail
