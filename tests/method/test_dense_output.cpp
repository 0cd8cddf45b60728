// Dense output of the methods with their own interpolant (src/method/dense_tableaus.cpp), on
// Smooth3 (nonlinear, non-autonomous, exact solution):
//  - order: one fixed step of h, h/2, h/4 from the exact state at t0; the interpolation error
//    at theta = 0.25, 0.5, 0.75 is a local error, O(h^(q+1)) for an interpolant of order q, so
//    the fitted slope must be q + 1 within 0.3 (cubic Hermite gives 4). h = 0.025 is where
//    every method is asymptotic (at h = 0.2 Tsit5 still shows 3.7) and errors stay >= 1e-13;
//  - ends: exact (bitwise) at t_previous() and t(), and the polynomial itself meets both ends;
//  - accuracy: at rtol 1e-10 the mid-step error of an adaptive run stays below 10 rtol and,
//    for the 4th-order interpolants, well below cubic Hermite's on the same steps. Rosenbrock23
//    (2nd order) cannot reach 1e-9 even at its step ends, so there the bound is twice its
//    largest step-end error (the interpolant adds nothing beyond the method's own error);
//  - determinism: reruns interpolate bitwise equal.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "method/method_problems.hpp"

namespace esi::method {
namespace {

using testing::Smooth3;

struct DenseCase {
  MethodId id;
  int order;           // documented order of the interpolant (OrdinaryDiffEq)
  bool beats_hermite;  // 4th-order interpolant: clearly better than cubic Hermite mid-step
  bool tight;          // step ends reach rtol 1e-10, so mid-step must be < 10 rtol
};

const DenseCase kCases[] = {
    {MethodId::Tsit5, 4, true, true},   {MethodId::DP5, 4, true, true},
    {MethodId::Rodas5P, 4, true, true}, {MethodId::Rodas4, 3, false, true},
    {MethodId::Rosenbrock23, 2, false, false},
};

constexpr double kT0 = 0.3;  // t0 != 0 so the explicit time dependence matters
constexpr double kThetas[] = {0.25, 0.5, 0.75};

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::abs(a[i] - b[i]));
  return e;
}

// Largest interpolation error over kThetas after one step of size h from the exact state.
double one_step_error(MethodId id, double h) {
  const OdeProblem problem = Smooth3::problem();
  IntegratorOptions o;
  o.method = id;
  o.adaptive = false;
  o.dt_initial = h;
  Integrator integrator(problem, o, kT0, Smooth3::exact(kT0));
  EXPECT_EQ(integrator.step(kT0 + h), ReturnCode::Success) << integrator.message();
  std::vector<double> out(3);
  double err = 0;
  for (double theta : kThetas) {
    const double t0 = integrator.t_previous(), time = t0 + theta * (integrator.t() - t0);
    integrator.interpolate(time, out);
    err = std::max(err, max_abs_diff(out, Smooth3::exact(time)));
  }
  return err;
}

double fitted_slope(const std::vector<double>& hs, const std::vector<double>& errs) {
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < hs.size(); ++i) mx += std::log(hs[i]), my += std::log(errs[i]);
  mx /= double(hs.size()), my /= double(hs.size());
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < hs.size(); ++i) {
    const double dx = std::log(hs[i]) - mx;
    sxy += dx * (std::log(errs[i]) - my), sxx += dx * dx;
  }
  return sxy / sxx;
}

class DenseOutput : public ::testing::TestWithParam<DenseCase> {};

TEST_P(DenseOutput, InteriorErrorConvergesWithInterpolantOrder) {
  const DenseCase c = GetParam();
  const std::vector<double> hs = {0.025, 0.0125, 0.00625};
  std::vector<double> errs;
  for (double h : hs) errs.push_back(one_step_error(c.id, h));
  const double slope = fitted_slope(hs, errs);
  std::printf("[ dense    ] %-12s one-step errors %.3g %.3g %.3g, slope %.2f\n",
              std::string(method_info(c.id).name).c_str(), errs[0], errs[1], errs[2], slope);
  EXPECT_NEAR(slope, c.order + 1, 0.3)
      << method_info(c.id).name << " errors " << errs[0] << " " << errs[1] << " " << errs[2];
}

