// Emitting a lane tape as C++ (see native.hpp): the lanes of a block in chunks of N (one
// 64-byte vector: 8 doubles, 16 floats), one statement per instruction computing all N lanes of
// a value at once with GCC vector extensions, one local per short-lived value (long-lived ones
// in a spill area, N entries per value), the chunk loop outermost.
//
// Bits: +, -, *, / and comparisons on vectors are the same IEEE-754 operations per element as
// the interpreter's scalar ones, and with contraction off nothing fuses them. Every function
// (exp, log, pow, ... and closed functions) is called per element with the same scalar libm
// call as the interpreter makes (run.cpp's lambdas, scalar_ops.hpp): a vector math library
// rounds differently, and glibc declares no SIMD variants without -ffast-math. Lanes past the
// block's last real lane repeat that lane (finite values, never stored).
#include <algorithm>
#include <cstdint>
#include <span>
#include <sstream>
#include <vector>

#include "esi/core/error.hpp"
#include "kernel/native_abi.hpp"
#include "kernel/tape.hpp"

namespace esi::kernel::detail {
namespace {

constexpr std::size_t kLocalWindow = 24;  // instructions a value may stay in a local
constexpr std::size_t kChunk = 384;       // instructions per emitted function

// The prologue of every generated file: the block layout (a copy of NativeBlock), the vector
// type and the per-element helpers mirroring scalar_ops.hpp.
constexpr const char* kPrologue = R"(#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
namespace {
template <class T> struct Forcing { const T* data; std::size_t column_stride; };
template <class T> struct Block {
  const T* u; std::size_t u_stride; const std::int64_t* col; const double* time;
  const double* time_regs; std::size_t width; const Forcing<T>* forcing; T* du;
  std::size_t du_stride; std::size_t lanes; const T* scalars; const T* pinned;
  const void* tables;
  double (*closed)(unsigned, const void*, unsigned, double, double);
  T* spill;
};
template <class T> struct Vec;
template <> struct Vec<double> { typedef double V __attribute__((vector_size(64))); };
template <> struct Vec<float> { typedef float V __attribute__((vector_size(64))); };
template <class T> using V = typename Vec<T>::V;
// Helpers always inline: in bodies of hundreds of statements g++ otherwise calls them.
#define AI [[gnu::always_inline]] inline
template <class T> constexpr std::size_t N = sizeof(V<T>) / sizeof(T);
// One chunk of lanes as the statements see it: state a of chunk lane j at u[a * us + j],
// forcing a at f[a * fs + j], output k at d[k * ds + j]. Either straight into the caller's
// arrays (consecutive columns, forcing fields evenly spaced with unit stride, a full chunk) or
// into a scratch copy gathered before and scattered after, so every load and store of the
// body is one plain vector access. lane[j]: the block lane of chunk lane j (past the block's
// last real lane, that lane again).
// Programs that load no state (grid region programs) read each forcing field through its own
// pointer instead, p[a] (see emit_native_source).
template <class T> struct Chunk {
  const T* u; std::size_t us;
  const T* f; std::size_t fs;
  T* d; std::size_t ds;
  const T* const* p;
  std::size_t lane[N<T>];
};
template <class T> AI V<T> bc(T s) { V<T> r; for (std::size_t j = 0; j < N<T>; ++j) r[j] = s; return r; }
template <class T> AI V<T> ld(const T* p) { V<T> r; std::memcpy(&r, p, sizeof r); return r; }
template <class T> AI void st(T* p, const V<T>& x) { std::memcpy(p, &x, sizeof x); }
template <class T> AI V<T> ld_time(const double* q, const Chunk<T>& c) {
  V<T> r; for (std::size_t j = 0; j < N<T>; ++j) r[j] = static_cast<T>(q[c.lane[j]]); return r;
}
template <class T, class F> AI V<T> map1(const V<T>& a, F f) {
  V<T> r; for (std::size_t j = 0; j < N<T>; ++j) r[j] = f(a[j]); return r;
}
template <class T, class F> AI V<T> map2(const V<T>& a, const V<T>& b, F f) {
  V<T> r; for (std::size_t j = 0; j < N<T>; ++j) r[j] = f(a[j], b[j]); return r;
}
template <class T, class M> AI V<T> truth(M m) { return m ? bc<T>(T(1)) : bc<T>(T(0)); }
template <class T> AI V<T> op_min(V<T> a, V<T> b) { return ((a < b) | (a != a)) ? a : b; }
template <class T> AI V<T> op_max(V<T> a, V<T> b) { return ((a > b) | (a != a)) ? a : b; }
template <class T> AI V<T> op_sign(V<T> a) {
  const V<T> z = bc<T>(T(0));
  return a > z ? bc<T>(T(1)) : (a < z ? bc<T>(T(-1)) : a);
}
template <class T> AI V<T> op_not(V<T> a) { return truth<T>(a == bc<T>(T(0))); }
template <class T> AI V<T> op_and(V<T> a, V<T> b) {
  const V<T> z = bc<T>(T(0));
  return truth<T>((a != z) & (b != z));
}
template <class T> AI V<T> op_or(V<T> a, V<T> b) {
  const V<T> z = bc<T>(T(0));
  return truth<T>((a != z) | (b != z));
}
template <class T> AI V<T> select(V<T> c, V<T> x, V<T> y) { return c != bc<T>(T(0)) ? x : y; }
template <class T> AI V<T> closed(const Block<T>* b, unsigned fn, unsigned table, V<T> x0, V<T> x1) {
  V<T> r;
  for (std::size_t j = 0; j < N<T>; ++j)
    r[j] = static_cast<T>(b->closed(fn, b->tables, table, static_cast<double>(x0[j]), static_cast<double>(x1[j])));
  return r;
}
)";

const char* unary_call(Opcode op) {
  switch (op) {
    case Opcode::Exp: return "std::exp";     case Opcode::Log: return "std::log";
    case Opcode::Log10: return "std::log10"; case Opcode::Sqrt: return "std::sqrt";
    case Opcode::Abs: return "std::fabs";
    case Opcode::Sin: return "std::sin";     case Opcode::Cos: return "std::cos";
    case Opcode::Tan: return "std::tan";     case Opcode::Asin: return "std::asin";
    case Opcode::Acos: return "std::acos";   case Opcode::Atan: return "std::atan";
    case Opcode::Sinh: return "std::sinh";   case Opcode::Cosh: return "std::cosh";
    case Opcode::Tanh: return "std::tanh";   case Opcode::Asinh: return "std::asinh";
    case Opcode::Acosh: return "std::acosh"; case Opcode::Atanh: return "std::atanh";
    case Opcode::Floor: return "std::floor"; case Opcode::Ceil: return "std::ceil";
    default: return nullptr;
  }
}

const char* infix(Opcode op) {
  switch (op) {
    case Opcode::Add: return "+"; case Opcode::Sub: return "-";
    case Opcode::Mul: return "*"; case Opcode::Div: return "/";
    case Opcode::Lt: return "<";  case Opcode::Le: return "<=";
    case Opcode::Gt: return ">";  case Opcode::Ge: return ">=";
    case Opcode::Eq: return "=="; case Opcode::Ne: return "!=";
    default: return nullptr;
  }
}

/// The right-hand side of one instruction (a vector of N lanes), operands already named.
std::string expression(const Instr& ins, const std::string& a, const std::string& b,
                       const std::string& c, bool per_field) {
  const std::string k = "K[" + std::to_string(ins.b) + "]";  // a scalar, broadcast by the operator
  switch (ins.op) {
    case Opcode::LoadState: return "ld(c.u + " + std::to_string(ins.a) + "u * US)";
    case Opcode::LoadForcing:
      return per_field ? "ld(c.p[" + std::to_string(ins.a) + "])"
                       : "ld(c.f + " + std::to_string(ins.a) + "u * FS)";
    case Opcode::LoadTime: return "ld_time<T>(b->time, c)";
    case Opcode::LoadTimeValue:
      return "ld_time<T>(b->time_regs + " + std::to_string(ins.a) + "u * W, c)";
    case Opcode::Copy: return a;
    case Opcode::Neg: return "-" + a;
    case Opcode::Not: return "op_not<T>(" + a + ")";
    case Opcode::Sign: return "op_sign<T>(" + a + ")";
    case Opcode::Pow:
      return "map2<T>(" + a + ", " + b + ", [](T x, T y) { return std::pow(x, y); })";
    case Opcode::Atan2:
      return "map2<T>(" + a + ", " + b + ", [](T x, T y) { return std::atan2(x, y); })";
    case Opcode::Min: return "op_min<T>(" + a + ", " + b + ")";
    case Opcode::Max: return "op_max<T>(" + a + ", " + b + ")";
    case Opcode::And: return "op_and<T>(" + a + ", " + b + ")";
    case Opcode::Or: return "op_or<T>(" + a + ", " + b + ")";
    case Opcode::AddS: return a + " + " + k;
    case Opcode::SubS: return a + " - " + k;
    case Opcode::SSub: return k + " - " + a;
    case Opcode::MulS: return a + " * " + k;
    case Opcode::DivS: return a + " / " + k;
    case Opcode::SDiv: return k + " / " + a;
    case Opcode::Select: return "select<T>(" + a + ", " + b + ", " + c + ")";
    case Opcode::Closed1:
    case Opcode::Closed2:
      return "closed<T>(b, " + std::to_string(static_cast<unsigned>(ins.fn)) + "u, " +
             std::to_string(ins.c) + "u, " + a + ", " +
             (ins.op == Opcode::Closed2 ? b : std::string("bc<T>(T(0))")) + ")";
    default: break;
  }
  if (const char* f = unary_call(ins.op))
    return "map1<T>(" + a + ", [](T x) { return " + f + "(x); })";
  if (const char* o = infix(ins.op)) {
    const bool compare = ins.op >= Opcode::Lt;
    const std::string e = a + " " + o + " " + b;
    return compare ? "truth<T>(" + e + ")" : e;
  }
  // LoadParam and Const live on the setup tape only; reaching here is a lowering bug.
  ESI_ASSERT(false && "opcode not expected on a lane tape");
  return {};
}

/// Instructions whose value is read more than kLocalWindow instructions after it is written,
/// or in another chunk: those live in the spill area instead of a local variable. Thousands of
/// simultaneously live locals across libm calls made g++'s register allocator take ~50 s on
/// fullchem; memory the callee might see keeps the allocation problem local.
std::vector<bool> long_lived(const Code& lane) {
  std::vector<bool> spilled(lane.code.size(), false);
  std::vector<std::size_t> writer(lane.registers, SIZE_MAX);
  for (std::size_t j = 0; j < lane.code.size(); ++j) {
    const Instr& ins = lane.code[j];
    const int n = source_count(ins.op);
    const bool scalar_b = ins.op >= Opcode::AddS && ins.op <= Opcode::SDiv;
    const std::uint32_t src[3] = {ins.a, scalar_b ? UINT32_MAX : ins.b, ins.c};
    for (int k = 0; k < n; ++k) {
      if (src[k] == UINT32_MAX || src[k] < lane.pinned) continue;
      const std::size_t w = writer[src[k]];
      if (w != SIZE_MAX && (j - w > kLocalWindow || j / kChunk != w / kChunk)) spilled[w] = true;
    }
    if (writes_register(ins.op)) writer[ins.dst] = j;
  }
  return spilled;
}

}  // namespace

std::string emit_native_source(const Tape& tape, std::span<const std::size_t> f64_strides) {
  const Code& lane = tape.lane;
  const std::vector<bool> spilled = long_lived(lane);
  // A program that loads no state but reads forcing fields is a grid region program: its
  // fields are rows of different arrays (and constants along the row), never evenly spaced,
  // so the evenly-spaced direct path never applies and every chunk used to be gathered field
  // by field, a third of the time of a PPM program. Such programs read each field through its
  // own pointer: straight into the caller's row where the field has unit stride and the
  // chunk's columns are consecutive, else a gathered or broadcast copy.
  const bool per_field = gathered_states(tape) == 0 && !tape.forcing.empty();
  const std::size_t chunks = std::max<std::size_t>(1, (lane.code.size() + kChunk - 1) / kChunk);
  std::vector<std::string> name(lane.registers);
  // Pinned values are the same in every lane: one scalar, broadcast where read.
  for (std::uint32_t r = 0; r < lane.pinned; ++r)
    name[r] = "bc<T>(P[" + std::to_string(r) + "u * W])";
  std::ostringstream os;
  os << "// Generated by esi from a lane tape of " << lane.code.size() << " instructions.\n"
     << kPrologue;
  for (std::size_t k = 0; k < chunks; ++k) {
    // One function per chunk keeps each register-allocation problem small; they must not be
    // inlined back into one (g++ inlines a static function called once).
    // Stride: the lane stride of states, forcing fields and outputs when fixed at compile time
    // (see with_native's f64_strides), 0 when read from the chunk.
    os << "template <class T, std::size_t Stride> " << (chunks > 1 ? "[[gnu::noinline]] " : "inline ")
       << "void chunk" << k << "(const Block<T>* block, const Chunk<T>& chunk) {\n"
       // Local copies: the compiler cannot prove that output and spill stores leave the block
       // and lane descriptors alone, and would reload them around every store; copies whose
       // address never escapes stay in registers.
       << "  const Block<T> block_copy = *block; const Block<T>* const b = &block_copy;\n"
       << "  const Chunk<T> c = chunk;\n"
       << "  const std::size_t US = Stride ? Stride : c.us, FS = Stride ? Stride : c.fs,\n"
       << "                    DS = Stride ? Stride : c.ds;\n"
       << "  (void)US; (void)FS; (void)DS;\n"
       << "  const std::size_t W = b->width; (void)W;\n"
       // Scalars and pinned values are read where used, not hoisted into locals: fullchem has
       // hundreds of rate constants, and locals live across the whole body swamp the allocator.
       << "  const T* const K = b->scalars; (void)K;\n"
       << "  const T* const P = b->pinned; (void)P;\n"
       << "  T* const S = b->spill; (void)S;\n";
    for (std::size_t i = k * kChunk; i < std::min(lane.code.size(), (k + 1) * kChunk); ++i) {
      const Instr& ins = lane.code[i];
      const int n = source_count(ins.op);
      const bool scalar_b = ins.op >= Opcode::AddS && ins.op <= Opcode::SDiv;
      const std::string a = n > 0 ? name[ins.a] : "";
      const std::string b = n > 1 && !scalar_b ? name[ins.b] : "";
      const std::string c = n > 2 ? name[ins.c] : "";
      if (ins.op == Opcode::Store) {
        os << "  st(c.d + " << ins.dst << "u * DS, " << a << ");\n";
        continue;
      }
      // A long-lived state or forcing value is loaded again where used rather than copied
      // into the spill area: it is in memory already, and the copy is one store per value
      // (fullchem's lane-pool Jacobian spilled 608 loaded values, its RHS 242: both about 8 %
      // faster without). Per-field reads go through a pointer table (two loads): spilled.
      const bool reloadable =
          ins.op == Opcode::LoadState || (ins.op == Opcode::LoadForcing && !per_field);
      if (spilled[i] && reloadable) {
        name[ins.dst] = expression(ins, a, b, c, per_field);
        continue;
      }
      if (spilled[i]) {
        const std::string slot = "S + " + std::to_string(ins.dst - lane.pinned) + "u * N<T>";
        name[ins.dst] = "ld(" + slot + ")";
        os << "  st(" << slot << ", V<T>(" << expression(ins, a, b, c, per_field) << "));\n";
      } else {
        name[ins.dst] = "v" + std::to_string(i);
        os << "  const V<T> " << name[ins.dst] << " = " << expression(ins, a, b, c, per_field)
           << ";\n";
      }
    }
    os << "}\n";
  }
  // The chunk loop: direct access where the layout allows (the lane pools' blocks always do),
  // else gather into the scratch past the spill area and scatter the real lanes back.
  const std::size_t spill_values = lane.registers - lane.pinned;
  os << "template <class T, std::size_t Stride> inline void run_chunks(const Block<T>* b, const Chunk<T>& c) {\n";
  for (std::size_t k = 0; k < chunks; ++k) os << "  chunk" << k << "<T, Stride>(b, c);\n";
  os << "}\n";
  // The copies with a fixed stride, double only; a chunk runs one when every stride it uses
  // equals that copy's (a stride over one row is never used; per-field programs read fields
  // through pointers: no copy).
  const std::size_t states = gathered_states(tape), forcings = tape.forcing.size();
  auto stride_is = [](std::size_t rows, const char* field, std::size_t S) {
    return rows > 1 ? std::string("c.") + field + " == " + std::to_string(S) + "u" : std::string("true");
  };
  os << "template <class T> struct Fixed {\n"
     << "  static bool run(const Block<T>*, const Chunk<T>&) { return false; }\n};\n"
     << "template <> struct Fixed<double> {\n"
     << "  static bool run(const Block<double>* b, const Chunk<double>& c) {\n"
     << "    (void)b; (void)c;\n";
  if (!per_field)
    for (std::size_t S : f64_strides) {
      if (S == 0) continue;
      os << "    if (" << stride_is(states, "us", S) << " && " << stride_is(forcings, "fs", S)
         << " && " << stride_is(tape.outputs, "ds", S) << ") {\n"
         << "      run_chunks<double, " << S << "u>(b, c);\n"
         << "      return true;\n    }\n";
    }
  os << "    return false;\n  }\n};\n";
  os << "template <class T> void lane_body(const Block<T>* b) {\n"
     << "  constexpr std::size_t states = " << gathered_states(tape)
     << "u, forcings = " << tape.forcing.size() << "u, outputs = " << tape.outputs << "u;\n"
     << "  (void)states; (void)forcings; (void)outputs;\n"
     << "  T* const gathered = b->spill + " << spill_values << "u * N<T>;\n";
  // Before the chunk loop: per-field mode broadcasts the fields constant along the block
  // (stride 0) into their scratch rows once; the other mode checks whether the fields lie
  // evenly spaced (then a full chunk of consecutive columns reads them in place).
  if (per_field)
    os << "  T* const f = gathered;\n"
       << "  const T* p[forcings];\n"
       << "  for (std::size_t a = 0; a < forcings; ++a)\n"
       << "    if (b->forcing[a].column_stride == 0)\n"
       << "      st(f + a * N<T>, bc<T>(b->forcing[a].data[0]));\n";
  else
    os << "  std::size_t spacing = 0;\n"
       << "  bool uniform = true;\n"
       << "  if (forcings > 0) {  // fields at equal distances (addresses compared as integers)\n"
       << "    const auto at = [&](std::size_t q) { return std::uintptr_t(b->forcing[q].data); };\n"
       << "    const std::uintptr_t step = forcings > 1 ? at(1) - at(0) : 0;\n"
       << "    uniform = step % sizeof(T) == 0;\n"
       << "    spacing = step / sizeof(T);\n"
       << "    for (std::size_t q = 0; q < forcings && uniform; ++q)\n"
       << "      uniform = b->forcing[q].column_stride == 1 && at(q) == at(0) + q * step;\n"
       << "  }\n";
  os << "  for (std::size_t l0 = 0; l0 < b->lanes; l0 += N<T>) {\n"
     << "    const std::size_t real = b->lanes - l0 < N<T> ? b->lanes - l0 : N<T>;\n"
     << "    Chunk<T> c;\n"
     << "    c.p = nullptr;\n"
     << "    std::int64_t col[N<T>];\n"
     << "    bool consecutive = real == N<T>;  // a full chunk of consecutive columns\n"
     << "    for (std::size_t j = 0; j < N<T>; ++j) {\n"
     << "      c.lane[j] = l0 + (j < real ? j : real - 1);\n"
     << "      col[j] = b->col[c.lane[j]];\n"
     << "      consecutive = consecutive && col[j] == col[0] + std::int64_t(j);\n"
     << "    }\n";
  if (per_field) {
    // Field a's chunk values at p[a]: in place for a unit-stride field of a consecutive
    // chunk, else its scratch row (broadcast above, or gathered here).
    os << "    for (std::size_t a = 0; a < forcings; ++a) {\n"
       << "      const std::size_t s = b->forcing[a].column_stride;\n"
       << "      if (s == 1 && consecutive) {\n"
       << "        p[a] = b->forcing[a].data + col[0];\n"
       << "      } else {\n"
       << "        if (s != 0)\n"
       << "          for (std::size_t j = 0; j < N<T>; ++j)\n"
       << "            f[a * N<T> + j] = b->forcing[a].data[col[j] * std::int64_t(s)];\n"
       << "        p[a] = f + a * N<T>;\n"
       << "      }\n"
       << "    }\n"
       << "    c.u = nullptr; c.us = 0; c.f = nullptr; c.fs = 0; c.p = p;\n"
       << "    const bool direct = real == N<T>;\n"
       << "    if (direct) {\n"
       << "      c.d = b->du + l0; c.ds = b->du_stride;\n"
       << "    } else {\n"
       << "      c.d = f + forcings * N<T>; c.ds = N<T>;\n"
       << "    }\n";
  } else {
    // This mode is taken by programs that load states (or read no field), so u is given.
    os << "    const bool direct = uniform && consecutive;\n"
       << "    if (direct) {\n"
       << "      c.u = b->u + col[0]; c.us = b->u_stride;\n"
       << "      c.f = forcings > 0 ? b->forcing[0].data + col[0] : nullptr; c.fs = spacing;\n"
       << "      c.d = b->du + l0; c.ds = b->du_stride;\n"
       << "    } else {\n"
       << "      T* const u = gathered;\n"
       << "      T* const f = u + states * N<T>;\n"
       << "      for (std::size_t a = 0; a < states; ++a)\n"
       << "        for (std::size_t j = 0; j < N<T>; ++j) u[a * N<T> + j] = b->u[a * b->u_stride + "
          "col[j]];\n"
       << "      for (std::size_t a = 0; a < forcings; ++a)\n"
       << "        for (std::size_t j = 0; j < N<T>; ++j)\n"
       << "          f[a * N<T> + j] = b->forcing[a].data[col[j] * b->forcing[a].column_stride];\n"
       << "      c.u = u; c.us = N<T>; c.f = f; c.fs = N<T>;\n"
       << "      c.d = f + forcings * N<T>; c.ds = N<T>;\n"
       << "    }\n";
  }
  os << "    if (!Fixed<T>::run(b, c)) run_chunks<T, 0>(b, c);\n";
  os << "    if (!direct)\n"
     << "      for (std::size_t k = 0; k < outputs; ++k)\n"
     << "        for (std::size_t j = 0; j < real; ++j) b->du[k * b->du_stride + l0 + j] = c.d[k * N<T> + j];\n"
     << "  }\n"
     << "}\n}  // namespace\n";
  for (const char* t : {"double", "float"})
    os << "extern \"C\" void esi_native_lane_v" << kNativeAbiVersion << "_"
       << (t[0] == 'd' ? "f64" : "f32") << "(const Block<" << t << ">* b) { lane_body<" << t
       << ">(b); }\n";
  return os.str();
}

}  // namespace esi::kernel::detail
