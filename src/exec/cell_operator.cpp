// The pointwise part of a split gridded system on lane pools (cell_operator.hpp).
#include "exec/cell_operator.hpp"

#include <algorithm>

#include "esi/kernel/grid.hpp"
#include "exec/run_support.hpp"

namespace esi::exec::detail {

CellGather::CellGather(const Model& rest, const plan::PointwiseSplit& split) : split_(split) {
  count_ = 1;
  for (std::int64_t e : split.extents) count_ *= static_cast<std::size_t>(e);
  for (std::size_t a : split.cell_state_array)
    first_.push_back(static_cast<std::size_t>(rest.system.arrays[a].first_state));
  for (std::size_t q = 0; q < split.cell_input_array.size(); ++q) {
    Input in;
    if (split.cell_input_array[q] == plan::PointwiseSplit::kPosition) {
      in.position_axis = split.cell_input_axes[q][0];
      inputs_.push_back(std::move(in));
      continue;
    }
    const auto& arr = rest.system.arrays[split.cell_input_array[q]];
    in.state_first = arr.first_state >= 0 && !arr.parameter ? arr.first_state : -1;
    if (in.state_first < 0) {
      for (std::size_t k = 0; k < rest.grid->arrays.size(); ++k)
        if (rest.grid->arrays[k].name == arr.name) in.grid_array = k;
      grid_inputs_.push_back(in.grid_array);
    }
    // Cell (x_0, ..., x_r-1), first index fastest, reads the input at (x_axes[j])_j.
    std::int64_t stride = 1;
    in.stride.assign(split.extents.size(), 0);
    for (std::size_t j = 0; j < split.cell_input_axes[q].size(); ++j) {
      in.stride[static_cast<std::size_t>(split.cell_input_axes[q][j])] += stride;
      stride *= arr.extents[j];
    }
    inputs_.push_back(std::move(in));
  }
  grid_values_.resize(grid_inputs_.size());
  odometer_.resize(split.extents.size());
}

void CellGather::gather(Model& rest, double t, std::span<const double> u, double* states,
                        double* inputs) {
  for (std::size_t s = 0; s < first_.size(); ++s)
    std::copy_n(u.begin() + static_cast<std::ptrdiff_t>(first_[s]), count_, states + s * count_);
  if (!grid_inputs_.empty())
    kernel::grid_array_values(*rest.grid, *rest.grid_ws, t, u, grid_inputs_, grid_values_);
  std::size_t next_grid_input = 0;
  for (std::size_t q = 0; q < inputs_.size(); ++q) {
    const Input& in = inputs_[q];
    if (in.position_axis >= 0) {
      positions(static_cast<std::size_t>(in.position_axis), inputs + q * count_);
      continue;
    }
    const double* src =
        in.state_first >= 0 ? u.data() + in.state_first : grid_values_[next_grid_input++].data();
    gather(src, in.stride, inputs + q * count_);
  }
}

void CellGather::scatter(const double* states, std::span<double> u) const {
  for (std::size_t s = 0; s < first_.size(); ++s)
    std::copy_n(states + s * count_, count_, u.begin() + static_cast<std::ptrdiff_t>(first_[s]));
}

/// dst[c] = 1-based position of cell c along `axis`.
void CellGather::positions(std::size_t axis, double* dst) const {
  std::size_t inner = 1;
  for (std::size_t d = 0; d < axis; ++d) inner *= static_cast<std::size_t>(split_.extents[d]);
  const auto extent = static_cast<std::size_t>(split_.extents[axis]);
  for (std::size_t c = 0; c < count_; ++c) dst[c] = double((c / inner) % extent + 1);
}

/// dst[c] = src[sum_d x_d(c) * stride[d]] for every cell c of the grid (first index fastest).
void CellGather::gather(const double* src, const std::vector<std::int64_t>& stride, double* dst) {
  const std::size_t r = split_.extents.size();
  std::vector<std::int64_t>& x = odometer_;
  std::fill(x.begin(), x.end(), 0);
  std::int64_t at = 0;
  for (std::size_t c = 0; c < count_; ++c) {
    dst[c] = src[at];
    for (std::size_t d = 0; d < r; ++d) {  // odometer, first index fastest
      at += stride[d];
      if (++x[d] < split_.extents[d]) break;
      at -= stride[d] * x[d];
      x[d] = 0;
    }
  }
}

CellOperator::CellOperator(Model& rest, const plan::PointwiseSplit& split, const CellModel& cells)
    : m_(rest), cells_(cells), cells_at_(rest, split) {
  states_.resize(cells.state_count() * cells_at_.cells());
  params_.resize(cells_at_.input_count() * cells_at_.cells());
  step_size_.assign(cells_at_.cells(), 0.0);
}

bool CellOperator::run(double t, double t_next, std::vector<double>& u,
                       const LanePoolOptions& options, LanePoolStats& sum, method::ReturnCode& code,
                       std::string& message) {
  const std::size_t count = cells_at_.cells();
  cells_at_.gather(m_, t, u, states_.data(), params_.data());
  CellData data;
  data.cells = count;
  data.states = states_;
  data.cell_parameters = params_;
  data.step_size = step_size_;
  const LanePoolStats st = integrate_cells(cells_, data, t, t_next, options);
  sum.cells = st.cells;
  sum.failed_cells += st.failed_cells;
  sum.accepted += st.accepted, sum.rejected += st.rejected;
  sum.rhs_evaluations += st.rhs_evaluations, sum.jacobian_evaluations += st.jacobian_evaluations;
  sum.factorizations += st.factorizations, sum.linear_solves += st.linear_solves;
  sum.lane_slots += st.lane_slots;
  sum.max_cell_steps = std::max(sum.max_cell_steps, st.max_cell_steps);
  cells_at_.scatter(states_.data(), u);
  if (st.failed_cells > 0) {
    code = st.worst;
    message = "the cells (" + std::string(method::method_info(options.method).name) +
              "): " + std::to_string(st.failed_cells) + " of " + std::to_string(count) +
              " failed between t = " + number_text(t) + " and " + number_text(t_next) + "; first " +
              st.message;
    return false;
  }
  return true;
}

}  // namespace esi::exec::detail
