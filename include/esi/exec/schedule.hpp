// The schedule interpreter (seed 002 §4.3): runs a run configuration's schedule tree over a
// flattened system, macro step by macro step, with forcing epochs, output and restart points.
//
// Binding. The configuration's operators select the planner's operators (plan.hpp) by
// locality and component. Each selector must match at least one, no planner operator may be
// selected twice, and every one must be selected (`selector_matches_nothing`,
// `operators_overlap`, `operator_terms_unassigned`, located at the selector). esi then runs
// two kinds of operator: the pointwise part of a gridded system's tendencies (one step
// controller per cell on lane pools, `dt_scope` cell) and the rest (one Integrator over the
// grid, `dt_scope` global); the leaf "all" is the whole right-hand side on one Integrator. An
// operator whose selection mixes pointwise and other terms, or two operators over the same
// kind, is refused (`unsupported_operator_split`) with the planner's operators listed.
//
// Stepping. A macro step runs from t to the earliest of t + step.dt, the next output time,
// the next forcing refresh (record time), the next restart point, the next `every` due time
// and the end. Within it: a leaf integrates its operator over the interval it is given (the
// Integrator restarts there keeping its step size; cells keep theirs); `sequence` / `lie`
// runs its children in order over the whole interval; `strang` runs children 0..n-2 over
// half the interval, the last over all of it, then n-2..0 over the second half; `subcycle`
// runs its child `substeps` times over equal parts; `every` runs its child only in macro steps
// that end on a multiple of its period after the start, over the time since its last run.
//
// Forcing (forcing.hpp). Macro steps end on every record time, so no step crosses an epoch;
// a stage exactly on the record time that ends its step sees the next epoch.
//
// Restart. At restart points (multiples of restart_every after the start, always macro-step
// ends) the runner hands the caller a RestartState: time, state, every leaf's carried step
// control and a fingerprint of the model and configuration. Resuming from it reproduces the
// uninterrupted run bit for bit (the test kills a run and compares).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"
#include "esi/exec/forcing.hpp"
#include "esi/exec/run_config.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/method/integrator.hpp"
#include "esi/plan/plan.hpp"

namespace esi::exec {

struct RestartState {
  std::uint64_t fingerprint = 0;
  double t = 0;
  std::uint64_t macro_steps = 0;
  std::vector<double> u;
  std::vector<double> p;  ///< the model's parameter values (events and forcing set them)
  struct Leaf {
    bool has_integrator = false;
    method::Integrator::Carry carry;
    std::vector<double> step_size;  ///< cell leaves: each cell's carried step
    LanePoolStats cells;            ///< cell leaves: statistics so far
  };
  std::vector<Leaf> leaves;
};

/// Writes `state` to `path` atomically (a temporary file renamed), or throws
/// `restart_write_failed`. The format is esi's own binary (little-endian doubles, a header
/// with a magic, a version and the fingerprint).
void write_restart(const std::string& path, const RestartState& state);
/// Throws `restart_unreadable` (missing, truncated, not a restart file).
RestartState read_restart(const std::string& path);

/// The method a leaf runs and why: the configuration's, or the strategy rule's for "auto"
/// (seed 002 §3.5: structure, then the planner's Gershgorin bound at sampled states times the
/// macro step).
struct LeafChoice {
  std::string leaf, pointer;  ///< the operator ("all" for the whole right-hand side), its node
  bool automatic = false;     ///< the configuration said "auto" (or gave no alg)
  method::MethodId method = method::MethodId::Auto;  ///< Auto: decided when the run starts
  std::string why;
};

/// Each leaf's choice, in schedule order, without running (binds the operators like a run:
/// the same refusals). `planned`: the system's plan if the caller made one (validated, for
/// the sampled bounds), else one is made. `esi plan --config` writes it into plan.json as
/// "strategy".
std::vector<LeafChoice> run_strategy(const esm::System& system, const RunConfig& config,
                                     const plan::Plan* planned = nullptr);

struct LeafReport {
  std::string what;  ///< "transport: SSPRK43 (global dt)", "chemistry: Rodas3 (cell dt)"
  std::string why;   ///< for an "auto" leaf, why the strategy rule chose its method
  long calls = 0, accepted = 0, rejected = 0;
  /// An "auto" leaf's integrator: the method it runs now and how often it switched.
  std::string method_now;
  long method_switches = 0;
};

struct ScheduleOptions {
  const esm::ResolvedDocument* document = nullptr;
  bool native = false;
  std::vector<ForcingProvider> forcing;
  std::function<void(const std::vector<std::string>& names)> on_columns;
  std::function<void(double t, std::span<const double> row)> on_row;
  /// After every macro step: time reached, leaves' statistics so far.
  std::function<void(double t, const std::vector<LeafReport>& leaves)> on_step;
  const std::atomic<bool>* stop = nullptr;
  double restart_every = 0;  ///< [s] of model time; 0 = no restart points
  std::function<void(const RestartState&)> on_restart;
  const RestartState* resume = nullptr;  ///< continue from here instead of the start
  /// Extra bits folded into the fingerprint (e.g. the model file's bytes' hash).
  std::uint64_t fingerprint_salt = 0;
  /// Extra output times in [start, stop] beside the output interval.
  std::vector<double> sample_times;
};

struct ScheduleResult {
  Trajectory trajectory;  ///< rows streamed to on_row when given; code, message, summaries
  std::vector<LeafReport> leaves;
  std::string operators;  ///< how the configuration's operators were bound, in words
  std::uint64_t macro_steps = 0;
};

/// True when every leaf runs "all" and some leaf's method needs a Jacobian (or is automatic):
/// such a run needs the model in the cell form (one equation per cell), as the per-region form
/// has no Jacobian.
bool whole_implicit(const RunConfig& config);

/// Checks the configuration against the system (operators, leaves, forcing targets) without
/// running: what `esi run` does before it opens any output. Throws the binding errors above
/// and `forcing_target_unknown`, `forcing_shape_mismatch`.
void check_schedule(const esm::System& system, const RunConfig& config,
                    const std::vector<ForcingProvider>& forcing);

/// Runs the schedule from config.start (or options.resume) to config.stop. `system` is
/// flattened with FlattenOptions::grid (a box model has no arrays and needs nothing else).
/// Bad input throws esi::Error; a failed solve returns with Trajectory::code set.
ScheduleResult run_schedule(const esm::System& system, const RunConfig& config, const ScheduleOptions& options);

}  // namespace esi::exec
