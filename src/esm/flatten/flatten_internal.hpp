// Private state shared by the flatten passes (components, localize, reactions, coupling) and
// the array expansion (esm/arrays/).
#pragma once

#include <array>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/flatten.hpp"
#include "esi/expr/substitute.hpp"

namespace esi::esm::detail {

using nlohmann::json;

/// One model or reaction system, inline or mounted, at its dotted path.
struct Component {
  std::string path;     ///< "Atmosphere.Chemistry"
  std::string file;     ///< file the definition came from
  std::string pointer;  ///< pointer of the component inside the resolved document
  bool reaction_system = false;
  const json* node = nullptr;
  std::set<std::string> locals;      ///< variables / species / parameters
  std::set<std::string> subsystems;  ///< child component names
  /// Template bodies with their nested references expanded, by template name (cache).
  std::unordered_map<std::string, expr::NodeId> template_bodies;
};

/// A declared quantity before classification.
struct Declared {
  FlatVariable var;
  bool unknown = false;          ///< declared `unknown` (or a non-constant species)
  bool species = false;
  bool constant_species = false;
  bool grid_cell = false;  ///< a cell of a state array whose equation is a region program
  std::size_t component = 0;
};

/// A time-derivative contribution D(x) = rhs authored in one component.
struct Tendency {
  expr::NodeId rhs;
  std::size_t component;
  std::string file;
  std::string pointer;
  /// For an array equation written cell by cell, `aggregate(D(index(x, i, j)), ...) = rhs` or
  /// `index(D(x), i, j) = rhs`: that left-hand side (it says which cells the equation defines
  /// and how its indices map onto x's axes); kNoNode for `D(x) = rhs`.
  expr::NodeId lhs_aggregate = expr::kNoNode;
};

/// A shaped variable (spec §4.3, §6.3) before it becomes one scalar per cell.
struct ArrayShape {
  std::vector<std::string> axes;      ///< index-set names, in declared order
  std::vector<std::int64_t> extents;  ///< their sizes
};

/// The name of axis `axis` (0-based) of an array declared without a shape whose equations give
/// it no index-set name (index(D(u), 3), an offset index i + 1): "u_dim1", ... after the
/// array's local name. Its extent is inferred from the equations (infer_extents).
inline std::string implicit_axis_name(const std::string& array, std::size_t axis) {
  return array.substr(array.rfind('.') + 1) + "_dim" + std::to_string(axis + 1);
}

/// A derived index set (spec §2.1 `index_sets`, kind "derived"; RFC semiring-faq §5.5),
/// materialized when the arrays become cells from the node its `from_faq` names.
struct DerivedSet {
  std::string producer;  ///< the `id` of the producing node
  std::int64_t size = 0;
  /// `distinct` aggregate producer: per member, in the sorted order of its keys (RFC §5.7),
  /// the index bindings ('$'-symbols) of every combination whose key minted it.
  std::vector<std::vector<std::vector<std::pair<expr::StrId, std::int64_t>>>> contributions;
  /// `intersect_polygon` producer: the clipped ring's vertices, closed (the first vertex
  /// repeated last, so `v + 1` of the last edge reads it).
  std::vector<std::array<double, 2>> ring;
};

struct FlattenState {
  const ResolvedDocument& doc;
  System& sys;
  std::vector<Component> components;
  std::map<std::string, std::size_t> component_index;  ///< path -> index
  std::map<std::string, Declared> declared;             ///< flat name -> declaration
  std::vector<std::string> declaration_order;
  std::map<std::string, std::vector<Tendency>> tendencies;
  std::vector<std::string> tendency_order;
  std::map<std::string, FlatEquation> observed_eqs;     ///< flat name -> y = rhs
  /// Further equations that define cells of an observed array observed_eqs also defines cell
  /// by cell (index(y, 1) = a, index(y, 2) = b, an aggregate over the rest): pieces the cell
  /// form checks cover every cell once.
  std::map<std::string, std::vector<FlatEquation>> observed_pieces;
  std::vector<std::string> observed_order;
  std::map<std::string, FlatEquation> initial_eqs;      ///< flat name -> ic(x) = rhs
  std::vector<FlatEquation> algebraic_eqs;
  std::vector<Tendency> placeholders;  ///< D(_var) = rhs of operator models (spec §6.4)
  std::set<std::string> bound_parameters;  ///< parameters a parent's equation defines
  std::map<std::string, expr::NodeId> replacements;     ///< variable_map substitutions
  std::set<std::string> removed_parameters;
  std::map<std::string, std::string> file_of_component_pointer;
  std::map<std::string, ArrayShape> arrays;  ///< flat name of each shaped variable -> its shape
  /// Arrays whose initial (ic) or defining equation reads spatial coordinates of their cells
  /// (spec §11.4, §6.6.5): names there are index symbols the Expander gives coordinate values.
  std::set<std::string> coordinate_targets;
  bool grid = false;  ///< FlattenOptions::grid
  /// FlattenOptions::inputs: values of constant parameter arrays known when the model is built
  /// (what a derived index set or a build-time key may be computed from).
  const nlohmann::json* inputs = nullptr;
  std::map<std::string, DerivedSet> derived;  ///< materialized derived index sets by name
  /// Values minted by `skolem` (label, arguments) -> the number that stands for the key in
  /// arrays and comparisons: equal keys get equal numbers, 1, 2, ... in order of first mint.
  std::map<std::pair<std::string, std::vector<double>>, double> skolem_ids;

  FlattenState(const ResolvedDocument& d, System& s) : doc(d), sys(s) {}
};

/// Finds every component of the resolved document (depth first, document order).
void collect_components(FlattenState& st, const std::string& only);

/// Parses an expression authored in component `c` into the system pool: templates expanded,
/// names namespaced, `enum` and `table_lookup` lowered, closed functions checked. Array ops
/// and spatial derivatives throw `unsupported_array_feature`.
/// `index_symbols`: names that are index symbols throughout `e` (the free indices of an
/// equation written `index(D(x), i, j) = rhs`).
expr::NodeId localize(FlattenState& st, std::size_t c, const json& e, const std::string& pointer,
                      const std::set<std::string>& index_symbols = {});

/// Parses an expression written in the coupled scope (fully scoped names only).
expr::NodeId localize_global(FlattenState& st, const json& e, const std::string& file,
                             const std::string& pointer);

/// Adds the mass-action ODEs of reaction system `c` (spec §7.4).
void add_reactions(FlattenState& st, std::size_t c);
/// Component c's continuous and discrete events into st.sys.events.
void add_events(FlattenState& st, std::size_t c);

/// Applies the document's coupling entries (spec §10) among the collected components.
void apply_coupling(FlattenState& st);

/// Turns every shaped variable into one scalar per cell and every array equation into one
/// scalar equation per cell it defines (spec §4.3 semantics: `aggregate`, `makearray`,
/// `index`, `broadcast`, name-aligned elementwise arithmetic); scalar equations that contract
/// arrays get their sums spelled out. Runs after coupling, before classification.
void expand_arrays(FlattenState& st);

using expr::substitute;  // symbols in `map` (flat names) replaced, esi/expr/substitute.hpp

/// Every symbol name read by `root`.
void free_symbols(const expr::Pool& pool, expr::NodeId root, std::set<std::string>& out);

}  // namespace esi::esm::detail
