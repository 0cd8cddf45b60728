// Private to exec: the pointwise part of a split gridded system on lane pools.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "esi/exec/lane_pool.hpp"
#include "esi/plan/pointwise_split.hpp"
#include "esi/method/integrator.hpp"
#include "exec/model.hpp"

namespace esi::exec::detail {

/// Where the cells of a plan::PointwiseSplit find their states and inputs in the grid state vector,
/// and the gather / scatter between the two layouts (cell-major: value s of cell c at
/// s * cells() + c). Shared by the lane-pool split (CellOperator) and the monolithic IMEX
/// problem (ImexOperator).
class CellGather {
 public:
  CellGather(const Model& rest, const plan::PointwiseSplit& split);

  std::size_t cells() const { return count_; }
  /// Per cell state: the first index of its array in the grid state vector.
  const std::vector<std::size_t>& first() const { return first_; }
  std::size_t input_count() const { return inputs_.size(); }

  /// states <- the cells' states in u; inputs <- the cells' inputs at (t, u): positions,
  /// state arrays, and parameter / observed arrays of the rest model's grid workspace (its
  /// per-call observed stages run once for all of them).
  void gather(Model& rest, double t, std::span<const double> u, double* states, double* inputs);
  /// The cells' states back into u.
  void scatter(const double* states, std::span<double> u) const;

 private:
  struct Input {
    int position_axis = -1;            // "$index[@d]": the cell's position along axis d
    std::int64_t state_first = -1;     // a state array
    std::size_t grid_array = 0;        // else: GridProgram::arrays index
    std::vector<std::int64_t> stride;  // per grid axis
  };
  void positions(std::size_t axis, double* dst) const;
  void gather(const double* src, const std::vector<std::int64_t>& stride, double* dst);

  const plan::PointwiseSplit& split_;
  std::size_t count_ = 0;
  std::vector<std::size_t> first_;
  std::vector<Input> inputs_;
  std::vector<std::size_t> grid_inputs_;              // the inputs read from grid arrays, in order
  std::vector<std::span<const double>> grid_values_;  // scratch
  std::vector<std::int64_t> odometer_;                // scratch
};

/// Runs the cells of a plan::PointwiseSplit over [t, t_next]: gathers each cell's states and inputs
/// from the grid state vector (inputs from observed arrays are taken at t, from the rest
/// model's grid workspace), integrates every cell with one controller per cell on lane pools,
/// and scatters the states back. Each cell's last proposed step is carried to the next call
/// (step_size(): what a restart file keeps).
class CellOperator {
 public:
  CellOperator(Model& rest, const plan::PointwiseSplit& split, const CellModel& cells);

  /// Adds the call's statistics to `sum`. False when some cell failed: `code` and `message`
  /// say which and why (the states of the cells that failed are their last accepted ones).
  bool run(double t, double t_next, std::vector<double>& u, const LanePoolOptions& options,
           LanePoolStats& sum, method::ReturnCode& code, std::string& message);

  std::vector<double>& step_size() { return step_size_; }
  std::size_t cells() const { return cells_at_.cells(); }

 private:
  Model& m_;
  const CellModel& cells_;
  CellGather cells_at_;
  std::vector<double> states_, params_, step_size_;
};

}  // namespace esi::exec::detail
