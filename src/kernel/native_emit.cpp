// Emitting a lane tape as C++ (see native.hpp): one statement per instruction, one local
// variable per short-lived value (long-lived ones in a spill area), the lane loop outermost.
//
// Each statement is the interpreter's scalar operation spelled out (run.cpp's lambdas and
// scalar_ops.hpp), so with contraction off both paths round identically.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

#include "esi/core/error.hpp"
#include "kernel/native_abi.hpp"
#include "kernel/tape.hpp"

namespace esi::kernel::detail {
namespace {

constexpr std::size_t kLocalWindow = 24;  // instructions a value may stay in a local
constexpr std::size_t kChunk = 384;       // instructions per emitted function

// The prologue of every generated file: the block layout (a copy of NativeBlock) and the
// scalar helpers of scalar_ops.hpp.
constexpr const char* kPrologue = R"(#include <cmath>
#include <cstddef>
#include <cstdint>
namespace {
template <class T> struct Forcing { const T* data; std::size_t column_stride; };
template <class T> struct Block {
  const T* u; std::size_t u_stride; const std::int64_t* col; const double* time;
  const double* time_regs; std::size_t width; const Forcing<T>* forcing; T* du;
  std::size_t du_stride; std::size_t lanes; const T* scalars; const T* pinned;
  const void* tables;
  double (*closed)(unsigned, const void*, unsigned, double, double);
  T* spill;
  T* staging;
};
template <class T> inline T op_min(T a, T b) { return (a < b || a != a) ? a : b; }
template <class T> inline T op_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <class T> inline T op_sign(T a) { return a > T(0) ? T(1) : (a < T(0) ? T(-1) : a); }
template <class T> inline T truth(bool b) { return b ? T(1) : T(0); }
)";

const char* unary_call(Opcode op) {
  switch (op) {
    case Opcode::Exp: return "std::exp";     case Opcode::Log: return "std::log";
    case Opcode::Log10: return "std::log10"; case Opcode::Sqrt: return "std::sqrt";
    case Opcode::Abs: return "std::fabs";    case Opcode::Sign: return "op_sign";
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

/// The right-hand side of one instruction, operands already named.
std::string expression(const Instr& ins, const std::string& a, const std::string& b,
                       const std::string& c) {
  const std::string k = "K[" + std::to_string(ins.b) + "]";
  switch (ins.op) {
    case Opcode::LoadState:
      return "b->u[" + std::to_string(ins.a) + "u * b->u_stride + col]";
    case Opcode::LoadForcing: {
      const std::string f = "b->forcing[" + std::to_string(ins.a) + "]";
      return f + ".data[col * " + f + ".column_stride]";
    }
    case Opcode::LoadTime: return "static_cast<T>(b->time[l])";
    case Opcode::LoadTimeValue:
      return "static_cast<T>(b->time_regs[" + std::to_string(ins.a) + "u * W + l])";
    case Opcode::Copy: return a;
    case Opcode::Neg: return "-" + a;
    case Opcode::Not: return "truth<T>(" + a + " == T(0))";
    case Opcode::Pow: return "std::pow(" + a + ", " + b + ")";
    case Opcode::Atan2: return "std::atan2(" + a + ", " + b + ")";
    case Opcode::Min: return "op_min(" + a + ", " + b + ")";
    case Opcode::Max: return "op_max(" + a + ", " + b + ")";
    case Opcode::And: return "truth<T>(" + a + " != T(0) && " + b + " != T(0))";
    case Opcode::Or: return "truth<T>(" + a + " != T(0) || " + b + " != T(0))";
    case Opcode::AddS: return a + " + " + k;
    case Opcode::SubS: return a + " - " + k;
    case Opcode::SSub: return k + " - " + a;
    case Opcode::MulS: return a + " * " + k;
    case Opcode::DivS: return a + " / " + k;
    case Opcode::SDiv: return k + " / " + a;
    case Opcode::Select: return a + " != T(0) ? " + b + " : " + c;
    case Opcode::Closed1:
    case Opcode::Closed2:
      return "static_cast<T>(b->closed(" + std::to_string(static_cast<unsigned>(ins.fn)) +
             "u, b->tables, " + std::to_string(ins.c) + "u, static_cast<double>(" + a + "), " +
             (ins.op == Opcode::Closed2 ? "static_cast<double>(" + b + ")" : std::string("0.0")) +
             "))";
    default: break;
  }
  if (const char* f = unary_call(ins.op)) return std::string(f) + "(" + a + ")";
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
/// or in another chunk: those live in the spill area instead of a local variable. Thousands of simultaneously live
/// locals across libm calls made g++'s register allocator take ~50 s on fullchem; memory the
/// callee might see keeps the allocation problem local.
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

std::string emit_native_source(const Tape& tape) {
  const Code& lane = tape.lane;
  const std::vector<bool> spilled = long_lived(lane);
  const std::size_t chunks = std::max<std::size_t>(1, (lane.code.size() + kChunk - 1) / kChunk);
  std::vector<std::string> name(lane.registers);
  for (std::uint32_t r = 0; r < lane.pinned; ++r) name[r] = "P[" + std::to_string(r) + "u * W]";
  std::ostringstream os;
  os << "// Generated by esi from a lane tape of " << lane.code.size() << " instructions.\n"
     << kPrologue;
  for (std::size_t k = 0; k < chunks; ++k) {
    // One function per chunk keeps each register-allocation problem small; they must not be
    // inlined back into one (g++ inlines a static function called once).
    os << "template <class T> " << (chunks > 1 ? "[[gnu::noinline]] " : "inline ")
       << "void chunk" << k << "(const Block<T>* b, std::size_t l) {\n"
       << "  const std::size_t W = b->width; (void)W;\n"
       // Scalars and pinned values are read where used, not hoisted into locals: fullchem has
       // hundreds of rate constants, and locals live across the whole body swamp the allocator.
       << "  const T* const K = b->scalars; (void)K;\n"
       << "  const T* const P = b->pinned; (void)P;\n"
       << "  T* const S = b->spill; (void)S;\n"
       << "  const std::int64_t col = b->col[l]; (void)col;\n";
    for (std::size_t i = k * kChunk; i < std::min(lane.code.size(), (k + 1) * kChunk); ++i) {
      const Instr& ins = lane.code[i];
      const int n = source_count(ins.op);
      const bool scalar_b = ins.op >= Opcode::AddS && ins.op <= Opcode::SDiv;
      const std::string a = n > 0 ? name[ins.a] : "";
      const std::string b = n > 1 && !scalar_b ? name[ins.b] : "";
      const std::string c = n > 2 ? name[ins.c] : "";
      if (ins.op == Opcode::Store) {
        os << "  b->staging[l * " << tape.outputs << "u + " << ins.dst << "u] = " << a << ";\n";
        continue;
      }
      if (spilled[i]) {
        name[ins.dst] = "S[" + std::to_string(ins.dst - lane.pinned) + "]";
        os << "  " << name[ins.dst] << " = " << expression(ins, a, b, c) << ";\n";
      } else {
        name[ins.dst] = "v" + std::to_string(i);
        os << "  const T " << name[ins.dst] << " = " << expression(ins, a, b, c) << ";\n";
      }
    }
    os << "}\n";
  }
  os << "template <class T> void lane_body(const Block<T>* b) {\n"
     << "  for (std::size_t l = 0; l < b->lanes; ++l) {\n";
  for (std::size_t k = 0; k < chunks; ++k) os << "    chunk" << k << "<T>(b, l);\n";
  // Outputs go through a lane-major staging block and leave row by row: storing each lane's
  // outputs straight into rows a power-of-two stride apart thrashes one L1 set (the fullchem
  // Jacobian writes 2983 rows per cell).
  os << "  }\n"
     << "  for (std::size_t k = 0; k < " << tape.outputs << "u; ++k)\n"
     << "    for (std::size_t l = 0; l < b->lanes; ++l)\n"
     << "      b->du[k * b->du_stride + l] = b->staging[l * " << tape.outputs << "u + k];\n"
     << "}\n}  // namespace\n";
  for (const char* t : {"double", "float"})
    os << "extern \"C\" void esi_native_lane_v" << kNativeAbiVersion << "_"
       << (t[0] == 'd' ? "f64" : "f32") << "(const Block<" << t << ">* b) { lane_body<" << t
       << ">(b); }\n";
  return os.str();
}

}  // namespace esi::kernel::detail
