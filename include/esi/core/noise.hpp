// Counter-based noise: Philox-4x32-10 (Random123) and Box-Muller normals, keyed so that every
// random number of a run is a pure function of (seed, ensemble member, step, slot).
//
// Why counter-based: an ensemble split over threads, or run in any member order, must give the
// same bits as a serial run. A stateful generator would tie each number to the order in which
// numbers were asked for; here a number is addressed, not drawn, so nothing is shared between
// threads and nothing depends on evaluation order.
//
// Layout of one Philox call (key = the 64-bit seed as two words, low word first):
//   counter = { member, slot, step low word, step high word }
// and its four output words give two doubles in (0, 1] / [-1, 1] (words 0|1 and 2|3, each
// pair as one 64-bit integer, low word first) and, through Random123's Box-Muller, two standard
// normals. The conventions of the users of a slot:
//   - SDE noise source k at step n (n = 0 for the step that starts at t0): step n, slot k; the
//     first normal is the Wiener increment's xi (dW = sqrt(h) xi), the second is the auxiliary
//     normal of schemes that need one (SRA1's I_(1,0)). Sources are independent processes: one
//     per scalar (or independently distributed) Wiener parameter, K consecutive ones per
//     correlated Wiener vector of K components (a `cov`: its cells get sqrt(h) L xi), in the
//     order of System::parameters.
//   - setup-time draws of `distribution` parameters: step kSetupStep, slot = the parameter's
//     index in System::parameters; a correlated vector of K components (mean + L z) uses K
//     consecutive slots after every parameter index (parameters.size() + the components of
//     the correlated vectors before it).
#pragma once

#include <array>
#include <cstdint>

namespace esi::noise {

/// The step value reserved for draws made once at setup (never reached by a time step).
inline constexpr std::uint64_t kSetupStep = ~std::uint64_t{0};

/// One Philox-4x32-10 block: the raw generator, exposed for the known-answer test.
std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> counter,
                                           std::array<std::uint32_t, 2> key);

/// The Philox counter of (member, step, slot) and the key of a seed, as laid out above.
std::array<std::uint32_t, 4> counter_of(std::uint32_t member, std::uint64_t step, std::uint32_t slot);
std::array<std::uint32_t, 2> key_of(std::uint64_t seed);

struct Normals {
  double first = 0, second = 0;
};

/// Two independent standard normals for (seed, member, step, slot): Random123's double
/// Box-Muller of the block's two 64-bit halves.
Normals normals(std::uint64_t seed, std::uint32_t member, std::uint64_t step, std::uint32_t slot);

/// A uniform double in (0, 1] for (seed, member, step, slot): Random123's u01 of the block's
/// first 64-bit half (never 0, so log() of it is finite).
double uniform01(std::uint64_t seed, std::uint32_t member, std::uint64_t step, std::uint32_t slot);

}  // namespace esi::noise
