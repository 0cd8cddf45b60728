// A system compiled once and run many times with other parameter and initial values: what a
// parameter sweep needs from exec (a model per worker, one Jacobian for equal equations).
#pragma once

#include <memory>

#include "esi/esm/system.hpp"
#include "esi/exec/simulate.hpp"

namespace esi::exec {

namespace detail {
struct Model;
struct SharedJacobian;
}  // namespace detail

/// An analytic Jacobian compiled at most once for every BoundModel bound with it, by the first
/// whose run needs one: explicit runs never pay for the symbolic differentiation. Copies share
/// the one Jacobian; give it only systems of the same equations (they may differ in values).
class JacobianShare {
 public:
  JacobianShare();
  /// Whether a Jacobian was compiled through it (and the equations were differentiable).
  bool compiled() const;

 private:
  friend class BoundModel;
  std::shared_ptr<detail::SharedJacobian> shared_;
};

/// A system compiled for runs with one set of options; a run after another changes only the
/// values (parameter defaults, initial values), never the equations.
class BoundModel {
 public:
  /// Compiles a copy of `system` for runs with `options` (their method family, `native` and
  /// `require_observed_values`; the per-region programs on one thread); its Jacobian, when a
  /// run needs one, comes from `jacobian`.
  BoundModel(const esm::System& system, const SimulateOptions& options, const JacobianShare& jacobian);
  ~BoundModel();
  BoundModel(BoundModel&&) noexcept;
  BoundModel& operator=(BoundModel&&) noexcept;

  /// The compiled system (algebraic unknowns substituted): edit parameter and state defaults
  /// here, then call rebind().
  esm::System& system();
  /// Takes up the edited values for the next run, without compiling again.
  void rebind();
  /// `simulate` on this model with the options it was bound with (other times and samples
  /// allowed); cell_split is not supported here.
  Trajectory simulate(const SimulateOptions& options);

 private:
  std::unique_ptr<detail::Model> model_;
  bool require_observed_values_ = true;
};

}  // namespace esi::exec
