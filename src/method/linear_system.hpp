// The linear algebra behind implicit methods: the Jacobian of the right-hand side (analytic CSR
// or dense forward differences) and the iteration matrix M = alpha I - J, factorized once per
// (J, alpha) and solved many times (Eigen's "compute once, solve many").
//
// Dense PartialPivLU for n <= kDenseLimit or when the Jacobian comes from differences;
// otherwise linalg's planned sparse LU (Markowitz order planned once at construction, diagonal
// pivots), with Eigen's SparseLU (partial pivoting; its factorize allocates) for a
// factorization whose pivot the plan finds tiny and for systems too large to plan. A singular or non-finite factorization is
// reported as `false`, a recoverable outcome (the step is retried smaller), never a throw.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "esi/method/integrator.hpp"

namespace esi::method::detail {

inline constexpr std::size_t kDenseLimit = 64;

/// Which function the Jacobian differentiates: the full rhs, or the implicit part of rhs_split.
enum class JacobianOf { Rhs, ImplicitPart };

/// Counts every callback evaluation into the integrator's stats.
struct Evaluator {
  const OdeProblem* problem = nullptr;
  IntegratorStats* stats = nullptr;
  void rhs(double t, const double* u, double* du) const;
  void split(double t, const double* u, double* du_explicit, double* du_implicit) const;
  /// f_implicit alone (into du_implicit; `scratch` receives the explicit part).
  void implicit_part(double t, const double* u, double* du_implicit, double* scratch) const;
  /// f_explicit alone (into du_explicit; `scratch` receives the implicit part).
  void explicit_part(double t, const double* u, double* du_explicit, double* scratch) const;
};

class LinearSystem {
 public:
  LinearSystem(const Evaluator& eval, JacobianOf of);
  ~LinearSystem();
  LinearSystem(LinearSystem&&) noexcept;
  LinearSystem& operator=(LinearSystem&&) noexcept;

  /// J = dg/du at (t, u); g(t, u) = g_at_u is given (the base point of forward differences).
  void evaluate_jacobian(double t, const double* u, const double* g_at_u);
  /// Factorizes M = alpha I - J; false when M is singular or not finite.
  [[nodiscard]] bool factorize(double alpha);
  /// x = M^{-1} b in place; false when the solver failed (non-finite data is not checked here).
  [[nodiscard]] bool solve(double* x);
  /// x = M^{-T} b in place with the factors of the last factorize (a discrete adjoint's
  /// transposed stage solve: no second factorization).
  [[nodiscard]] bool solve_transposed(double* x);
  /// What a sensitivity sweep keeps of the last factorization: factor_size() values written
  /// by save_factors (the last one says whether they are usable: only the planned sparse LU
  /// keeps its factors), read back by load_factors (false: factorize instead).
  std::size_t factor_size() const;
  void save_factors(double* out) const;
  [[nodiscard]] bool load_factors(const double* in);
  /// M^{-1} x or M^{-T} x in place with the current factors, fresh or loaded (the sweeps'
  /// solves; the forward steps keep solve(), whose bits they must not change).
  [[nodiscard]] bool sensitivity_solve(double* x, bool transposed);
  /// Sets J to analytic CSR values kept from an earlier evaluate_jacobian (a sensitivity sweep
  /// restoring a recorded step); false without an analytic Jacobian.
  [[nodiscard]] bool load_jacobian(const double* values);
  /// Number of analytic CSR values (0 without an analytic Jacobian).
  std::size_t jacobian_size() const;
  /// The analytic Jacobian's CSR values of the last evaluate_jacobian (null without one).
  const double* jacobian_values() const;
  /// |J| spectral radius bound (max absolute row sum, Gershgorin) of the last Jacobian.
  double gershgorin_bound() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace esi::method::detail
