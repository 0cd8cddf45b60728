// SDE steppers against problems with known solutions: strong and weak orders measured on
// geometric Brownian motion (exact solution from the same Wiener increments) and, for SRA1, the
// exact first two moments of the scheme on Ornstein-Uhlenbeck against the closed form.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/method/sde.hpp"

namespace {

using esi::method::SdeMethod;
using esi::method::SdeProblem;
using esi::method::SdeStepper;

/// dX = mu X dt + sigma X dW (one state, one source; diagonal noise).
struct Gbm {
  double mu = 1.0, sigma = 0.8;
  static void drift(void* c, double, std::size_t L, const double* u, double* out) {
    const auto& p = *static_cast<Gbm*>(c);
    for (std::size_t l = 0; l < L; ++l) out[l] = p.mu * u[l];
  }
  static void diffusion(void* c, double, std::size_t L, const double* u, double* out) {
    const auto& p = *static_cast<Gbm*>(c);
    for (std::size_t l = 0; l < L; ++l) out[l] = p.sigma * u[l];
  }
  static void milstein(void* c, double, std::size_t L, const double* u, double* out) {
    const auto& p = *static_cast<Gbm*>(c);  // g dg/du = sigma^2 u
    for (std::size_t l = 0; l < L; ++l) out[l] = p.sigma * p.sigma * u[l];
  }
  SdeProblem problem() {
    return {1, 1, this, &drift, &diffusion, &milstein};
  }
};

/// Log-log least-squares slope of err against h.
double slope(const std::vector<double>& h, const std::vector<double>& err) {
  const std::size_t n = h.size();
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = std::log(h[i]), y = std::log(err[i]);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

struct OrderResult {
  double strong, weak;
};

/// Paths of GBM over [0, 1] at h = 2^-level for level in [3, 8], each driven by sums of the same
/// finest (2^-10) increments; strong error E|X_h(1) - X(1)|, weak error |E[X_h(1) - X(1)]|
/// (the exact solution from the same path is a control variate: E X(1) = e^mu is known, so
/// this estimates E X_h(1) - E X(1) with a far smaller variance than E X_h(1) alone).
OrderResult measure_gbm_orders(SdeMethod method) {
  Gbm gbm;
  const SdeProblem problem = gbm.problem();
  const std::size_t paths = 4000, finest = 1024;
  std::vector<std::uint32_t> members(paths);
  std::iota(members.begin(), members.end(), 0u);
  std::vector<double> fine(finest * paths);  // [step][path]
  for (std::size_t s = 0; s < finest; ++s)
    esi::method::wiener_increments(2026, members, s, 1.0 / finest, 1, &fine[s * paths], nullptr);
  std::vector<double> w_end(paths, 0.0);
  for (std::size_t s = 0; s < finest; ++s)
    for (std::size_t l = 0; l < paths; ++l) w_end[l] += fine[s * paths + l];
  std::vector<double> hs, strong, weak;
  for (int level = 3; level <= 8; ++level) {
    const std::size_t steps = std::size_t{1} << level, group = finest / steps;
    const double h = 1.0 / steps;
    SdeStepper stepper(problem, method, paths);
    std::vector<double> u(paths, 1.0), dW(paths);
    for (std::size_t s = 0; s < steps; ++s) {
      std::fill(dW.begin(), dW.end(), 0.0);
      for (std::size_t f = s * group; f < (s + 1) * group; ++f)
        for (std::size_t l = 0; l < paths; ++l) dW[l] += fine[f * paths + l];
      stepper.step(s * h, h, u.data(), dW.data(), nullptr);
    }
    double abs_sum = 0, diff_sum = 0;
    for (std::size_t l = 0; l < paths; ++l) {
      const double exact = std::exp((gbm.mu - 0.5 * gbm.sigma * gbm.sigma) + gbm.sigma * w_end[l]);
      abs_sum += std::abs(u[l] - exact);
      diff_sum += u[l] - exact;
    }
    hs.push_back(h);
    strong.push_back(abs_sum / paths);
    weak.push_back(std::abs(diff_sum / paths));
  }
  return {slope(hs, strong), slope(hs, weak)};
}

TEST(SdeOrders, EulerMaruyamaOnGeometricBrownianMotion) {
  const OrderResult r = measure_gbm_orders(SdeMethod::EulerMaruyama);
  std::printf("Euler-Maruyama on GBM: strong order %.3f, weak order %.3f\n", r.strong, r.weak);
  EXPECT_NEAR(r.strong, 0.5, 0.2);
  EXPECT_NEAR(r.weak, 1.0, 0.2);
}

TEST(SdeOrders, MilsteinOnGeometricBrownianMotion) {
  const OrderResult r = measure_gbm_orders(SdeMethod::Milstein);
  std::printf("Milstein on GBM: strong order %.3f, weak order %.3f\n", r.strong, r.weak);
  EXPECT_NEAR(r.strong, 1.0, 0.2);
  EXPECT_NEAR(r.weak, 1.0, 0.2);
}

/// dX = -theta X dt + sigma(t) dW with sigma(t) = s0 (1 + t): additive noise.
struct Ou {
  double theta = 2.0, s0 = 0.7;
  static void drift(void* c, double, std::size_t L, const double* u, double* out) {
    const auto& p = *static_cast<Ou*>(c);
    for (std::size_t l = 0; l < L; ++l) out[l] = -p.theta * u[l];
  }
  static void diffusion(void* c, double t, std::size_t L, const double*, double* out) {
    const auto& p = *static_cast<Ou*>(c);
    for (std::size_t l = 0; l < L; ++l) out[l] = p.s0 * (1 + t);
  }
  SdeProblem problem() { return {1, 1, this, &drift, &diffusion, nullptr}; }
  /// E X(T)^2 from X(0) = 1: e^{-2 theta T} + int_0^T e^{-2 theta (T - s)} s0^2 (1 + s)^2 ds,
  /// by composite Simpson with 20000 panels (error far below the scheme errors measured).
  double second_moment(double T) const {
    const int n = 20000;
    const double h = T / n;
    double sum = 0;
    for (int i = 0; i <= n; ++i) {
      const double s = i * h, w = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2);
      sum += w * std::exp(-2 * theta * (T - s)) * s0 * s0 * (1 + s) * (1 + s);
    }
    return std::exp(-2 * theta * T) + sum * h / 3;
  }
};

/// The scheme is affine in (u, dW, dZ) on this linear additive problem: u' = a u + b dW + c dZ
/// per step, so E u_n and E u_n^2 follow exactly from the step map (dW, dZ independent N(0, h)):
/// m' = a m, q' = a^2 q + (b^2 + c^2) h. The coefficients are read off the stepper itself.
double weak_error_second_moment(SdeMethod method, int steps) {
  Ou ou;
  SdeStepper stepper(ou.problem(), method, 1);
  const double T = 1.0, h = T / steps;
  double q = 1.0;
  for (int s = 0; s < steps; ++s) {
    const double t = s * h, zero = 0.0, one = 1.0;
    double u = 1.0;
    stepper.step(t, h, &u, &zero, &zero);
    const double a = u;
    u = 0.0;
    stepper.step(t, h, &u, &one, &zero);
    const double b = u;
    u = 0.0;
    stepper.step(t, h, &u, &zero, &one);
    const double c = u;
    // Affine check at an arbitrary point, so the moment recursion describes this stepper.
    u = 0.3;
    const double w = 0.17, z = -0.41;
    stepper.step(t, h, &u, &w, &z);
    EXPECT_NEAR(u, a * 0.3 + b * w + c * z, 1e-14);
    q = a * a * q + (b * b + c * c) * h;
  }
  return std::abs(q - ou.second_moment(T));
}

TEST(SdeOrders, Sra1IsWeakOrderTwoOnAdditiveNoiseAndEulerMaruyamaOne) {
  std::vector<double> hs, sra, em;
  for (int steps : {16, 32, 64, 128, 256}) {
    hs.push_back(1.0 / steps);
    sra.push_back(weak_error_second_moment(SdeMethod::SRA1, steps));
    em.push_back(weak_error_second_moment(SdeMethod::EulerMaruyama, steps));
  }
  std::printf("OU second moment: SRA1 weak order %.3f, Euler-Maruyama %.3f\n", slope(hs, sra), slope(hs, em));
  EXPECT_NEAR(slope(hs, sra), 2.0, 0.2);
  EXPECT_NEAR(slope(hs, em), 1.0, 0.2);
}

TEST(SdeStepper, MilsteinWithoutDerivativeTermsIsRefused) {
  Gbm gbm;
  SdeProblem p = gbm.problem();
  p.milstein = nullptr;
  try {
    SdeStepper s(p, SdeMethod::Milstein, 4);
    FAIL() << "accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "invalid_sde_method");
  }
}

// A lane's path does not depend on the block it runs in: one path stepped alone equals the
// same path stepped as lane 3 of 5, bit for bit.
TEST(SdeStepper, LaneResultsDoNotDependOnTheBlock) {
  Gbm gbm;
  for (SdeMethod m : {SdeMethod::EulerMaruyama, SdeMethod::Milstein}) {
    SdeStepper one(gbm.problem(), m, 1), five(gbm.problem(), m, 5);
    double u1 = 1.0;
    std::vector<double> u5(5, 1.0);
    const std::vector<std::uint32_t> block{9, 4, 7, 11, 2};
    const std::uint32_t alone = 11;
    for (std::uint64_t s = 0; s < 50; ++s) {
      double dw1;
      std::vector<double> dw5(5);
      esi::method::wiener_increments(5, std::span(&alone, 1), s, 0.01, 1, &dw1, nullptr);
      esi::method::wiener_increments(5, block, s, 0.01, 1, dw5.data(), nullptr);
      one.step(s * 0.01, 0.01, &u1, &dw1, nullptr);
      five.step(s * 0.01, 0.01, u5.data(), dw5.data(), nullptr);
    }
    EXPECT_EQ(u1, u5[3]);
  }
}

}  // namespace
