// Register allocation on hand-built tapes: reuse after the last read, no destination aliasing
// its sources, pinned registers fixed, kept values alive to the end.
#include <gtest/gtest.h>

#include <set>

#include "kernel/regalloc.hpp"

using namespace esi::kernel::detail;

namespace {

Instr ins(Opcode op, std::uint32_t dst, std::uint32_t a = 0, std::uint32_t b = 0) {
  return Instr{op, esi::kernel::ClosedFn::Year, dst, a, b, 0};
}

}  // namespace

TEST(RegAlloc, ReusesRegistersAfterTheLastRead) {
  // v0 = x; v1 = sin v0; v2 = sin v1; ... a chain needs two registers at a time.
  std::vector<Instr> code{ins(Opcode::LoadState, 0, 0)};
  for (std::uint32_t v = 1; v < 50; ++v) code.push_back(ins(Opcode::Sin, v, v - 1));
  code.push_back(ins(Opcode::Store, 0, 49));
  const Allocation a = allocate_registers(code, 50, {}, {});
  EXPECT_EQ(a.registers, 2u);
  for (const Instr& i : code)
    if (i.op == Opcode::Sin) {
      EXPECT_NE(i.dst, i.a) << "a destination never aliases a source";
    }
}

TEST(RegAlloc, PinnedAndKeptValuesSurvive) {
  // v0 pinned (filled by prepare); v1 = load; v2 = v1 * v0; v3 = v2 + v2 (kept); v4 = sin v1.
  std::vector<Instr> code{ins(Opcode::LoadState, 1, 0), ins(Opcode::Mul, 2, 1, 0),
                          ins(Opcode::Add, 3, 2, 2), ins(Opcode::Sin, 4, 1),
                          ins(Opcode::Cos, 5, 4), ins(Opcode::Store, 0, 5)};
  const Allocation a = allocate_registers(code, 6, {0}, {3});
  EXPECT_EQ(a.phys[0], 0u);
  std::set<std::uint32_t> written;
  for (const Instr& i : code)
    if (i.op != Opcode::Store) written.insert(i.dst);
  EXPECT_EQ(written.count(0u), 0u) << "the pinned register is never written by the tape";
  // v3 is kept: nothing after it may take its register.
  for (std::size_t k = 3; k < code.size(); ++k)
    if (code[k].op != Opcode::Store) {
      EXPECT_NE(code[k].dst, a.phys[3]);
    }
  // Repeated operand (v2 + v2) is freed once: v2's register is reusable exactly once.
  EXPECT_EQ(code[2].a, code[2].b);
}
