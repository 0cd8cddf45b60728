// The stepper seam: one object per method family, generic over its tableau, that turns
// (t, h, u0, f0) into u1 and a local error estimate. It neither accepts nor rejects; the
// Integrator (integrator.cpp) judges the attempt, like CVODE's cvStep around its nonlinear
// solve. Steppers allocate everything at construction; `attempt` never allocates or throws.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "esi/method/integrator.hpp"
#include "esi/method/sensitivity.hpp"
#include "method/linear_system.hpp"

namespace esi::method::detail {

class Derivatives;

/// Why an attempt produced no usable u1. All are recoverable by a smaller step.
enum class AttemptStatus { Ok, NonFinite, LinearSolveFailed, NewtonFailed };

class Stepper {
 public:
  Stepper(std::size_t n, int stages)
      : n_(n), stage_count_(stages), stages_(n * stages), accepted_(n * stages) {}
  virtual ~Stepper() = default;

  /// u1 ≈ u(t + h) from u0 with f0 = f(t, u0); err (absolute units) is written when the
  /// method has an embedded estimate. u1 and err may hold non-finite values (the caller checks).
  virtual AttemptStatus attempt(double t, double h, const double* u0, const double* f0,
                                double* u1, double* err) = 0;
  /// f(t + h, u1) when the last attempt computed it exactly (first-same-as-last), else null.
  virtual const double* f_at_end() const { return nullptr; }
  /// An estimate of the largest |eigenvalue| of df/du along the last attempt, read before
  /// commit() (what MethodId::Auto's stiffness test multiplies by h), with the error test's
  /// tolerances; negative when the method has none.
  virtual double eigen_estimate(double /*rtol*/, double /*atol*/, const double* /*atol_each*/) const {
    return -1;
  }
  /// The state moved (an accepted step or a restart): Jacobians cached for u0 are stale.
  virtual void state_changed() {}

  /// The last attempt becomes the last accepted step (its stage values stay readable, and so
  /// does whatever the method's dense output needs: swaps of preallocated buffers only).
  void commit() {
    accepted_.swap(stages_);
    commit_dense();
  }
  /// Whether the method has its own dense output (else the Integrator uses cubic Hermite).
  virtual bool has_dense() const { return false; }
  /// True when dense() reads u1, so it stays continuous at a modified (clipped) step end;
  /// false when it rebuilds u1 from the slopes and is only valid for the unmodified end.
  virtual bool dense_uses_end() const { return false; }
  /// u(t0 + theta h) of the last accepted step (u0 at its start, u1 at its end).
  virtual void dense(double /*theta*/, const double* /*u0*/, const double* /*u1*/,
                     double* /*out*/) const {}
  // ---- Sensitivities (sensitivity.cpp drives these over a ForwardTape) ----

  /// Whether tangent() and adjoint() are implemented for this method.
  virtual bool has_sensitivities() const { return false; }
  /// Writes what the last attempt depended on beyond (t, h, u0, f0) into `record`.
  virtual void describe_attempt(StepRecord& /*record*/) const {}
  /// Recomputes the attempt of `record` from (u0, f0) bit for bit as the forward run did and
  /// keeps its stage values, slopes and factors for tangent() and adjoint().
  virtual AttemptStatus replay(const StepRecord& record, const double* u0, const double* f0,
                               double* u1, double* err) {
    state_changed();
    return attempt(record.t, record.h, u0, f0, u1, err);
  }
  /// What a recorded step keeps so a sweep needs no replay (Integrator::record with
  /// ForwardTape::keep_stages): kept_size() values written by keep() after an accepted attempt
  /// (before commit), read back by restore(), which leaves the stepper as replay() would.
  virtual std::size_t kept_size() const { return 0; }
  virtual void keep(double* /*out*/) const {}
  /// `u0` is the state before the step. False when the stepper cannot use `kept` (the caller
  /// replays instead).
  virtual bool restore(const StepRecord& /*record*/, const double* /*u0*/, const double* /*kept*/) {
    return false;
  }
  /// After replay(): du1 = (du1/du0) du0 + (du1/df0) df0 + (du1/dp) dp (dp may be null).
  virtual void tangent(const StepRecord& /*record*/, Derivatives& /*d*/, const double* /*u0*/,
                       const double* /*du0*/, const double* /*df0*/, const double* /*dp*/,
                       double* /*du1*/) {}
  /// After replay(): lambda0 = (du1/du0)^T lambda1, lambda_f0 = (du1/df0)^T lambda1 and
  /// mu += (du1/dp)^T lambda1 (mu may be null). f0's own dependence on u0 is the caller's.
  virtual void adjoint(const StepRecord& /*record*/, Derivatives& /*d*/, const double* /*u0*/,
                       const double* /*lambda1*/, double* /*lambda0*/, double* /*lambda_f0*/,
                       double* /*mu*/) {}

