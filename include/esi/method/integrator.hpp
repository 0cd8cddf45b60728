// One-step time integration of an OdeProblem: method families generic over their tableau
// (explicit Runge-Kutta, Rosenbrock, SDIRK, IMEX), embedded error estimates, step-size
// controllers, dense output, and failure as a return code, never an abort or a hang.
//
// CVODE_BDF hands the whole step to SUNDIALS' CVODE (one internal step per call, CVODE's own
// dense output), with the same step / interpolate / restart surface and statistics.
//
// The Integrator is stepped one accepted step at a time by a driver (events, output times and
// tstops live in the driver: exec). Each accepted step keeps its stage values reachable for the
// discrete adjoint. Tableau coefficients come from OrdinaryDiffEq.jl (each cited in its file).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "esi/method/problem.hpp"

namespace esi::method {

struct ForwardTape;

enum class MethodId {
  // explicit
  Euler, Heun, RK4, SSPRK33, SSPRK43, SSPRK104, BS3, Tsit5, DP5,
  // Rosenbrock
  Rosenbrock23, Rosenbrock32, ROS3P, Rodas3, Rodas4, Rodas5P, ROS34PW2,
  // SDIRK
  ImplicitEuler, Trapezoid, TRBDF2, Kvaerno3,
  // IMEX: f = f_explicit + f_implicit (OdeProblem::rhs_split); additive Runge-Kutta pairs of
  // Kennedy & Carpenter (2003), explicit and ESDIRK tableaus sharing c and b
  IMEXEuler, KenCarp3, KenCarp4,
  // SUNDIALS CVODE (variable-order BDF with its own step, order and Newton control; only in a
  // build that found libsundials-dev: see method_available)
  CVODE_BDF,
  // Tsit5 and Rodas5P, switching between them along the run when stiffness appears or goes
  // (the first by choose_method at construction; see Integrator::switches)
  Auto,
};

struct MethodInfo {
  MethodId id;
  std::string_view name;     ///< OrdinaryDiffEq's name, e.g. "Tsit5", "Rodas5P"
  int order;                 ///< nominal order of the propagated solution
  int embedded_order;        ///< order of the embedded estimate; 0 = none (fixed step only)
  bool needs_jacobian;       ///< Rosenbrock, SDIRK and IMEX methods
  double ssp_coefficient;    ///< SSP methods; 0 otherwise
};

const MethodInfo& method_info(MethodId id);
/// The name a report shows: method_info(id).name, or "auto" for MethodId::Auto (a method not
/// resolved: chosen per member or per run later, or a run with no state that integrated
/// nothing).
std::string_view method_label(MethodId id);
std::optional<MethodId> method_from_name(std::string_view name);  ///< case-sensitive name
std::span<const MethodId> all_methods();  ///< every available id but Auto
/// False for a method this build lacks (CVODE_BDF without SUNDIALS); the Integrator then
/// answers InvalidOptions saying why.
bool method_available(MethodId id);
/// True for the Rosenbrock family (what lane pools run).
bool is_rosenbrock(MethodId id);
/// True for the IMEX family (IMEXEuler, KenCarp3, KenCarp4): they need OdeProblem::rhs_split.
bool is_imex(MethodId id);

enum class ControllerKind {
  Default,  ///< PI with OrdinaryDiffEq's defaults for the method (I for fixed-order pairs)
  PI,
  I,        ///< MICM/KPP parity: safety 0.9, factor in [0.2, 6], after a rejection 0.1
  PID,      ///< Söderlind
};

enum class DomainPolicy {
  None,
  Reject,  ///< a step whose accepted state leaves the domain is rejected and retried smaller
  Clip,    ///< negative components of the accepted state are set to 0
};

struct IntegratorOptions {
  MethodId method = MethodId::Auto;
  double rtol = 1e-6;
  double atol = 1e-8;
  /// Per-state absolute tolerances (size == problem.size) in place of atol; empty: atol for
  /// every state. exec fills it from each state's scale when no atol was given (atol_from_scales).
  std::vector<double> atol_each;
  double dt_initial = 0;  ///< 0 = automatic (Hairer's estimate); the step of fixed-step methods
  double dt_min = 0;      ///< 0 = 16 ulp of |t|; a needed step below it ends the solve
  double dt_max = 0;      ///< 0 = unbounded
  long max_steps = 1'000'000;  ///< attempted steps (accepted + rejected) before MaxSteps
  ControllerKind controller = ControllerKind::Default;
  DomainPolicy nonnegative = DomainPolicy::None;
  std::vector<int> nonnegative_components;  ///< empty = all components (when policy != None)
  bool check_stages = false;                ///< Reject also when a stage value leaves the domain
  /// Auto only: the span the stiffness test at t0 weighs the spectral radius by (the first
  /// method's choice, choose_method); 0 = one time unit. exec passes t1 - t0.
  double auto_span = 0;
  /// false: take every step at dt_initial (required > 0) without error control, e.g. for
  /// convergence-order studies; rtol/atol then only set the Newton tolerance of SDIRK/IMEX.
  bool adaptive = true;
};

enum class ReturnCode {
  Success,
  DtBelowMin,        ///< the controller needed a step below dt_min
  MaxSteps,          ///< max_steps attempts were used up
  NonFinite,         ///< non-finite values persisted down to dt_min
  LinearSolveFailed, ///< singular iteration matrix persisted down to dt_min
  InvalidOptions,    ///< e.g. a fixed-step method without dt_initial, an IMEX method without rhs_split
  Interrupted,       ///< the caller asked the run to stop (Ctrl-C); what it reached is kept
};
std::string_view return_code_name(ReturnCode code);

/// A change of method made by MethodId::Auto after an accepted step.
struct MethodSwitch {
  double t = 0;          ///< where the new method takes over
  MethodId from = MethodId::Tsit5, to = MethodId::Rodas5P;
  double stiffness = 0;  ///< |lambda| h / Tsit5's stability size at the deciding step
  int tests = 0;         ///< how many successive steps agreed
};

struct IntegratorStats {
  long accepted = 0, rejected = 0, rhs_evaluations = 0, jacobian_evaluations = 0,
       factorizations = 0, linear_solves = 0;
};

class Integrator {
 public:
  /// Copies u0; keeps a pointer to `problem`, which must outlive the integrator.
  Integrator(const OdeProblem& problem, const IntegratorOptions& options, double t0,
             std::span<const double> u0);
  ~Integrator();
  Integrator(Integrator&&) noexcept;
  Integrator& operator=(Integrator&&) noexcept;

