// What a caller chose for one run, turned into the System it integrates: the shared front of
// `esi simulate` and the Python module's `Model.simulate`, so that both run the same system
// with the same options, bit for bit.
//
// flatten_for_run picks the form the method needs: arrays as per-region programs for explicit
// and Rosenbrock (or automatic) methods; a gridded model whose pointwise part (lifted
// chemistry) separates runs that part on lane pools with one step controller per cell and the
// rest with an explicit method (SimulateOptions::cell_split); otherwise one equation per cell.
// Overrides name a parameter, or a state's initial value, by flat or unique local name (a
// trailing segment: "B.x" for "A.B.x"); a name that matches nothing, several variables, an
// observed or a variable a variable_map replaced is refused with the reason and near matches.
//
// This is not esm::resolve_local (spec §6.6.2, the names of inline tests and analyses): that
// rule resolves under one component's scope and reads observeds and algebraic variables too,
// while an override takes states and parameters only, by any trailing segment, and its
// refusals say more. The messages of both are pinned by tests, so each keeps its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/method/integrator.hpp"

namespace esi::exec {

/// One override and where it came from.
struct Override {
  std::string name;
  double value = 0;
  std::string origin;   ///< how a message names it: "--set k", "--params line 3 ('k')"
  std::string file;     ///< the file that holds it ("" when the caller typed it)
  std::string pointer;  ///< JSON pointer of the entry in a JSON file
};

struct RunChoices {
  std::string component;  ///< flatten only this component ("" = the whole document)
  /// Arrays as one equation per cell even where per-region programs would do (derivatives
  /// need them: the symbolic Jacobian is built per cell).
  bool cells = false;
  /// Values for array (and scalar) variables by name: number or nested array (FlattenOptions).
  nlohmann::json inputs = nlohmann::json::object();
  std::string inputs_file;  ///< where `inputs` came from, for messages
  /// Applied in order; a later one for the same variable wins (whichever way each was spelled).
  std::vector<Override> overrides;
  /// Where an override without a file was typed: the `file` of an error about its name.
  std::string typed_at = "<command line>";
  /// Gridded models on lane pools: lanes per pool, the split step (0: every output time), and
  /// the method of the rest (default SSPRK43).
  int lanes = 16;
  double split_step = 0;
  std::optional<method::MethodId> transport_method;
};

/// The System to integrate for these choices. `options` must hold the requested method,
/// tolerances and thread count; when the pointwise part runs on lane pools, `options.cell_split`
/// is set and `options.integrator.method` becomes the transport method. `note`, when given,
/// receives why a gridded model runs one equation per cell instead ("" otherwise). Throws
/// esi::Error for a bad override name or inputs.
esm::System flatten_for_run(const esm::ResolvedDocument& doc, const RunChoices& choices,
                            SimulateOptions& options, std::string* note = nullptr);

/// Refuses an override whose name is no state or parameter, with the reason and near matches
/// (`unknown_override`, `ambiguous_override`); the error's file is o.file, else `typed_at`.
void check_override_name(const esm::System& sys, const nlohmann::json& doc, const Override& o,
                         const std::string& typed_at);
/// Whether an override name targets a state: its flat name, or a local name that ends a state's
/// flat name and no parameter's (check_override_name reported unknown and ambiguous names).
bool names_state(const esm::System& sys, const std::string& name);
/// The flat name an override targets (check_override_name found exactly one), so that "k" and
/// "Box.k" are one key and the override given last wins whichever way each was spelled.
std::string flat_target(const esm::System& sys, const std::string& name);

/// The output interval when the caller names none: a hundredth of the span, so a run writes
/// 101 evenly spaced rows (T0, 99 inner times, T1) rather than only its ends. Rounded up to the
/// next double where T0 + 100 * DT would fall just short of T1 (which would add a 102nd row a
/// rounding error before T1). 0 (no grid: T0 and T1 only) for an empty or overflowing span.
double default_saveat(double t0, double t1);

/// The preset times (discrete events with a `preset_times` trigger) strictly inside (t0, t1),
/// sorted, at most kMaxPresetRows: without a regular output grid they join the output times, so
/// a dose or an emission pulse shows at its own time.
inline constexpr std::size_t kMaxPresetRows = 100000;
std::vector<double> preset_event_times(const esm::System& sys, double t0, double t1);

}  // namespace esi::exec
