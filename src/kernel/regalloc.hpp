// Register allocation for one tape: a linear scan in program order that frees a register after
// its value's last read and hands out the most recently freed one first (the one most likely
// still in cache). A destination never shares a register with its own sources, so every lane
// loop may treat its output as restrict.
#pragma once

#include <cstdint>
#include <vector>

#include "kernel/tape.hpp"

namespace esi::kernel::detail {

struct Allocation {
  std::vector<std::uint32_t> phys;  ///< virtual -> physical register
  std::uint32_t registers = 0;      ///< size of the register file
};

/// Rewrites the registers of `code` (virtual ids below `vregs`) in place. Virtual register
/// pinned[k] becomes physical register k and is never reused (filled from outside the tape);
/// every register in `keep` stays live to the end of the tape (read after it by another tape).
Allocation allocate_registers(std::vector<Instr>& code, std::uint32_t vregs,
                              const std::vector<std::uint32_t>& pinned,
                              const std::vector<std::uint32_t>& keep);

}  // namespace esi::kernel::detail
