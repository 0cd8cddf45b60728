// Flattening a resolved document into a System (spec §7.4, §10, §6.3.1).
//
// Steps: expand expression templates per component; namespace every name by component path;
// turn reaction systems into mass-action ODEs (constant species become parameters); apply
// coupling entries (operator_compose sums tendencies of one state, variable_map replaces a
// parameter, couple adds connector terms); classify unknowns and order observeds; apply
// `ic` equations and caller overrides. Array features (shapes, aggregate, makearray, index,
// broadcast, spatial D) are parsed and validated but not yet flattened to cells: a document
// that needs them is refused with `unsupported_array_feature` naming the feature.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"

namespace esi::esm {

/// Deepest expression a flattened equation may reach once the observeds it reads are
/// substituted (`nesting_too_deep` beyond). Later stages recurse over expressions; real
/// documents stay under 40.
inline constexpr std::size_t kMaxExpressionDepth = 512;

struct FlattenOptions {
  /// Only this component (and what it contains); "" = the whole document with its coupling.
  std::string component;
  /// Overrides by flat name ("SuperFast.T") or by a local name that is unique ("T").
  /// Unknown or ambiguous keys are errors (`unknown_override`, `ambiguous_override`).
  std::map<std::string, double> parameter_overrides;
  std::map<std::string, double> initial_conditions;
  /// Values supplied by the caller for parameters (constant data such as hybrid-coordinate
  /// tables, forcing fields held fixed) and initial values of states, by flat name or unique
  /// local name. A number sets a scalar, or every cell of an array; a nested JSON array (first
  /// axis outermost, as §6.6.5 reads snapshots) sets an array cell by cell and must match its
  /// shape (`input_shape_mismatch`).
  nlohmann::json inputs = nlohmann::json::object();
  /// Where `inputs` came from (errors about an input point into this file), "" = the document.
  std::string inputs_file;

  /// Extra array observeds defined in one component's scope: the inline-test runner's
  /// `reference` expressions (§6.6.5), evaluated over every cell like the array they are
  /// compared with. Named `<component>.<name>`.
  struct ExtraArray {
    std::string component;  ///< dotted path of the component whose names the rhs reads
    std::string name;       ///< local name (not a declared variable)
    std::vector<std::string> axes;
    std::vector<std::int64_t> extents;
    nlohmann::json rhs;
    std::string file, pointer;
  };
  std::vector<ExtraArray> extra_arrays;

  /// Lower array equations to per-region programs (System::grid) instead of one scalar
  /// equation per cell: state arrays still get one state per cell (no right-hand side:
  /// state_rhs is kNoNode for those), observed arrays and parameter arrays get none
  /// (System::Array::values holds a parameter array). A document whose arrays cannot be
  /// written as box programs becomes cells as without this flag (System::grid_fallback says
  /// why).
  bool grid = false;
};

/// Throws esi::Error with the code, file and pointer of the first problem.
System flatten(const ResolvedDocument& doc, const FlattenOptions& options = {});

/// Whether `key` names an array of the system (by flat or unique local name).
bool names_array(const System& system, const std::string& key);

/// Which parts of a system `describe` reports (`esi inspect`'s filters).
struct DescribeOptions {
  bool states = true;      ///< species / states and algebraic unknowns
  bool observed = true;
  bool parameters = true;
  bool reactions = true;
  bool equations = true;   ///< D(x, t) = rhs and algebraic equations, in infix
  /// When set, an entry is kept only if this returns true for its name or for one of its
  /// printed expressions (`esi inspect --grep`); arrays are matched by their name.
  std::function<bool(const std::string&)> keep;
};

/// A plain summary of a system (what `esi inspect --json` prints): each group in natural name
/// order (j_2 before j_10), reactions in document order, each array once (never its cells).
nlohmann::json describe(const System& system, const DescribeOptions& options = {});

/// A reaction as people write it: "NO + O3 -> NO2 : k1 * exp(-1500 / T)", coefficients other
/// than 1 before their species ("2 NO2"), an empty side as "∅", names of the reaction's own
/// component local.
std::string reaction_text(const System& system, const FlatReaction& reaction);

}  // namespace esi::esm
