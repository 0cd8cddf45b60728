// The run driver: one System integrated from t0 to t1 with events, sampled at output times.
//
// `simulate` compiles the system with esi::kernel (the RHS over all states, its analytic
// Jacobian for implicit methods, observeds as extra outputs), takes initial values from
// `default` / `ic`, and steps an esi::method::Integrator accepted step by accepted step. Output
// times are t0, every multiple of `saveat` after t0, t1 and any extra `sample_times`; each is
// read from the step's dense output, or from the state itself on an exact hit. At a time where
// an event fires, the reported value is the one after the event (right-continuous).
//
// Events (spec §5): continuous events are located by Illinois root finding on the dense output
// and applied on the far side of the crossing (so it is consumed), discrete events fire at
// preset times, periodically (first firing at t0 + offset + interval when the offset is 0) or
// when their condition holds at a step end; parameter `update` blocks (§5.4) of kind schedule,
// condition and crossing do the same for parameters (they are read from the resolved document
// given in the options). Every affect reads the pre-event state (`Pre`).
//
// Output times are generated as the run reaches them (no list of all of them is built); a
// regular grid of more than kMaxOutputRows rows is refused (`too_many_outputs`). A state,
// observed or derivative that is not finite ends the run with ReturnCode::NonFinite and a
// message naming the variable and the time (the row is not recorded).
//
// Index-0 algebraic unknowns (an implicit equation whose one side is the bare unknown) are
// substituted; any other algebraic system is refused with `unsupported_algebraic`. Anything of
// §5 not implemented (handlers, wiener and data updates) is refused with `unsupported_event`.
// Bad input throws esi::Error; a failed solve does not throw: the Trajectory carries the
// method's ReturnCode and message, with every output recorded up to the failure.
#pragma once

#include <atomic>

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"
#include "esi/exec/lane_pool.hpp"
#include "esi/method/integrator.hpp"

namespace esi::exec {

/// The most output rows one run may produce (t0, the saveat grid, t1 and the sample times).
inline constexpr double kMaxOutputRows = 1e7;

struct SimulateOptions {
  double t0 = 0;
  double t1 = 0;
  double saveat = 0;                 ///< 0 = no regular grid (only t0, t1 and sample_times)
  std::vector<double> sample_times;  ///< extra output times in [t0, t1] (e.g. assertion times)
  /// Step exactly to each sample time (a tstop) instead of reading it from the dense output.
  bool stop_at_sample_times = false;
  method::IntegratorOptions integrator;  ///< method Auto starts with method::choose_method's pick and switches
  /// The integrator's atol is a default, not the user's: each state's absolute tolerance is
  /// capped at a fraction of its scale (atol_from_scales) and the run reports the states that
  /// stayed below theirs (Trajectory::atol_each, below_atol).
  bool atol_from_scales = false;
  /// The document the system was flattened from: source of parameter `update` blocks. When
  /// null, a parameter with an update (Discrete cadence) is refused with `unsupported_event`.
  const esm::ResolvedDocument* document = nullptr;
  /// Observeds whose parameters have no value: true = refuse the run (`missing_parameter_value`,
  /// what `esi simulate` wants: it reports every observed); false = those columns read NaN
  /// (the inline-test runner, which reads only the asserted variables).
  bool require_observed_values = true;
  /// Run the RHS and Jacobian as native code (kernel::with_native, cached on disk): the same
  /// bits as the tape, faster per call, a compile of seconds on first use of a model.
  bool native = false;
  /// Gridded systems run as per-region programs (FlattenOptions::grid): the grid right-hand
  /// side in slabs on this many threads (kernel::make_grid_workspace; the same bits for any
  /// count). With `cell_split`, its lane pools' thread count is used instead.
  unsigned threads = 1;
  /// When set, each output row (states then observeds, Trajectory::names order) is handed to
  /// `on_row` as the run reaches it and Trajectory::times / values stay empty (a long run
  /// needs no memory per row). `on_columns` is called once with the names before any row. A
  /// callback may throw (e.g. a failed write); the exception ends the run and propagates.
  std::function<void(const std::vector<std::string>& names)> on_columns;
  /// When set and true (e.g. from a SIGINT handler), the run stops after the step in progress:
  /// the state reached is recorded as one last row and the trajectory ends with
  /// ReturnCode::Interrupted.
  const std::atomic<bool>* stop = nullptr;
  /// Called after every accepted step with the time reached (a progress display); keep it
  /// cheap, it runs once per step.
  std::function<void(double t)> on_step;
  std::function<void(double t, std::span<const double> row)> on_row;

