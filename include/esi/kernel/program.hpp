// Compiled right-hand sides: a System (or some of its state equations) lowered to an immutable
// register tape that evaluates many cells per call (architecture.md "Lanes", style guide
// "Seams: kernel").
//
// A Program holds three tapes. The setup tape computes every subexpression that depends only on
// parameters and constants; `prepare` runs it once per parameter change, in double. The time
// tape computes what depends on t but on no state or forcing, per block, always in double (an
// f32 program would otherwise lose minutes on `t_utc0 + t`). The lane tape computes the rest
// for a block of L cells at a time, every instruction over all L lanes (register r of lane l at
// ws[r * W + l]), in double or float. Observeds are computed once per call, shared
// subexpressions once (one register per DAG node), and registers are reused after their last
// read so the workspace stays small.
//
// Targets: Whole reads lane l's inputs from column l of the state view (one system instance per
// lane); Lanes gathers them from column cells[l] of a large species-major array through an
// index table given per call, so a new cell set never recompiles. Forcing fields are per-call
// inputs in the same column space. A Program is const and shared; a Workspace belongs to one
// thread; `run` never allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "esi/esm/system.hpp"

namespace esi::kernel {

enum class DType : std::uint8_t { F64, F32 };
enum class Target : std::uint8_t { Whole, Lanes };

/// Block widths the lane loops are instantiated for (a workspace uses one as its width W).
inline constexpr std::array<int, 7> kLaneWidths{1, 4, 8, 16, 32, 64, 128};

struct CompileOptions {
  Target target = Target::Whole;
  /// State equations to lower, as indices into System::states, in output-row order; empty = all.
  std::vector<int> dofs;
  /// Parameters (flat names) read per cell from forcing fields instead of from `p`.
  std::vector<std::string> forcing;
  /// Further names read per lane from forcing fields (after `forcing`), declared in the
  /// system or not: the relative reads of a per-region program ("C.x[@0+1,@1]") and the
  /// states it reads, which the grid runner points at the right cells (see grid.hpp).
  std::vector<std::string> cell_inputs;
  /// Bind no state names (a per-region program reads states only through `cell_inputs`; a
  /// grid has 10^5-10^6 state cells, and binding them all per program would cost seconds).
  bool states_through_cell_inputs = false;
};

/// Non-owning lane-major view: row s (a variable), column c (a cell or instance) at
/// data[s * stride + c]; `columns` cells per row.
template <class T>
struct LaneView {
  T* data = nullptr;
  std::size_t rows = 0;
  std::size_t columns = 0;
  std::size_t stride = 0;
};

/// One forcing field: the value for column c is data[c * column_stride]; stride 0 = one value
/// for every cell.
template <class T>
struct ForcingField {
  const T* data = nullptr;
  std::size_t column_stride = 1;
};

/// One evaluation over n lanes. Whole: n = u.columns, lane l reads column l. Lanes: n =
/// cells.size(), lane l reads column cells[l] of `u` and of every forcing field.
template <class T>
struct RunArgs {
  LaneView<const T> u;                        ///< all states (System::states order)
  std::span<const std::int32_t> cells;        ///< Lanes only: column of each lane
  std::span<const double> t;                  ///< one time [s] for all lanes, or one per lane
  std::span<const ForcingField<T>> forcing;   ///< Program::forcing_names() order
  LaneView<T> du;                             ///< rows = outputs, column l = lane l
};

namespace detail {
struct Tape;
struct NativeCode;
}

/// Scratch for one thread: register file (NaN-poisoned at creation) sized once.
class Workspace {
 public:
  DType dtype() const { return dtype_; }
  int width() const { return width_; }  ///< lanes per block, an entry of kLaneWidths
  bool prepared() const { return prepared_; }

