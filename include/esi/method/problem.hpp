// The problem seam between a model and a time-integration method (architecture.md "method").
//
// A method knows a problem only through this small table of callbacks over one whole state
// vector (SUNDIALS' narrow seams, style-anchors §3): the right-hand side, optionally its
// analytic Jacobian with a fixed CSR pattern, and optionally an explicit/implicit split for
// IMEX methods. The callbacks never throw; a non-finite value they write is caught by the
// method (a rejected step), not by the callback.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace esi::linalg {
struct SparseLuPlan;
}

namespace esi::method {

/// The planned sparse LU of I/(gamma h) - J over one Jacobian pattern, made by the first
/// linear system that needs it and read by every later one that shares this cache (see
/// OdeProblem::lu_plans). Planning (a Markowitz ordering) costs fullchem's 272 states about a
/// third of a one-hour forward run; a gradient builds several integrators (event segments,
/// the sweep's replays) over one problem.
struct SparseLuPlanCache {
  std::mutex mutex;
  std::vector<int> row_ptr, col;  ///< the pattern `plan` is for
  std::shared_ptr<const linalg::SparseLuPlan> plan;
};

struct OdeProblem {
  std::size_t size = 0;     ///< number of states
  void* context = nullptr;  ///< passed back to every callback; owned by the caller

  /// du = f(t, u); u and du hold `size` values.
  void (*rhs)(void* context, double t, const double* u, double* du) = nullptr;

  /// Optional analytic Jacobian df/du in CSR form: nonzeros of row i are
  /// [jac_row_ptr[i], jac_row_ptr[i+1]) with columns jac_col (increasing per row). The callback
  /// writes the nonzero values in that order. When `jacobian` is null, implicit methods build
  /// a dense Jacobian by forward differences of `rhs`.
  std::vector<int> jac_row_ptr;
  std::vector<int> jac_col;
  void (*jacobian)(void* context, double t, const double* u, double* values) = nullptr;
  /// Optional: makes `jacobian` (and its pattern) available when MethodId::Auto first needs
  /// it mid-run; a caller that compiles the Jacobian only on demand sets it (exec does).
  void (*prepare_jacobian)(void* context) = nullptr;
  /// Optional: where linear systems over this pattern share their LU plan (a plan made for
  /// another pattern is not used). Null: each plans its own.
  std::shared_ptr<SparseLuPlanCache> lu_plans;

  /// Optional split for IMEX methods: f = f_explicit + f_implicit, with `implicit_jacobian`
  /// (same CSR pattern as above, or dense differences when null) the Jacobian of f_implicit.
  void (*rhs_split)(void* context, double t, const double* u, double* du_explicit,
                    double* du_implicit) = nullptr;
  void (*implicit_jacobian)(void* context, double t, const double* u, double* values) = nullptr;
  /// Optional f_implicit alone (the Newton iterations of IMEX methods evaluate only it); when
  /// null they call rhs_split and drop the explicit part, which may cost far more (transport).
  void (*rhs_implicit)(void* context, double t, const double* u, double* du_implicit) = nullptr;
  /// Optional f_explicit alone (the additive methods evaluate it once per stage, at the
  /// converged stage value, where the stage already has its implicit slope); when null they
  /// call rhs_split and drop the implicit part, one f_implicit (chemistry) more per stage.
  void (*rhs_explicit)(void* context, double t, const double* u, double* du_explicit) = nullptr;

  /// Optional state names (flattened names such as "SuperFast.O3") used in failure messages.
  std::vector<std::string> names;
  /// Or the name of state i on demand (a grid's millions of cell names are only made when a
  /// message needs one); used when `names` is empty.
  std::function<std::string(std::size_t)> name_of;

  /// True when f does not depend on t (most chemistry): Rosenbrock methods then take df/dt = 0
  /// exactly instead of two extra rhs calls per step for its difference quotient.
  bool autonomous = false;

  // ---- Derivatives for sensitivities and adjoints (optional; method/sensitivity.hpp) ----
  // Parameters are numbered 0 .. parameter_count-1 in whatever order the caller chose (exec
  // uses System::parameters order). Rows and Jacobian entries follow the CSR pattern above.

  std::size_t parameter_count = 0;
  /// df/dp in CSR form: nonzeros of row i (state i) are [param_row_ptr[i], param_row_ptr[i+1])
  /// with parameter columns param_col (increasing per row); the callback writes their values.
  std::vector<int> param_row_ptr;
  std::vector<int> param_col;
  void (*parameter_jacobian)(void* context, double t, const double* u, double* values) = nullptr;
  /// Optional: J's values and df/dp's at one (t, u) in one call (cheaper than jacobian plus
  /// parameter_jacobian where they share terms).
  void (*first_derivatives)(void* context, double t, const double* u, double* jac_values,
                            double* param_values) = nullptr;
  /// Optional: first_derivatives at `count` points in one lane-vectorized call (J alone when
  /// param_values is null): point k is (t[k], u + k * size), its values go to
  /// jac_values + k * jac_col.size() and param_values + k * param_col.size(). A sweep knows a
  /// step's stage states before it needs any product at them; one call over all of them costs
  /// little more than one point's.
  void (*first_derivatives_lanes)(void* context, std::size_t count, const double* t, const double* u,
                                  double* jac_values, double* param_values) = nullptr;
  /// Optional: g_u = J^T w and, when vjp_parameters, g_p = (df/dp)^T w at one (t, u), written
  /// (not added); g_p is not touched (may be null) without vjp_parameters. Formed by reverse
  /// accumulation at a cost near the rhs's, where J and df/dp cost their nonzeros: what an
  /// adjoint sweep asks at its stage points, where it needs nothing else.
  void (*vector_jacobian_product)(void* context, double t, const double* u, const double* w,
                                  double* g_u, double* g_p) = nullptr;
  bool vjp_parameters = false;
  /// Second derivatives of the Jacobian's nonzeros (jac_col order, entry e = CSR position):
  /// u_values[q] = d J[hess_u_entry[q]] / d u[hess_u_state[q]] and
  /// p_values[q] = d J[hess_p_entry[q]] / d p[hess_p_param[q]]. Structural zeros are omitted.
  std::vector<int> hess_u_entry, hess_u_state;
  std::vector<int> hess_p_entry, hess_p_param;
  void (*second_derivatives)(void* context, double t, const double* u, double* u_values,
                             double* p_values) = nullptr;
};

}  // namespace esi::method
