// A gridded model as one IMEX problem (imex_operator.hpp).
#include "exec/imex_operator.hpp"

#include <algorithm>
#include <span>

#include "esi/core/error.hpp"
#include "esi/kernel/grid.hpp"

namespace esi::exec::detail {

ImexOperator::ImexOperator(Model& rest, const plan::PointwiseSplit& split)
    : m_(rest), cells_at_(rest, split) {
  // Cell inputs are read as CellOperator reads them, but at every evaluation (stage time and
  // stage state) instead of once per split step: a monolithic run holds nothing fixed.
  count_ = cells_at_.cells();
  const std::vector<std::size_t>& first = cells_at_.first();
  const std::size_t n = first.size();
  ESI_ASSERT(split.cell.states.size() == n);
  kernel::CompileOptions co;
  co.forcing = split.cell_input_names;
  rhs_ = kernel::compile(split.cell, co);
  jacobian_ = kernel::compile_jacobian(split.cell, co);
  ESI_ASSERT(rhs_->forcing_names().size() == cells_at_.input_count());
  const std::size_t width = std::min<std::size_t>(count_, 128);
  rhs_ws_ = rhs_->make_workspace(width);
  jacobian_ws_ = jacobian_->values.make_workspace(width);
  p_ = default_parameter_values(split.cell);
  for (std::size_t i = 0; i < split.cell.parameters.size(); ++i) {
    const std::string& name = split.cell.parameters[i].name;
    if (std::find(split.cell_input_names.begin(), split.cell_input_names.end(), name) !=
        split.cell_input_names.end())
      continue;
    const int r = rest.system.parameter_index(name);
    if (r >= 0) scalar_parameters_.emplace_back(i, r);
  }
  states_.resize(n * count_);
  du_.resize(n * count_);
  inputs_values_.resize(cells_at_.input_count() * count_);
  jac_out_.resize(jacobian_->col.size() * count_);
  for (std::size_t q = 0; q < cells_at_.input_count(); ++q)
    fields_.push_back(kernel::ForcingField<double>{inputs_values_.data() + q * count_, 1});

  // Block-diagonal CSR over the whole state vector: row first[s] + c holds cell c's block
  // row s, columns first[s'] + c sorted; rows of states outside the cells are empty.
  const std::size_t size = rest.problem.size;
  std::vector<std::pair<int, int>> owner(size, {-1, -1});  // (cell state, cell)
  for (std::size_t s = 0; s < n; ++s)
    for (std::size_t c = 0; c < count_; ++c) owner[first[s] + c] = {int(s), int(c)};
  problem_.jac_row_ptr.assign(1, 0);
  std::vector<std::pair<int, std::size_t>> row;
  for (std::size_t g = 0; g < size; ++g) {
    const auto [s, c] = owner[g];
    row.clear();
    if (s >= 0)
      for (int j = jacobian_->row_ptr[std::size_t(s)]; j < jacobian_->row_ptr[std::size_t(s) + 1];
           ++j) {
        const auto column_state = static_cast<std::size_t>(jacobian_->col[std::size_t(j)]);
        row.emplace_back(int(first[column_state] + std::size_t(c)),
                         std::size_t(j) * count_ + std::size_t(c));
      }
    std::sort(row.begin(), row.end());
    for (const auto& [column, source] : row) {
      problem_.jac_col.push_back(column);
      value_source_.push_back(source);
    }
    problem_.jac_row_ptr.push_back(int(problem_.jac_col.size()));
  }
  scratch_.resize(size);
  problem_.size = size;
  problem_.context = this;
  problem_.rhs = &ImexOperator::rhs_cb;
  problem_.rhs_split = &ImexOperator::split_cb;
  problem_.rhs_implicit = &ImexOperator::implicit_cb;
  problem_.rhs_explicit = &ImexOperator::explicit_cb;
  problem_.implicit_jacobian = &ImexOperator::jacobian_cb;
  problem_.names = rest.problem.names;
  problem_.name_of = rest.problem.name_of;
  prepare();
}

void ImexOperator::prepare() {
  for (const auto& [cell_index, rest_index] : scalar_parameters_)
    p_[cell_index] = m_.p[std::size_t(rest_index)];
  rhs_->prepare(*rhs_ws_, p_);
  jacobian_->values.prepare(*jacobian_ws_, p_);
}

void ImexOperator::gather(double t, const double* u) {
  cells_at_.gather(m_, t, std::span<const double>(u, m_.problem.size), states_.data(),
                   inputs_values_.data());
}

void ImexOperator::implicit_part(double t, const double* u, double* du) {
  gather(t, u);
  const std::size_t n = cells_at_.first().size();
  kernel::RunArgs<double> args;
  args.u = kernel::LaneView<const double>{states_.data(), n, count_, count_};
  args.t = std::span<const double>(&t, 1);
  args.forcing = fields_;
  args.du = kernel::LaneView<double>{du_.data(), n, count_, count_};
  kernel::run(*rhs_, *rhs_ws_, args);
  std::fill(du, du + m_.problem.size, 0.0);
  cells_at_.scatter(du_.data(), std::span<double>(du, m_.problem.size));
}

void ImexOperator::jacobian_values(double t, const double* u, double* values) {
  gather(t, u);
  const std::size_t n = cells_at_.first().size(), nnz = jacobian_->col.size();
  kernel::RunArgs<double> args;
  args.u = kernel::LaneView<const double>{states_.data(), n, count_, count_};
  args.t = std::span<const double>(&t, 1);
  args.forcing = fields_;
  args.du = kernel::LaneView<double>{jac_out_.data(), nnz, count_, count_};
  kernel::run(jacobian_->values, *jacobian_ws_, args);
  for (std::size_t k = 0; k < value_source_.size(); ++k) values[k] = jac_out_[value_source_[k]];
}

void ImexOperator::rhs_cb(void* c, double t, const double* u, double* du) {
  auto& self = *static_cast<ImexOperator*>(c);
  self.m_.problem.rhs(self.m_.problem.context, t, u, du);
  self.implicit_part(t, u, self.scratch_.data());
  for (std::size_t i = 0; i < self.scratch_.size(); ++i) du[i] += self.scratch_[i];
}

void ImexOperator::split_cb(void* c, double t, const double* u, double* de, double* di) {
  auto& self = *static_cast<ImexOperator*>(c);
  self.m_.problem.rhs(self.m_.problem.context, t, u, de);
  self.implicit_part(t, u, di);
}

void ImexOperator::explicit_cb(void* c, double t, const double* u, double* de) {
  auto& self = *static_cast<ImexOperator*>(c);
  self.m_.problem.rhs(self.m_.problem.context, t, u, de);
}
void ImexOperator::implicit_cb(void* c, double t, const double* u, double* di) {
  static_cast<ImexOperator*>(c)->implicit_part(t, u, di);
}

void ImexOperator::jacobian_cb(void* c, double t, const double* u, double* values) {
  static_cast<ImexOperator*>(c)->jacobian_values(t, u, values);
}

}  // namespace esi::exec::detail
