// The additive Runge-Kutta IMEX pairs (KenCarp3, KenCarp4) beyond their fixed-step order
// (test_convergence.cpp): adaptive accuracy on a split problem with a known solution, stability
// with a stiff implicit part at steps far above the explicit limit, the differenced Jacobian
// path, and the refusal of a problem without a split.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "method/method_problems.hpp"

namespace esi::method {
namespace {

using testing::run_to;
using testing::SplitNonlinear;

double max_error(const Integrator& integrator) {
  const std::vector<double> exact = SplitNonlinear::exact(integrator.t());
  double err = 0;
  for (std::size_t i = 0; i < exact.size(); ++i)
    err = std::max(err, std::abs(integrator.u()[i] - exact[i]));
  return err;
}

class Imex : public ::testing::TestWithParam<MethodId> {};

TEST_P(Imex, AdaptiveRunMeetsItsTolerance) {
  for (double rtol : {1e-5, 1e-8}) {
    const OdeProblem p = SplitNonlinear::problem();
    IntegratorOptions o;
    o.method = GetParam();
    o.rtol = rtol, o.atol = rtol * 1e-2;
    Integrator integrator(p, o, 0.0, SplitNonlinear::exact(0));
    ASSERT_EQ(run_to(integrator, 3.0), ReturnCode::Success) << integrator.message();
    EXPECT_LT(max_error(integrator), 50 * rtol) << "rtol " << rtol;
    EXPECT_LT(integrator.stats().rejected, integrator.stats().accepted);
  }
}

// Counts how often f_I is evaluated, through rhs_split or rhs_implicit (context: a Counted).
struct Counted {
  double lambda = 10.0;
  long implicit_evaluations = 0;
  static void split(void* c, double t, const double* u, double* fe, double* fi) {
    auto* self = static_cast<Counted*>(c);
    ++self->implicit_evaluations;
    SplitNonlinear::split(&self->lambda, t, u, fe, fi);
  }
  static void implicit(void* c, double t, const double* u, double* fi) {
    auto* self = static_cast<Counted*>(c);
    ++self->implicit_evaluations;
    SplitNonlinear::implicit_part(&self->lambda, t, u, fi);
  }
  static void explicit_only(void*, double t, const double* u, double* fe) {
    SplitNonlinear::explicit_part(t, u, fe);
  }
  static void jacobian(void* c, double t, const double* u, double* v) {
    SplitNonlinear::implicit_jac(&static_cast<Counted*>(c)->lambda, t, u, v);
  }
};

// A stage's explicit slope is taken at its converged value, where the Newton solve already
// gave the implicit slope: with rhs_explicit the stepper evaluates f_E alone there (one f_I
// fewer per stage after the first), with the same bits.
TEST_P(Imex, StagesEvaluateTheExplicitPartAloneWhenTheProblemCan) {
  std::vector<double> result[2];
  long evaluations[2] = {0, 0}, attempts[2] = {0, 0};
  for (int with_explicit = 0; with_explicit < 2; ++with_explicit) {
    Counted counted;
    OdeProblem p = SplitNonlinear::problem();
    p.context = &counted;
    p.rhs_split = Counted::split;
    p.rhs_implicit = Counted::implicit;
    p.implicit_jacobian = Counted::jacobian;
    if (with_explicit) p.rhs_explicit = Counted::explicit_only;
    IntegratorOptions o;
    o.method = GetParam();
    o.rtol = 1e-6, o.atol = 1e-8;
    Integrator integrator(p, o, 0.0, SplitNonlinear::exact(0));
    ASSERT_EQ(run_to(integrator, 2.0), ReturnCode::Success) << integrator.message();
    result[with_explicit].assign(integrator.u().begin(), integrator.u().end());
    evaluations[with_explicit] = counted.implicit_evaluations;
    attempts[with_explicit] = integrator.stats().accepted + integrator.stats().rejected;
  }
  EXPECT_EQ(result[0], result[1]);
  EXPECT_EQ(attempts[0], attempts[1]);
  const long stages_after_the_first = GetParam() == MethodId::KenCarp3 ? 3 : 5;
  EXPECT_EQ(evaluations[0] - evaluations[1], stages_after_the_first * attempts[0])
      << evaluations[0] << " against " << evaluations[1];
}

// lambda = 1e6: an explicit method would need h < ~2.8e-6 (about 700,000 steps over [0, 2]).
// The L-stable implicit half takes the stiff relaxation at steps set by the smooth solution.
TEST_P(Imex, StiffImplicitPartAtStepsFarAboveTheExplicitLimit) {
  double lambda = 1e6;
  const OdeProblem p = SplitNonlinear::problem(&lambda);
  IntegratorOptions o;
  o.method = GetParam();
  o.rtol = 1e-6, o.atol = 1e-8;
  Integrator adaptive(p, o, 0.0, SplitNonlinear::exact(0));
  ASSERT_EQ(run_to(adaptive, 2.0), ReturnCode::Success) << adaptive.message();
  EXPECT_LT(max_error(adaptive), 1e-5);
  EXPECT_LT(adaptive.stats().accepted, 400);

  // Fixed steps of 0.05 (lambda h = 5e4) from a state off the slow manifold: the fast
  // component is damped in one step, the error stays at the method's level.
  IntegratorOptions fixed = o;
  fixed.adaptive = false;
  fixed.dt_initial = 0.05;
  Integrator stiff(p, fixed, 0.0, std::vector<double>{1.5, -0.5});
  ASSERT_EQ(run_to(stiff, 2.0), ReturnCode::Success) << stiff.message();
  EXPECT_EQ(stiff.stats().accepted, 40);
  EXPECT_LT(max_error(stiff), 1e-3);
}

// Without implicit_jacobian / rhs_implicit the Jacobian of f_I is differenced through rhs_split:
// same accuracy.
TEST_P(Imex, DifferencedJacobianGivesTheSameAccuracy) {
  double lambda = 1e3;
  IntegratorOptions o;
  o.method = GetParam();
  o.rtol = 1e-7, o.atol = 1e-9;
  const OdeProblem analytic = SplitNonlinear::problem(&lambda, true);
  const OdeProblem differenced = SplitNonlinear::problem(&lambda, false);
  Integrator a(analytic, o, 0.0, SplitNonlinear::exact(0));
  Integrator d(differenced, o, 0.0, SplitNonlinear::exact(0));
  ASSERT_EQ(run_to(a, 1.0), ReturnCode::Success) << a.message();
  ASSERT_EQ(run_to(d, 1.0), ReturnCode::Success) << d.message();
  EXPECT_LT(max_error(a), 50 * o.rtol);
  EXPECT_LT(max_error(d), 50 * o.rtol);
  EXPECT_NEAR(double(d.stats().accepted), double(a.stats().accepted), 0.1 * a.stats().accepted);
}

TEST_P(Imex, ProblemWithoutSplitIsInvalidOptions) {
  const OdeProblem p = testing::VanDerPol::problem();
  IntegratorOptions o;
  o.method = GetParam();
  Integrator integrator(p, o, 0.0, std::vector<double>{2.0, 0.0});
  EXPECT_EQ(integrator.step(1.0), ReturnCode::InvalidOptions);
  EXPECT_NE(integrator.message().find("rhs_split"), std::string::npos) << integrator.message();
}

std::string method_name(const ::testing::TestParamInfo<MethodId>& p) {
  return std::string(method_info(p.param).name);
}

INSTANTIATE_TEST_SUITE_P(KenCarp, Imex, ::testing::Values(MethodId::KenCarp3, MethodId::KenCarp4),
                         method_name);

}  // namespace
}  // namespace esi::method
