// Gradients of a loss over one run (`esi simulate --gradient`): a forward run that records its
// steps (method::ForwardTape), then the discrete adjoint of that step sequence
// (method::adjoint), so the gradient with respect to every numeric parameter and every state's
// initial value costs one backward sweep. The derivative is the one of the discrete map the
// forward run computed, step sizes held fixed (sensitivity.hpp).
//
// The loss is the value of a state or an observed at the end of the span (for a state array
// the mean of its cells), or a sum of LossTerms: values at output times, time integrals and
// means, and squared misfits against observations. An observed that reads parameters adds its
// own derivative by them. Refused with a located esi::Error: a loss or --wrt name that names
// nothing (`unknown_gradient_variable`), a loss term outside the span or with sigma <= 0
// (`invalid_loss`), a parameter that is not a number fixed for the run (`adjoint_unsupported_parameter`), a method
// without sensitivities (`adjoint_unsupported_method`), events that fire at a crossing or
// where a condition holds (`adjoint_unsupported_event`), arrays as per-region programs
// (`adjoint_unsupported_grid`). Preset-time and periodic events, and §5.4 schedule updates,
// are differentiated with their firing held fixed: the run is recorded in stretches between
// firings, and the sweep passes each firing's affects backwards (their derivatives by the
// state and parameters they read); a parameter an event sets is carried by the sweep but has
// no entry of its own.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "esi/esm/system.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/method/sensitivity.hpp"

namespace esi::exec {

/// One term of a loss. A loss is the sum of its terms; a time or interval bound inside the
/// span becomes a step end of the forward run (a tstop), so every term reads states the steps
/// computed, never interpolated ones.
struct LossTerm {
  enum class Kind {
    At,        ///< weight * sum over `times` of the variable
    Integral,  ///< weight * the trapezoid rule over the steps taken in [begin, end]
    Mean,      ///< the integral divided by (end - begin)
    Misfit,    ///< weight * 1/2 sum ((variable(t_k) - values_k) / sigmas_k)^2 over `times`
  };
  Kind kind = Kind::At;
  std::string variable;  ///< a state, an observed, or a state array (the mean of its cells)
  std::vector<double> times;
  std::vector<double> values, sigmas;  ///< Misfit
  double begin = 0, end = 0;           ///< Integral, Mean
  double weight = 1;
  std::string file, pointer;  ///< where the term was written (messages); "" from --loss
};

struct GradientOptions {
  /// t0, t1, the integrator, the document, native; outputs and events are not used.
  SimulateOptions run;
  /// A state's or an observed's flat name, or a state array's (the mean of its cells), at t1.
  std::string loss;
  std::vector<LossTerm> loss_terms;  ///< when not empty: the loss instead of `loss`
  /// Flat names to differentiate with respect to: parameters, and states for their initial
  /// values. Empty: every differentiable parameter and every state.
  std::vector<std::string> wrt;
  std::size_t checkpoint_every = 1;  ///< the tape keeps the state before every K-th step
  /// > 0: a memory budget in bytes for the tape: the recording thins it as the run goes (the
  /// kept stages first, then every other checkpoint), so K grows by powers of 2 to fit.
  std::size_t checkpoint_memory = 0;
  /// > 0: also check the gradient in this many random directions (seeded, reproducible): the
  /// dot-product identity of tangent and adjoint, and central differences of the frozen steps.
  int check_directions = 0;
  /// Also time the same forward run without a tape (GradientResult::plain_seconds), for the
  /// cost of a gradient in plain forward runs.
  bool time_plain_forward = false;
};

struct GradientEntry {
  std::string name;   ///< flat name
  bool initial = false;  ///< true: with respect to the state's initial value
  double value = 0;
  std::string units;  ///< units of the loss per unit of the variable ("" when either is unknown)
};

/// One random direction v of --gradient-check: <lambda, TLM v> against <ADJ lambda, v>, and
/// the directional derivative of the frozen steps by central differences.
struct GradientCheck {
  /// <lambda, TLM v>, <ADJ lambda, v> (lambda random) and their difference relative to
  /// sum_i |lambda_i (TLM v)_i|
  double tangent = 0, adjoint = 0, dot_relative = 0;
  double loss_tangent = 0;  ///< the loss's derivative along v by the tangent
  double finite_difference = 0, difference_relative = 0, step = 0;  ///< ... and by central differences
};

struct GradientResult {
  double loss = 0;
  std::string loss_units;
  std::vector<GradientEntry> gradient;
  method::ReturnCode code = method::ReturnCode::Success;
  std::string message;  ///< why the forward run or the sweep failed ("" on success)
  method::MethodId method = method::MethodId::Auto;
  method::IntegratorStats forward_stats;
  method::SweepResult sweep;
  std::size_t steps = 0, tape_bytes = 0, parameters = 0, states = 0;
  std::size_t checkpoint_every = 1;  ///< K at the end of the recording (the largest segment's)
  double forward_seconds = 0, sweep_seconds = 0;
  double plain_seconds = 0;  ///< with GradientOptions::time_plain_forward
  std::vector<GradientCheck> checks;
  bool ok() const { return code == method::ReturnCode::Success; }
};

/// Throws esi::Error for what it refuses (above) and for input simulate refuses.
GradientResult gradient(const esm::System& system, const GradientOptions& options);

/// Forward sensitivities (`esi simulate --sensitivities p1,p2`): the trajectory at t0, every
/// saveat multiple and t1, each a step end of the run (never interpolated), and per row the
/// derivative of every state with respect to each name in `wrt` (a parameter, or a state for its
/// initial value) by the tangent linear model of the steps taken: one tangent sweep per name.
struct SensitivityTrajectory {
  std::vector<std::string> names;  ///< states, then "d(state)/d(name)" for each name, state-major per name
  std::size_t state_count = 0;
  std::vector<double> times;
  std::vector<double> values;  ///< row-major, names.size() per row
  method::ReturnCode code = method::ReturnCode::Success;
  std::string message;
  method::MethodId method = method::MethodId::Auto;
  std::size_t steps = 0;
  bool ok() const { return code == method::ReturnCode::Success; }
};
/// Refuses what `gradient` refuses (crossing and condition events, grids, methods, unknown or
/// non-numeric names). A row at an event's time shows the state after its firings there.
SensitivityTrajectory forward_sensitivities(const esm::System& system, const SimulateOptions& run,
                                            const std::vector<std::string>& wrt);

}  // namespace esi::exec
