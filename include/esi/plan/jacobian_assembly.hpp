// Jacobian assembly per planned operator (seed 004): one JacobianProgram per operator, a
// ScatterPlan per storage layout, and eval_into / apply / apply_transpose.
//
// Lives in `plan` because it needs the planner's operators (which terms of the right-hand side
// an operator holds, its block pattern, its column bandwidth); it uses kernel's Jacobian
// programs and linalg's LU plans, both to its left.
//
// An operator's Jacobian is d(operator's rhs) / d(states), entries from expr::differentiate
// (kernel::compile_jacobian_of). Two forms:
//  - scalar form (a box model, a reaction system): one instance is the operator's block over
//    `block.species`; lanes are instances (cells of a lane pool). Lane layouts apply.
//  - per-region form (gridded documents): one instance is the whole grid; the operator's
//    relative expressions are instantiated at every cell (observed arrays at the cells they
//    are read at, parameter arrays as their values), so rows are state cells. CSR and, for
//    column operators, column-banded layouts apply.
//
// Storage layouts (L = lanes; slot q of lane l at out[q * L + l], lane-SoA as linalg):
//  - LaneDense: n x n per lane, entry (r, c) at slot r * n + c; unwritten slots zeroed.
//  - LaneSparse: the factor storage of a linalg::SparseLuPlan (pivot order, fill included):
//    what lu_factor factors after the caller forms s I - J there. A dedicated value program
//    writes every factor slot in place (0 at fill), so there is no copy and no zeroing.
//  - Csr: the operator's own pattern (JacobianProgram's row_ptr / col), the value program's
//    output order: written in place.
//  - ColumnBanded (column operators, per-region form): one storage lane per column of the
//    grid (the non-vertical axes, first fastest); within a column the unknowns are ordered
//    level-major, species fastest (i = (level - 1) * species + s), and entry (i, j) with
//    |i - j| <= b is at slot (j - i + b) * N + i (LAPACK band storage by diagonal), N = levels
//    * species, b = (bandwidth + 1) * species - 1 from the planner's column_bandwidth.
//
// Refusals (esi::Error, located at the offending row's state declaration where the System has
// one): `layout_cannot_hold` (an entry the layout has no slot for: outside the LU's factor
// pattern, outside the band, across columns), `layout_not_applicable` (a lane layout of a
// gridded operator, a banded layout of a non-column operator, an LU plan of another size),
// `layout_from_another_build` (a plan or workspace made for another JacobianProgram),
// `empty_jacobian` (an operator writing array states whose Jacobian has no entry: a
// differentiation that silently found nothing, the failure seed 004 Motivation 2 records),
// `not_differentiable` (kernel), `assembly_size_mismatch` (buffers of the wrong size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "esi/kernel/jacobian.hpp"
#include "esi/linalg/sparse_lu.hpp"
#include "esi/plan/plan.hpp"

