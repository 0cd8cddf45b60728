// Analytic Jacobians: d(RHS)/du of a set of state equations, as a CSR sparsity pattern plus a
// compiled Program whose outputs are the nonzeros in CSR order.
//
// Observeds and D(x, t) references are first inlined into each right-hand side (the DAG keeps
// them shared), so the chain rule through them is symbolic; then each entry is
// esi::expr::differentiate of the row's RHS by the column's state. An entry is structurally
// nonzero when the RHS mentions the state and the derivative is not identically 0 (so
// floor(x) contributes no entry). States outside the DOF set, parameters, forcing and t are
// held fixed. The value program is an ordinary Program: same targets, lanes, dtypes, prepare.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "esi/kernel/program.hpp"

namespace esi::kernel {

struct JacobianProgram {
  std::vector<int> dofs;     ///< state index of each row and column (square block)
  std::vector<int> row_ptr;  ///< CSR: nonzeros of row i are [row_ptr[i], row_ptr[i+1])
  std::vector<int> col;      ///< column (position in dofs) of each nonzero, increasing per row
  Program values;            ///< output k = nonzero k; du rows = col.size()
  /// The symbolic entry of each nonzero (CSR order), in `source`'s pool: what a caller needs
  /// to compile the same values in another output order (plan/jacobian_assembly.hpp writes
  /// them straight into factor storage that way).
  std::vector<expr::NodeId> entries;
  std::shared_ptr<const esm::System> source;
};

/// Rebuilds expressions of `system` with every observed symbol replaced by its definition and,
/// when `tendencies`, every D(x, t) of a state by x's right-hand side; recursively, memoized
/// (shared subtrees stay shared), interned into system.pool. One object serves many roots.
/// Throws `observed_cycle` when a definition reaches itself.
class DefinitionInliner {
 public:
  explicit DefinitionInliner(esm::System& system, bool tendencies = true);
  ~DefinitionInliner();
  expr::NodeId operator()(expr::NodeId root);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Builds the Jacobian of the equations selected by options.dofs (empty = all states) with
/// respect to those same states. Throws esi::Error `not_differentiable` and the compile codes.
JacobianProgram compile_jacobian(const esm::System& system, const CompileOptions& options = {});

/// The Jacobian of given right-hand sides: rhs[i] is row i's expression in system.pool
/// (kNoNode: an empty row, a state the rows read but do not write), differentiated with
/// respect to the states `dofs` (square block, dofs[i] is row i's and column i's state).
/// Used for one operator's part of a right-hand side (plan/jacobian_assembly.hpp). A
/// derivative that cannot be formed is `not_differentiable` at the row state's file and
/// pointer. options.dofs is ignored.
JacobianProgram compile_jacobian_of(esm::System system, std::vector<int> dofs, std::vector<expr::NodeId> rhs,
                                    const CompileOptions& options = {});

/// The nonzeros k of a CSR pattern (column col[k]) column by column, rows in order within a
/// column: the order Jacobian values are computed in (a reaction's partial with respect to one
/// state feeds every row of that column while it is still in a register; see
/// compile_outputs' `order`).
std::vector<std::size_t> column_major_order(std::span<const int> col);

}  // namespace esi::kernel
