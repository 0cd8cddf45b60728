// choose_method: a cheap stiffness test at (t0, u0). The spectral radius rho of J = df/du is
// estimated by power iteration on forward-difference Jacobian-vector products
// Jv ~ (f(u0 + e v) - f(u0)) / e (no Jacobian is formed, so any size works); the problem is
// called stiff when rho * (t1 - t0) > 500, i.e. an explicit method would need hundreds of
// steps for stability alone. Stiff -> Rodas5P, otherwise Tsit5.
#include <cmath>
#include <limits>
#include <vector>

#include "esi/method/integrator.hpp"

namespace esi::method {
namespace {

constexpr int kPowerIterations = 30;
constexpr double kStiffnessThreshold = 500;

double rms(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x * x;
  return v.empty() ? 0.0 : std::sqrt(sum / double(v.size()));
}

}  // namespace

MethodId choose_method(const OdeProblem& problem, double t0, double t1,
                       std::span<const double> u0) {
  const std::size_t n = problem.size;
  if (n == 0 || !problem.rhs || u0.size() != n) return MethodId::Tsit5;
  std::vector<double> f0(n), v(n), shifted(n), fv(n);
  problem.rhs(problem.context, t0, u0.data(), f0.data());
  double u_scale = 1;
  for (double x : u0) u_scale = std::max(u_scale, std::abs(x));
  // A fixed, non-symmetric start vector keeps the estimate deterministic.
  for (std::size_t i = 0; i < n; ++i) v[i] = 1.0 + 0.5 * std::sin(double(i) + 1.0);
  const double eps = std::sqrt(std::numeric_limits<double>::epsilon()) * u_scale;
  double rho = 0;
  for (int it = 0; it < kPowerIterations; ++it) {
    const double norm = rms(v);
    if (!(norm > 0) || !std::isfinite(norm)) break;
    for (std::size_t i = 0; i < n; ++i) shifted[i] = u0[i] + eps * v[i] / norm;
    problem.rhs(problem.context, t0, shifted.data(), fv.data());
    for (std::size_t i = 0; i < n; ++i) v[i] = (fv[i] - f0[i]) / eps;  // J (v / |v|)
    const double ratio = rms(v);
    if (!std::isfinite(ratio)) break;
    rho = std::max(rho, ratio);
  }
  return rho * std::abs(t1 - t0) > kStiffnessThreshold ? MethodId::Rodas5P : MethodId::Tsit5;
}

}  // namespace esi::method
