#include "kernel/regalloc.hpp"

#include <limits>

#include "esi/core/error.hpp"

namespace esi::kernel::detail {
namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t kForever = std::numeric_limits<std::size_t>::max();

std::uint32_t* source(Instr& ins, int k) { return k == 0 ? &ins.a : (k == 1 ? &ins.b : &ins.c); }

struct Scan {
  std::vector<std::size_t> last_read;  // per vreg: index of its last reader
  std::vector<std::uint32_t> phys;     // per vreg
  std::vector<bool> fixed;             // per vreg: pinned, never freed
  std::vector<std::uint32_t> holder;   // per physical register: vreg it holds now
  std::vector<std::uint32_t> free;     // LIFO
  std::uint32_t next = 0;

  std::uint32_t take() {
    if (free.empty()) {
      holder.push_back(kNone);
      return next++;
    }
    const std::uint32_t p = free.back();
    free.pop_back();
    return p;
  }

  void run(std::vector<Instr>& code) {
    for (std::size_t i = 0; i < code.size(); ++i) {
      Instr& ins = code[i];
      const int n = source_count(ins.op);
      std::uint32_t vs[3] = {kNone, kNone, kNone};
      for (int k = 0; k < n; ++k) {
        vs[k] = *source(ins, k);
        // The value must still sit in its register: nothing overwrote it before this read.
        ESI_ASSERT(phys[vs[k]] != kNone && holder[phys[vs[k]]] == vs[k]);
        *source(ins, k) = phys[vs[k]];
      }
      if (writes_register(ins.op)) {
        const std::uint32_t v = ins.dst;
        ESI_ASSERT(phys[v] == kNone);
        phys[v] = take();
        holder[phys[v]] = v;
        ins.dst = phys[v];
        if (last_read[v] == kNone) free.push_back(phys[v]);  // written, never read
      }
      for (int k = 0; k < n; ++k) {
        const bool repeated = (k > 0 && vs[k] == vs[0]) || (k > 1 && vs[k] == vs[1]);
        if (!repeated && !fixed[vs[k]] && last_read[vs[k]] == i) free.push_back(phys[vs[k]]);
      }
    }
  }
};

}  // namespace

Allocation allocate_registers(std::vector<Instr>& code, std::uint32_t vregs,
                              const std::vector<std::uint32_t>& pinned,
                              const std::vector<std::uint32_t>& keep) {
  Scan s;
  s.last_read.assign(vregs, kNone);
  s.phys.assign(vregs, kNone);
  s.fixed.assign(vregs, false);
  for (std::size_t i = 0; i < code.size(); ++i)
    for (int k = 0; k < source_count(code[i].op); ++k) s.last_read[*source(code[i], k)] = i;
  for (std::uint32_t v : keep) {
    s.last_read[v] = kForever;
    s.fixed[v] = true;
  }
  for (std::uint32_t k = 0; k < pinned.size(); ++k) {
    s.phys[pinned[k]] = k;
    s.fixed[pinned[k]] = true;
    s.holder.push_back(pinned[k]);
  }
  s.next = static_cast<std::uint32_t>(pinned.size());
  s.run(code);
  return {std::move(s.phys), s.next};
}

}  // namespace esi::kernel::detail
