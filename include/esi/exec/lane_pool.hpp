// Lane pools: per-cell stiff integration of a pointwise model over many cells (issue 10;
// architecture.md "Performance model: chemistry"; seed 002 §6-7).
//
// Every lane of a block integrates one cell with its own step size, error history and
// controller; the block runs each Rosenbrock stage for all L lanes at once (one RHS program
// call, one Jacobian program call, one lane-batched sparse LU). A lane that reaches the end of
// the interval is refilled from its shard's queue of cells; when the queue is empty the lane
// copies a live cell of the block (padding) and its results are dropped.
//
// Determinism: a lane's arithmetic never reads another lane, so a cell's result does not
// depend on its lane, the block's other cells, the shard composition or the thread count;
// tests compare with ==.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "esi/esm/system.hpp"
#include "esi/method/integrator.hpp"

namespace esi::exec {

struct CellModelOptions {
  /// Parameters (flat names) whose value differs per cell (temperature, photolysis rates):
  /// read per cell from CellData::cell_parameters, in this order.
  std::vector<std::string> cell_parameters;
  /// Compile the RHS and Jacobian lane tapes to native code (kernel/native.hpp); same bits.
  bool native = false;
  /// Block width (lanes) the native code is also compiled for with its strides as constants
  /// (kernel::with_native's f64_strides): the LanePoolOptions::lanes the model will run with.
  /// Other widths (a shard's narrowed tail among them) run the general code. Below 8 (one
  /// vector of doubles): none.
  int native_lanes = 16;
};

/// A pointwise model compiled once: RHS program, analytic Jacobian program and the planned
/// sparse LU of M = I/(gamma h) - J. Immutable and shared by threads.
class CellModel {
 public:
  /// Throws esi::Error (`not_differentiable`, compile codes, `unknown_parameter` for a cell
  /// parameter the system lacks).
  static std::shared_ptr<const CellModel> build(const esm::System& system,
                                                const CellModelOptions& options = {});
  std::size_t state_count() const;
  std::size_t cell_parameter_count() const;
  std::size_t jacobian_nonzeros() const;
  std::size_t lu_nonzeros() const;  ///< factor nonzeros, fill included
  std::string describe() const;     ///< one line: states, Jacobian nonzeros, LU fill and flops
  /// The RHS program's Program::native_status() ("tape", "native <file>", or why not).
  const std::string& native_status() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }
  explicit CellModel(std::unique_ptr<Impl> impl);
  ~CellModel();

 private:
  std::unique_ptr<Impl> impl_;
};

/// Cells, species-major with the cell index fastest (state s of cell c at states[s * cells + c]).
struct CellData {
  std::size_t cells = 0;
  std::span<double> states;                   ///< in: initial values; out: values at t1
  std::span<const double> cell_parameters;    ///< cell_parameter_count() * cells
  std::span<const double> parameters;         ///< System::parameters order (the non-cell ones)
  /// Optional, `cells` entries: in, the first step to try per cell (0 = automatic); out, the
  /// step the controller proposed last (KPP's warm Hstart carried between calls).
  std::span<double> step_size;
  /// Optional, `cells` entries: out, how each cell's integration ended (Success, or why it
  /// stopped: the cell then keeps its last accepted state).
  std::span<method::ReturnCode> codes;
};

struct LanePoolOptions {
  method::MethodId method = method::MethodId::Rodas3;  ///< a Rosenbrock method
  double rtol = 1e-4;
  std::vector<double> atol{1e-9};  ///< one value for every state, or one per state
  double dt_initial = 0;           ///< 0 = automatic per cell (unless CellData::step_size says)
  double dt_min = 0;               ///< 0 = 16 ulp of |t|
  double dt_max = 0;               ///< 0 = unbounded
  long max_steps = 100000;         ///< attempted steps per cell
  method::ControllerKind controller = method::ControllerKind::Default;
  int lanes = 16;                  ///< lanes per block (an entry of linalg::kLuLaneWidths > 1)
  int threads = 1;
  std::size_t shard_cells = 256;   ///< cells per shard (fixed content; shards go to threads)
};

struct LanePoolStats {
  std::size_t cells = 0, failed_cells = 0;
  long accepted = 0, rejected = 0;           ///< summed over cells
  /// Lane evaluations (block calls times lanes, padding included).
  long rhs_evaluations = 0, jacobian_evaluations = 0, factorizations = 0, linear_solves = 0;
  long lane_slots = 0;       ///< lane-steps executed, padding included (efficiency = steps / slots)
  long max_cell_steps = 0;
  method::ReturnCode worst = method::ReturnCode::Success;  ///< first failure code met
  std::string message;       ///< the first failed cell and why ("" when all succeeded)
};

/// Integrates every cell from t0 to t1. Cells that fail keep their last accepted state and are
/// counted in failed_cells; cell_steps (optional, `cells` entries) receives accepted +
/// rejected steps per cell.
LanePoolStats integrate_cells(const CellModel& model, CellData& data, double t0, double t1,
                              const LanePoolOptions& options,
                              std::span<std::int32_t> cell_steps = {});

}  // namespace esi::exec
