// Executing tapes: the leaf loop `exec<T, L>` (the only code templated on element type and lane
// count, instantiated here for T in {double, float} and every L in kLaneWidths), the block
// driver behind `run`, and `prepare` / `make_workspace`.
//
// Bitwise reproducibility across L: every lane loop applies one scalar operation per lane with
// no reduction across lanes, the basic operations are IEEE-exact whether vectorized or not, and
// math functions are the same scalar libm calls at every width. FMA contraction must stay off
// (g++ in ISO mode defaults to -ffp-contract=off); no -ffast-math.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>

#include "esi/core/error.hpp"
#include "kernel/native_abi.hpp"
#include "kernel/scalar_ops.hpp"
#include "kernel/tape.hpp"

namespace esi::kernel {

void Workspace::AlignedFree::operator()(std::byte* p) const {
  ::operator delete[](p, std::align_val_t{64});
}

namespace detail {
namespace {

/// Everything one block reads besides registers. Lane l of the block reads column col[l].
template <class T>
struct BlockInputs {
  const T* u = nullptr;
  std::size_t u_stride = 0;
  const std::int64_t* col = nullptr;
  const double* time = nullptr;
  const double* time_regs = nullptr;  // the block's time registers (stride W)
  std::size_t width = 0;
  const ForcingField<T>* forcing = nullptr;
  T* du = nullptr;  // already offset to the block's first output column
  std::size_t du_stride = 0;
  std::size_t real_lanes = 0;  // lanes whose outputs are stored (the rest are padding)
  const T* scalars = nullptr;  // lane tape: the scalar operands of AddS ... SDiv
  const double* p = nullptr;   // setup tape only
  const double* constants = nullptr;
  const ClosedTable* tables = nullptr;
};

template <int L, class T, class F>
inline void map1(T* __restrict d, const T* a, F f) {
  for (int l = 0; l < L; ++l) d[l] = f(a[l]);
}
template <int L, class T, class F>
inline void map2(T* __restrict d, const T* a, const T* b, F f) {
  for (int l = 0; l < L; ++l) d[l] = f(a[l], b[l]);
}

// Closed functions work in double (their tables are double); float lanes convert per call.
template <int L, class T>
void closed(const Instr& ins, T* __restrict d, const T* a, const T* b, const BlockInputs<T>& in) {
  const ClosedTable& tab = in.tables[ins.c];
  for (int l = 0; l < L; ++l) {
    const double x[2] = {static_cast<double>(a[l]), b ? static_cast<double>(b[l]) : 0.0};
    d[l] = static_cast<T>(eval_closed(ins.fn, tab, x));
  }
}

template <int L, class T>
void load(const Instr& ins, T* __restrict d, const BlockInputs<T>& in) {
  switch (ins.op) {
    case Opcode::LoadState: {
      const T* row = in.u + ins.a * in.u_stride;
      for (int l = 0; l < L; ++l) d[l] = row[in.col[l]];
      break;
    }
    case Opcode::LoadForcing: {
      const ForcingField<T>& f = in.forcing[ins.a];
      for (int l = 0; l < L; ++l) d[l] = f.data[in.col[l] * f.column_stride];
      break;
    }
    case Opcode::LoadTime:
      for (int l = 0; l < L; ++l) d[l] = static_cast<T>(in.time[l]);
      break;
    case Opcode::LoadParam:
      for (int l = 0; l < L; ++l) d[l] = static_cast<T>(in.p[ins.a]);
      break;
    case Opcode::LoadTimeValue: {
      const double* q = in.time_regs + ins.a * in.width;
      for (int l = 0; l < L; ++l) d[l] = static_cast<T>(q[l]);
      break;
    }
    default:  // Const
      for (int l = 0; l < L; ++l) d[l] = static_cast<T>(in.constants[ins.a]);
  }
}

template <int L, class T>
bool elementary(Opcode op, T* __restrict d, const T* a) {
  switch (op) {
    case Opcode::Copy:
      map1<L>(d, a, [](T x) { return x; });
      return true;
    case Opcode::Neg:
      map1<L>(d, a, [](T x) { return -x; });
      return true;
    case Opcode::Exp:
      map1<L>(d, a, [](T x) { return std::exp(x); });
      return true;
    case Opcode::Log:
      map1<L>(d, a, [](T x) { return std::log(x); });
      return true;
    case Opcode::Log10:
      map1<L>(d, a, [](T x) { return std::log10(x); });
      return true;
    case Opcode::Sqrt:
      map1<L>(d, a, [](T x) { return std::sqrt(x); });
      return true;
    case Opcode::Abs:
      map1<L>(d, a, [](T x) { return std::fabs(x); });
      return true;
    case Opcode::Sign:
      map1<L>(d, a, [](T x) { return op_sign(x); });
      return true;
    case Opcode::Sin:
      map1<L>(d, a, [](T x) { return std::sin(x); });
      return true;
    case Opcode::Cos:
      map1<L>(d, a, [](T x) { return std::cos(x); });
      return true;
    case Opcode::Tan:
      map1<L>(d, a, [](T x) { return std::tan(x); });
      return true;
    case Opcode::Asin:
      map1<L>(d, a, [](T x) { return std::asin(x); });
      return true;
    case Opcode::Acos:
      map1<L>(d, a, [](T x) { return std::acos(x); });
      return true;
    case Opcode::Atan:
      map1<L>(d, a, [](T x) { return std::atan(x); });
      return true;
    case Opcode::Sinh:
      map1<L>(d, a, [](T x) { return std::sinh(x); });
      return true;
    case Opcode::Cosh:
      map1<L>(d, a, [](T x) { return std::cosh(x); });
      return true;
    case Opcode::Tanh:
      map1<L>(d, a, [](T x) { return std::tanh(x); });
      return true;
    case Opcode::Asinh:
      map1<L>(d, a, [](T x) { return std::asinh(x); });
      return true;
    case Opcode::Acosh:
      map1<L>(d, a, [](T x) { return std::acosh(x); });
      return true;
    case Opcode::Atanh:
      map1<L>(d, a, [](T x) { return std::atanh(x); });
      return true;
    case Opcode::Floor:
      map1<L>(d, a, [](T x) { return std::floor(x); });
      return true;
    case Opcode::Ceil:
      map1<L>(d, a, [](T x) { return std::ceil(x); });
      return true;
    case Opcode::Not:
      map1<L>(d, a, [](T x) { return truth<T>(x == T(0)); });
      return true;
    default:
      return false;
  }
}

template <int L, class T>
void binary(Opcode op, T* __restrict d, const T* a, const T* b) {
  switch (op) {
    case Opcode::Add:
      map2<L>(d, a, b, [](T x, T y) { return x + y; });
      break;
    case Opcode::Sub:
      map2<L>(d, a, b, [](T x, T y) { return x - y; });
      break;
    case Opcode::Mul:
      map2<L>(d, a, b, [](T x, T y) { return x * y; });
      break;
    case Opcode::Div:
      map2<L>(d, a, b, [](T x, T y) { return x / y; });
      break;
    case Opcode::Pow:
      map2<L>(d, a, b, [](T x, T y) { return std::pow(x, y); });
      break;
    case Opcode::Atan2:
      map2<L>(d, a, b, [](T x, T y) { return std::atan2(x, y); });
      break;
    case Opcode::Min:
      map2<L>(d, a, b, [](T x, T y) { return op_min(x, y); });
      break;
    case Opcode::Max:
      map2<L>(d, a, b, [](T x, T y) { return op_max(x, y); });
      break;
    case Opcode::Lt:
      map2<L>(d, a, b, [](T x, T y) { return truth<T>(x < y); });
      break;
    case Opcode::Le:
      map2<L>(d, a, b, [](T x, T y) { return truth<T>(x <= y); });
      break;
    case Opcode::Gt:
      map2<L>(d, a, b, [](T x, T y) { return truth<T>(x > y); });
      break;
    case Opcode::Ge:
      map2<L>(d, a, b, [](T x, T y) { return truth<T>(x >= y); });
      break;
    case Opcode::Eq:
      map2<L>(d, a, b, [](T x, T y) { return truth<T>(x == y); });
      break;
    case Opcode::Ne:
      map2<L>(d, a, b, [](T x, T y) { return truth<T>(x != y); });
      break;
    case Opcode::And:
      map2<L>(d, a, b, [](T x, T y) { return truth<T>(x != T(0) && y != T(0)); });
      break;
    case Opcode::Or:
      map2<L>(d, a, b, [](T x, T y) { return truth<T>(x != T(0) || y != T(0)); });
      break;
    default:
      ESI_ASSERT(false && "not a binary opcode");
  }
}

template <int L, class T>
void with_scalar(Opcode op, T* __restrict d, const T* a, const T s) {
  switch (op) {
    case Opcode::AddS:
      map1<L>(d, a, [s](T x) { return x + s; });
      break;
    case Opcode::SubS:
      map1<L>(d, a, [s](T x) { return x - s; });
      break;
    case Opcode::SSub:
      map1<L>(d, a, [s](T x) { return s - x; });
      break;
    case Opcode::MulS:
      map1<L>(d, a, [s](T x) { return x * s; });
      break;
    case Opcode::DivS:
      map1<L>(d, a, [s](T x) { return x / s; });
      break;
    case Opcode::SDiv:
      map1<L>(d, a, [s](T x) { return s / x; });
      break;
    default:
      ESI_ASSERT(false && "not a scalar-operand opcode");
  }
}

/// The interpreter: every instruction over L lanes of registers R (stride W).
template <class T, int L>
void exec(std::span<const Instr> code, T* R, std::size_t W, const BlockInputs<T>& in) {
  auto reg = [&](std::uint32_t r) { return R + static_cast<std::size_t>(r) * W; };
  for (const Instr& ins : code) {
    const Opcode op = ins.op;
    if (op <= Opcode::LoadTimeValue) {
      load<L>(ins, reg(ins.dst), in);
    } else if (op < Opcode::Add) {
      elementary<L>(op, reg(ins.dst), reg(ins.a));
    } else if (op < Opcode::AddS) {
      binary<L>(op, reg(ins.dst), reg(ins.a), reg(ins.b));
    } else if (op < Opcode::Select) {
      with_scalar<L>(op, reg(ins.dst), reg(ins.a), in.scalars[ins.b]);
    } else if (op == Opcode::Select) {
      T* __restrict d = reg(ins.dst);
      const T *c = reg(ins.a), *x = reg(ins.b), *y = reg(ins.c);
      for (int l = 0; l < L; ++l) d[l] = c[l] != T(0) ? x[l] : y[l];
    } else if (op == Opcode::Store) {
      const T* a = reg(ins.a);
      T* out = in.du + ins.dst * in.du_stride;
      for (std::size_t l = 0; l < in.real_lanes; ++l) out[l] = a[l];
    } else {
      closed<L>(ins, reg(ins.dst), reg(ins.a), op == Opcode::Closed2 ? reg(ins.b) : nullptr, in);
    }
  }
}

template <class T>
using ExecFn = void (*)(std::span<const Instr>, T*, std::size_t, const BlockInputs<T>&);

// The one dispatch point from run-time (dtype, L) to the leaf loop.
template <class T>
constexpr std::array<ExecFn<T>, kLaneWidths.size()> kExec{
    &exec<T, 1>, &exec<T, 4>, &exec<T, 8>, &exec<T, 16>, &exec<T, 32>, &exec<T, 64>, &exec<T, 128>};

std::size_t width_index(std::size_t lanes) {
  std::size_t i = 0;
  while (i + 1 < kLaneWidths.size() && static_cast<std::size_t>(kLaneWidths[i]) < lanes) ++i;
  return i;
}

}  // namespace

}  // namespace detail

struct WorkspaceAccess {
  template <class T>
  static T* registers(Workspace& ws) {
    return reinterpret_cast<T*>(ws.regs_.get());
  }
  template <class T>
  static const T* scalars(Workspace& ws) {
    return reinterpret_cast<const T*>(ws.scalars_.get());
  }
  static double* time_registers(Workspace& ws) { return reinterpret_cast<double*>(ws.time_.get()); }
  static std::int64_t* columns(Workspace& ws) { return ws.columns_.data(); }
  static double* times(Workspace& ws) { return ws.times_.data(); }
  static const detail::Tape* tape(const Workspace& ws) { return ws.tape_; }
};

namespace {

using detail::BlockInputs;
using detail::Tape;

template <class T>
detail::NativeLaneFn<T> native_lane(const Program& program) {
  const detail::NativeCode* code = program.native();
  if (!code) return nullptr;
  if constexpr (std::is_same_v<T, double>)
    return code->f64;
  else
    return code->f32;
}

template <class T>
void run_blocks(const Program& program, Workspace& ws, const RunArgs<T>& args) {
  const Tape& tape = program.tape();
  const detail::NativeLaneFn<T> native = native_lane<T>(program);
  const bool lanes_target = tape.target == Target::Lanes;
  const std::size_t n = lanes_target ? args.cells.size() : args.u.columns;
  ESI_ASSERT(WorkspaceAccess::tape(ws) == &tape);
  ESI_ASSERT(ws.dtype() == (std::is_same_v<T, double> ? DType::F64 : DType::F32));
  ESI_ASSERT(args.u.rows == tape.states && args.du.rows == tape.outputs);
  ESI_ASSERT(args.u.stride >= args.u.columns && args.du.stride >= args.du.columns);
  ESI_ASSERT(args.du.columns >= n && args.forcing.size() == tape.forcing.size());
  ESI_ASSERT(args.t.size() == 1 || args.t.size() == n);
  ESI_ASSERT(lanes_target || args.cells.empty());
  ESI_ASSERT(lanes_target || n <= args.u.columns);
  const std::size_t W = static_cast<std::size_t>(ws.width());
  T* R = WorkspaceAccess::registers<T>(ws);
  double* Q = WorkspaceAccess::time_registers(ws);
  std::int64_t* col = WorkspaceAccess::columns(ws);
  double* time = WorkspaceAccess::times(ws);
  BlockInputs<double> tin;
  tin.time = time;
  tin.tables = tape.tables.data();
  BlockInputs<T> in;
  in.u = args.u.data;
  in.u_stride = args.u.stride;
  in.col = col;
  in.time_regs = Q;
  in.width = W;
  in.forcing = args.forcing.data();
  in.scalars = WorkspaceAccess::scalars<T>(ws);
  in.du_stride = args.du.stride;
  in.tables = tape.tables.data();
  detail::NativeBlock<T> nb{in.u,
                            in.u_stride,
                            col,
                            time,
                            Q,
                            W,
                            in.forcing,
                            nullptr,
                            in.du_stride,
                            0,
                            in.scalars,
                            R,
                            in.tables,
                            &detail::native_closed,
                            R + static_cast<std::size_t>(tape.lane.pinned) * W};
  // Lane l of the time registers always holds the time code's values at time[l], and
  // time[W] is the t every one of the W lanes holds (NaN when they differ, or after prepare,
  // which rebuilds the registers). So with one t for every lane the time code runs only when t
  // changes: once per t for a workspace a caller runs row after row (the grid's programs), not
  // once per block. The values are the same scalar operations on the same inputs.
  const bool one_time = args.t.size() == 1;
  if (one_time && n > 0 &&
      (std::isnan(args.t[0]) ||
       std::bit_cast<std::uint64_t>(time[W]) != std::bit_cast<std::uint64_t>(args.t[0]))) {
    std::fill_n(time, W + 1, args.t[0]);  // a NaN t leaves time[W] NaN: never taken as current
    detail::kExec<double>[detail::width_index(W)](tape.time.code, Q, W, tin);
  }
  for (std::size_t b0 = 0; b0 < n; b0 += W) {
    const std::size_t real = std::min(W, n - b0);
    const std::size_t wi = detail::width_index(real);
    const auto L = static_cast<std::size_t>(kLaneWidths[wi]);
    // Padding lanes repeat the block's last real lane: same inputs, finite values, dropped.
    if (lanes_target) {
      for (std::size_t l = 0; l < L; ++l) {
        col[l] = args.cells[b0 + std::min(l, real - 1)];
        ESI_ASSERT(col[l] >= 0 && static_cast<std::size_t>(col[l]) < args.u.columns);
      }
    } else {  // columns b0.. (n <= u.columns, checked above): a plain ramp the compiler vectorizes
      for (std::size_t l = 0; l < L; ++l)
        col[l] = static_cast<std::int64_t>(b0 + std::min(l, real - 1));
    }
    in.du = args.du.data + b0;
    in.real_lanes = real;
    if (!one_time) {
      time[W] = std::numeric_limits<double>::quiet_NaN();
      for (std::size_t l = 0; l < L; ++l) time[l] = args.t[b0 + std::min(l, real - 1)];
      detail::kExec<double>[wi](tape.time.code, Q, W, tin);
    }
    if (native) {
      nb.du = in.du;
      nb.lanes = real;
      native(&nb);
    } else {
      detail::kExec<T>[wi](tape.lane.code, R, W, in);
    }
  }
}

}  // namespace

void run(const Program& program, Workspace& ws, const RunArgs<double>& args) {
  run_blocks(program, ws, args);
}

void run(const Program& program, Workspace& ws, const RunArgs<float>& args) {
  run_blocks(program, ws, args);
}

namespace {

/// A 64-byte aligned block of `count` elements of `T`, every one a quiet NaN: a read of a
/// register no instruction has written shows up in the outputs.
template <class T>
std::byte* poisoned(std::size_t count) {
  auto* p = static_cast<std::byte*>(
      ::operator new[](std::max<std::size_t>(count * sizeof(T), 64), std::align_val_t{64}));
  std::fill_n(reinterpret_cast<T*>(p), count, std::numeric_limits<T>::quiet_NaN());
  return p;
}

template <class T>
void import_setup(const detail::Code& c, T* regs, std::size_t width,
                  const std::vector<double>& setup) {
  for (const auto& [s, r] : c.imports)
    std::fill_n(regs + static_cast<std::size_t>(r) * width, width, static_cast<T>(setup[s]));
}

template <class T>
void import_scalars(const Tape& tape, T* out, const std::vector<double>& setup) {
  for (std::size_t k = 0; k < tape.lane_scalars.size(); ++k)
    out[k] = static_cast<T>(setup[tape.lane_scalars[k]]);
}

}  // namespace

Workspace Program::make_workspace(std::size_t lanes, DType dtype) const {
  Workspace ws;
  ws.tape_ = tape_.get();
  ws.dtype_ = dtype;
  ws.width_ = kLaneWidths[detail::width_index(std::max<std::size_t>(lanes, 1))];
  const std::size_t W = static_cast<std::size_t>(ws.width_);
  // Native code reads only the pinned registers of the file; past them it keeps its spill
  // area, one vector of lanes per value (which may be wider than W), and a vector of lanes per
  // state, forcing and output for chunks it gathers (native_abi.hpp).
  const std::size_t vector = detail::kNativeVectorBytes / (dtype == DType::F64 ? 8 : 4);
  const std::size_t count =
      native_
          ? tape_->lane.pinned * W +
                (tape_->lane.registers - tape_->lane.pinned) * std::max(W, vector) +
                (detail::gathered_states(*tape_) + tape_->forcing.size() + tape_->outputs) * vector
          : tape_->lane.registers * W;
  ws.regs_.reset(dtype == DType::F64 ? poisoned<double>(count) : poisoned<float>(count));
  ws.time_.reset(poisoned<double>(static_cast<std::size_t>(tape_->time.registers) * W));
  const std::size_t ns = tape_->lane_scalars.size();
  ws.scalars_.reset(dtype == DType::F64 ? poisoned<double>(ns) : poisoned<float>(ns));
  ws.setup_.assign(tape_->setup.registers, std::numeric_limits<double>::quiet_NaN());
  ws.columns_.assign(W, 0);
  ws.times_.assign(W + 1, std::numeric_limits<double>::quiet_NaN());  // [W]: the t of every lane
  return ws;
}

void Program::prepare(Workspace& ws, std::span<const double> p) const {
  ESI_ASSERT(ws.tape_ == tape_.get() && p.size() == tape_->parameters);
  BlockInputs<double> in;
  in.p = p.data();
  in.constants = tape_->constants.data();
  in.tables = tape_->tables.data();
  detail::kExec<double>[0](tape_->setup.code, ws.setup_.data(), 1, in);
  const auto W = static_cast<std::size_t>(ws.width_);
  import_setup(tape_->time, reinterpret_cast<double*>(ws.time_.get()), W, ws.setup_);
  if (ws.dtype_ == DType::F64) {
    import_setup(tape_->lane, reinterpret_cast<double*>(ws.regs_.get()), W, ws.setup_);
    import_scalars(*tape_, reinterpret_cast<double*>(ws.scalars_.get()), ws.setup_);
  } else {
    import_setup(tape_->lane, reinterpret_cast<float*>(ws.regs_.get()), W, ws.setup_);
    import_scalars(*tape_, reinterpret_cast<float*>(ws.scalars_.get()), ws.setup_);
  }
  // The time registers were just rebuilt from the setup: no lane holds a computed time now.
  std::fill(ws.times_.begin(), ws.times_.end(), std::numeric_limits<double>::quiet_NaN());
  ws.prepared_ = true;
}

}  // namespace esi::kernel
