// The planner (seed 002 §3.2, the passes that need no run configuration): which operators a
// flattened system is a sum of, where each one reads, which rows it owns, the structure of its
// Jacobian, and a check of all of that against independent evaluations.
//
// Passes:
//  1. Operator formation. Each state's right-hand side is split into additive terms (sums,
//     differences and negations; in the per-region form also products and quotients with one
//     additive factor are distributed, so that a flux-form tendency (sum of fluxes) / m splits
//     per direction). Terms are grouped into operators (rules in plan.cpp / grid_plan.cpp):
//     a scalar system groups by the component whose names a term reads; a gridded system by
//     the component and the set of grid axes along which a term reaches (x-, y-, z-transport
//     and pointwise chemistry become four operators of reseact_3d_chem).
//  2. Locality from the relative reads of states (directly or through observed arrays):
//     pointwise (offset 0 on every axis), column (offsets only along the vertical axis),
//     stencil (bounded offsets, radius per axis and direction), global (a read whose offset
//     is not fixed along a horizontal axis, e.g. a full-range sum).
//  3. Rows: the states (scalar form) or state arrays (per-region form) each operator writes.
//  4. Structure: the per-cell block pattern of pointwise operators (species x species, from
//     the symbolic Jacobian), its Markowitz ordering and symbolic fill (linalg), the column
//     bandwidth of column operators, the stencil footprint (offset ranges per pair of arrays),
//     a Gershgorin bound max_i sum_j |J_ij| as an expression.
//  5. Validation at sampled non-default states (fixed seed): the operators' right-hand sides
//     sum to the flat right-hand side (oracle / compiled grid program) within 1e-12 relative;
//     every declared pattern covers the Jacobian computed by forward-mode dual numbers; the
//     analytic Jacobian (kernel::compile_jacobian) equals the dual one within 1e-12 relative to
//     the row's largest entry (scalar form); an operator writing array states without a
//     pattern is `missing_pattern`.
//  6. to_json: canonical, byte-identical run to run (no times, no addresses), names not indices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/system.hpp"
#include "esi/plan/pointwise_split.hpp"

namespace esi::plan {

enum class Locality { Pointwise, Column, Stencil, Global };
const char* locality_name(Locality l);

/// Reach of an operator along one grid axis: how far its reads of states go from the written
/// cell, toward lower positions (minus) and higher ones (plus). `unbounded`: the offset is not
/// fixed (a contraction over the axis, a read at a fixed position from many cells).
struct AxisReach {
  std::string axis;
  std::int64_t minus = 0, plus = 0;
  bool unbounded = false;
};

/// The species x species block of one cell: row i depends on column j.
struct BlockPattern {
  std::vector<std::string> species;  ///< names of the rows / columns (states or state arrays)
  std::vector<int> row_ptr, col;     ///< CSR, columns increasing per row
  std::size_t nonzeros() const { return col.size(); }
};

/// The Markowitz LU plan of a block pattern (linalg::plan_sparse_lu), summarized.
struct LuSummary {
  bool planned = false;
  std::vector<std::string> order;  ///< species in elimination order
  std::size_t factor_nonzeros = 0, fill = 0, divisions = 0, multiply_adds = 0, solve_multiply_adds = 0;
};

/// Where the rows of `row` read the state array `read`: per grid axis the offset range
/// [lo, hi] from the written cell (unbounded: the whole axis).
struct FootprintEntry {
  std::string row, read;
  std::vector<std::int64_t> lo, hi;
  std::vector<bool> unbounded;
};

struct Operator {
  std::string name;       ///< "SuperFast", "Transport3D.lon", ...
  std::string component;  ///< the component(s) its terms come from
  std::string origin;     ///< how it was formed, in words ("reactions of SuperFast", ...)
  Locality locality = Locality::Pointwise;
  std::string column_axis;        ///< Column: the vertical axis
  std::vector<AxisReach> reach;   ///< per grid axis (per-region form only)
  std::vector<std::string> rows;  ///< states / state arrays written, in system order
  std::vector<std::string> term_arrays;  ///< split-off term arrays it reads ("X~term2")
  std::size_t terms = 0;          ///< additive terms it holds
  /// Its right-hand side per row (System::pool; per-region form: relative expressions).
  std::vector<expr::NodeId> rhs;

