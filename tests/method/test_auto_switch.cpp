// MethodId::Auto switching between Tsit5 and Rodas5P along a run (integrator.cpp,
// switch_if_stiffness_changed): problems that turn stiff late finish in at most 1.5x the
// accepted steps of the right fixed choice, at its accuracy; non-stiff problems never switch
// and give Tsit5's bits; a resumed run switches as the unbroken one did.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "esi/method/integrator.hpp"
#include "method_problems.hpp"

namespace esi::method {
namespace {

using testing::run_to;

/// u' = -k(t) (u - sin t) + cos t, exact u = sin t; k rises smoothly from 1 to 1 + K around
/// t = 5 (a rate that switches on): non-stiff, then stiff with |lambda| = K.
struct StiffLate {
  static constexpr double kK = 1e5;
  static double k(double t) { return 1 + 0.5 * kK * (1 + std::tanh(4 * (t - 5))); }
  static void rhs(void*, double t, const double* u, double* du) {
    du[0] = -k(t) * (u[0] - std::sin(t)) + std::cos(t);
  }
  static void jac(void*, double t, const double*, double* v) { v[0] = -k(t); }
  static OdeProblem problem() { return testing::make_problem(rhs, {"u"}, jac, {0, 1}, {0}); }
};

/// A <-> B with an Arrhenius forward rate under a warming temperature T = 250 + 7 t K:
/// k_f = A exp(-E / T) goes from 1 /s at 250 K to about 1e5 /s at 320 K (a reaction that
/// becomes fast once a threshold temperature is passed); k_b = 1 /s. A + B is conserved.
struct WarmingEquilibrium {
  static double kf(double t) {
    const double e = 13160, temperature = 250 + 7 * t;
    return std::exp(e / 250 - e / temperature);
  }
  static void rhs(void*, double t, const double* u, double* du) {
    const double r = kf(t) * u[0] - u[1];
    du[0] = -r, du[1] = r;
  }
  static void jac(void*, double t, const double*, double* v) {
    const double f = kf(t);
    v[0] = -f, v[1] = 1, v[2] = f, v[3] = -1;
  }
  static OdeProblem problem() { return testing::make_problem(rhs, {"A", "B"}, jac, {0, 2, 4}, {0, 1, 0, 1}); }
};

using StiffVanDerPol = testing::VanDerPolOf<1000>;  // Hairer's VDPOL, eps = 1e-3

/// Non-stiff: Lotka-Volterra and a Kepler orbit of eccentricity 0.6.
struct LotkaVolterra {
  static void rhs(void*, double, const double* u, double* du) {
    du[0] = 1.5 * u[0] - u[0] * u[1];
    du[1] = -3 * u[1] + u[0] * u[1];
  }
  static OdeProblem problem() { return testing::make_problem(rhs, {"prey", "predator"}); }
};
struct Kepler {
  static void rhs(void*, double, const double* u, double* du) {
    const double r2 = u[0] * u[0] + u[1] * u[1], r3 = r2 * std::sqrt(r2);
    du[0] = u[2], du[1] = u[3], du[2] = -u[0] / r3, du[3] = -u[1] / r3;
  }
  static OdeProblem problem() { return testing::make_problem(rhs, {"x", "y", "vx", "vy"}); }
};

struct Outcome {
  ReturnCode code;
  long accepted;
  std::vector<double> u;
  std::vector<MethodSwitch> switches;
};

Outcome solve(const OdeProblem& p, MethodId method, double t0, double t1, std::vector<double> u0,
              double rtol = 1e-6, double atol = 1e-8) {
  IntegratorOptions o;
  o.method = method;
  o.rtol = rtol, o.atol = atol;
  o.auto_span = t1 - t0;
  o.max_steps = 200000;
  Integrator in(p, o, t0, u0);
  const ReturnCode rc = run_to(in, t1);
  return {rc, in.stats().accepted, {in.u().begin(), in.u().end()},
          {in.switches().begin(), in.switches().end()}};
}

struct StiffLateCase {
  std::string name;
  OdeProblem problem;
  double t0, t1;
  std::vector<double> u0;
};

TEST(AutoSwitch, ProblemsThatTurnStiffLateFinishInAtMostOneAndAHalfTimesTheStiffMethodsSteps) {
  const std::vector<StiffLateCase> cases = {
      {"StiffLate", StiffLate::problem(), 0, 10, {0.0}},
      {"WarmingEquilibrium", WarmingEquilibrium::problem(), 0, 10, {1.0, 0.0}},
      {"VanDerPol eps=1e-3", StiffVanDerPol::problem(), 0, 3, {2.0, -0.6654321}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Outcome stiff = solve(c.problem, MethodId::Rodas5P, c.t0, c.t1, c.u0);
    const Outcome reference = solve(c.problem, MethodId::Rodas5P, c.t0, c.t1, c.u0, 1e-11, 1e-13);
    const Outcome automatic = solve(c.problem, MethodId::Auto, c.t0, c.t1, c.u0);
    const Outcome nonstiff = solve(c.problem, MethodId::Tsit5, c.t0, c.t1, c.u0);
    std::printf("%-20s Rodas5P %ld steps, Tsit5 %ld (%s), auto %ld with %zu switches\n",
                c.name.c_str(), stiff.accepted, nonstiff.accepted,
                std::string(return_code_name(nonstiff.code)).c_str(), automatic.accepted,
                automatic.switches.size());
    ASSERT_EQ(stiff.code, ReturnCode::Success);
    ASSERT_EQ(automatic.code, ReturnCode::Success);
    EXPECT_GE(automatic.switches.size(), 1u);
    EXPECT_LE(double(automatic.accepted), 1.5 * double(stiff.accepted));
    // As accurate as the fixed stiff choice (within 10x of its error, or 1e-6 of the scale).
    for (std::size_t i = 0; i < c.u0.size(); ++i) {
      const double err_auto = std::abs(automatic.u[i] - reference.u[i]);
      const double err_stiff = std::abs(stiff.u[i] - reference.u[i]);
      EXPECT_LE(err_auto, std::max(10 * err_stiff, 1e-6 * std::max(1.0, std::abs(reference.u[i]))))
          << "state " << i;
    }
  }
}

TEST(AutoSwitch, NonStiffProblemsNeverSwitchAndGiveTsit5sBits) {
  const std::vector<StiffLateCase> cases = {
      {"Smooth3", testing::Smooth3::problem(), 0, 10, {1.0, 1.0, 2.0}},
      {"LotkaVolterra", LotkaVolterra::problem(), 0, 20, {1.0, 1.0}},
  };
  for (double rtol : {1e-3, 1e-6, 1e-9})
    for (const auto& c : cases) {
      SCOPED_TRACE(c.name + " rtol " + std::to_string(rtol));
      const Outcome automatic = solve(c.problem, MethodId::Auto, c.t0, c.t1, c.u0, rtol, rtol * 1e-2);
      const Outcome tsit5 = solve(c.problem, MethodId::Tsit5, c.t0, c.t1, c.u0, rtol, rtol * 1e-2);
      ASSERT_EQ(automatic.code, ReturnCode::Success);
      EXPECT_TRUE(automatic.switches.empty());
      EXPECT_EQ(automatic.accepted, tsit5.accepted);
      EXPECT_EQ(automatic.u, tsit5.u);
    }
}

// The first choice is a test at t0 (rho times the span above 500): a 40-unit Kepler orbit
// passes it (|lambda| ~ 31 at the pericenter start) and starts on Rodas5P; the first steps
// show its steps are accuracy-limited and the run moves to Tsit5, costing a few steps.
TEST(AutoSwitch, ANonStiffProblemTheFirstTestCalledStiffMovesToTsit5WithinItsFirstSteps) {
  for (double rtol : {1e-3, 1e-6, 1e-9}) {
    SCOPED_TRACE("rtol " + std::to_string(rtol));
    const std::vector<double> u0{0.4, 0.0, 0.0, 2.0};
    const Outcome automatic = solve(Kepler::problem(), MethodId::Auto, 0, 40, u0, rtol, rtol * 1e-2);
    const Outcome tsit5 = solve(Kepler::problem(), MethodId::Tsit5, 0, 40, u0, rtol, rtol * 1e-2);
    ASSERT_EQ(automatic.code, ReturnCode::Success);
    ASSERT_EQ(automatic.switches.size(), 1u);
    EXPECT_EQ(automatic.switches[0].from, MethodId::Rodas5P);
    EXPECT_EQ(automatic.switches[0].to, MethodId::Tsit5);
    EXPECT_LT(automatic.switches[0].t, 0.1);
    EXPECT_LE(automatic.accepted, tsit5.accepted + 5);
    for (std::size_t i = 0; i < u0.size(); ++i) EXPECT_NEAR(automatic.u[i], tsit5.u[i], 1e3 * rtol);
  }
}

// esi run's restart files carry the switch state: a fresh integrator resumed after a switch
// continues bit for bit as the unbroken run does after restart() at that point.
TEST(AutoSwitch, AResumedRunKeepsTheMethodItHadSwitchedTo) {
  const OdeProblem p = WarmingEquilibrium::problem();
  IntegratorOptions o;
  o.method = MethodId::Auto;
  o.auto_span = 10;
  Integrator unbroken(p, o, 0, std::vector<double>{1.0, 0.0});
  ASSERT_EQ(run_to(unbroken, 8), ReturnCode::Success);
  ASSERT_EQ(unbroken.method(), MethodId::Rodas5P);
  ASSERT_FALSE(unbroken.switches().empty());
  const Integrator::Carry carry = unbroken.carry();
  const std::vector<double> u8(unbroken.u().begin(), unbroken.u().end());
  unbroken.restart(8, u8);
  ASSERT_EQ(run_to(unbroken, 10), ReturnCode::Success);

  Integrator resumed(p, o, 0, std::vector<double>{1.0, 0.0});
  EXPECT_EQ(resumed.method(), MethodId::Tsit5);
  resumed.resume(8, u8, carry);
  EXPECT_EQ(resumed.method(), MethodId::Rodas5P);
  EXPECT_EQ(resumed.switch_count(), unbroken.switch_count());
  ASSERT_EQ(run_to(resumed, 10), ReturnCode::Success);
  EXPECT_EQ(std::vector<double>(resumed.u().begin(), resumed.u().end()),
            std::vector<double>(unbroken.u().begin(), unbroken.u().end()));
  EXPECT_EQ(resumed.stats().accepted, unbroken.stats().accepted);
}

}  // namespace
}  // namespace esi::method
