// Observed order of every method at fixed steps on a smooth nonlinear non-autonomous problem
// with a known solution: the least-squares slope of log(error) against log(dt) over four
// halvings (dt = 1/40 ... 1/320, where every method is asymptotic and above round-off) must be
// within 0.2 of MethodInfo::order. The error is the largest over all components and all step
// ends, so a sign change of the global error at t1 cannot fake a higher order.
#include <gtest/gtest.h>

#include <iostream>

#include <cmath>
#include <string>

#include "method/method_problems.hpp"

namespace esi::method {
namespace {

using testing::run_to;

using Exact = std::vector<double> (*)(double);

std::vector<double> split_exact(double t) { return {std::cos(t)}; }

double trajectory_error(MethodId id, const OdeProblem& problem, int steps, double t1,
                        Exact exact) {
  IntegratorOptions o;
  o.method = id;
  o.adaptive = false;
  o.dt_initial = t1 / steps;
  o.rtol = o.atol = 1e-13;  // only the Newton tolerance of implicit methods
  Integrator integrator(problem, o, 0.0, exact(0.0));
  double err = 0;
  while (integrator.t() < t1) {
    const ReturnCode rc = integrator.step(t1);
    EXPECT_EQ(rc, ReturnCode::Success) << integrator.message();
    if (rc != ReturnCode::Success) return 1.0;
    const std::vector<double> reference = exact(integrator.t());
    for (std::size_t i = 0; i < reference.size(); ++i)
      err = std::max(err, std::abs(integrator.u()[i] - reference[i]));
  }
  EXPECT_EQ(integrator.stats().accepted, steps);
  return err;
}

double fitted_order(const std::vector<double>& dts, const std::vector<double>& errs) {
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < dts.size(); ++i) mx += std::log(dts[i]), my += std::log(errs[i]);
  mx /= double(dts.size()), my /= double(dts.size());
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < dts.size(); ++i) {
    const double dx = std::log(dts[i]) - mx;
    sxy += dx * (std::log(errs[i]) - my), sxx += dx * dx;
  }
  return sxy / sxx;
}

class Convergence : public ::testing::TestWithParam<MethodId> {};

TEST_P(Convergence, ObservedOrderMatchesNominal) {
  const MethodId id = GetParam();
  const MethodInfo& info = method_info(id);
  if (id == MethodId::CVODE_BDF) GTEST_SKIP() << "CVODE_BDF has no fixed-step mode (test_cvode.cpp)";
  const bool imex_euler = id == MethodId::IMEXEuler;
  // The additive Runge-Kutta pairs on a nonlinear split problem whose explicit part reads the
  // state (on SplitCos it is a function of t alone and would not test the coupling).
  const bool ark = id == MethodId::KenCarp3 || id == MethodId::KenCarp4;
  const OdeProblem problem = imex_euler ? testing::SplitCos::problem()
                             : ark      ? testing::SplitNonlinear::problem()
                                        : testing::Smooth3::problem();
  const Exact exact = imex_euler ? split_exact
                      : ark      ? testing::SplitNonlinear::exact
                                 : testing::Smooth3::exact;
  std::vector<double> dts, errs;
  for (int n = 40; n <= 320; n *= 2) {
    dts.push_back(1.0 / n);
    errs.push_back(trajectory_error(id, problem, n, 1.0, exact));
  }
  const double order = fitted_order(dts, errs);
  std::cout << "  [order] " << info.name << " nominal " << info.order << " observed " << order << "\n";
  EXPECT_NEAR(order, info.order, 0.2)
      << info.name << " errors " << errs[0] << " " << errs[1] << " " << errs[2] << " " << errs[3];
}

std::string method_name(const ::testing::TestParamInfo<MethodId>& p) {
  return std::string(method_info(p.param).name);
}

INSTANTIATE_TEST_SUITE_P(AllMethods, Convergence, ::testing::ValuesIn(all_methods()),
                         method_name);

// The finite-difference Jacobian path keeps the order of a W-method and of SDIRK.
TEST(Convergence, DifferenceJacobianKeepsOrder) {
  for (MethodId id : {MethodId::ROS34PW2, MethodId::Kvaerno3, MethodId::Rosenbrock23}) {
    const OdeProblem problem = testing::Smooth3::problem(false);
    std::vector<double> dts, errs;
    for (int n = 40; n <= 320; n *= 2) {
      dts.push_back(1.0 / n);
      errs.push_back(trajectory_error(id, problem, n, 1.0, testing::Smooth3::exact));
    }
    EXPECT_NEAR(fitted_order(dts, errs), method_info(id).order, 0.25) << method_info(id).name;
  }
}

}  // namespace
}  // namespace esi::method