  int stage_count() const { return stage_count_; }
  /// State at which stage i of the last accepted step evaluated the right-hand side.
  std::span<const double> accepted_stage(int i) const {
    return {accepted_.data() + std::size_t(i) * n_, n_};
  }
  /// The same for the attempt in progress (domain checks of stage values).
  std::span<const double> attempted_stage(int i) const {
    return {stages_.data() + std::size_t(i) * n_, n_};
  }

 protected:
  double* stage_state(int i) { return stages_.data() + std::size_t(i) * n_; }
  virtual void commit_dense() {}
  std::size_t n_;
  int stage_count_;
  std::vector<double> stages_, accepted_;
};

/// out[m] = base[m] + h * sum_{j < count} w[j] k[j*n + m] (base == nullptr: no base term):
/// the stage and solution sums shared by the explicit and SDIRK steppers (zero weights are
/// skipped, so unused stages cost nothing and a NaN in an unused stage does not leak).
inline void combine_slopes(const double* k, std::size_t n, const double* base, double h,
                           const double* w, int count, double* out) {
  for (std::size_t m = 0; m < n; ++m) {
    double acc = 0;
    for (int j = 0; j < count; ++j)
      if (w[j] != 0.0) acc += w[j] * k[std::size_t(j) * n + m];
    out[m] = base ? base[m] + h * acc : h * acc;
  }
}

/// A method that controls its own steps (SUNDIALS CVODE): the Integrator hands it the whole of
/// step(t_limit) instead of judging attempts, and asks it for dense output, restarts and
/// statistics. Nothing here throws; failures come back as a ReturnCode and a message.
class SelfSteppingSolver {
 public:
  virtual ~SelfSteppingSolver() = default;
  /// One internal step ending at or before t_limit (exactly at t_limit when it would pass it):
  /// writes the new time and state. On failure `why` says what the solver reported and
  /// `culprit` is the state with the largest weighted local error.
  virtual ReturnCode step(double t_limit, double& t_new, double* u_new, std::string& why,
                          std::size_t& culprit) = 0;
  /// u(time) for time inside the last internal step.
  virtual void interpolate(double time, double* out) const = 0;
  /// Starts afresh from (time, u): history, order and step size are rebuilt.
  virtual void restart(double time, const double* u) = 0;
  virtual double proposed_step() const = 0;
  /// Cumulative counts since construction (across restarts).
  virtual IntegratorStats stats() const = 0;
};

/// CVODE's BDF with Newton on our analytic Jacobian (dense for n <= kDenseLimit or without a
/// Jacobian, sparse KLU otherwise). Null with `error` set when this build has no SUNDIALS or
/// SUNDIALS refuses the setup.
std::unique_ptr<SelfSteppingSolver> make_cvode_solver(const OdeProblem& problem,
                                                      const IntegratorOptions& options,
                                                      double t0, std::span<const double> u0,
                                                      std::string& error);

/// The stepper of a method of the explicit, Rosenbrock, SDIRK or IMEX family (null for a
/// self-stepping one).
std::unique_ptr<Stepper> make_stepper(MethodId id, const Evaluator& eval,
                                      const IntegratorOptions& options);
std::unique_ptr<Stepper> make_erk_stepper(MethodId id, const Evaluator& eval);
std::unique_ptr<Stepper> make_rosenbrock_stepper(MethodId id, const Evaluator& eval);
/// SDIRK (MethodId ImplicitEuler..Kvaerno3) and IMEXEuler; Newton tolerances from options.
std::unique_ptr<Stepper> make_implicit_stepper(MethodId id, const Evaluator& eval,
                                               const IntegratorOptions& options);
/// Additive Runge-Kutta IMEX pairs (KenCarp3, KenCarp4; ark_stepper.cpp).
std::unique_ptr<Stepper> make_ark_stepper(MethodId id, const Evaluator& eval,
                                          const IntegratorOptions& options);

}  // namespace esi::method::detail
