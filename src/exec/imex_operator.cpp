// A gridded model as one IMEX problem (imex_operator.hpp).
#include "exec/imex_operator.hpp"

#include <algorithm>
#include <span>

#include "esi/core/error.hpp"
#include "esi/kernel/grid.hpp"

namespace esi::exec::detail {

ImexOperator::ImexOperator(Model& rest, const PointwiseSplit& split) : m_(rest), split_(split) {
  count_ = 1;
  for (std::int64_t e : split.extents) count_ *= static_cast<std::size_t>(e);
  for (std::size_t a : split.cell_state_array)
    first_.push_back(static_cast<std::size_t>(rest.system.arrays[a].first_state));
  const std::size_t n = first_.size();
  ESI_ASSERT(split.cell.states.size() == n);
  // Cell inputs, read as CellOperator reads them, but at every evaluation (stage time and
  // stage state) instead of once per split step: a monolithic run holds nothing fixed.
  for (std::size_t q = 0; q < split.cell_input_array.size(); ++q) {
    Input in;
    if (split.cell_input_array[q] == PointwiseSplit::kPosition) {
      in.position_axis = split.cell_input_axes[q][0];
      inputs_.push_back(std::move(in));
      continue;
    }
    const auto& arr = rest.system.arrays[split.cell_input_array[q]];
    in.state_first = arr.first_state >= 0 && !arr.parameter ? arr.first_state : -1;
    if (in.state_first < 0)
      for (std::size_t k = 0; k < rest.grid->arrays.size(); ++k)
        if (rest.grid->arrays[k].name == arr.name) in.grid_array = k;
    std::int64_t stride = 1;
    in.stride.assign(split.extents.size(), 0);
    for (std::size_t j = 0; j < split.cell_input_axes[q].size(); ++j) {
      in.stride[static_cast<std::size_t>(split.cell_input_axes[q][j])] += stride;
      stride *= arr.extents[j];
    }
    inputs_.push_back(std::move(in));
  }
  kernel::CompileOptions co;
  co.forcing = split.cell_input_names;
  rhs_ = kernel::compile(split.cell, co);
  jacobian_ = kernel::compile_jacobian(split.cell, co);
  ESI_ASSERT(rhs_->forcing_names().size() == inputs_.size());
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
  inputs_values_.resize(inputs_.size() * count_);
  jac_out_.resize(jacobian_->col.size() * count_);
  for (std::size_t q = 0; q < inputs_.size(); ++q)
    fields_.push_back(kernel::ForcingField<double>{inputs_values_.data() + q * count_, 1});

  // Block-diagonal CSR over the whole state vector: row first_[s] + c holds cell c's block
  // row s, columns first_[s'] + c sorted; rows of states outside the cells are empty.
  const std::size_t size = rest.problem.size;
  std::vector<std::pair<int, int>> owner(size, {-1, -1});  // (cell state, cell)
  for (std::size_t s = 0; s < n; ++s)
    for (std::size_t c = 0; c < count_; ++c) owner[first_[s] + c] = {int(s), int(c)};
  problem_.jac_row_ptr.assign(1, 0);
  std::vector<std::pair<int, std::size_t>> row;
  for (std::size_t g = 0; g < size; ++g) {
    const auto [s, c] = owner[g];
    row.clear();
    if (s >= 0)
      for (int j = jacobian_->row_ptr[std::size_t(s)]; j < jacobian_->row_ptr[std::size_t(s) + 1];
           ++j) {
        const auto column_state = static_cast<std::size_t>(jacobian_->col[std::size_t(j)]);
        row.emplace_back(int(first_[column_state] + std::size_t(c)),
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
  problem_.implicit_jacobian = &ImexOperator::jacobian_cb;
  problem_.names = rest.problem.names;
  prepare();
}

void ImexOperator::prepare() {
  for (const auto& [cell_index, rest_index] : scalar_parameters_)
    p_[cell_index] = m_.p[std::size_t(rest_index)];
  rhs_->prepare(*rhs_ws_, p_);
  jacobian_->values.prepare(*jacobian_ws_, p_);
}

void ImexOperator::gather(double t, const double* u) {
  const std::size_t n = first_.size();
  for (std::size_t s = 0; s < n; ++s)
    std::copy_n(u + first_[s], count_, states_.data() + s * count_);
  const std::size_t r = split_.extents.size();
  std::vector<std::int64_t> x(r, 0);
  for (std::size_t q = 0; q < inputs_.size(); ++q) {
    const Input& in = inputs_[q];
    double* dst = inputs_values_.data() + q * count_;
    if (in.position_axis >= 0) {
      std::size_t inner = 1;
      for (int d = 0; d < in.position_axis; ++d)
        inner *= static_cast<std::size_t>(split_.extents[std::size_t(d)]);
      const auto extent = static_cast<std::size_t>(split_.extents[std::size_t(in.position_axis)]);
      for (std::size_t c = 0; c < count_; ++c) dst[c] = double((c / inner) % extent + 1);
      continue;
    }
    const double* src =
        in.state_first >= 0
            ? u + in.state_first
            : kernel::grid_array_values(*m_.grid, *m_.grid_ws, t,
                                        std::span<const double>(u, m_.problem.size), in.grid_array)
                  .data();
    std::fill(x.begin(), x.end(), 0);
    std::int64_t at = 0;
    for (std::size_t c = 0; c < count_; ++c) {  // odometer, first index fastest
      dst[c] = src[at];
      for (std::size_t d = 0; d < r; ++d) {
        at += in.stride[d];
        if (++x[d] < split_.extents[d]) break;
        at -= in.stride[d] * x[d];
        x[d] = 0;
      }
    }
  }
}

void ImexOperator::implicit_part(double t, const double* u, double* du) {
  gather(t, u);
  const std::size_t n = first_.size();
  kernel::RunArgs<double> args;
  args.u = kernel::LaneView<const double>{states_.data(), n, count_, count_};
  args.t = std::span<const double>(&t, 1);
  args.forcing = fields_;
  args.du = kernel::LaneView<double>{du_.data(), n, count_, count_};
  kernel::run(*rhs_, *rhs_ws_, args);
  std::fill(du, du + m_.problem.size, 0.0);
  for (std::size_t s = 0; s < n; ++s) std::copy_n(du_.data() + s * count_, count_, du + first_[s]);
}

void ImexOperator::jacobian_values(double t, const double* u, double* values) {
  gather(t, u);
  const std::size_t n = first_.size(), nnz = jacobian_->col.size();
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

void ImexOperator::implicit_cb(void* c, double t, const double* u, double* di) {
  static_cast<ImexOperator*>(c)->implicit_part(t, u, di);
}

void ImexOperator::jacobian_cb(void* c, double t, const double* u, double* values) {
  static_cast<ImexOperator*>(c)->jacobian_values(t, u, values);
}

}  // namespace esi::exec::detail
