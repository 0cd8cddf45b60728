// Per-region programs over grids (architecture.md "Lanes", seed 000 "Whole, Tile, Lanes").
//
// A system flattened with FlattenOptions::grid keeps each array equation as a list of boxes of
// output cells with one expression per box (esm::System::grid). `compile_grid` lowers every
// distinct expression set of an equation to one Program, whose lanes are consecutive cells
// along the first axis of a box: the array reads of the expression ("C.x[@0+1,@1,@2]") become
// forcing fields that the runner points at the right cells row by row. So the number of
// programs, their instructions and the compile time depend on the document's stencils and
// boundary cases, not on the grid size; a 7x7x7 and a 72x46x72 grid compile to the same
// instructions.
//
// Evaluation order per right-hand side: observed arrays that read no state and not t are
// computed once when a workspace is prepared (geometry, winds given as expressions), the
// others per call in dependency order, then every tendency. Scalar states (not on the grid)
// are not written: a system with scalar equations beside its arrays compiles those with
// `compile` as usual (their programs may read state cells by name).
//
// Targets: Whole (`grid_rhs`) evaluates every cell from the whole state vector; Tile
// (`grid_rhs_tile`) evaluates the cells of a box reading states only from a copy of that box
// plus a halo (what a thread or an MPI rank holds), and gives the same bits as Whole there.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "esi/esm/system.hpp"
#include "esi/kernel/program.hpp"

namespace esi::kernel {

/// One array a grid program reads or writes.
struct GridArray {
  enum class Kind : std::uint8_t { State, Parameter, Observed };
  std::string name;
  Kind kind = Kind::State;
  std::vector<std::int64_t> extents;
  std::vector<std::int64_t> strides;  ///< first index fastest
  std::int64_t first_state = -1;      ///< State: its first cell in the state vector
  std::size_t slot = 0;  ///< Parameter: index into System::arrays; Observed: its buffer
};

/// One forcing field of a region program: where lane l of a row reads.
struct GridInput {
  enum class Kind : std::uint8_t { Array, Index, ScalarState };
  Kind kind = Kind::Array;
  std::size_t array = 0;      ///< Array: index into GridProgram::arrays
  int state = -1;             ///< ScalarState: index into System::states
  /// Per axis of the array read (Index: one entry): the output axis the position moves with
  /// (-1: fixed) and the offset from it (or the fixed 1-based position).
  std::vector<int> axis;
  std::vector<std::int64_t> offset;
};

struct GridBox {
  std::vector<std::int64_t> lo, hi;  ///< 1-based, inclusive
};

/// One program and the boxes it runs on.
struct GridBlock {
  Program program;
  std::vector<GridInput> inputs;  ///< Program::forcing_names() order
  std::vector<GridBox> boxes;
};

/// One array equation of the system.
struct GridStage {
  esm::System::GridEquation::Kind kind = esm::System::GridEquation::Kind::Tendency;
  std::vector<std::size_t> targets;  ///< GridProgram::arrays indices
  std::vector<std::int64_t> extents;
  std::vector<GridBlock> blocks;
  bool reads_state = true;  ///< Observed: false = computed once per parameter set
};

struct GridProgram {
  std::vector<GridArray> arrays;
  std::vector<GridStage> stages;  ///< observed (dependency order), tendencies, initial values
  std::size_t state_count = 0;
  std::size_t parameter_count = 0;