TEST_P(DenseOutput, ExactAtStepEnds) {
  const DenseCase c = GetParam();
  const OdeProblem problem = Smooth3::problem();
  IntegratorOptions o;
  o.method = c.id;
  o.rtol = 1e-8, o.atol = 1e-10;
  Integrator integrator(problem, o, kT0, Smooth3::exact(kT0));
  std::vector<double> u_prev(integrator.u().begin(), integrator.u().end()), out(3);
  for (int k = 0; k < 5; ++k) {
    ASSERT_EQ(integrator.step(kT0 + 1), ReturnCode::Success) << integrator.message();
    const std::vector<double> u(integrator.u().begin(), integrator.u().end());
    const double t0 = integrator.t_previous(), t1 = integrator.t();
    integrator.interpolate(t0, out);
    EXPECT_EQ(out, u_prev);
    integrator.interpolate(t1, out);
    EXPECT_EQ(out, u);
    // The polynomial itself (not only the special-cased ends) meets both ends.
    integrator.interpolate(std::nextafter(t0, t1), out);
    EXPECT_LT(max_abs_diff(out, u_prev), 1e-13);
    integrator.interpolate(std::nextafter(t1, t0), out);
    EXPECT_LT(max_abs_diff(out, u), 1e-13);
    u_prev = u;
  }
}

// Cubic Hermite at the middle of [t0, t1] from the step ends, for comparison.
std::vector<double> hermite_mid(const OdeProblem& p, double t0, const std::vector<double>& u0,
                                double t1, const std::vector<double>& u1) {
  std::vector<double> f0(3), f1(3), out(3);
  p.rhs(nullptr, t0, u0.data(), f0.data());
  p.rhs(nullptr, t1, u1.data(), f1.data());
  const double h = t1 - t0;
  for (int i = 0; i < 3; ++i) out[i] = 0.5 * (u0[i] + u1[i]) + h / 8 * (f0[i] - f1[i]);
  return out;
}

TEST_P(DenseOutput, MidStepErrorAtTightToleranceAndDeterminism) {
  const DenseCase c = GetParam();
  const OdeProblem problem = Smooth3::problem();
  IntegratorOptions o;
  o.method = c.id;
  o.rtol = 1e-10, o.atol = 1e-12;
  double end = 0;  // largest step-end error
  auto run = [&](double& own, double& hermite) {
    Integrator integrator(problem, o, 0.0, Smooth3::exact(0.0));
    std::vector<double> u_prev(integrator.u().begin(), integrator.u().end()), out(3);
    std::vector<double> trace;
    own = hermite = 0;
    while (integrator.t() < 2.0) {
      EXPECT_EQ(integrator.step(2.0), ReturnCode::Success) << integrator.message();
      const std::vector<double> u(integrator.u().begin(), integrator.u().end());
      const double t0 = integrator.t_previous(), t1 = integrator.t(), mid = 0.5 * (t0 + t1);
      integrator.interpolate(mid, out);
      const std::vector<double> exact = Smooth3::exact(mid);
      own = std::max(own, max_abs_diff(out, exact));
      hermite = std::max(hermite, max_abs_diff(hermite_mid(problem, t0, u_prev, t1, u), exact));
      end = std::max(end, max_abs_diff(u, Smooth3::exact(t1)));
      trace.insert(trace.end(), out.begin(), out.end());
      u_prev = u;
    }
    return trace;
  };
  double own = 0, hermite = 0, own2 = 0, hermite2 = 0;
  const std::vector<double> first = run(own, hermite);
  const std::vector<double> second = run(own2, hermite2);
  EXPECT_EQ(first, second);  // bitwise
  std::printf("[ dense    ] %-12s mid-step error %.3g (cubic Hermite %.3g, step ends %.3g)\n",
              std::string(method_info(c.id).name).c_str(), own, hermite, end);
  EXPECT_LT(own, c.tight ? 10 * o.rtol : 2 * end) << method_info(c.id).name;
  if (c.beats_hermite) {
    EXPECT_LT(own, 0.3 * hermite) << method_info(c.id).name;
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, DenseOutput, ::testing::ValuesIn(kCases),
                         [](const auto& info) {
                           return std::string(method_info(info.param.id).name);
                         });

}  // namespace
}  // namespace esi::method
