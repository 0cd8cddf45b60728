// Parameter sweeps of box models: N runs of one document that differ only in parameter values
// and initial values, one row of a table each (the Python module's Model.sweep and
// `esi simulate --params TABLE.csv --sweep`).
//
// Two engines. The scalar one (the default): the document is flattened and compiled once per
// worker thread (exec::BoundModel, one Jacobian shared by all); each member then edits its
// values and runs with its own step-size controller: a member's run is exec::simulate's for the
// same document with that row's values given as overrides, bit for bit, whatever the thread
// count and wherever the member sits in the table. The lane-pool one (`SweepEngine::Lanes`):
// members are the cells of lane pools (exec::integrate_cells; Rosenbrock methods, "auto" runs
// Rodas3), each with its own controller, restarted at every output time with its last step
// size; the swept parameters are per-cell parameters, the rest shared. Its results do not
// depend on the thread count, the lane width or a member's place in the table (the lane
// pools' guarantee), but they are not the scalar integrator's bits: another stepper and
// another step sequence, equal within the tolerances. Observeds are evaluated from each
// member's states and parameters at the output times. A member whose solve fails keeps the
// rows it reached (the rest NaN) and its code.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "esi/esm/load.hpp"
#include "esi/exec/prepare.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/method/integrator.hpp"

namespace esi::exec {

/// What varies: `names` (a parameter, or a state's initial value, by flat or unique local
/// name) and one row of values per member, member-major: values[m * names.size() + k].
struct SweepTable {
  std::vector<std::string> names;
  std::vector<double> values;
  std::string file;  ///< where the table came from, for messages ("" = the caller's arguments)
  std::size_t members() const { return names.empty() ? 0 : values.size() / names.size(); }
};

enum class SweepEngine { Scalar, Lanes };

struct SweepResult {
  std::vector<std::string> names;  ///< states then observeds (Trajectory::names)
  std::size_t state_count = 0;
  /// The swept names as flat names, and whether each sets a state's initial value.
  std::vector<std::string> swept;
  std::vector<bool> swept_state;
  std::vector<double> times;  ///< the output times every member was asked for
  /// values[(m * times.size() + k) * names.size() + j]; NaN after a failed member's last row.
  std::vector<double> values;
  std::vector<std::size_t> rows;          ///< output rows each member reached
  std::vector<method::ReturnCode> codes;  ///< per member
  std::vector<std::string> messages;      ///< per member, "" on success
  std::vector<method::MethodId> methods;  ///< the method each member ran (first, with Auto)
  method::IntegratorStats stats;          ///< summed over members
  std::size_t failed = 0;
};

/// Runs every member of `table` over `options`' span and output times on `threads` threads.
/// `base` holds what every member shares (component, inputs, overrides applied before the
/// table's). Throws esi::Error: `unknown_override` / `ambiguous_override` for a column naming
/// no parameter or state (the table's file and column), `invalid_sweep` for an empty or ragged
/// table, `sweep_unsupported_model` for a gridded or stochastic model.
/// `lanes`: the block width of the lane engine (an entry of linalg::kLuLaneWidths). The lane
/// engine also refuses a model with events and a method that is not Rosenbrock
/// (`sweep_unsupported_method`); its absolute tolerance with SimulateOptions::atol_from_scales is
/// per state the smallest any member's scales give.
SweepResult sweep(const esm::ResolvedDocument& doc, const RunChoices& base, const SweepTable& table,
                  SimulateOptions options, unsigned threads,
                  SweepEngine engine = SweepEngine::Scalar, int lanes = 16);

}  // namespace esi::exec
