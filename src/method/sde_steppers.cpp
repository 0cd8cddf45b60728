// Euler-Maruyama, Milstein (commutative noise) and SRA1 (additive noise) over a block of
// lanes; see sde.hpp for the contract.
//
// SRA1 is Rößler's (SIAM J. Numer. Anal. 48 (2010) 922-952) as StochasticDiffEq.jl writes it
// (src/tableaus.jl `constructSRA1`: alpha = [1/3, 2/3], A0 = [0 0; 3/4 0], B0 = [0 0; 3/2 0],
// c0 = [0, 3/4], c1 = [1, 0], beta1 = [1, 0], beta2 = [-1, 1]; src/perform_step/sra.jl
// `SRA1ConstantCache`): with chi = (dW + dZ / sqrt 3) / 2 = I_(1,0) / h,
//   k1 = h f(t, u),  k2 = h f(t + 3h/4, u + 3/4 k1 + 3/2 chi g(t + h)),
//   u' = u + k1/3 + 2/3 k2 + chi (g(t) - g(t + h)) + dW g(t + h).
#include "esi/method/sde.hpp"

#include <cmath>

#include "esi/core/error.hpp"
#include "esi/core/noise.hpp"

namespace esi::method {
namespace {

constexpr SdeMethodInfo kInfo[] = {
    {"EulerMaruyama", 0.5, 1.0, false, false, false},
    {"Milstein", 1.0, 1.0, true, false, false},
    {"SRA1", 1.5, 2.0, false, true, true},
};

}  // namespace

const SdeMethodInfo& sde_method_info(SdeMethod m) { return kInfo[static_cast<int>(m)]; }

std::optional<SdeMethod> sde_method_from_name(std::string_view name) {
  if (name == "EulerMaruyama" || name == "EM") return SdeMethod::EulerMaruyama;
  if (name == "Milstein") return SdeMethod::Milstein;
  if (name == "SRA1") return SdeMethod::SRA1;
  return std::nullopt;
}

SdeStepper::SdeStepper(const SdeProblem& problem, SdeMethod method, std::size_t lanes)
    : problem_(problem), method_(method), lanes_(lanes) {
  if (method == SdeMethod::Milstein && problem.milstein == nullptr && problem.sources > 0)
    throw Error("invalid_sde_method", "", "", "Milstein needs the derivative terms of the diffusion");
  const std::size_t n = problem.states * lanes, nm = problem.states * problem.sources * lanes;
  f1_.resize(n);
  g1_.resize(nm);
  if (method == SdeMethod::Milstein) extra_.resize(nm);
  if (method == SdeMethod::SRA1) {
    f2_.resize(n);
    g2_.resize(nm);
    stage_.resize(n);
  }
}

void SdeStepper::step(double t, double h, double* u, const double* dW, const double* dZ) {
  const std::size_t n = problem_.states, m = problem_.sources, L = lanes_;
  void* ctx = problem_.context;
  auto g_at = [&](const std::vector<double>& g, std::size_t i, std::size_t k, std::size_t l) {
    return g[(i * m + k) * L + l];
  };
  switch (method_) {
    case SdeMethod::EulerMaruyama:
    case SdeMethod::Milstein: {
      problem_.drift(ctx, t, L, u, f1_.data());
      if (m > 0) problem_.diffusion(ctx, t, L, u, g1_.data());
      if (method_ == SdeMethod::Milstein && m > 0) problem_.milstein(ctx, t, L, u, extra_.data());
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t l = 0; l < L; ++l) {
          double du = f1_[i * L + l] * h;
          for (std::size_t k = 0; k < m; ++k) {
            const double w = dW[k * L + l];
            du += g_at(g1_, i, k, l) * w;
            if (method_ == SdeMethod::Milstein) du += 0.5 * g_at(extra_, i, k, l) * (w * w - h);
          }
          u[i * L + l] += du;
        }
      return;
    }
    case SdeMethod::SRA1: {
      // Additive noise: g depends on t only, so it is evaluated at u (any state would do).
      problem_.drift(ctx, t, L, u, f1_.data());
      if (m > 0) {
        problem_.diffusion(ctx, t, L, u, g1_.data());
        problem_.diffusion(ctx, t + h, L, u, g2_.data());
      }
      const double inv_sqrt3 = 1.0 / std::sqrt(3.0);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t l = 0; l < L; ++l) {
          double s = u[i * L + l] + 0.75 * h * f1_[i * L + l];
          for (std::size_t k = 0; k < m; ++k) {
            const double chi = 0.5 * (dW[k * L + l] + dZ[k * L + l] * inv_sqrt3);
            s += 1.5 * chi * g_at(g2_, i, k, l);
          }
          stage_[i * L + l] = s;
        }
      problem_.drift(ctx, t + 0.75 * h, L, stage_.data(), f2_.data());
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t l = 0; l < L; ++l) {
          double du = h * (f1_[i * L + l] / 3 + 2 * f2_[i * L + l] / 3);
          for (std::size_t k = 0; k < m; ++k) {
            const double chi = 0.5 * (dW[k * L + l] + dZ[k * L + l] * inv_sqrt3);
            du += chi * (g_at(g1_, i, k, l) - g_at(g2_, i, k, l)) + dW[k * L + l] * g_at(g2_, i, k, l);
          }
          u[i * L + l] += du;
        }
      return;
    }
  }
}

void wiener_increments(std::uint64_t seed, std::span<const std::uint32_t> members, std::uint64_t step,
                       double h, std::size_t sources, double* dW, double* dZ) {
  const std::size_t L = members.size();
  const double root_h = std::sqrt(h);
  for (std::size_t k = 0; k < sources; ++k)
    for (std::size_t l = 0; l < L; ++l) {
      const noise::Normals z = noise::normals(seed, members[l], step, static_cast<std::uint32_t>(k));
      dW[k * L + l] = root_h * z.first;
      if (dZ != nullptr) dZ[k * L + l] = root_h * z.second;
    }
}

}  // namespace esi::method
