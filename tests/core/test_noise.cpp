// The keyed noise generator: Philox-4x32-10 against the Random123 known-answer vectors, the
// Box-Muller normals of a fixed key pinned bit for bit, and the keying (every coordinate of
// (seed, member, step, slot) changes the numbers; the same coordinates give the same bits).
#include <cmath>
#include <cstdint>
#include <set>

#include <gtest/gtest.h>

#include "esi/core/noise.hpp"

namespace {

using esi::noise::philox4x32_10;

// Random123 1.14 tests/kat_vectors, the three "philox4x32 10" lines: counter (4 words), key
// (2 words), expected output (4 words).
TEST(Philox, MatchesRandom123KnownAnswerVectors) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (std::array<std::uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (std::array<std::uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (std::array<std::uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, CounterAndKeyLayout) {
  EXPECT_EQ(esi::noise::counter_of(7, 0x0000000100000002ull, 3),
            (std::array<std::uint32_t, 4>{7, 3, 2, 1}));
  EXPECT_EQ(esi::noise::key_of(0x0000000500000006ull), (std::array<std::uint32_t, 2>{6, 5}));
}

// Pinned: the first values this generator produced; a change of the counter layout, of the
// Box-Muller variant or of the word order changes them. (Box-Muller calls glibc's sin, cos and
// log, which are correctly rounded on x86-64 glibc 2.28+.)
TEST(Noise, BoxMullerNormalsOfAFixedKeyArePinned) {
  const std::uint64_t seed = 20261201, step = 1000000000123ull;
  const auto a = esi::noise::normals(seed, 7, step, 0);
  const auto b = esi::noise::normals(seed, 7, step, 1);
  const auto c = esi::noise::normals(seed, 7, step, 2);
  EXPECT_EQ(a.first, -0x1.019f77efaedfbp-1);
  EXPECT_EQ(a.second, 0x1.0bd4a079f5f8ep-1);
  EXPECT_EQ(b.first, 0x1.8765e848dd4e1p+0);
  EXPECT_EQ(b.second, 0x1.29a0540d215fcp+0);
  EXPECT_EQ(c.first, 0x1.a426ed4d86988p+0);
  EXPECT_EQ(c.second, -0x1.b1a771aeaa3bfp-3);
  EXPECT_EQ(esi::noise::uniform01(seed, 7, esi::noise::kSetupStep, 3), 0x1.c1fd1b255c90ap-1);
}

// The normals are Box-Muller of the raw Philox words, written out here independently:
// r = sqrt(-2 log u), u = (x1 + 1/2) 2^-64 from the second 64-bit half; angle = pi v with
// v = (signed x0 + 1/2) 2^-63 from the first half; (r sin, r cos).
TEST(Noise, NormalsAreBoxMullerOfTheRawPhiloxWords) {
  for (std::uint32_t slot = 0; slot < 50; ++slot) {
    const auto w = philox4x32_10(esi::noise::counter_of(3, 11, slot), esi::noise::key_of(99));
    const std::uint64_t x0 = w[0] | (std::uint64_t{w[1]} << 32), x1 = w[2] | (std::uint64_t{w[3]} << 32);
    const double u = std::ldexp(static_cast<double>(x1), -64) + std::ldexp(1.0, -65);
    const double v = std::ldexp(static_cast<double>(static_cast<std::int64_t>(x0)), -63) + std::ldexp(1.0, -64);
    const double r = std::sqrt(-2 * std::log(u));
    const auto z = esi::noise::normals(99, 3, 11, slot);
    EXPECT_NEAR(z.first, r * std::sin(M_PI * v), 1e-14) << slot;
    EXPECT_NEAR(z.second, r * std::cos(M_PI * v), 1e-14) << slot;
  }
}

TEST(Noise, EveryKeyCoordinateMattersAndTheSameKeyRepeats) {
  const auto base = esi::noise::normals(1, 2, 3, 4);
  std::set<double> seen{base.first};
  seen.insert(esi::noise::normals(9, 2, 3, 4).first);
  seen.insert(esi::noise::normals(1, 9, 3, 4).first);
  seen.insert(esi::noise::normals(1, 2, 9, 4).first);
  seen.insert(esi::noise::normals(1, 2, 3, 9).first);
  seen.insert(esi::noise::normals(1ull << 40, 2, 3, 4).first);  // the seed's high word
  seen.insert(esi::noise::normals(1, 2, 3ull << 33, 4).first);  // the step's high word
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(esi::noise::normals(1, 2, 3, 4).first, base.first);
  EXPECT_EQ(esi::noise::normals(1, 2, 3, 4).second, base.second);
}

// 10^6 normals (both of each pair): mean 0 and variance 1 within 5 standard errors, and the
// two normals of a pair uncorrelated within 5 standard errors.
TEST(Noise, NormalsHaveUnitMomentsAndPairsAreUncorrelated) {
  const int n = 500000;
  double sum = 0, sum2 = 0, cross = 0;
  for (int i = 0; i < n; ++i) {
    const auto z = esi::noise::normals(42, static_cast<std::uint32_t>(i % 1000), i / 1000, 5);
    sum += z.first + z.second;
    sum2 += z.first * z.first + z.second * z.second;
    cross += z.first * z.second;
  }
  const double m = sum / (2.0 * n), var = sum2 / (2.0 * n) - m * m;
  EXPECT_LT(std::abs(m), 5 / std::sqrt(2.0 * n));
  EXPECT_LT(std::abs(var - 1), 5 * std::sqrt(2.0 / (2.0 * n)));
  EXPECT_LT(std::abs(cross / n), 5 / std::sqrt(1.0 * n));
}

}  // namespace
