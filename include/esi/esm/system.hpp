// The flattened system: one set of equations over fully-qualified names (spec §10.7).
//
// Produced by `flatten` from a resolved document. Every name is dot-namespaced by its owning
// component path (`SuperFast.O3`, `Atmosphere.Chemistry.NO2`); expressions live in the
// system's own expression Pool and reference only flat names, `t`, and numbers. Unknowns are
// partitioned per spec §6.3.1: states (D(x, t) targets, with their right-hand side), observed
// unknowns (bare-name left-hand sides, in dependency order: each observed reads only states,
// parameters and observeds before it) and algebraic unknowns (implicit equations).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/expr/expr.hpp"

namespace esi::esm {

/// How often a parameter changes (spec §5.4, §6.3.1).
enum class Cadence { Constant, Sampled, Discrete, Brownian };

struct FlatVariable {
  std::string name;         ///< fully qualified, e.g. "SuperFast.O3"
  std::string units;        ///< as declared ("" when absent)
  std::string description;  ///< as declared
  std::optional<double> default_value;
  /// Initial value expression from an `ic` equation (wins over `default`); kNoNode if none.
  expr::NodeId initial = expr::kNoNode;
  std::vector<std::string> shape;  ///< index-set names; empty = scalar
  /// For one cell of a shaped variable: the array's flat name ("C.x") and the cell's 1-based
  /// position along each of its axes; empty for a scalar variable.
  std::string array;
  std::vector<std::int64_t> cell;
  Cadence cadence = Cadence::Constant;  ///< parameters only
  std::string file;     ///< where it was declared
  std::string pointer;  ///< JSON pointer of its declaration
};

struct FlatEquation {
  expr::NodeId lhs = expr::kNoNode;
  expr::NodeId rhs = expr::kNoNode;
  std::string file;
  std::string pointer;
};

/// One reaction of a reaction system as authored (spec §7), kept for people (`esi inspect`):
/// the mass-action ODEs in `state_rhs` are what runs.
struct FlatReaction {
  std::string component;  ///< the reaction system's path, e.g. "SuperFast"
  std::string id;         ///< "R1" ("" when absent)
  std::string name;       ///< optional descriptive name
  /// Species by their local names with their stoichiometric coefficients, in authored order.
  std::vector<std::pair<std::string, double>> substrates, products;
  /// The rate law with templates expanded and names flat ("SuperFast.k1"), before the §7.4
  /// substrate factors are multiplied in and before coupling substitutions.
  expr::NodeId rate = expr::kNoNode;
  std::string file, pointer;
};

/// The name of one cell of array `name`: "C.x[2,1,7]" (1-based, as the format indexes).
std::string cell_name(const std::string& name, const std::vector<std::int64_t>& cell);
/// cell_name into `out`, reusing its buffer.
void assign_cell_name(std::string& out, const std::string& name,
                      const std::vector<std::int64_t>& cell);

struct System {
  expr::Pool pool;
  std::vector<std::string> components;  ///< component paths, document order

  std::vector<FlatVariable> states;      ///< dx/dt = state_rhs[i]
  std::vector<expr::NodeId> state_rhs;
  /// Per state: the component path of each contribution summed into its right-hand side
  /// (operator_compose parts, in the order of the top-level sum's arguments; one entry when a
  /// single component contributes, empty for a state without one). The planner's provenance.
  std::vector<std::vector<std::string>> state_sources;
  std::vector<FlatVariable> observed;    ///< y = observed_rhs[i], dependency order
  std::vector<expr::NodeId> observed_rhs;
  std::vector<FlatVariable> algebraic;   ///< constrained by algebraic_equations
  std::vector<FlatEquation> algebraic_equations;
  std::vector<FlatVariable> parameters;
  std::vector<FlatReaction> reactions;  ///< every reaction, document order (for inspection)

  std::map<std::string, std::int64_t> index_sets;  ///< name -> folded size
  /// Every shaped variable, before it became cells: its flat name, its axes (index-set names)
  /// and their extents. Cells are stored first index fastest, named "C.x[i,j,k]".
  struct Array {
    std::string name;
    std::vector<std::string> axes;
    std::vector<std::int64_t> extents;
    /// A parameter array: only the cells some equation reads are in `parameters` (a field
    /// over a global grid read on a regional slice keeps only that slice).
    bool parameter = false;
    std::string units, description;
    /// Per-region form only (`grid` non-empty): where a state array's cells start in
    /// `states` (contiguous, first index fastest), -1 otherwise; a parameter array's values
    /// (first index fastest; NaN where nothing gave one), since its cells are not declared.
    std::int64_t first_state = -1;
    std::vector<double> values;
  };
  std::vector<Array> arrays;

  /// Per-region programs (FlattenOptions::grid, spec §4.3 without cells): each array equation
  /// is a list of boxes of output cells and, per box, one expression that holds at every cell
  /// of it. Reads of arrays in those expressions are relative symbols: "C.x[@0+1,@1,3]" is
  /// C.x at (output axis 0 plus one, output axis 1, 3); "$index[@2-1]" is the cell's own
  /// position along output axis 2, minus one, as a number. Out-of-range gathers were already
  /// replaced by 0 in the boxes where they fall outside, so the expressions never read
  /// outside an array. Boxes do not overlap and cover the extents; the number of boxes and
  /// their expressions do not depend on the grid size, only their bounds do.
  struct GridRegion {
    std::vector<std::int64_t> lo, hi;  ///< 1-based, inclusive
    std::vector<expr::NodeId> rhs;     ///< one per target
  };
  struct GridEquation {
    enum class Kind { Observed, Tendency, Initial };
    Kind kind = Kind::Tendency;
    std::vector<std::string> targets;  ///< arrays it defines (same extents), flat names
    std::vector<std::int64_t> extents;
    std::vector<GridRegion> regions;
    std::string file, pointer;
    /// Tendency with one region: per target, the component path of each contribution summed
    /// into it (operator_compose parts, in the order of the top-level sum's arguments; one
    /// entry when a single component contributes). The planner's provenance.
    std::vector<std::vector<std::string>> sources;
  };
  /// Observed arrays first (dependency order), then tendencies, then initial values. Empty
  /// unless the per-region form was asked for and the document has one.
  std::vector<GridEquation> grid;
  /// Why the per-region form was asked for but the arrays became cells ("" otherwise).
  std::string grid_fallback;
  nlohmann::json events = nlohmann::json::array();  ///< flattened events (run later)

  /// Index of a flat name in states / observed / parameters, or -1.
  int state_index(const std::string& name) const;
  int observed_index(const std::string& name) const;
  int parameter_index(const std::string& name) const;
};

}  // namespace esi::esm
