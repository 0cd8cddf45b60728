// Behaviour of the Integrator: adaptive accuracy, failure codes, dense output, restart,
// domain policies, IMEX, the sparse path and determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "method/method_problems.hpp"

namespace esi::method {
namespace {

using testing::run_to;

std::vector<double> solve(const OdeProblem& p, IntegratorOptions o, std::vector<double> u0,
                          double t1, IntegratorStats* stats = nullptr) {
  Integrator integrator(p, o, 0.0, u0);
  EXPECT_EQ(run_to(integrator, t1), ReturnCode::Success) << integrator.message();
  if (stats) *stats = integrator.stats();
  return {integrator.u().begin(), integrator.u().end()};
}

TEST(Adaptive, EveryAdaptiveMethodMeetsItsToleranceOnVanDerPol) {
  const OdeProblem p = testing::VanDerPol::problem();
  IntegratorOptions ref_opt;
  ref_opt.method = MethodId::DP5;
  ref_opt.rtol = ref_opt.atol = 1e-12;
  const std::vector<double> ref = solve(p, ref_opt, {2.0, 0.0}, 2.0);
  for (MethodId id : all_methods()) {
    const MethodInfo& info = method_info(id);
    if (info.embedded_order == 0) continue;
    // The additive Runge-Kutta pairs need a split problem (test_imex.cpp).
    if (id == MethodId::KenCarp3 || id == MethodId::KenCarp4) continue;
    IntegratorOptions o;
    o.method = id;
    // Local error control: a first-order method's global error grows like sqrt(rtol).
    o.rtol = info.order == 1 ? 1e-3 : (info.order == 2 ? 1e-4 : 1e-6);
    o.atol = o.rtol * 1e-2;
    IntegratorStats stats;
    const std::vector<double> u = solve(p, o, {2.0, 0.0}, 2.0, &stats);
    for (std::size_t i = 0; i < 2; ++i)
      EXPECT_LT(std::abs(u[i] - ref[i]), 100 * (o.atol + o.rtol * std::abs(ref[i])))
          << info.name << " component " << i;
    EXPECT_LT(stats.accepted, 50000) << info.name;
    EXPECT_LT(stats.rejected, stats.accepted) << info.name;
  }
}

TEST(Adaptive, StiffMethodsOnRobertson) {
  const OdeProblem p = testing::Robertson::problem();
  IntegratorOptions ref_opt;
  ref_opt.method = MethodId::Rodas5P;
  ref_opt.rtol = 1e-10, ref_opt.atol = 1e-14;
  const std::vector<double> ref = solve(p, ref_opt, {1, 0, 0}, 40.0);
  for (MethodId id : {MethodId::Rodas5P, MethodId::Rodas4, MethodId::Rodas3, MethodId::ROS3P,
                      MethodId::ROS34PW2, MethodId::Rosenbrock23, MethodId::TRBDF2,
                      MethodId::Kvaerno3}) {
    IntegratorOptions o;
    o.method = id;
    o.rtol = 1e-6, o.atol = 1e-10;
    IntegratorStats stats;
    const std::vector<double> u = solve(p, o, {1, 0, 0}, 40.0, &stats);
    for (std::size_t i = 0; i < 3; ++i)
      EXPECT_LT(std::abs(u[i] - ref[i]), 100 * (o.atol + o.rtol * std::abs(ref[i])))
          << method_info(id).name << " component " << i;
    EXPECT_LT(stats.accepted, 2000) << method_info(id).name;
  }
}

// For an f without t the difference quotient of df/dt is exactly 0 ((4a - a) - 3a == 0 in
// floating point), so declaring the problem autonomous changes no bit of the solution and saves
// the two rhs calls per Jacobian.
TEST(Adaptive, AutonomousProblemsSkipTheTimeDerivative) {
  OdeProblem p = testing::Robertson::problem();
  for (MethodId id : {MethodId::Rodas5P, MethodId::Rodas4, MethodId::Rosenbrock23}) {
    IntegratorOptions o;
    o.method = id;
    o.rtol = 1e-8, o.atol = 1e-12;
    IntegratorStats with_dt, without_dt;
    p.autonomous = false;
    const std::vector<double> a = solve(p, o, {1, 0, 0}, 40.0, &with_dt);
    p.autonomous = true;
    const std::vector<double> b = solve(p, o, {1, 0, 0}, 40.0, &without_dt);
    EXPECT_EQ(a, b) << method_info(id).name;
    EXPECT_EQ(with_dt.accepted, without_dt.accepted);
    EXPECT_EQ(with_dt.rhs_evaluations - without_dt.rhs_evaluations, 2 * with_dt.jacobian_evaluations)
        << method_info(id).name;
  }
}

// Robertson with its analytic Jacobian, recording every point f is evaluated at.
struct RecordedRobertson {
  std::vector<std::vector<double>> points;  // t, u0, u1, u2 of each rhs call
  static void rhs(void* c, double t, const double* u, double* du) {
    static_cast<RecordedRobertson*>(c)->points.push_back({t, u[0], u[1], u[2]});
    testing::Robertson::rhs(nullptr, t, u, du);
  }
  static void jacobian(void*, double, const double* u, double* v) {
    const double row0[] = {-0.04, 1e4 * u[2], 1e4 * u[1]};
    const double row1[] = {0.04, -1e4 * u[2] - 6e7 * u[1], -1e4 * u[1]};
    const double row2[] = {0.0, 6e7 * u[1], 0.0};
    for (int j = 0; j < 3; ++j) v[j] = row0[j], v[3 + j] = row1[j], v[6 + j] = row2[j];
  }
};

TEST(Adaptive, RosenbrockStagesNeverEvaluateFTwiceAtOnePoint) {
  // Rodas3's second stage sits at u0, where f0 was just evaluated: a stage at the previous
  // stage's point reuses its f (tableau.hpp), so no call repeats the point of the call before.
  for (MethodId id : all_methods()) {
    if (!is_rosenbrock(id)) continue;
    RecordedRobertson rec;
    OdeProblem p = testing::Robertson::problem();
    p.context = &rec;
    p.rhs = RecordedRobertson::rhs;
    p.jacobian = RecordedRobertson::jacobian;
    p.jac_row_ptr = {0, 3, 6, 9};
    p.jac_col = {0, 1, 2, 0, 1, 2, 0, 1, 2};
    p.autonomous = true;
    IntegratorOptions o;
    o.method = id;
    o.rtol = 1e-6, o.atol = 1e-10;
    IntegratorStats stats;
    solve(p, o, {1, 0, 0}, 40.0, &stats);
    ASSERT_GT(rec.points.size(), 10u) << method_info(id).name;
    EXPECT_EQ(static_cast<long>(rec.points.size()), stats.rhs_evaluations) << method_info(id).name;
    for (std::size_t k = 1; k < rec.points.size(); ++k)
      ASSERT_NE(rec.points[k], rec.points[k - 1]) << method_info(id).name << " call " << k;
  }
}

// rhs that turns NaN in its second component after t = 0.5.
void nan_after_half(void*, double t, const double* u, double* du) {
  du[0] = -u[0];
  du[1] = t > 0.5 ? std::numeric_limits<double>::quiet_NaN() : -u[1];
}

TEST(Failure, NonFiniteEndsWithCodeAndNamesTheVariable) {
  OdeProblem p;
  p.size = 2;
  p.rhs = nan_after_half;
  p.names = {"ok", "bad"};
  for (MethodId id : {MethodId::Tsit5, MethodId::Rodas5P, MethodId::Kvaerno3}) {
    IntegratorOptions o;
    o.method = id;
    Integrator integrator(p, o, 0.0, std::vector<double>{1.0, 1.0});
    EXPECT_EQ(run_to(integrator, 2.0), ReturnCode::NonFinite) << method_info(id).name;
    EXPECT_NE(integrator.message().find("bad"), std::string::npos) << integrator.message();
    EXPECT_LE(integrator.t(), 0.5);
    EXPECT_TRUE(std::isfinite(integrator.u()[1]));
  }
}

TEST(Failure, DtMinAndMaxStepsEndWithTheirCodes) {
  double k = 1e4;
  const OdeProblem stiff = testing::Decay::problem(&k);
  IntegratorOptions o;
  o.method = MethodId::Tsit5;
  o.dt_min = 1e-2;  // Tsit5 needs dt ~ 3/k for stability
  Integrator a(stiff, o, 0.0, std::vector<double>{1.0});
  EXPECT_EQ(run_to(a, 1.0), ReturnCode::DtBelowMin);
  EXPECT_NE(a.message().find("c"), std::string::npos) << a.message();

  IntegratorOptions m;
  m.method = MethodId::Tsit5;
  m.max_steps = 5;
  const OdeProblem b_problem = testing::VanDerPol::problem();
  Integrator b(b_problem, m, 0.0, std::vector<double>{2.0, 0.0});
  EXPECT_EQ(run_to(b, 100.0), ReturnCode::MaxSteps);
  EXPECT_EQ(b.stats().accepted + b.stats().rejected, 5);
  EXPECT_FALSE(b.message().empty());
}

TEST(Failure, InvalidOptions) {
  IntegratorOptions fixed;
  fixed.method = MethodId::RK4;  // no dt_initial
  const OdeProblem a_problem = testing::Decay::problem();
  Integrator a(a_problem, fixed, 0.0, std::vector<double>{1.0});
  EXPECT_EQ(a.step(1.0), ReturnCode::InvalidOptions);
  IntegratorOptions imex;
  imex.method = MethodId::IMEXEuler;
  imex.dt_initial = 0.1;
  const OdeProblem b_problem = testing::Decay::problem();
  Integrator b(b_problem, imex, 0.0, std::vector<double>{1.0});
  EXPECT_EQ(b.step(1.0), ReturnCode::InvalidOptions);
  EXPECT_NE(b.message().find("rhs_split"), std::string::npos);
  IntegratorOptions ok;
  const OdeProblem c_problem = testing::Decay::problem();
  Integrator c(c_problem, ok, 1.0, std::vector<double>{1.0});
  EXPECT_EQ(c.step(0.5), ReturnCode::InvalidOptions);  // t_limit not after t()
}

TEST(Stepping, LandsExactlyOnTheLimitAndRespectsDtMax) {
  IntegratorOptions o;
  o.method = MethodId::Tsit5;
  o.dt_max = 0.03;
  const OdeProblem integrator_problem = testing::Decay::problem();
  Integrator integrator(integrator_problem, o, 0.0, std::vector<double>{1.0});
  double last = 0;
  while (integrator.t() < 0.1) {
    ASSERT_EQ(integrator.step(0.1), ReturnCode::Success);
    EXPECT_LE(integrator.t() - last, 0.03 * (1 + 1e-12));
    last = integrator.t();
  }
  EXPECT_EQ(integrator.t(), 0.1);
}

TEST(DenseOutput, HermiteMatchesTheExactSolution) {
  for (MethodId id : {MethodId::Tsit5, MethodId::Rodas5P, MethodId::Kvaerno3}) {
    IntegratorOptions o;
    o.method = id;
    o.rtol = 1e-10, o.atol = 1e-12;
    const OdeProblem integrator_problem = testing::Decay::problem();
    Integrator integrator(integrator_problem, o, 0.0, std::vector<double>{1.0});
    std::vector<double> out(1);
    double worst = 0;
    while (integrator.t() < 2.0) {
      ASSERT_EQ(integrator.step(2.0), ReturnCode::Success);
      const double a = integrator.t_previous(), b = integrator.t();
      integrator.interpolate(b, out);
      EXPECT_EQ(out[0], integrator.u()[0]);  // exact at the end
      for (double s : {0.25, 0.5, 0.75}) {
        integrator.interpolate(a + s * (b - a), out);
        worst = std::max(worst, std::abs(out[0] - std::exp(-(a + s * (b - a)))));
      }
    }
    EXPECT_LT(worst, 1e-7) << method_info(id).name;
  }
}

TEST(Restart, ContinuesFromTheNewState) {
  IntegratorOptions o;
  o.method = MethodId::Tsit5;
  o.rtol = 1e-9, o.atol = 1e-12;
  const OdeProblem integrator_problem = testing::Decay::problem();
  Integrator integrator(integrator_problem, o, 0.0, std::vector<double>{1.0});
  ASSERT_EQ(run_to(integrator, 1.0), ReturnCode::Success);
  const std::vector<double> jumped{2.0};
  integrator.restart(1.0, jumped);
  EXPECT_EQ(integrator.t(), 1.0);
  EXPECT_EQ(integrator.t_previous(), 1.0);
  ASSERT_EQ(run_to(integrator, 2.0), ReturnCode::Success);
  EXPECT_NEAR(integrator.u()[0], 2.0 * std::exp(-1.0), 1e-8);
}

TEST(Domain, RejectKeepsADecayNonnegative) {
  double k = 50;
  IntegratorOptions o;
  o.method = MethodId::Euler;
  o.dt_initial = 0.05;  // 1 - k dt = -1.5: a plain Euler step overshoots below zero
  o.nonnegative = DomainPolicy::Reject;
  const OdeProblem integrator_problem = testing::Decay::problem(&k);
  Integrator integrator(integrator_problem, o, 0.0, std::vector<double>{1.0});
  while (integrator.t() < 1.0) {
    ASSERT_EQ(integrator.step(1.0), ReturnCode::Success) << integrator.message();
    EXPECT_GE(integrator.u()[0], 0.0);
  }
  EXPECT_GT(integrator.stats().rejected, 0);

  o.nonnegative = DomainPolicy::Clip;
  const OdeProblem clipped_problem = testing::Decay::problem(&k);
  Integrator clipped(clipped_problem, o, 0.0, std::vector<double>{1.0});
  ASSERT_EQ(clipped.step(1.0), ReturnCode::Success);
  EXPECT_EQ(clipped.u()[0], 0.0);
}

TEST(Imex, EulerIsStableWhereExplicitEulerIsNot) {
  IntegratorOptions o;
  o.method = MethodId::IMEXEuler;
  o.dt_initial = 0.05;  // lambda dt = 2.5 > 2
  const std::vector<double> u = solve(testing::SplitCos::problem(), o, {1.0}, 2.0);
  EXPECT_NEAR(u[0], std::cos(2.0), 0.1);  // first order at dt = 0.05
  o.method = MethodId::Euler;
  const std::vector<double> e = solve(testing::SplitCos::problem(), o, {1.0}, 2.0);
  EXPECT_GT(std::abs(e[0] - std::cos(2.0)), 1.0);
}

// 1-D diffusion with n = 100 (> the dense limit) and an analytic tridiagonal CSR Jacobian.
struct Diffusion {
  static constexpr int kN = 100;
  static void rhs(void*, double t, const double* u, double* du) {
    for (int i = 0; i < kN; ++i) {
      const double left = i > 0 ? u[i - 1] : 0, right = i + 1 < kN ? u[i + 1] : 0;
      du[i] = 100.0 * (left - 2 * u[i] + right) + std::sin(t);
    }
  }
  static void jac(void*, double, const double*, double* v) {
    int k = 0;
    for (int i = 0; i < kN; ++i) {
      if (i > 0) v[k++] = 100.0;
      v[k++] = -200.0;
      if (i + 1 < kN) v[k++] = 100.0;
    }
  }
  static OdeProblem problem(bool analytic) {
    OdeProblem p;
    p.size = kN;
    p.rhs = rhs;
    if (analytic) {
      p.jac_row_ptr.push_back(0);
      for (int i = 0; i < kN; ++i) {
        if (i > 0) p.jac_col.push_back(i - 1);
        p.jac_col.push_back(i);
        if (i + 1 < kN) p.jac_col.push_back(i + 1);
        p.jac_row_ptr.push_back(int(p.jac_col.size()));
      }
      p.jacobian = jac;
    }
    return p;
  }
};

TEST(LinearAlgebra, SparseAnalyticMatchesDenseDifferences) {
  std::vector<double> u0(Diffusion::kN);
  for (int i = 0; i < Diffusion::kN; ++i) u0[std::size_t(i)] = std::sin(0.1 * i);
  IntegratorOptions o;
  o.method = MethodId::Rodas4;
  o.rtol = 1e-7, o.atol = 1e-9;
  const std::vector<double> sparse = solve(Diffusion::problem(true), o, u0, 0.5);
  const std::vector<double> dense = solve(Diffusion::problem(false), o, u0, 0.5);
  for (std::size_t i = 0; i < u0.size(); ++i) EXPECT_NEAR(sparse[i], dense[i], 1e-6);
}

TEST(Determinism, TwoRunsAreBitwiseEqual) {
  for (MethodId id : {MethodId::Rodas5P, MethodId::Tsit5, MethodId::TRBDF2}) {
    IntegratorOptions o;
    o.method = id;
    IntegratorStats s1, s2;
    const auto a = solve(testing::VanDerPol::problem(), o, {2.0, 0.0}, 3.0, &s1);
    const auto b = solve(testing::VanDerPol::problem(), o, {2.0, 0.0}, 3.0, &s2);
    EXPECT_EQ(a, b);
    EXPECT_EQ(s1.accepted, s2.accepted);
    EXPECT_EQ(s1.rhs_evaluations, s2.rhs_evaluations);
  }
}

TEST(Stages, LastAcceptedStagesAreKept) {
  IntegratorOptions o;
  o.method = MethodId::Tsit5;
  const OdeProblem integrator_problem = testing::Decay::problem();
  Integrator integrator(integrator_problem, o, 0.0, std::vector<double>{1.0});
  ASSERT_EQ(integrator.step(1.0), ReturnCode::Success);
  EXPECT_EQ(integrator.stage_count(), 7);
  EXPECT_EQ(integrator.stage(0)[0], 1.0);            // stage 1 is u0
  EXPECT_EQ(integrator.stage(6)[0], integrator.u()[0]);  // FSAL: stage 7 is u1
}

TEST(ChooseMethod, StiffnessPicksRodas5P) {
  double k = 1e4;
  EXPECT_EQ(choose_method(testing::Decay::problem(&k), 0, 1, std::vector<double>{1.0}),
            MethodId::Rodas5P);
  EXPECT_EQ(choose_method(testing::Decay::problem(), 0, 1, std::vector<double>{1.0}),
            MethodId::Tsit5);
  IntegratorOptions o;  // Auto
  const OdeProblem integrator_problem = testing::Decay::problem(&k);
  Integrator integrator(integrator_problem, o, 0.0, std::vector<double>{1.0});
  EXPECT_EQ(integrator.method(), MethodId::Rodas5P);
}

TEST(Catalogue, NamesRoundTrip) {
  for (MethodId id : all_methods()) EXPECT_EQ(method_from_name(method_info(id).name), id);
  EXPECT_FALSE(method_from_name("tsit5").has_value());
  EXPECT_EQ(method_info(MethodId::SSPRK104).ssp_coefficient, 6.0);
}

}  // namespace
}  // namespace esi::method