 private:
  friend class Program;
  friend struct WorkspaceAccess;
  struct AlignedFree {
    void operator()(std::byte* p) const;
  };
  const detail::Tape* tape_ = nullptr;
  DType dtype_ = DType::F64;
  int width_ = 1;
  bool prepared_ = false;
  std::unique_ptr<std::byte[], AlignedFree> regs_;  // lane registers, T[lane_regs * width]
  std::unique_ptr<std::byte[], AlignedFree> time_;  // time registers, double[time_regs * width]
  std::unique_ptr<std::byte[], AlignedFree> scalars_;  // lane scalar operands, T[slots]
  std::vector<double> setup_;                        // setup registers
  std::vector<std::int64_t> columns_;                // per-lane column of the current block
  std::vector<double> times_;                        // per-lane time of the current block
};

class Program {
 public:
  Target target() const;
  std::size_t state_count() const;      ///< rows of RunArgs::u
  std::size_t parameter_count() const;  ///< length of p
  std::size_t output_count() const;     ///< rows of RunArgs::du
  std::span<const int> dofs() const;    ///< state index of each output row (RHS programs)
  std::span<const std::string> forcing_names() const;
  /// True when some output depends on the time t (a program with an empty time tape does not).
  bool reads_time() const;

  struct Stats {
    std::size_t setup_instructions, time_instructions, lane_instructions;
    std::size_t time_registers, pinned_registers, lane_registers;
  };
  Stats stats() const;
  /// One instruction per line, for debugging and tests.
  std::string disassemble() const;

  /// A workspace for blocks of up to `lanes` lanes (width = smallest instantiated L >= lanes,
  /// at most 128).
  Workspace make_workspace(std::size_t lanes, DType dtype = DType::F64) const;
  /// Runs the setup tape for parameters `p` (parameter_count() values, System::parameters
  /// order; entries of forcing parameters are ignored). Before the first call every value
  /// that depends on a parameter or a constant reads NaN.
  void prepare(Workspace& ws, std::span<const double> p) const;

  /// True when the lane tape runs as compiled native code (see native.hpp).
  bool is_native() const { return native_ != nullptr; }
  /// "tape", "native <cache file>", or why native code was requested but is not used.
  const std::string& native_status() const { return native_status_; }

  const detail::Tape& tape() const { return *tape_; }  ///< internal: the kernel's own code
  const detail::NativeCode* native() const { return native_.get(); }  ///< internal
  const std::shared_ptr<const detail::Tape>& tape_ptr() const { return tape_; }  ///< internal
  explicit Program(std::shared_ptr<const detail::Tape> tape,
                   std::shared_ptr<const detail::NativeCode> native = nullptr,
                   std::string native_status = "tape")
      : tape_(std::move(tape)), native_(std::move(native)), native_status_(std::move(native_status)) {}

 private:
  std::shared_ptr<const detail::Tape> tape_;  // immutable; shared by copies
  std::shared_ptr<const detail::NativeCode> native_;  // loaded shared object, or null
  std::string native_status_;
};

/// Lowers the state equations of `system` selected by `options.dofs`. Throws esi::Error:
/// `undefined_variable` (a name that is not a state, parameter, observed or `t`, e.g. an
/// algebraic unknown), `unsupported_operator` (a non-scalar op), closed-function table codes.
Program compile(const esm::System& system, const CompileOptions& options = {});

/// Lowers arbitrary expressions of `system.pool` (e.g. derivatives added to a copy of the
/// system); output row k is outputs[k]. `options.dofs` is ignored. `order`, when not empty, is
/// a permutation of the output rows: the order in which they are computed and stored (the
/// values are the same; an order that keeps the uses of a shared value close together keeps it
/// out of memory: a Jacobian's entries column by column, where one reaction's partial feeds
/// every row that reaction touches).
Program compile_outputs(const esm::System& system, std::span<const expr::NodeId> outputs,
                        const CompileOptions& options = {},
                        std::span<const std::size_t> order = {});

/// Evaluates the lane tape over all lanes of `args` in blocks of ws.width() lanes; a last
/// partial block runs at the smallest instantiated width that holds it, padded with copies of
/// its last real lane whose outputs are dropped. Never allocates; `ws` must come from
/// `program` with the matching dtype.
void run(const Program& program, Workspace& ws, const RunArgs<double>& args);
void run(const Program& program, Workspace& ws, const RunArgs<float>& args);

}  // namespace esi::kernel
