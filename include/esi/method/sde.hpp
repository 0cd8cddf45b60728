// Fixed-step methods for Itô SDEs  du = f(t, u) dt + sum_k g_k(t, u) dW_k  over a block of
// independent paths at once (ensemble members in lanes).
//
// The seam is the OdeProblem's: a small table of callbacks with a context, here over `lanes`
// paths laid out lane-major (value i of lane l at [i * lanes + l]), so one call evaluates the
// model for a whole block of members (the kernel's lane loops). The method never draws noise:
// the caller hands each step its Wiener increments, which keeps a path a pure function of its
// increments (strong-order tests build coarse increments by summing fine ones) and leaves the
// keying of the noise (noise.hpp) to the driver.
//
// Methods (fixed step; orders are those for the noise class each accepts):
//   EulerMaruyama  any noise; strong 0.5, weak 1.
//   Milstein       commutative noise (in particular diagonal noise: source k drives only state
//                  k's equation, through a coefficient of that state); strong 1, weak 1. Needs
//                  `milstein`, the terms L^k g_ik = sum_j g_jk dg_ik/du_j (the caller derives
//                  them symbolically). The cross terms L^k g_l (k != l) are taken as zero: the
//                  caller must have checked that they are.
//   SRA1           additive noise (g independent of u; may depend on t); Rößler's SRA1,
//                  strong 1.5, weak 2. Needs a second normal per source and step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace esi::method {

enum class SdeMethod : std::uint8_t { EulerMaruyama, Milstein, SRA1 };

struct SdeMethodInfo {
  std::string_view name;
  double strong_order, weak_order;
  bool needs_milstein_terms, needs_additive_noise, needs_second_normal;
};

const SdeMethodInfo& sde_method_info(SdeMethod m);
/// "EulerMaruyama" (also "EM"), "Milstein", "SRA1"; nullopt for anything else.
std::optional<SdeMethod> sde_method_from_name(std::string_view name);

struct SdeProblem {
  std::size_t states = 0;   ///< n
  std::size_t sources = 0;  ///< m, independent standard Wiener processes
  void* context = nullptr;
  /// f: out[i * lanes + l].
  void (*drift)(void* context, double t, std::size_t lanes, const double* u, double* out) = nullptr;
  /// g: out[(i * sources + k) * lanes + l] = g_ik.
  void (*diffusion)(void* context, double t, std::size_t lanes, const double* u, double* out) = nullptr;
  /// L^k g_ik = sum_j g_jk dg_ik/du_j, same layout as `diffusion` (Milstein only).
  void (*milstein)(void* context, double t, std::size_t lanes, const double* u, double* out) = nullptr;
};

/// Advances a block of `lanes` paths by one step of any size; scratch sized once.
class SdeStepper {
 public:
  /// Throws esi::Error `invalid_sde_method` when the problem lacks what the method needs
  /// (Milstein without `milstein`).
  SdeStepper(const SdeProblem& problem, SdeMethod method, std::size_t lanes);

  /// u <- u(t + h). dW[k * lanes + l] = W_k(t + h) - W_k(t) of lane l; dZ (SRA1 only, same
  /// layout) an independent N(0, h) per source, from which I_(1,0) = h (dW + dZ / sqrt 3) / 2.
  void step(double t, double h, double* u, const double* dW, const double* dZ);

  SdeMethod method() const { return method_; }
  std::size_t lanes() const { return lanes_; }

 private:
  SdeProblem problem_;
  SdeMethod method_;
  std::size_t lanes_;
  std::vector<double> f1_, f2_, g1_, g2_, extra_, stage_;
};

/// The increments of step `step` for a block of members, keyed per noise.hpp: source k of
/// member members[l] gets dW = sqrt(h) * xi and (when dZ is not null) dZ = sqrt(h) * eta, the
/// two normals of (seed, members[l], step, k). Layout [k * lanes + l], lanes = members.size().
void wiener_increments(std::uint64_t seed, std::span<const std::uint32_t> members, std::uint64_t step,
                       double h, std::size_t sources, double* dW, double* dZ);

}  // namespace esi::method