namespace esi::plan {

/// The Jacobian of one planned operator.
struct OperatorJacobian {
  std::string op;     ///< Operator::name
  bool grid = false;  ///< per-region form: one instance = the whole grid
  /// Rows / columns: `program.dofs` (state indices; scalar form: block.species in order; grid:
  /// every cell of the block's state arrays). Nonzeros in program's CSR order.
  kernel::JacobianProgram program;
  /// Grid form, per dof position: the array's position in block.species and the cell
  /// (1-based, along the plan's axes); empty in the scalar form.
  std::vector<int> species;
  std::vector<std::vector<std::int64_t>> cell;
  std::uint64_t fingerprint = 0;  ///< of (op, dofs, pattern): plans and workspaces carry it
  kernel::CompileOptions options;  ///< what the value program was compiled with (target, forcing)
  std::size_t n() const { return program.dofs.size(); }
  std::size_t nonzeros() const { return program.col.size(); }
};

/// Builds the JacobianProgram of `op` (an operator of `plan`, made by make_plan from
/// `system`, whose pool holds its expressions). Throws the codes above.
OperatorJacobian compile_operator_jacobian(const esm::System& system, const Plan& plan, const Operator& op,
                                           const kernel::CompileOptions& options = {});

/// The scalar form of a Jacobian compiled without a plan (a lane pool's cell model, whose
/// system is one cell's equations with its per-cell constants hoisted): `program` with every
/// state as a row, named `op`, so the lane layouts below apply to it. `options`: what the
/// program was compiled with (a LaneSparse plan compiles its own value program with them).
OperatorJacobian scalar_operator_jacobian(std::string op, kernel::JacobianProgram program,
                                          const kernel::CompileOptions& options);

enum class LayoutKind { LaneDense, LaneSparse, Csr, ColumnBanded };
const char* layout_name(LayoutKind k);

/// Where each nonzero of one OperatorJacobian goes in one storage layout. Built once, never on
/// the per-step path (O(nonzeros), plus one program compile for LaneSparse).
struct ScatterPlan {
  LayoutKind kind = LayoutKind::Csr;
  std::uint64_t fingerprint = 0;  ///< the OperatorJacobian's
  std::size_t slots = 0;          ///< storage entries per storage lane
  /// Storage lanes per instance: 0 = the caller's lanes (lane layouts, Csr); ColumnBanded: the
  /// number of grid columns (the whole grid is one instance).
  std::size_t storage_lanes = 0;
  std::vector<std::int32_t> slot;  ///< per nonzero (CSR order): its storage slot
  std::vector<std::int32_t> lane;  ///< ColumnBanded: per nonzero, its storage lane
  /// LaneDense: per slot, the nonzero it holds or -1 (0 is written there by every eval_into:
  /// the storage may have been factored in place since). The storage is then written once, in
  /// slot order.
  std::vector<std::int32_t> source;
  /// ColumnBanded: the slots zeroed in every column before the scatter (all of them: columns
  /// may differ in pattern).
  std::vector<std::int32_t> zero_slots;
  /// The values written straight into storage: output q = slot q (Csr: the operator's own
  /// value program; LaneSparse: one compiled in factor order). Absent: values go through the
  /// workspace's slab and are scattered (LaneDense, ColumnBanded).
  bool in_place = false;
  std::optional<kernel::Program> direct;  ///< LaneSparse's own program (Csr uses program.values)
  int n = 0;                  ///< LaneDense / LaneSparse: block size; ColumnBanded: N
  int half_bandwidth = -1;    ///< ColumnBanded: b
  int levels = 0, species = 0;
};

ScatterPlan plan_lane_dense(const OperatorJacobian& jac);
/// Compiles a value program in factor order (with jac.options): not on the per-step path.
ScatterPlan plan_lane_sparse(const OperatorJacobian& jac, const linalg::SparseLuPlan& lu);
ScatterPlan plan_csr(const OperatorJacobian& jac);
/// `op` and `plan` must be the ones `jac` was compiled from (bandwidth, vertical axis).
ScatterPlan plan_column_banded(const OperatorJacobian& jac, const Plan& plan, const Operator& op);

/// Scratch for one thread: the value program's workspace and a slab for layouts written by
/// scatter (nonzeros x lanes).
struct JacWorkspace {
  std::uint64_t fingerprint = 0;
  LayoutKind kind = LayoutKind::Csr;
  std::size_t lanes = 0;  ///< capacity: instances per eval_into call
  kernel::Workspace ws;
  std::vector<double> slab64;
  std::vector<float> slab32;
};

JacWorkspace make_workspace(const OperatorJacobian& jac, const ScatterPlan& plan, std::size_t lanes,
                            kernel::DType dtype = kernel::DType::F64);
/// Runs the setup tape for parameters p (System::parameters order); once per parameter change.
void prepare(const OperatorJacobian& jac, const ScatterPlan& plan, JacWorkspace& ws, std::span<const double> p);

/// Evaluates the operator's Jacobian for the u.columns instances of `u` (states species-major,
/// lanes fastest, all System::states rows) at times t (one, or one per lane) and writes it into
/// `out`, laid out per `plan`: plan.slots * lanes entries, lanes = u.columns, or
/// plan.storage_lanes for ColumnBanded (u.columns must then be 1). Every slot of `out` is
/// written. Never allocates.
template <class T>
void eval_into(const OperatorJacobian& jac, const ScatterPlan& plan, JacWorkspace& ws, kernel::LaneView<const T> u,
               std::span<const double> t, T* out, std::span<const kernel::ForcingField<T>> forcing = {});

/// y += J v for each of `lanes` instances, from the values eval_into just wrote to `values`
/// (layout `plan`). v and y are over the operator's dofs: position i of lane l at [i * lanes +
/// l]. (From the evaluated values, not a tangent program: the Rosenbrock / adjoint use is one
/// evaluation then several products, seed 004 §3, and a product over stored values costs one
/// multiply-add per nonzero, less than re-evaluating the entries.)
template <class T>
void apply(const OperatorJacobian& jac, const ScatterPlan& plan, const T* values, std::size_t lanes, const T* v, T* y);

/// g += J^T lambda, likewise, accumulated in double whatever T is (seed 004 D18).
template <class T>
void apply_transpose(const OperatorJacobian& jac, const ScatterPlan& plan, const T* values, std::size_t lanes,
                     const double* lambda, double* g);

}  // namespace esi::plan
