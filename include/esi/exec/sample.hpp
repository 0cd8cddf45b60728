// An overdamped Langevin sampler for an energy written in the document (issue 11, seed
// 003_15be846cd399187f): `rows` independent chains over the features x (the system's states),
// each taking K steps of
//     x <- x - eta * grad E(x) + sqrt(2 eta T) * xi
// from the states' initial values, and reporting its final x.
//
// The energy is an observed of the document; its gradient with respect to every feature is
// derived symbolically (expr::differentiate, observeds substituted first) and compiled once as a
// kernel program evaluated over 64 chains per call (lanes); sums inside the energy fold left in
// argument order. xi of chain r, feature i at step k is a keyed normal (core/noise.hpp):
// normals(seed, r, k, i / 2), the first of the pair for even i, the second for odd i, so the
// result does not depend on thread count or chain order. Sampled parameters (a `distribution`
// without update) are drawn once per chain (slot = the parameter's index).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"

namespace esi::exec {

struct SampleOptions {
  std::string energy;       ///< an observed: flat name or a unique local name
  std::size_t rows = 1;     ///< chains
  std::uint64_t steps = 0;  ///< K
  double step_size = 0;     ///< eta > 0
  double temperature = 0;   ///< T >= 0
  std::uint64_t seed = 0;
  unsigned threads = 1;
  bool native = false;      ///< the gradient as compiled native code (same bits as the tape)
  /// Chains in float: the gradient program runs on an F32 workspace (its setup tape in double,
  /// as every kernel program) and the update is done in float with eta and sqrt(2 eta T)
  /// rounded to float once; xi is the double normal rounded to float.
  bool single_precision = false;
  const esm::ResolvedDocument* document = nullptr;  ///< required (distributions)
};

struct SampleResult {
  std::vector<std::string> features;  ///< the states, System order
  std::size_t rows = 0;
  std::vector<double> values;         ///< rows x features, row-major (float values widened)
  std::string gradient_status;        ///< "tape" or the native status
  /// "" when every final value is finite; else names the lowest chain with a non-finite value
  /// and the feature (a step size too large for the energy's curvature diverges).
  std::string failure;
};

/// Throws esi::Error: `unknown_energy` (not an observed; near names suggested),
/// `invalid_sample` (options), `unsupported_sde_noise` (an energy reading a Wiener parameter),
/// `not_differentiable`, and build_sde_model's codes.
SampleResult sample(const esm::System& system, const SampleOptions& options);

}  // namespace esi::exec
