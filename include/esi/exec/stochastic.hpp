// Stochastic runs: SDEs (Wiener parameters, spec §5.4) and setup-time draws of `distribution`
// parameters, one path or an ensemble, with the same numbers on any thread count.
//
// Every random number is addressed, not drawn (core/noise.hpp): member m's Wiener increment of
// source k at step n is the keyed normal (seed, m, n, k), a sampled parameter's value is drawn
// once per member from (seed, m, setup, parameter index). A correlated vector (a `cov`) is
// mean + L z, L its Cholesky factor and z independent keyed normals (one source or setup slot
// per component, noise.hpp). Members are stepped in blocks of up to 64 lanes handed to
// threads in any order; every member's outputs are stored by member id and the statistics
// are folded afterwards in member-id order, so the results are `==` for any thread count,
// block grouping and member order.
//
// SDE models (at least one Wiener parameter) step on a fixed grid: each output interval (t0,
// every saveat multiple, t1) is split into ceil(length / dt) equal steps, counted from 0 at t0
// over the whole run (the step index keys the noise). Method: `method`, or automatically SRA1
// for additive noise (diffusion free of states), Milstein for commutative noise, else
// Euler-Maruyama. Models with sampled parameters and no Wiener parameter are ODEs per member:
// each member runs exec::simulate (adaptive, `integrator` options) with its drawn values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"
#include "esi/method/integrator.hpp"
#include "esi/method/sde.hpp"

namespace esi::exec {

/// The most stored output values (members x output times x columns) of one ensemble run
/// (800 MB of doubles).
inline constexpr double kMaxEnsembleValues = 1e8;

struct StochasticOptions {
  double t0 = 0, t1 = 0;
  double saveat = 0;  ///< 0 = outputs at t0 and t1 only
  double dt = 0;      ///< SDE step; 0 = (t1 - t0) / 1000
  std::optional<method::SdeMethod> method;  ///< SDE method; nullopt = automatic
  method::IntegratorOptions integrator;     ///< ODE members (sampled parameters only)
  std::uint64_t seed = 0;
  /// SDE drift, diffusion and Milstein programs as compiled native code (kernel::with_native):
  /// the same bits as the tape; ODE members pass it on to simulate.
  bool native = false;
  std::size_t members = 1;
  unsigned threads = 1;
  /// The order members are handed to blocks and threads: a permutation of 0..members-1 (empty
  /// = 0, 1, ...). The results do not depend on it; tests shuffle it to show that.
  std::vector<std::uint32_t> member_order;
  /// The document the system was flattened from: source of the distributions. Required.
  const esm::ResolvedDocument* document = nullptr;
};

struct EnsembleResult {
  std::vector<std::string> names;  ///< states (System order), then observeds
  std::size_t state_count = 0;
  std::vector<double> times;       ///< output times
  std::size_t members = 0;
  /// members x times x names: values[(m * times.size() + k) * names.size() + j].
  std::vector<double> values;
  /// times x names: the mean and the unbiased variance (NaN for one member) over members.
  std::vector<double> mean, variance;
  bool sde = false;                ///< false: ODE members with sampled parameters
  method::SdeMethod method = method::SdeMethod::EulerMaruyama;  ///< SDE only
  std::uint64_t steps = 0;         ///< SDE steps per member
  /// "" when every value is finite; otherwise names the lowest member id with a non-finite
  /// value (or whose solve failed), the variable and the time.
  std::string failure;

  double value(std::size_t member, std::size_t k, std::size_t j) const {
    return values[(member * times.size() + k) * names.size() + j];
  }
};

/// True when the system has a Wiener (Brownian) or a sampled parameter without an override.
bool is_stochastic(const esm::System& system);

/// Throws esi::Error for input it cannot run: `invalid_ensemble` (options), `too_many_outputs`
/// (more than kMaxEnsembleValues stored values), `too_many_steps` (more than 1e9 per member),
/// `invalid_sde_method` (a method the noise does not allow), and build_sde_model's codes
/// (`wiener_nonlinear`, `unsupported_sde_noise`, `unknown_distribution`, ...).
EnsembleResult simulate_ensemble(const esm::System& system, const StochasticOptions& options);

}  // namespace esi::exec
