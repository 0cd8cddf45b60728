// Private to exec: the pointwise part of a split gridded system on lane pools.
#pragma once

#include <cstdint>
#include <string>
#include <span>
#include <vector>

#include "esi/exec/lane_pool.hpp"
#include "esi/exec/pointwise.hpp"
#include "esi/method/integrator.hpp"
#include "exec/model.hpp"

namespace esi::exec::detail {

/// Runs the cells of a PointwiseSplit over [t, t_next]: gathers each cell's states and inputs
/// from the grid state vector (inputs from observed arrays are taken at t, from the rest
/// model's grid workspace), integrates every cell with one controller per cell on lane pools,
/// and scatters the states back. Each cell's last proposed step is carried to the next call
/// (step_size(): what a restart file keeps).
class CellOperator {
 public:
  CellOperator(Model& rest, const PointwiseSplit& split, const CellModel& cells);

  /// Adds the call's statistics to `sum`. False when some cell failed: `code` and `message`
  /// say which and why (the states of the cells that failed are their last accepted ones).
  bool run(double t, double t_next, std::vector<double>& u, const LanePoolOptions& options, LanePoolStats& sum,
           method::ReturnCode& code, std::string& message);

  std::vector<double>& step_size() { return step_size_; }
  std::size_t cells() const { return count_; }

 private:
  struct Input {
    int position_axis = -1;         // "$index[@d]": the cell's position along axis d
    std::int64_t state_first = -1;  // a state array held over the step
    std::size_t grid_array = 0;     // else: GridProgram::arrays index
    std::vector<std::int64_t> stride;  // per grid axis
  };
  void positions(std::size_t axis, double* dst) const;
  void gather(const double* src, const std::vector<std::int64_t>& stride, double* dst) const;

  std::vector<std::size_t> grid_inputs_;  // scratch: the inputs read from grid arrays
  std::vector<std::span<const double>> grid_values_;
  Model& m_;
  const PointwiseSplit& split_;
  const CellModel& cells_;
  std::size_t count_ = 0;
  std::vector<std::size_t> first_;
  std::vector<Input> inputs_;
  std::vector<double> states_, params_, step_size_;
};

}  // namespace esi::exec::detail
