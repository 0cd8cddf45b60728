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
};

/// Throws esi::Error with the code, file and pointer of the first problem.
System flatten(const ResolvedDocument& doc, const FlattenOptions& options = {});

/// A plain summary of a system (what `esi inspect --json` prints).
nlohmann::json describe(const System& system);

}  // namespace esi::esm