  /// Takes one accepted step ending at or before t_limit (exactly at t_limit when the proposed
  /// step would pass it). On failure the integrator stays at its last accepted state and
  /// message() names the variable with the largest weighted error.
  ReturnCode step(double t_limit);

  double t() const;           ///< time of the last accepted state
  double t_previous() const;  ///< start of the last accepted step (== t() before any step)
  std::span<const double> u() const;
  /// Dense output for time in [t_previous(), t()]; exact at both ends.
  void interpolate(double time, std::span<double> out) const;
  /// Restarts from (time, u) keeping the step size, e.g. after an event changed the state or
  /// the parameters behind problem.context. time must lie in [t_previous(), t()].
  void restart(double time, std::span<const double> u);

  /// What restart() keeps of an integrator's history: the proposed step, whether the first
  /// step was taken, the attempts counted against max_steps, the statistics. A run that saves
  /// it at a restart point and later calls resume() on a fresh integrator of the same problem
  /// and options continues bit for bit as the original did after restart() at that point.
  struct Carry {
    double dt = 0;
    bool started = false;
    long attempts = 0;
    IntegratorStats stats;
    /// MethodId::Auto: the method in use, its stiffness tests' counts and the number of
    /// switches so far (Auto itself for a fixed method).
    MethodId automatic_method = MethodId::Auto;
    int stiff_tests = 0, calm_tests = 0;
    long switches = 0;
  };
  Carry carry() const;
  /// restart(time, u) with the history `carry` (see Carry).
  void resume(double time, std::span<const double> u, const Carry& carry);

  MethodId method() const;  ///< the method in use now (never Auto; Auto may switch it)
  /// The switches MethodId::Auto made since construction (or since resume()), in order.
  std::span<const MethodSwitch> switches() const;
  /// Switches made in the whole run, those before a resume() included.
  long switch_count() const;
  double dt() const;        ///< the proposed next step
  const IntegratorStats& stats() const;
  const std::string& message() const;  ///< why the last step failed ("" after success)

  /// Records every accepted step from now on into `tape` (sensitivity.hpp), which must outlive
  /// the recording; null stops it. Set it before the first step: the tape starts at the state
  /// the next step starts from. A restart while recording marks the tape unsupported.
  void record(ForwardTape* tape);

  /// Stage values of the last accepted step (stage i, `size` values), for the discrete adjoint.
  int stage_count() const;
  std::span<const double> stage(int i) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The first choice behind MethodId::Auto: a stiffness test at (t0, u0) (the spectral
/// radius estimate of the Jacobian times the span) picks Tsit5 for non-stiff and Rodas5P for
/// stiff problems. Along the run the Integrator switches between the two (Integrator::switches).
MethodId choose_method(const OdeProblem& problem, double t0, double t1,
                       std::span<const double> u0);

}  // namespace esi::method