  struct Stats {
    std::size_t programs = 0, boxes = 0, lane_instructions = 0, setup_instructions = 0;
  };
  Stats stats() const;
};

struct GridCompileOptions {
  /// Compile to native code (native.hpp) the programs that cover at least 1/native_share of
  /// their equation's cells; the rest (corner and edge cases of a few cells on large grids)
  /// stay tapes. A compiler run costs about a second per distinct program on a cold cache
  /// (make_native runs them in parallel); reseact_3d_chem's vertical boundary layers (1.4 % of
  /// the cells each, 8 % of the work as tapes) are worth it. The same bits either way.
  bool native = false;
  std::int64_t native_share = 100;
};

/// Lowers System::grid (empty for a system flattened without FlattenOptions::grid). Throws
/// esi::Error with compile's codes, and `grid_input_unknown` for a read of something that is
/// neither an array of the system nor a state.
GridProgram compile_grid(const esm::System& system, const GridCompileOptions& options = {});

/// Scratch for one caller: per-program workspaces prepared for the parameters (one set per
/// thread of its team), buffers of the observed arrays, the parameter arrays' values.
struct GridWorkspace {
  struct Impl;
  std::unique_ptr<Impl> impl;
  GridWorkspace();
  GridWorkspace(GridWorkspace&&) noexcept;
  GridWorkspace& operator=(GridWorkspace&&) noexcept;
  ~GridWorkspace();
};

/// A workspace for `program` with parameters `p` (System::parameters order) and the system's
/// parameter arrays (System::Array::values): computes the observed arrays that read no state.
/// Throws `grid_parameter_missing` when a parameter array read by a program has a cell with
/// no value (NaN: nothing gave one).
///
/// `threads`: grid_rhs, grid_initial and grid_array_values run each stage in slabs along the
/// stage's longest axis, one slab per thread, a stage after the one before has finished (the
/// workspace keeps threads-1 threads asleep between calls; at most one per cell along the
/// longest axis). Every cell is computed by the same program from the same inputs whatever
/// slab holds it: the results are the same bits for any thread count. The Tile target runs on
/// the calling thread.
GridWorkspace make_grid_workspace(const GridProgram& program, const esm::System& system,
                                  std::span<const double> p, unsigned threads = 1);

/// Writes the initial values of the state arrays that have an initial-value equation into
/// `y` (System::states order); the other entries are left alone.
void grid_initial(const GridProgram& program, GridWorkspace& ws, std::span<double> y);

/// dy of every state-array cell at time t (the entries of scalar states are left alone).
void grid_rhs(const GridProgram& program, GridWorkspace& ws, double t, std::span<const double> y,
              std::span<double> dy);

/// The values of GridProgram::arrays[array] at time t and state y, first index fastest: a
/// parameter array's values, or an observed array's after running every per-call observed
/// stage (what grid_rhs runs before the tendencies). Valid until the workspace is used again.
/// State arrays are not returned (read them from y at GridArray::first_state).
std::span<const double> grid_array_values(const GridProgram& program, GridWorkspace& ws, double t,
                                          std::span<const double> y, std::size_t array);
/// Several arrays at one (t, y): the per-call observed stages run once, then out[k] holds
/// arrays[k]'s values (valid until the workspace is used again).
void grid_array_values(const GridProgram& program, GridWorkspace& ws, double t, std::span<const double> y,
                       std::span<const std::size_t> arrays, std::span<std::span<const double>> out);
/// The halo (cells per output axis) a tile's state storage needs beyond the tile.
std::vector<std::int64_t> grid_tile_halo(const GridProgram& program);

/// The tile's state storage: for each state array in GridProgram::arrays order, its values
/// over the box `tile` widened by the halo and clipped to the grid, first index fastest (what
/// a neighbour exchange fills; here copied from the whole state vector `y`).
std::vector<double> grid_tile_states(const GridProgram& program, const GridBox& tile,
                                     std::span<const double> y);

/// The Tile target: dy of the cells of `tile` (a box of the tendency grid) for every state
/// array, reading states only from `tile_states` (grid_tile_states' layout). `tile_dy` holds
/// one block per state array in GridProgram::arrays order, the tile's cells first index
/// fastest. Every program runs unchanged; only where its rows read from differs.
void grid_rhs_tile(const GridProgram& program, GridWorkspace& ws, double t, const GridBox& tile,
                   std::span<const double> tile_states, std::span<double> tile_dy);

}  // namespace esi::kernel