  /// Gridded systems (FlattenOptions::grid) only: run the pointwise part of the tendencies
  /// (the lifted chemistry, see pointwise.hpp) on lane pools with one step controller per cell
  /// (`cells`), and the rest (transport) with `integrator`, Lie-split: every split step runs
  /// the rest over the step, then the cells from the state it reached. Inputs the cells read
  /// from observed arrays are taken at the start of each split step. Output times are split
  /// step ends, so they are exact, never interpolated. Events are refused.
  struct CellSplit {
    LanePoolOptions cells;
    double step = 0;  ///< the split step [s]; 0 = from one output time to the next
  };
  std::optional<CellSplit> cell_split;
};

/// Upper bound on the rows of a run with these options (for refusing a run before it starts).
double planned_output_rows(const SimulateOptions& options);

struct Trajectory {
  std::vector<std::string> names;  ///< states (System order), then observeds
  std::size_t state_count = 0;
  std::vector<double> times;   ///< increasing output times actually reached
  std::vector<double> values;  ///< row-major: values[k * names.size() + j]
  method::ReturnCode code = method::ReturnCode::Success;
  std::string message;  ///< why the solve stopped early ("" on success)
  method::MethodId method = method::MethodId::Auto;  ///< the method that ran (first, with Auto)
  /// With SimulateOptions::atol_from_scales: each state's absolute tolerance as it ran, and the
  /// states whose |value| stayed below it the whole run (their error was not controlled).
  std::vector<double> atol_each;
  std::vector<std::size_t> below_atol;
  /// Where MethodId::Auto changed method along the run, in order.
  std::vector<method::MethodSwitch> switches;
  method::IntegratorStats stats;
  long events_fired = 0;
  std::size_t rows = 0;  ///< output rows produced (also when streamed to on_row)
  double last_time = 0;  ///< time of the last row (when rows > 0)
  /// Only when native code was requested: "native <file>" or "tape (native code unavailable:
  /// <why>)" for the RHS program, so callers can say the run fell back to the tape.
  std::string native_status;
  /// Arrays run as per-region programs (System::grid): "P programs over B boxes, I lane
  /// instructions"; "" when the system has none.
  std::string grid_summary;
  /// With SimulateOptions::cell_split: what ran per cell ("3528 cells x 12 states, Rodas3 on
  /// 16 lanes, 2 threads; LU ..."), and the lane pools' statistics summed over split steps.
  std::string cell_summary;
  LanePoolStats cell_stats;
  /// Parameters the document reads from data sources, held at their given values (see
  /// EventSet::held_data): a run that prints these used stated, not observed, forcing.
  std::vector<std::string> held_data;

  bool ok() const { return code == method::ReturnCode::Success; }
  int column(const std::string& name) const;  ///< index into names, or -1
  /// The value of column j at output k.
  double at(std::size_t k, std::size_t j) const { return values[k * names.size() + j]; }
};

/// Throws esi::Error for input the driver cannot run (`invalid_time_span`, `too_many_outputs`,
/// `unsupported_algebraic`, `unsupported_event`, `missing_initial_value`, compile codes).
Trajectory simulate(const esm::System& system, const SimulateOptions& options);

/// The fraction of a state's scale its default absolute tolerance may not exceed.
inline constexpr double kAtolScaleFraction = 1e-6;
/// Default absolute tolerances that respect the problem: state i gets
/// min(atol, kAtolScaleFraction * scale_i), where scale_i is the largest |initial value| among
/// the states declared in the same units as i (a species starting at 0 takes its mechanism's
/// scale); atol where that scale is 0.
std::vector<double> atol_from_scales(const esm::System& system, std::span<const double> u0, double atol);

/// d(state)/dt at time t and the states `u` (System::states order) from that state's own
/// equation, parameters at their values; NaN when it cannot be evaluated (a per-region model,
/// a parameter without a value). What `esi simulate` asks, with the state set to 0, to tell a
/// loss the equations keep up at zero from a numerical undershoot.
double state_rate(const esm::System& system, std::size_t state, double t, std::span<const double> u);

}  // namespace esi::exec
