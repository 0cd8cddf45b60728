// Discrete sensitivities on the five stiff test-set problems, compiled from their documents
// with the kernel's symbolic df/dp and second derivatives: the dot-product identity for every
// supported method, POLLU's published gradient d y_NO2(60) / d y0 (anchors §6.2: two
// independent computations, four exact zeros), ROBER's conserved sum, and central differences
// of the frozen steps at jittered states.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "esi/method/integrator.hpp"
#include "esi/method/sensitivity.hpp"
#include "support/vectors.hpp"
#include "problems/compiled_problem.hpp"
#include "problems/problems.hpp"

namespace {

using esi::testing::dot;
using esi::testing::dot_magnitude;
using esi::testing::random_vector;

namespace fs = std::filesystem;
using esi::problems::CompiledProblem;
using namespace esi::method;

const std::map<std::string, esi::problems::Reference>& references() {
  static const auto refs = esi::problems::load_references(fs::path(ESI_SOURCE_DIR) / "tests/problems");
  return refs;
}

std::unique_ptr<CompiledProblem> compiled(const std::string& key) {
  const auto& ref = references().at(key);
  auto cp = CompiledProblem::load(ref.file, ref.states);
  cp->enable_derivatives();
  return cp;
}

/// Records up to `max_steps` accepted steps from the reference's y0 towards t1.
ForwardTape record(const OdeProblem& q, const IntegratorOptions& o, const CompiledProblem& cp,
                   const esi::problems::Reference& ref, double t1, std::size_t max_steps) {
  Integrator integ(q, o, ref.t0, cp.to_system(ref.y0));
  ForwardTape tape;
  integ.record(&tape);
  while (integ.t() < t1 && tape.steps.size() < max_steps)
    if (integ.step(t1) != ReturnCode::Success) break;
  return tape;
}

/// How closely the dot-product identity can hold in double precision. A step sums stage
/// terms up to h ||J|| times larger than its result (a species decaying at 1e10 /s in a step of
/// 1 s), and the tangent and the adjoint round those sums differently: measured, the identity
/// holds to within 1000 eps * max_n h_n ||J(u_n)||_inf on every problem and method here (HIRES,
/// OREGO, ROBER and every explicit run stay below 1e-13; POLLU and E5 with implicit methods,
/// where h ||J|| reaches 1e16, to 1e-8 .. 1e-10). The bound is that, capped at 1e-6 so a stiff
/// run still catches any error in a derivative, which shows at O(1).
double identity_bound(const OdeProblem& q, const ForwardTape& tape) {
  std::vector<double> values(q.jac_col.size());
  double stiffness = 1;
  for (std::size_t k = 0; k < tape.steps.size(); ++k) {
    q.jacobian(q.context, tape.steps[k].t, tape.checkpoint(k).data(), values.data());
    for (std::size_t i = 0; i < q.size; ++i) {
      double row = 0;
      for (int e = q.jac_row_ptr[i]; e < q.jac_row_ptr[i + 1]; ++e) row += std::abs(values[std::size_t(e)]);
      stiffness = std::max(stiffness, tape.steps[k].h * row);
    }
  }
  return std::max(1e-13, std::min(1e-6, 1000 * 2.2e-16 * stiffness));
}

/// Step k of `tape` alone.
ForwardTape one_step(const ForwardTape& tape, std::size_t k) {
  ForwardTape one;
  one.size = tape.size;
  one.method = tape.method;
  one.steps = {tape.steps[k]};
  one.steps[0].clip_begin = one.steps[0].clip_end = 0;
  const auto start = tape.checkpoint(k);
  one.checkpoints.assign(start.begin(), start.end());
  if (k + 1 < tape.steps.size()) {
    const auto end = tape.checkpoint(k + 1);
    one.final_state.assign(end.begin(), end.end());
  } else {
    one.final_state = tape.final_state;
  }
  return one;
}

TEST(ProblemSensitivities, DotProductIdentityForEveryMethodAndProblem) {
  for (const std::string key : {"pollu", "rober", "hires", "orego", "e5"}) {
    const auto& ref = references().at(key);
    auto cp = compiled(key);
    const OdeProblem q = cp->ode_problem();
    ASSERT_GT(q.parameter_count, 0u) << key;
    for (MethodId id : all_methods()) {
      if (!sensitivity_unsupported(id).empty() || !method_available(id)) continue;
      SCOPED_TRACE(key + " " + std::string(method_info(id).name));
      IntegratorOptions o;
      o.method = id;
      o.rtol = 1e-6, o.atol = 1e-10;
      // Explicit methods crawl on these stiff problems: a fixed step inside their stability
      // region, and the first steps only (every step is differentiated all the same).
      const bool explicit_method = !method_info(id).needs_jacobian;
      if (explicit_method) o.adaptive = false, o.dt_initial = key == "e5" ? 1e-16 : 1e-12;
      const ForwardTape tape = record(q, o, *cp, ref, ref.t_end, explicit_method ? 40 : 400);
      ASSERT_TRUE(tape.unsupported.empty()) << tape.unsupported;
      ASSERT_GE(tape.steps.size(), 10u);
      std::mt19937 rng(42);
      const auto du0 = random_vector(rng, q.size), dp = random_vector(rng, q.parameter_count),
                 lambda = random_vector(rng, q.size);
      std::vector<double> du = du0, l = lambda, mu(q.parameter_count, 0.0);
      const SweepResult t = tangent(q, o, tape, du, dp);
      ASSERT_TRUE(t.ok()) << t.message;
      const SweepResult a = adjoint(q, o, tape, l, mu);
      ASSERT_TRUE(a.ok()) << a.message;
      // Rosenbrock and explicit stages take J^T w from the reverse-accumulated program, the
      // tangent J v from J itself: the identity checks one against the other. (SDIRK stages
      // factor J at every stage, and use it.)
      if (is_rosenbrock(id) || explicit_method) {
        EXPECT_GT(a.vector_jacobian_products, 0);
      }
      const double lhs = dot(lambda, du), rhs = dot(l, du0) + dot(mu, dp);
      EXPECT_LE(std::abs(lhs - rhs), identity_bound(q, tape) * dot_magnitude(lambda, du)) << lhs << " vs " << rhs;
    }
  }
}

// Every step on its own, on the two problems whose steps are not dominated by cancellation
// (on POLLU one Rodas5P step of h ||J|| ~ 1e12 holds the identity only to ~1e-5).
TEST(ProblemSensitivities, DotProductIdentityPerStep) {
  for (const std::string key : {"hires", "orego"})
    for (MethodId id : {MethodId::Rodas5P, MethodId::Kvaerno3, MethodId::Tsit5}) {
      SCOPED_TRACE(key + " " + std::string(method_info(id).name));
      const auto& ref = references().at(key);
      auto cp = compiled(key);
      const OdeProblem q = cp->ode_problem();
      IntegratorOptions o;
      o.method = id;
      o.rtol = 1e-6, o.atol = 1e-10;
      const ForwardTape tape = record(q, o, *cp, ref, ref.t_end, 150);
      std::mt19937 rng(9);
      for (std::size_t k = 0; k < tape.steps.size(); ++k) {
        const ForwardTape one = one_step(tape, k);
        const auto du0 = random_vector(rng, q.size), dp = random_vector(rng, q.parameter_count),
                   lambda = random_vector(rng, q.size);
        std::vector<double> du = du0, l = lambda, mu(q.parameter_count, 0.0);
        ASSERT_TRUE(tangent(q, o, one, du, dp).ok());
        ASSERT_TRUE(adjoint(q, o, one, l, mu).ok());
        const double lhs = dot(lambda, du), rhs = dot(l, du0) + dot(mu, dp);
        EXPECT_LE(std::abs(lhs - rhs), identity_bound(q, one) * dot_magnitude(lambda, du)) << "step " << k;
      }
    }
}

// anchors.md §6.2: CVODE central differences at rtol 1e-13 and CVODES' adjoint agree to about
// six digits; CO, CO2, HNO3 and SO4 are products only, so their entries are exactly zero.
TEST(ProblemSensitivities, PolluGradientMatchesThePublishedOracle) {
  const double oracle[20] = {6.25526486e-01, 3.49257257e-02, 5.93678769e-01, 5.93678961e-01,
                             5.17696818e+00, 4.61408004e+00, 2.40680328e-01, 0,
                             5.05377367e-01, 2.78450082e+00, 3.37303307e+00, 0,
                             2.53588379e+00, 2.19640501e+00, 0, 5.95623562e-01,
                             1.04981505e-02, 0, 9.33859707e-01, 1.57794518e+00};
  const auto& ref = references().at("pollu");
  auto cp = compiled("pollu");
  const OdeProblem q = cp->ode_problem();
  for (MethodId id : {MethodId::Rodas5P, MethodId::Rodas4, MethodId::Kvaerno3}) {
    SCOPED_TRACE(method_info(id).name);
    IntegratorOptions o;
    o.method = id;
    o.rtol = 1e-10, o.atol = 1e-16;
    const ForwardTape tape = record(q, o, *cp, ref, ref.t_end, 1000000);
    ASSERT_EQ(tape.final_state.size(), q.size);
    std::vector<double> lambda(q.size, 0.0), mu(q.parameter_count, 0.0);
    lambda[std::size_t(cp->position(0))] = 1;  // y_NO2(60)
    ASSERT_TRUE(adjoint(q, o, tape, lambda, mu).ok());
    const std::vector<double> g = cp->from_system(lambda);
    for (int i = 0; i < 20; ++i) {
      if (oracle[i] == 0) EXPECT_EQ(g[i], 0.0) << ref.states[i];
      // The oracle's two computations agree to 4e-7 absolute (their small entries to fewer
      // digits than the large ones).
      else EXPECT_NEAR(g[i], oracle[i], std::max(3e-6 * std::abs(oracle[i]), 4e-7)) << ref.states[i];
    }
  }
}

// y1 + y2 + y3 is conserved by ROBER and by every Runge-Kutta or Rosenbrock step (a linear
// invariant): the adjoint of that sum is (1, 1, 1) whatever the trajectory.
TEST(ProblemSensitivities, RoberConservedSumHasUnitAdjoint) {
  const auto& ref = references().at("rober");
  auto cp = compiled("rober");
  const OdeProblem q = cp->ode_problem();
  for (MethodId id : {MethodId::Rodas5P, MethodId::Rosenbrock23, MethodId::TRBDF2}) {
    SCOPED_TRACE(method_info(id).name);
    IntegratorOptions o;
    o.method = id;
    o.rtol = 1e-6, o.atol = 1e-10;
    const ForwardTape tape = record(q, o, *cp, ref, 40, 100000);
    std::vector<double> lambda(3, 1.0), mu(q.parameter_count, 0.0);
    ASSERT_TRUE(adjoint(q, o, tape, lambda, mu).ok());
    for (double x : lambda) EXPECT_NEAR(x, 1.0, 1e-14);
    // d(sum)/dk is 0 too, up to the rounding of terms the size of d(y1)/dk.
    std::vector<double> l1 = {1.0, 0.0, 0.0}, m1(q.parameter_count, 0.0);
    ASSERT_TRUE(adjoint(q, o, tape, l1, m1).ok());
    for (std::size_t k = 0; k < mu.size(); ++k) EXPECT_NEAR(mu[k], 0.0, 1e-13 * std::abs(m1[k]) + 1e-300);
  }
}

// The tangent equals central differences of the frozen steps at a jittered start.
TEST(ProblemSensitivities, TangentMatchesCentralDifferencesAtJitteredStates) {
  for (const std::string key : {"pollu", "rober", "hires", "orego", "e5"}) {
    SCOPED_TRACE(key);
    const auto& ref = references().at(key);
    auto cp = compiled(key);
    const OdeProblem q = cp->ode_problem();
    std::mt19937 rng(5);
    std::vector<double> y0 = cp->to_system(ref.y0);
    for (double& x : y0) x *= 1 + 0.01 * random_vector(rng, 1)[0];
    IntegratorOptions o;
    o.method = MethodId::Rodas5P;
    o.rtol = 1e-7, o.atol = 1e-12;
    Integrator integ(q, o, ref.t0, y0);
    ForwardTape tape;
    integ.record(&tape);
    const double t1 = key == "rober" || key == "e5" ? 1e3 : ref.t_end;
    while (integ.t() < t1 && tape.steps.size() < 400)
      if (integ.step(t1) != ReturnCode::Success) break;
    std::vector<double> du(q.size);
    for (std::size_t i = 0; i < q.size; ++i) du[i] = random_vector(rng, 1)[0] * std::abs(y0[i]);
    std::vector<double> tan = du;
    ASSERT_TRUE(tangent(q, o, tape, tan, {}).ok());
    // Central differences at eps and eps/2, extrapolated (Richardson): error O(eps^4), so
    // OREGO's large second derivatives do not swamp the comparison.
    const auto central = [&](double eps) {
      std::vector<double> plus = y0, minus = y0;
      for (std::size_t i = 0; i < q.size; ++i) plus[i] += eps * du[i], minus[i] -= eps * du[i];
      const auto up = replay(q, o, tape, plus), down = replay(q, o, tape, minus);
      std::vector<double> fd(q.size);
      for (std::size_t i = 0; i < q.size; ++i) fd[i] = (up[i] - down[i]) / (2 * eps);
      return fd;
    };
    const auto coarse = central(1e-5), fine = central(5e-6);
    double scale = 0;
    for (std::size_t i = 0; i < q.size; ++i) scale = std::max(scale, std::abs(tan[i]));
    for (std::size_t i = 0; i < q.size; ++i) {
      const double fd = (4 * fine[i] - coarse[i]) / 3;
      EXPECT_NEAR(tan[i], fd, 1e-7 * scale) << q.names[i];
    }
  }
}

}  // namespace
