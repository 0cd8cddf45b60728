// Separating the pointwise part of a gridded system (the lifted chemistry) from the rest
// (transport): the executable form of the planner's pointwise operator, which exec binds from
// (the pointwise part on lane pools with one controller per cell, the rest with a grid
// method, Lie-split) instead of deriving it again.
//
// A tendency of the per-region form is a sum of addends. An addend is pointwise when every
// array it reads is read at the cell itself ("C.x[@0,@1,@2]") and is a state array, a
// parameter array, or an observed array that is itself pointwise (inlined) or reads no state
// (then its per-cell values are frozen over a split step, as GEOS-Chem freezes rates over a
// chemistry step). Everything else (flux divergences: stencil reads) stays on the grid.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "esi/esm/system.hpp"

namespace esi::plan {

struct PointwiseSplit {
  /// The grid system with only the non-pointwise addends left in its tendencies.
  esm::System rest;
  /// One cell's pointwise equations: a scalar system whose states are named by their state
  /// arrays ("SuperFast.O3") and whose parameters are the grid system's scalar parameters
  /// plus one per cell input (named by its array).
  esm::System cell;
  /// State array (System::arrays index) behind each state of `cell`.
  std::vector<std::size_t> cell_state_array;
  /// Arrays read per cell that the cell does not integrate (System::arrays index), in the
  /// order of CellModelOptions::cell_parameters = cell_input_names: parameter arrays,
  /// state-free observed arrays, and state arrays with no pointwise addend (held over a step).
  std::vector<std::size_t> cell_input_array;
  /// cell_input_array entry of "$index[@d]": the cell's 1-based position along grid axis d
  /// (cell_input_axes = {d}), read as a number.
  static constexpr std::size_t kPosition = static_cast<std::size_t>(-1);
  std::vector<std::string> cell_input_names;
  /// How a cell reads each input: cell (x_0, ..., x_r-1) of the grid reads the input array at
  /// (x_axes[0], x_axes[1], ...) (an identity for same-shaped arrays; fewer axes for a field
  /// that is constant along some grid axes, e.g. a surface field read by every level).
  std::vector<std::vector<int>> cell_input_axes;
  /// Extents of the grid the tendencies run over (cells = their product, first index fastest).
  std::vector<std::int64_t> extents;
  /// Whether some tendency keeps a non-pointwise addend (else `rest` has nothing to run).
  bool has_rest = false;
};

/// The split of a system flattened with FlattenOptions::grid, or nullopt with `why` when
/// there is no pointwise addend or it cannot be separated (a tendency whose pointwise part
/// differs between boxes, a read of the cell's own index, a scalar state read per cell).
std::optional<PointwiseSplit> split_pointwise(const esm::System& grid_system, std::string& why);

}  // namespace esi::plan
