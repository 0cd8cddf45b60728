// The register tape behind a Program (private to the kernel module).
//
// An instruction is {opcode, dst, a, b, c}: registers are indices into a register file, and
// for loads `a` names the input (state row, parameter index, forcing slot, constant index,
// time register). Three tapes, one per tier of the value they compute:
//
//   setup  reads p and constants; double, one lane; run by `prepare` (S[0..setup_registers))
//   time   reads t and setup values; double, L lanes; run first in every block (Q[r*W + l])
//   lane   reads states, forcing and both others; T, L lanes; then run (R[r*W + l]); the
//          scalar forms (MulS, ...) read a setup value once instead of a broadcast register
//
//   per block: for instr in time: Q[dst*W + l] = op(Q[a*W + l], ...)   for l in 0..L
//              for instr in lane: R[dst*W + l] = op(R[a*W + l], ...)   for l in 0..L
//
// Time-dependent values stay in double even in f32 programs: `t_utc0 + t` or a datetime of it
// would be off by minutes in float at present-day epoch seconds. After `prepare` each export
// (s, r) has broadcast setup register s into pinned register r of the time or lane file
// (r < pinned: written only by prepare, never reused); a lane instruction reads a time value
// through `LoadTimeValue`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "esi/kernel/closed_functions.hpp"
#include "esi/kernel/program.hpp"

namespace esi::kernel::detail {

enum class Opcode : std::uint8_t {
  // inputs: dst <- input a
  LoadState,
  LoadForcing,
  LoadTime,
  LoadParam,
  Const,
  LoadTimeValue,
  // unary: dst <- f(a)
  Copy,
  Neg,
  Exp,
  Log,
  Log10,
  Sqrt,
  Abs,
  Sign,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Tanh,
  Asinh,
  Acosh,
  Atanh,
  Floor,
  Ceil,
  Not,
  // binary: dst <- f(a, b)
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Atan2,
  Min,
  Max,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
  // lane tape, one operand a setup value read as scalar b: dst <- a+b, a-b, b-a, a*b, a/b, b/a
  AddS,
  SubS,
  SSub,
  MulS,
  DivS,
  SDiv,
  // dst <- a != 0 ? b : c
  Select,
  // closed functions, table c: dst <- fn(a) | fn(a, b)
  Closed1,
  Closed2,
  // output row dst <- a (real lanes only)
  Store,
};

struct Instr {
  Opcode op = Opcode::Copy;
  ClosedFn fn = ClosedFn::Year;  // Closed* only
  std::uint32_t dst = 0, a = 0, b = 0, c = 0;
};

int source_count(Opcode op);  // registers read: 0..3
bool writes_register(Opcode op);
std::string_view opcode_name(Opcode op);

/// One tape with its register file size; registers [0, pinned) hold exported setup values.
struct Code {
  std::vector<Instr> code;
  std::uint32_t registers = 0;
  std::uint32_t pinned = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> imports;  // setup reg -> pinned reg
};

struct Tape {
  Code setup, time, lane;
  std::vector<double> constants;
  std::vector<ClosedTable> tables;
  std::vector<std::uint32_t> lane_scalars;  // setup register of each lane scalar slot

  Target target = Target::Whole;
  std::size_t states = 0, parameters = 0, outputs = 0;
  std::vector<int> dofs;
  std::vector<std::string> forcing;
};

/// The state rows the lane tape loads: one past the highest LoadState index, 0 when it loads
/// none. Native code gathers only these rows into its chunk scratch, and its workspace holds
/// only them: a grid region program, which reads every state through forcing fields, then
/// keeps no scratch row per state of the whole system (45,864 for reseact_3d_chem, 2.9 MB per
/// workspace, 330 workspaces).
std::size_t gathered_states(const Tape& tape);

}  // namespace esi::kernel::detail
