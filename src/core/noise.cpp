// Philox-4x32-10 and Box-Muller come from Random123 (Debian librandom123-dev, header-only); this
// file only fixes how (seed, member, step, slot) map onto its counter and key (noise.hpp).
#include "esi/core/noise.hpp"

#include <Random123/boxmuller.hpp>
#include <Random123/philox.h>
#include <Random123/uniform.hpp>

namespace esi::noise {
namespace {

using Philox = r123::Philox4x32_R<10>;

Philox::ctr_type block(std::uint64_t seed, std::uint32_t member, std::uint64_t step, std::uint32_t slot) {
  const auto c = counter_of(member, step, slot);
  const auto k = key_of(seed);
  return Philox()(Philox::ctr_type{{c[0], c[1], c[2], c[3]}}, Philox::key_type{{k[0], k[1]}});
}

std::uint64_t join(std::uint32_t low, std::uint32_t high) {
  return static_cast<std::uint64_t>(low) | (static_cast<std::uint64_t>(high) << 32);
}

}  // namespace

std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> counter,
                                           std::array<std::uint32_t, 2> key) {
  const Philox::ctr_type r = Philox()(Philox::ctr_type{{counter[0], counter[1], counter[2], counter[3]}},
                                      Philox::key_type{{key[0], key[1]}});
  return {r[0], r[1], r[2], r[3]};
}

std::array<std::uint32_t, 4> counter_of(std::uint32_t member, std::uint64_t step, std::uint32_t slot) {
  return {member, slot, static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(step >> 32)};
}

std::array<std::uint32_t, 2> key_of(std::uint64_t seed) {
  return {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
}

Normals normals(std::uint64_t seed, std::uint32_t member, std::uint64_t step, std::uint32_t slot) {
  const Philox::ctr_type r = block(seed, member, step, slot);
  const r123::double2 z = r123::boxmuller(join(r[0], r[1]), join(r[2], r[3]));
  return {z.x, z.y};
}

double uniform01(std::uint64_t seed, std::uint32_t member, std::uint64_t step, std::uint32_t slot) {
  const Philox::ctr_type r = block(seed, member, step, slot);
  return r123::u01<double>(join(r[0], r[1]));
}

}  // namespace esi::noise
