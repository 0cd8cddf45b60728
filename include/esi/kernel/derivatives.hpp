// Derivative programs for sensitivities and adjoints: the parameter Jacobian df/dp and the
// second derivatives of the analytic Jacobian's nonzeros (the seam method::OdeProblem's
// parameter_jacobian / second_derivatives callbacks read), compiled from a System like the
// Jacobian itself (jacobian.hpp).
//
// Parameters reach a Program through its setup tape, so a derivative with respect to one is
// esi::expr::differentiate by the parameter's Symbol name, after the observeds and D(x, t)
// references are inlined (DefinitionInliner). Structural zeros are dropped exactly as for the
// Jacobian. A derivative that cannot be formed (an operator without a derivative rule) is
// esi::Error `adjoint_unsupported_function` at the row state's file and pointer, never a silent
// zero. The interpolation lookups have theirs to second order (expr/differentiate.hpp).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "esi/kernel/jacobian.hpp"
#include "esi/kernel/program.hpp"

namespace esi::kernel {

/// df/dp of the state equations: rows = states, columns = the chosen parameters.
struct ParameterJacobianProgram {
  std::vector<int> dofs;              ///< state index of each row (System order, or options.dofs)
  std::vector<int> parameters;        ///< System::parameters index of each column
  std::vector<int> row_ptr;           ///< CSR: nonzeros of row i are [row_ptr[i], row_ptr[i+1])
  std::vector<int> col;               ///< column (position in `parameters`), increasing per row
  Program values;                     ///< output k = nonzero k
  std::vector<expr::NodeId> entries;  ///< the symbolic nonzeros, in `source`'s pool
  std::shared_ptr<const esm::System> source;
};

/// Derivatives of each Jacobian nonzero e (CSR order of JacobianProgram::col) with respect to
/// the Jacobian's states and to the chosen parameters; structural zeros omitted.
struct SecondDerivativeProgram {
  std::vector<int> parameters;  ///< System::parameters index of each parameter position
  /// u value q = d J[u_entry[q]] / d u[dofs[u_state[q]]] (u_state: a position in the
  /// Jacobian's dofs); entry-major, states increasing within an entry.
  std::vector<int> u_entry, u_state;
  /// p value q = d J[p_entry[q]] / d p[parameters[p_param[q]]]; entry-major likewise.
  std::vector<int> p_entry, p_param;
  /// Outputs: the u values (u_entry.size() rows), then the p values.
  Program values;
  std::vector<expr::NodeId> entries;  ///< the symbolic outputs, in `source`'s pool
  std::shared_ptr<const esm::System> source;
};

/// Every parameter a sensitivity can be taken with respect to, as System::parameters indices
/// in order: a number fixed for the whole run (cadence Constant, or Sampled, which a
/// deterministic run holds at one value; not Discrete, which events change, nor Brownian
/// noise) and not read per cell (options.forcing). Cells of a parameter array are parameters
/// like any other. A parameter whose default is an expression of others is an independent
/// input here: the chain through its default is the caller's.
std::vector<int> differentiable_parameters(const esm::System& system,
                                           const CompileOptions& options = {});

/// df/dp of the equations selected by options.dofs (empty = all states) with respect to the
/// System::parameters indices `parameters` (any order, no repeats). Throws `invalid_parameter`,
/// `adjoint_unsupported_function`, `not_differentiable` (a cell without a scalar equation) and
/// the compile codes.
ParameterJacobianProgram compile_parameter_jacobian(const esm::System& system,
                                                    std::span<const int> parameters,
                                                    const CompileOptions& options = {});

/// The second derivatives of `jac`'s nonzeros by its dofs and by `parameters` (System::
/// parameters indices, no repeats). options.dofs is ignored. Throws `invalid_parameter`,
/// `adjoint_unsupported_function` and the compile codes.
SecondDerivativeProgram compile_second_derivatives(const JacobianProgram& jac,
                                                   std::span<const int> parameters,
                                                   const CompileOptions& options = {});

/// J's nonzeros and df/dp's in one program: outputs jac.col.size() Jacobian values (CSR
/// order), then dfdp.col.size() parameter-Jacobian values. Compiled in jac's pool, so the rate
/// terms both read are computed once: what a sensitivity sweep evaluates at every stage.
/// Throws `invalid_jacobian` when the two are not of the same equations and parameters.
Program compile_first_derivatives(const JacobianProgram& jac, const ParameterJacobianProgram& dfdp,
                                  const CompileOptions& options = {});

/// w^T J and w^T df/dp in one program, by reverse accumulation (expr::differentiate_reverse):
/// its cost is a small multiple of the right-hand side's, where J and df/dp cost their
/// nonzeros, so a sweep that only needs these products at a stage point asks for them here.
/// Outputs: jac.dofs.size() values (d(w^T f)/du, column positions of the Jacobian), then
/// parameters.size() values. The weights w (one per row of jac) are the forcing inputs
/// `weight_names` (after options.forcing), read per lane like a cell input.
struct VectorJacobianProgram {
  std::vector<int> dofs;        ///< state index of each row and of each u output
  std::vector<int> parameters;  ///< System::parameters index of each p output
  std::vector<std::string> weight_names;
  Program values;
};

/// The vector-Jacobian product of `jac`'s equations by its dofs and by `parameters`
/// (System::parameters indices, no repeats; empty for w^T J alone). options.dofs is ignored.
/// Throws `invalid_parameter`, `adjoint_unsupported_function` and the compile codes.
VectorJacobianProgram compile_vector_jacobian_product(const JacobianProgram& jac,
                                                      std::span<const int> parameters,
                                                      const CompileOptions& options = {});

}  // namespace esi::kernel
