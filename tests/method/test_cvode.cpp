// CVODE_BDF (SUNDIALS CVODE behind the Integrator): Robertson against our Rodas5P, a linear
// system with a known solution on both linear-solver paths (dense LU for n <= 64, sparse KLU
// above), dense output, restarts, statistics and refusals. Skipped in a build without SUNDIALS.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "method/method_problems.hpp"

namespace esi::method {
namespace {

using testing::run_to;

#define SKIP_WITHOUT_SUNDIALS()                                     \
  if (!method_available(MethodId::CVODE_BDF))                       \
  GTEST_SKIP() << "built without SUNDIALS: CVODE_BDF not offered"

/// Robertson with its analytic Jacobian (CSR, every entry: rows are dense).
struct RobertsonJac {
  static void jac(void*, double, const double* u, double* v) {
    v[0] = -0.04, v[1] = 1e4 * u[2], v[2] = 1e4 * u[1];
    v[3] = 0.04, v[4] = -1e4 * u[2] - 6e7 * u[1], v[5] = -1e4 * u[1];
    v[6] = 0, v[7] = 6e7 * u[1], v[8] = 0;
  }
  static OdeProblem problem() {
    OdeProblem p = testing::Robertson::problem();
    p.jac_row_ptr = {0, 3, 6, 9};
    p.jac_col = {0, 1, 2, 0, 1, 2, 0, 1, 2};
    p.jacobian = jac;
    p.autonomous = true;
    return p;
  }
};

/// u' = A u with A = k tridiag(1, -2, 1) (n states, Dirichlet ends): the eigenvectors
/// v_j[i] = sin(i j pi / (n+1)) have eigenvalues -2k (1 - cos(j pi / (n+1))), so from
/// u0 = v_1 + v_n the solution is exactly e^{l_1 t} v_1 + e^{l_n t} v_n (v_n decays fast: stiff).
struct Diffusion {
  int n;
  double k;
  double mode(int j, int i) const { return std::sin(double(i + 1) * j * std::numbers::pi / (n + 1)); }
  double rate(int j) const { return -2 * k * (1 - std::cos(j * std::numbers::pi / (n + 1))); }
  std::vector<double> exact(double t) const {
    std::vector<double> u(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
      u[std::size_t(i)] = std::exp(rate(1) * t) * mode(1, i) + std::exp(rate(n) * t) * mode(n, i);
    return u;
  }
  static void rhs(void* c, double, const double* u, double* du) {
    const auto& d = *static_cast<const Diffusion*>(c);
    for (int i = 0; i < d.n; ++i) {
      const double left = i > 0 ? u[i - 1] : 0, right = i + 1 < d.n ? u[i + 1] : 0;
      du[i] = d.k * (left - 2 * u[i] + right);
    }
  }
  static void jac(void* c, double, const double*, double* v) {
    const auto& d = *static_cast<const Diffusion*>(c);
    std::size_t k = 0;
    for (int i = 0; i < d.n; ++i) {
      if (i > 0) v[k++] = d.k;
      v[k++] = -2 * d.k;
      if (i + 1 < d.n) v[k++] = d.k;
    }
  }
  OdeProblem problem() const {
    OdeProblem p;
    p.size = std::size_t(n);
    p.context = const_cast<Diffusion*>(this);
    p.rhs = rhs;
    p.jacobian = jac;
    p.jac_row_ptr.push_back(0);
    for (int i = 0; i < n; ++i) {
      if (i > 0) p.jac_col.push_back(i - 1);
      p.jac_col.push_back(i);
      if (i + 1 < n) p.jac_col.push_back(i + 1);
      p.jac_row_ptr.push_back(int(p.jac_col.size()));
    }
    p.autonomous = true;
    return p;
  }
};

IntegratorOptions cvode(double rtol, double atol) {
  IntegratorOptions o;
  o.method = MethodId::CVODE_BDF;
  o.rtol = rtol, o.atol = atol;
  return o;
}

TEST(Cvode, IsNamedAndAvailableLikeEveryOtherMethod) {
  SKIP_WITHOUT_SUNDIALS();
  EXPECT_EQ(method_from_name("CVODE_BDF"), MethodId::CVODE_BDF);
  EXPECT_EQ(method_info(MethodId::CVODE_BDF).name, "CVODE_BDF");
  EXPECT_TRUE(method_info(MethodId::CVODE_BDF).needs_jacobian);
  bool listed = false;
  for (MethodId id : all_methods()) listed |= id == MethodId::CVODE_BDF;
  EXPECT_TRUE(listed);
  // Auto never picks it: a stiff problem still gets Rodas5P, a non-stiff one Tsit5.
  const Diffusion stiff{8, 50.0};
  EXPECT_EQ(choose_method(stiff.problem(), 0, 40, stiff.exact(0)), MethodId::Rodas5P);
  EXPECT_EQ(choose_method(stiff.problem(), 0, 1e-3, stiff.exact(0)), MethodId::Tsit5);
}

// Stepping onto each time (CVODE's stop time) and interpolating inside the last step
// (CVodeGetDky) both agree with Rodas5P at tight tolerance.
TEST(Cvode, RobertsonMatchesRodas5PAtSeveralTimes) {
  SKIP_WITHOUT_SUNDIALS();
  const OdeProblem p = RobertsonJac::problem();
  const std::vector<double> u0{1, 0, 0};
  const std::vector<double> times{0.4, 4, 40, 400, 4000};
  IntegratorOptions ref_opt;
  ref_opt.method = MethodId::Rodas5P;
  ref_opt.rtol = 1e-11, ref_opt.atol = 1e-16;
  Integrator ref(p, ref_opt, 0, u0);
  Integrator landed(p, cvode(1e-10, 1e-16), 0, u0);
  Integrator dense(p, cvode(1e-10, 1e-16), 0, u0);
  std::vector<double> at(3);
  for (double t : times) {
    ASSERT_EQ(run_to(ref, t), ReturnCode::Success) << ref.message();
    ASSERT_EQ(run_to(landed, t), ReturnCode::Success) << landed.message();
    ASSERT_EQ(landed.t(), t);  // the last step lands exactly on t
    while (dense.t() < t) ASSERT_EQ(dense.step(times.back()), ReturnCode::Success) << dense.message();
    ASSERT_LE(dense.t_previous(), t);
    dense.interpolate(t, at);
    for (std::size_t i = 0; i < 3; ++i) {
      const double r = ref.u()[i];
      EXPECT_NEAR(landed.u()[i], r, 1e-5 * std::abs(r)) << "t = " << t << " component " << i;
      EXPECT_NEAR(at[i], r, 1e-5 * std::abs(r)) << "interpolated, t = " << t << " component " << i;
    }
  }
  // Mass is conserved by the method (BDF is linear: it keeps linear invariants).
  EXPECT_NEAR(landed.u()[0] + landed.u()[1] + landed.u()[2], 1.0, 1e-12);
}

// The exact solution of a stiff linear system, on both linear-solver paths: the global error
// stays within a small multiple of the tolerance (local control, moderate amplification).
void expect_within_tolerance(int n) {
  const Diffusion d{n, 50.0};
  const OdeProblem p = d.problem();
  const double rtol = 1e-8, atol = 1e-10, t1 = 1.0;
  Integrator integrator(p, cvode(rtol, atol), 0, d.exact(0));
  double worst = 0;  // error / (atol + rtol |u|), over every step end
  IntegratorStats stats;
  while (integrator.t() < t1) {
    ASSERT_EQ(integrator.step(t1), ReturnCode::Success) << integrator.message();
    const std::vector<double> u = d.exact(integrator.t());
    for (int i = 0; i < n; ++i)
      worst = std::max(worst, std::abs(integrator.u()[std::size_t(i)] - u[std::size_t(i)]) /
                                  (atol + rtol * std::abs(u[std::size_t(i)])));
  }
  stats = integrator.stats();
  EXPECT_LT(worst, 20.0) << "n = " << n;
  EXPECT_GT(stats.jacobian_evaluations, 0) << "n = " << n;  // our Jacobian, not differences
  // A dense difference-quotient Jacobian would cost n rhs calls each time.
  EXPECT_LT(stats.rhs_evaluations, 3 * (stats.accepted + stats.rejected) + 10) << "n = " << n;
}

TEST(Cvode, LinearSystemErrorWithinToleranceDenseLU) {
  SKIP_WITHOUT_SUNDIALS();
  expect_within_tolerance(8);
}

TEST(Cvode, LinearSystemErrorWithinToleranceSparseKLU) {
  SKIP_WITHOUT_SUNDIALS();
  expect_within_tolerance(200);  // above kDenseLimit: the CSR pattern goes to KLU
}

TEST(Cvode, StatisticsAreCountedAndConsistent) {
  SKIP_WITHOUT_SUNDIALS();
  const OdeProblem p = RobertsonJac::problem();
  Integrator integrator(p, cvode(1e-6, 1e-10), 0, std::vector<double>{1, 0, 0});
  ASSERT_EQ(run_to(integrator, 40), ReturnCode::Success) << integrator.message();
  const IntegratorStats s = integrator.stats();
  EXPECT_GT(s.accepted, 10);
  EXPECT_GE(s.rhs_evaluations, s.accepted);      // at least one per Newton iteration
  EXPECT_GE(s.linear_solves, s.accepted);        // one Newton iteration per step at least
  EXPECT_GT(s.jacobian_evaluations, 0);
  EXPECT_LE(s.jacobian_evaluations, s.factorizations);  // a reused Jacobian is refactored
  EXPECT_LE(s.factorizations, s.accepted + s.rejected);
  EXPECT_LT(s.rejected, s.accepted);
  EXPECT_EQ(integrator.stage_count(), 0);
  // A restart rebuilds CVODE's memory; the counts keep adding up across it.
  std::vector<double> u(integrator.u().begin(), integrator.u().end());
  integrator.restart(integrator.t(), u);
  ASSERT_EQ(run_to(integrator, 80), ReturnCode::Success) << integrator.message();
  const IntegratorStats after = integrator.stats();
  EXPECT_GT(after.accepted, s.accepted);
  EXPECT_GT(after.rhs_evaluations, s.rhs_evaluations);
  EXPECT_GE(after.jacobian_evaluations, s.jacobian_evaluations);
}

TEST(Cvode, RestartAfterAJumpFollowsTheNewState) {
  SKIP_WITHOUT_SUNDIALS();
  // Smooth3 from its exact state; at t = 0.5 restart from the exact state again and keep going:
  // the restarted solve still matches the exact solution (the history was rebuilt).
  const OdeProblem p = testing::Smooth3::problem();
  Integrator integrator(p, cvode(1e-9, 1e-12), 0, testing::Smooth3::exact(0));
  ASSERT_EQ(run_to(integrator, 0.5), ReturnCode::Success);
  integrator.restart(0.5, testing::Smooth3::exact(0.5));
  EXPECT_EQ(integrator.t(), 0.5);
  EXPECT_EQ(integrator.t_previous(), 0.5);
  ASSERT_EQ(run_to(integrator, 2.0), ReturnCode::Success) << integrator.message();
  const std::vector<double> exact = testing::Smooth3::exact(2.0);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(integrator.u()[i], exact[i], 1e-7) << i;
}

TEST(Cvode, FixedStepsAreRefused) {
  SKIP_WITHOUT_SUNDIALS();
  const OdeProblem p = testing::Smooth3::problem();
  IntegratorOptions o = cvode(1e-6, 1e-8);
  o.adaptive = false;
  for (double dt : {0.1, 0.0}) {  // with or without a step size
    o.dt_initial = dt;
    Integrator integrator(p, o, 0, testing::Smooth3::exact(0));
    EXPECT_EQ(integrator.step(1), ReturnCode::InvalidOptions);
    EXPECT_NE(integrator.message().find("no fixed-step mode"), std::string::npos)
        << integrator.message();
  }
}

TEST(Cvode, BlowUpEndsInAReturnCodeNamingTheState) {
  SKIP_WITHOUT_SUNDIALS();
  // y' = y^2 from 1 blows up at t = 1; x stays put. CVODE fails; step() does not throw or hang.
  OdeProblem p;
  p.size = 2;
  p.rhs = [](void*, double, const double* u, double* du) { du[0] = 0, du[1] = u[1] * u[1]; };
  p.names = {"x", "y"};
  Integrator integrator(p, cvode(1e-6, 1e-8), 0, std::vector<double>{1, 1});
  const ReturnCode rc = run_to(integrator, 2);
  EXPECT_NE(rc, ReturnCode::Success);
  EXPECT_LT(integrator.t(), 1.0);
  EXPECT_NE(integrator.message().find("CVODE"), std::string::npos) << integrator.message();
  EXPECT_NE(integrator.message().find("largest weighted error in y"), std::string::npos)
      << integrator.message();
}

TEST(Cvode, MaxStepsIsHonoured) {
  SKIP_WITHOUT_SUNDIALS();
  const OdeProblem p = RobertsonJac::problem();
  IntegratorOptions o = cvode(1e-8, 1e-12);
  o.max_steps = 20;
  Integrator integrator(p, o, 0, std::vector<double>{1, 0, 0});
  EXPECT_EQ(run_to(integrator, 1e5), ReturnCode::MaxSteps);
  // Checked before each CVODE step; one step may retry a few times past the limit.
  const long attempts = integrator.stats().accepted + integrator.stats().rejected;
  EXPECT_GE(attempts, 20);
  EXPECT_LT(attempts, 30);
}

TEST(Cvode, NonnegativeStatesStayNonnegative) {
  SKIP_WITHOUT_SUNDIALS();
  // Robertson at a loose tolerance drives B slightly negative without constraints in some
  // codes; with the domain policy CVODE's constraints keep every accepted state >= 0.
  const OdeProblem p = RobertsonJac::problem();
  IntegratorOptions o = cvode(1e-3, 1e-6);
  o.nonnegative = DomainPolicy::Reject;
  Integrator integrator(p, o, 0, std::vector<double>{1, 0, 0});
  while (integrator.t() < 1e6) {
    ASSERT_EQ(integrator.step(1e6), ReturnCode::Success) << integrator.message();
    for (double v : integrator.u()) ASSERT_GE(v, 0.0) << "t = " << integrator.t();
  }
}

}  // namespace
}  // namespace esi::method
