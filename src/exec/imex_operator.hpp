// Private to exec: a gridded model as one IMEX problem (the monolithic reference of a split
// run). f = f_explicit + f_implicit with f_explicit the grid (non-pointwise) part of every
// tendency, evaluated by the rest model's per-region programs, and f_implicit the pointwise
// (chemistry) part of every cell, evaluated for all cells at once by one cell program; its
// Jacobian is block diagonal (one cell block per cell, no coupling between cells), in CSR over
// the whole state vector, so the sparse LU of I - gamma h J has no fill between cells.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "esi/plan/pointwise_split.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/kernel/program.hpp"
#include "esi/method/problem.hpp"
#include "exec/cell_operator.hpp"
#include "exec/model.hpp"

namespace esi::exec::detail {

class ImexOperator {
 public:
  /// `rest` is the model compiled from split.rest (its problem.rhs is the explicit part).
  /// Throws `not_differentiable` and the compile codes of the cell equations.
  ImexOperator(Model& rest, const plan::PointwiseSplit& split);
  ImexOperator(const ImexOperator&) = delete;
  ImexOperator& operator=(const ImexOperator&) = delete;

  /// The problem (context = this): rhs, rhs_split, rhs_implicit, rhs_explicit, implicit_jacobian
  /// with its CSR pattern over the whole state vector.
  const method::OdeProblem& problem() const { return problem_; }
  /// The rest model's parameters changed (forcing): the cell program's scalar parameters
  /// follow them by name.
  void prepare();
  std::size_t cells() const { return count_; }
  std::size_t cell_states() const { return cells_at_.first().size(); }

 private:
  void gather(double t, const double* u);
  void implicit_part(double t, const double* u, double* du);
  void jacobian_values(double t, const double* u, double* values);
  static void rhs_cb(void* c, double t, const double* u, double* du);
  static void split_cb(void* c, double t, const double* u, double* de, double* di);
  static void implicit_cb(void* c, double t, const double* u, double* di);
  static void explicit_cb(void* c, double t, const double* u, double* de);
  static void jacobian_cb(void* c, double t, const double* u, double* values);

  Model& m_;
  CellGather cells_at_;
  std::size_t count_ = 0;
  std::vector<std::pair<std::size_t, int>> scalar_parameters_;  // (cell p index, rest p index)
  std::vector<double> p_;
  std::optional<kernel::Program> rhs_;
  std::optional<kernel::Workspace> rhs_ws_;
  std::optional<kernel::JacobianProgram> jacobian_;
  std::optional<kernel::Workspace> jacobian_ws_;
  std::vector<double> states_, inputs_values_, du_, jac_out_, scratch_;
  std::vector<kernel::ForcingField<double>> fields_;
  std::vector<std::size_t> value_source_;  // global CSR nonzero k <- jac_out_ index
  method::OdeProblem problem_;
};

}  // namespace esi::exec::detail
