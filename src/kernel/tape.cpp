// Instruction metadata, Program accessors and the disassembler.
#include <algorithm>
#include <array>
#include <sstream>

#include "kernel/tape.hpp"

namespace esi::kernel {
namespace detail {

namespace {
constexpr std::array<std::string_view, static_cast<std::size_t>(Opcode::Store) + 1> kNames{
    "load_state", "load_forcing", "load_time", "load_param", "const",   "load_time_value",
    "copy",       "neg",          "exp",       "log",        "log10",   "sqrt",
    "abs",        "sign",         "sin",       "cos",        "tan",     "asin",
    "acos",       "atan",         "sinh",      "cosh",       "tanh",    "asinh",
    "acosh",      "atanh",        "floor",     "ceil",       "not",     "add",
    "sub",        "mul",          "div",       "pow",        "atan2",   "min",
    "max",        "lt",           "le",        "gt",         "ge",      "eq",
    "ne",         "and",          "or",        "add_s",      "sub_s",   "s_sub",
    "mul_s",      "div_s",        "s_div",     "select",     "closed1", "closed2",
    "store"};
}  // namespace

int source_count(Opcode op) {
  if (op <= Opcode::LoadTimeValue) return 0;
  if (op < Opcode::Add || (op >= Opcode::AddS && op <= Opcode::SDiv) || op == Opcode::Closed1 ||
      op == Opcode::Store)
    return 1;
  if (op == Opcode::Select) return 3;
  return 2;  // binary, Closed2
}

bool writes_register(Opcode op) {
  return op != Opcode::Store;
}

std::string_view opcode_name(Opcode op) {
  return kNames[static_cast<std::size_t>(op)];
}

std::size_t gathered_states(const Tape& tape) {
  std::size_t rows = 0;
  for (const Instr& ins : tape.lane.code)
    if (ins.op == Opcode::LoadState) rows = std::max<std::size_t>(rows, ins.a + 1);
  return rows;
}

}  // namespace detail

using detail::Opcode;

Target Program::target() const {
  return tape_->target;
}
std::size_t Program::state_count() const {
  return tape_->states;
}
std::size_t Program::parameter_count() const {
  return tape_->parameters;
}
std::size_t Program::output_count() const {
  return tape_->outputs;
}
std::span<const int> Program::dofs() const {
  return tape_->dofs;
}
std::span<const std::string> Program::forcing_names() const {
  return tape_->forcing;
}
// Every read of t is a LoadTime, and LoadTime is a time-tier instruction.
bool Program::reads_time() const {
  return !tape_->time.code.empty();
}

Program::Stats Program::stats() const {
  const auto& t = *tape_;
  return {t.setup.code.size(), t.time.code.size(), t.lane.code.size(),
          t.time.registers,    t.lane.pinned,      t.lane.registers};
}

namespace {

void print(std::ostream& os, const detail::Instr& ins, char reg) {
  const int n = detail::source_count(ins.op);
  if (ins.op == Opcode::Store)
    os << "out" << ins.dst << " = ";
  else
    os << reg << ins.dst << " = ";
  os << detail::opcode_name(ins.op);
  if (ins.op == Opcode::Closed1 || ins.op == Opcode::Closed2)
    os << " " << closed_fn_name(ins.fn) << " table" << ins.c;
  if (ins.op == Opcode::LoadTimeValue)
    os << " q" << ins.a;
  else if (ins.op <= Opcode::Const)
    os << " #" << ins.a;
  const std::uint32_t src[3] = {ins.a, ins.b, ins.c};
  for (int k = 0; k < n; ++k) os << " " << reg << src[k];
  if (ins.op >= Opcode::AddS && ins.op <= Opcode::SDiv) os << " k" << ins.b;
  os << "\n";
}

void print_code(std::ostream& os, const char* title, const detail::Code& c, char reg) {
  os << title << " (" << c.registers << " registers, " << c.pinned << " pinned):\n";
  for (const auto& [s, r] : c.imports) os << reg << r << " <- s" << s << "\n";
  for (const auto& ins : c.code) print(os, ins, reg);
}

}  // namespace

std::string Program::disassemble() const {
  std::ostringstream os;
  print_code(os, "setup", tape_->setup, 's');
  print_code(os, "time", tape_->time, 'q');
  print_code(os, "lane", tape_->lane, 'r');
  for (std::size_t k = 0; k < tape_->lane_scalars.size(); ++k)
    os << "k" << k << " <- s" << tape_->lane_scalars[k] << "\n";
  return os.str();
}

}  // namespace esi::kernel
