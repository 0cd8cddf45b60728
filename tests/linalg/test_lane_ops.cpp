// Lane-SoA stage operations (lane_ops.hpp): the fused step end against the separate
// combination and norm calls it replaces (bit for bit), the masked lane copy, and the norm
// against a scalar evaluation of its formula, and the stage right-hand side without f_t.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "esi/linalg/lane_ops.hpp"
#include "esi/linalg/sparse_lu.hpp"

namespace {

using namespace esi::linalg;

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

struct StepData {
  std::size_t n = 7;
  int stages = 4;
  std::vector<double> u0, k, atol;
};

StepData random_step(int lanes, unsigned seed) {
  StepData d;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  d.u0.resize(d.n * lanes);
  d.k.resize(d.n * lanes * d.stages);
  for (auto& x : d.u0) x = u(rng);
  for (auto& x : d.k) x = 1e-3 * u(rng);
  for (std::size_t i = 0; i < d.n; ++i) d.atol.push_back(1e-6 * double(i + 1));
  return d;
}

TEST(LaneOps, StepEndGivesTheBitsOfCombinationAndNorms) {
  const double b[4] = {0.5, 0.0, 0.25, 0.25}, btilde[4] = {0.1, -0.2, 0.0, 0.3};
  const double rtol = 1e-3;
  for (int lanes : kLuLaneWidths)
    for (bool fsal : {false, true}) {
      SCOPED_TRACE("lanes=" + std::to_string(lanes) + (fsal ? " fsal" : ""));
      StepData d = random_step(lanes, 11 + lanes);
      const std::size_t nl = d.n * lanes;
      if (lanes > 1)
        d.k[3 * lanes + 1] = std::numeric_limits<double>::infinity();  // lane 1: u1 inf
      std::vector<double> u1_sep(nl), err(nl), norm_sep(lanes);
      std::vector<std::uint8_t> bad_sep(lanes);
      std::vector<double> u1_fused(nl), norm_fused(lanes);
      std::vector<std::uint8_t> bad_fused(lanes, 7);
      if (fsal) {  // u1 given: some other values
        for (std::size_t x = 0; x < nl; ++x) u1_sep[x] = u1_fused[x] = d.u0[x] * 1.5;
      } else {
        lane_combination(d.n, lanes, d.u0.data(), d.k.data(), nl, b, d.stages, u1_sep.data());
      }
      lane_combination(d.n, lanes, nullptr, d.k.data(), nl, btilde, d.stages, err.data());
      lane_error_norms(d.n, lanes, err.data(), d.u0.data(), u1_sep.data(), d.atol.data(), rtol,
                       norm_sep.data(), bad_sep.data());
      lane_step_end(d.n, lanes, d.u0.data(), d.k.data(), nl, fsal ? nullptr : b, btilde, d.stages,
                    d.atol.data(), rtol, u1_fused.data(), norm_fused.data(), bad_fused.data());
      EXPECT_TRUE(same_bits(u1_fused, u1_sep));
      EXPECT_TRUE(same_bits(norm_fused, norm_sep));
      EXPECT_EQ(bad_fused, bad_sep);
      if (lanes > 1 && !fsal) {
        EXPECT_EQ(bad_fused[1], 1);
      }
      EXPECT_EQ(bad_fused[0], 0);
      // The norm itself, lane 0, from its formula.
      double sum = 0;
      for (std::size_t i = 0; i < d.n; ++i) {
        double e = 0;
        for (int j = 0; j < d.stages; ++j) e += btilde[j] * d.k[j * nl + i * lanes];
        const double w = e / (d.atol[i] + rtol * std::max(std::abs(d.u0[i * lanes]),
                                                          std::abs(u1_fused[i * lanes])));
        sum += w * w;
      }
      EXPECT_NEAR(norm_fused[0], std::sqrt(sum / double(d.n)), 1e-14 * norm_fused[0]);
    }
}

TEST(LaneOps, SelectCopiesOnlyTheChosenLanes) {
  for (int lanes : kLuLaneWidths) {
    const std::size_t n = 5, nl = n * lanes;
    std::vector<double> from(nl), to(nl), before;
    for (std::size_t x = 0; x < nl; ++x) from[x] = double(x) + 0.5, to[x] = -double(x);
    to[0] = -0.0;  // a negative zero is kept bit for bit where the lane is not chosen
    before = to;
    std::vector<std::uint8_t> take(lanes);
    for (int l = 0; l < lanes; ++l) take[l] = (l % 3 == 1) ? 1 : 0;
    lane_select(n, lanes, take.data(), from.data(), to.data());
    for (std::size_t i = 0; i < n; ++i)
      for (int l = 0; l < lanes; ++l) {
        const std::size_t x = i * lanes + l;
        const double want = take[l] ? from[x] : before[x];
        EXPECT_EQ(std::memcmp(&to[x], &want, sizeof(double)), 0) << "lanes " << lanes << " x " << x;
      }
  }
}

// An autonomous model passes no f_t: the bits must be those of f_t = +0, also where f, k or
// a stage weight is a signed zero (f + coupling is never -0, as coupling starts at +0).
TEST(LaneOps, StageRhsWithoutTimeDerivativeHasTheBitsOfAZeroOne) {
  const double c[3] = {0.7, 0.0, -1.3};
  for (int lanes : kLuLaneWidths)
    for (int count = 0; count <= 3; ++count) {
      SCOPED_TRACE("lanes=" + std::to_string(lanes) + " count=" + std::to_string(count));
      StepData d = random_step(lanes, 31 + lanes);
      const std::size_t nl = d.n * lanes;
      std::vector<double> f(d.u0), zero(nl, 0.0), coef(3 * lanes), scale(lanes);
      for (int l = 0; l < lanes; ++l) {
        for (int j = 0; j < 3; ++j) coef[j * lanes + l] = c[j] / (0.1 + l);
        scale[l] = l % 2 ? 0.25 : -0.25;  // h d_i of either sign
      }
      f[0] = f[1] = -0.0;  // state 0, lanes 0-1 (h d_i of both signs)
      for (int j = 0; j < 3; ++j) d.k[j * nl] = d.k[j * nl + 1] = -0.0;  // state 0, lanes 0-1
      std::vector<double> with_zero(nl), without(nl), with_one(nl, 0.0);
      lane_stage_rhs(d.n, lanes, f.data(), zero.data(), d.k.data(), nl, c, count, coef.data(),
                     scale.data(), with_zero.data());
      lane_stage_rhs(d.n, lanes, f.data(), nullptr, d.k.data(), nl, c, count, coef.data(),
                     scale.data(), without.data());
      EXPECT_TRUE(same_bits(with_zero, without));
      std::vector<double> one(nl, 1.0);  // a real f_t must still count
      lane_stage_rhs(d.n, lanes, f.data(), one.data(), d.k.data(), nl, c, count, coef.data(),
                     scale.data(), with_one.data());
      EXPECT_FALSE(same_bits(with_one, without));
    }
}

}  // namespace
