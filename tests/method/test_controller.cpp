// Unit tests of the step-size controller formulas (controller.hpp).
#include <gtest/gtest.h>

#include <cmath>

#include "method/controller.hpp"

namespace esi::method::detail {
namespace {

TEST(IController, FactorIsSafetyOverRootClampedToKppLimits) {
  IController c;
  const Proposal mid = c.propose(1.0, std::pow(0.9 / 2.0, 4), 4);  // fac = 2 exactly
  EXPECT_TRUE(mid.accept);
  EXPECT_NEAR(mid.h_next, 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(c.propose(1.0, 1e-30, 4).h_next, 6.0);  // clamped above
  EXPECT_DOUBLE_EQ(c.propose(1.0, 0.0, 4).h_next, 6.0);    // zero error
  const Proposal big = c.propose(1.0, 1e6, 4);             // clamped below
  EXPECT_FALSE(big.accept);
  EXPECT_DOUBLE_EQ(big.h_next, 0.2);
}

// KPP's RejectLastH / RejectMoreH flags: the factor 0.1 replaces the formula once the
// previous two attempts were rejected as well.
TEST(IController, RepeatedRejectionUsesFactorTenthAndNoGrowthAfterRejection) {
  IController c;
  EXPECT_DOUBLE_EQ(c.propose(1.0, 2.0, 3).h_next, 0.9 / std::cbrt(2.0));  // first rejection
  EXPECT_DOUBLE_EQ(c.propose(1.0, 2.0, 3).h_next, 0.9 / std::cbrt(2.0));  // second
  const Proposal third = c.propose(1.0, 2.0, 3);
  EXPECT_FALSE(third.accept);
  EXPECT_DOUBLE_EQ(third.h_next, 0.1);
  const Proposal after = c.propose(1.0, 1e-6, 3);
  EXPECT_TRUE(after.accept);
  EXPECT_DOUBLE_EQ(after.h_next, 1.0);  // may not grow right after a rejection
  EXPECT_DOUBLE_EQ(c.propose(1.0, 1e-6, 3).h_next, 6.0);
}

TEST(PiController, OrdinaryDiffEqFormula) {
  PiController c;
  const int k = 5;
  const double b1 = 0.7 / k, b2 = 0.4 / k;
  // First accepted step: errold = 1e-4 and qmax is the first-step limit (10000).
  const double err = 0.5;
  double q = std::pow(err, b1) / std::pow(1e-4, b2) / 0.9;
  q = std::clamp(q, 1e-4, 5.0);
  const Proposal first = c.propose(1.0, err, k);
  EXPECT_TRUE(first.accept);
  EXPECT_DOUBLE_EQ(first.h_next, 1.0 / q);
  // Second step uses errold = 0.5 and qmax = 10.
  const double err2 = 0.01;
  const double q2 = std::clamp(std::pow(err2, b1) / std::pow(err, b2) / 0.9, 0.1, 5.0);
  EXPECT_DOUBLE_EQ(c.propose(1.0, err2, k).h_next, 1.0 / q2);
  // Rejection: h / min(1/qmin, err^b1 / safety).
  const Proposal rejected = c.propose(1.0, 10.0, k);
  EXPECT_FALSE(rejected.accept);
  EXPECT_DOUBLE_EQ(rejected.h_next, 1.0 / std::min(5.0, std::pow(10.0, b1) / 0.9));
  EXPECT_DOUBLE_EQ(c.propose(1.0, 1e12, k).h_next, 0.2);  // qmin
}

TEST(PiController, SteadyBandKeepsTheStep) {
  PiController c;
  c.propose(1.0, 0.5, 3);
  // Choose err so that q lands in [1, 1.2]: q = err^b1 / 0.5^b2 / 0.9 = 1.1.
  const double b1 = 0.7 / 3, b2 = 0.4 / 3;
  const double err = std::pow(1.1 * 0.9 * std::pow(0.5, b2), 1 / b1);
  EXPECT_DOUBLE_EQ(c.propose(2.0, err, 3).h_next, 2.0);
}

TEST(PidController, LimiterAndAcceptanceThreshold) {
  PidController c;
  const Proposal tiny = c.propose(1.0, 1e-300, 4);
  EXPECT_TRUE(tiny.accept);
  EXPECT_LT(tiny.h_next, 1 + std::atan(1e300));  // limiter bounds growth by 1 + pi/2
  PidController d;
  const Proposal large = d.propose(1.0, 100.0, 4);  // raw factor 100^(-0.7/4) ~ 0.447
  EXPECT_FALSE(large.accept);
  const double raw = std::pow(0.01, 0.7 / 4);
  EXPECT_DOUBLE_EQ(large.h_next, 1 + std::atan(raw - 1));
  EXPECT_GT(large.h_next, 0.21);
}

TEST(PidController, UsesHistoryOfAcceptedErrors) {
  PidController c;
  c.propose(1.0, 0.5, 2);  // accepted: history e2 = 2
  const double raw = std::pow(1 / 0.25, 0.7 / 2) * std::pow(2.0, -0.4 / 2);
  EXPECT_DOUBLE_EQ(c.propose(1.0, 0.25, 2).h_next, 1 + std::atan(raw - 1));
}

TEST(MakeController, DefaultIsPiAndDp5HasItsBetas) {
  auto pi = make_controller(ControllerKind::Default, MethodId::DP5);
  // DP5: beta1 = 0.17, beta2 = 0.04 on the first step with errold = 1e-4.
  const double q = std::pow(0.5, 0.17) / std::pow(1e-4, 0.04) / 0.9;
  EXPECT_NEAR(pi->propose(1.0, 0.5, 5).h_next, 1 / q, 1e-14);
  EXPECT_NE(dynamic_cast<IController*>(make_controller(ControllerKind::I, MethodId::Rodas4).get()),
            nullptr);
}

}  // namespace
}  // namespace esi::method::detail