  bool has_pattern = false;
  BlockPattern block;  ///< pointwise: the per-cell block; other localities: the species coupling
  /// Pointwise blocks: the symbolic entry d rhs(row) / d column of each nonzero (CSR order;
  /// per-region form: by the relative read at offset 0); empty when some entry has none.
  std::vector<expr::NodeId> block_entries;
  /// The same entries in infix (plan.json's "jacobian": row -> column -> expression), kept
  /// when they total at most 256 KiB of text; empty otherwise.
  std::vector<std::string> block_entry_text;
  LuSummary lu;        ///< pointwise operators with states
  std::vector<FootprintEntry> footprint;  ///< per-region form
  std::int64_t column_bandwidth = -1;     ///< Column: max |offset| along the vertical axis
  std::string gershgorin;                 ///< pointwise: max over rows of sum |J_ij|
  /// Validation: the Gershgorin bound max_i sum_j |J_ij| of this operator's own rows, from the
  /// dual numbers, maximised over the sampled states (and checked cells); -1 when not run. It
  /// bounds the operator's spectral radius, so a stiffness test (seed 002 §3.5) can read it.
  double sampled_gershgorin = -1;
  /// Validation (per-region form): the reach the dual-number Jacobian showed at the checked
  /// cells, per grid axis (how tight the planned reach is; never wider than it when valid).
  std::vector<AxisReach> measured_reach;
};

struct Validation {
  bool ran = false;
  std::uint64_t seed = 0;
  int samples = 0;
  std::size_t cells_checked = 0;       ///< per-region form: cells evaluated per sample
  double max_sum_error = 0;            ///< |sum of operators - flat| / max(|flat|, sum |op|)
  std::size_t jacobian_nonzeros = 0;   ///< dual-number nonzeros checked against the patterns
  std::size_t outside_pattern = 0;     ///< of those, how many no pattern declares
  /// Analytic vs dual Jacobian entries, relative to the row's largest dual entry: scalar form
  /// kernel::compile_jacobian's compiled values; per-region form the symbolic entries of the
  /// pointwise blocks (block_entries) at each checked cell. -1 when not run.
  double max_analytic_error = -1;
  std::size_t analytic_entries = 0;    ///< entries compared
  /// Rows checked, and of those how many were not finite at a sampled state (nothing can be
  /// compared there: a failure, since a check that compares nothing must not pass).
  std::size_t rows_checked = 0, rows_not_finite = 0;
  std::vector<std::string> failures;   ///< first few, in words
  bool ok() const { return ran && failures.empty(); }
};

struct Plan {
  std::string document, component;
  std::string form;                      ///< "scalar" or "grid"
  std::vector<std::string> axes;         ///< per-region form: the tendency grid's axes
  std::vector<std::int64_t> extents;
  std::string vertical_axis;             ///< "" when none is recognised
  std::size_t states = 0;
  std::vector<Operator> operators;
  Validation validation;
  /// Per-region form: the pointwise operator in executable form (the cell system lane pools
  /// run, and the rest of the tendencies), what exec binds a split run from; nullopt, with
  /// `pointwise_split_why`, when the system has no pointwise part that can be separated.
  std::optional<PointwiseSplit> pointwise_split;
  std::string pointwise_split_why;
};

struct PlanOptions {
  std::string document;   ///< shown in plan.json
  std::string component;  ///< shown in plan.json
  bool validate = true;
  int samples = 3;
  std::uint64_t seed = 20261201;
  /// Per-region form: cells evaluated per sample (a fixed-seed sample plus every corner and
  /// face-adjacent boundary cell kind; all cells when the grid is smaller).
  std::size_t max_cells = 192;
};

/// Runs passes 1-5 on a flattened system (scalar or per-region form). The system's pool gains
/// the operators' expressions and derivatives. Throws esi::Error `missing_pattern`,
/// `not_differentiable` and the compile codes; validation failures are recorded, not thrown.
Plan make_plan(esm::System& system, const PlanOptions& options = {});

/// Pass 5 alone on a plan of `system` (make_plan runs it): replaces plan.validation.
void validate(esm::System& system, Plan& plan, const PlanOptions& options = {});

/// Throws esi::Error `missing_pattern` when an operator writes state arrays (or states) but
/// declares no pattern.
void require_patterns(const Plan& plan);

/// Canonical-JSON-ready form of the plan (sorted keys come from core/json's writer).
nlohmann::json to_json(const Plan& plan);

/// The name of the vertical axis among `axes` ("" when none): an index set called lev, level,
/// layer, z, k, height, altitude, vertical, pressure or eta (any case, optional _nodes suffix).
std::string vertical_axis_of(const std::vector<std::string>& axes);

}  // namespace esi::plan
