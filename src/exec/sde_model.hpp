// Private to exec: a System with Wiener parameters turned into the drift / diffusion form of an
// Itô SDE, du = f dt + sum_k G_k dW_k, compiled for blocks of ensemble members in lanes, and
// the setup-time distributions of sampled parameters.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"
#include "esi/kernel/program.hpp"

namespace esi::exec::detail {

/// The setup-time distribution of one sampled parameter (a scalar, or one cell of an array).
struct Distribution {
  enum class Kind { Normal, LogNormal, Uniform } kind = Kind::Normal;
  double a = 0, b = 1;  ///< Normal: mean, std; LogNormal: mu, sigma; Uniform: low, high
  /// A component of a correlated vector (`cov`): the row of L for this cell, the value is
  /// a + sum_j row[j] z_j (exp of it for a lognormal), z_j the first normal of slot
  /// first_slot + j. Empty for an independent draw (a + b z of the parameter's own slot).
  std::vector<double> row;
  std::uint32_t first_slot = 0;
  /// The value drawn for member `member` of parameter `slot` (noise.hpp: step kSetupStep).
  double draw(std::uint64_t seed, std::uint32_t member, std::uint32_t slot) const;
};

/// Every sampled parameter (no override) of `system` with its distribution, in parameter
/// order. Slots: an independent draw uses the parameter's index; a correlated vector of K
/// components uses K slots after every parameter index (System::parameters.size() + the
/// components of the correlated vectors met before it), so all K normals of L z are drawn even
/// for the cells no equation reads. Throws the codes of esm::parameter_distribution.
struct SampledParameter {
  std::size_t parameter;
  Distribution distribution;
};
std::vector<SampledParameter> sampled_parameters(const esm::System& system, const esm::ResolvedDocument& document);

struct SdeModel {
  esm::System system;  ///< the input plus the derived expressions (in its pool)
  /// One per source k, an independent standard Wiener process: a Wiener parameter, or
  /// "C.W (independent component j)" of a correlated vector C.W (W = mean + L Z).
  std::vector<std::string> noise_names;
  bool correlated = false;  ///< some Wiener vector has a `cov`
  std::vector<std::string> sampled_names; ///< forcing order of every program
  std::vector<Distribution> sampled;      ///< same order
  std::vector<std::uint32_t> sampled_slot;  ///< the parameter's index in System::parameters
  std::vector<double> p;                  ///< parameter values (NaN: sampled or Wiener)
  std::optional<kernel::Program> drift;       ///< n outputs
  std::optional<kernel::Program> diffusion;   ///< n * m outputs, row i * m + k
  std::optional<kernel::Program> milstein;    ///< n * m outputs (when available)
  std::optional<kernel::Program> observed;    ///< observed_rhs (none when no observeds)
  std::optional<kernel::Program> initial;     ///< initial-value expressions of `initial_states`
  std::vector<std::size_t> initial_states;
  bool additive = false;     ///< G reads no state
  bool commutative = false;  ///< Milstein's terms exist and its cross terms vanish
  std::string milstein_unavailable;  ///< why not, when !commutative
};

/// Derives and compiles the SDE form. Throws `wiener_nonlinear` (a Wiener parameter not used
/// linearly in a state equation), `unsupported_sde_noise` (a Wiener parameter read by an
/// observed, an initial value or an event, or with a non-Gaussian distribution),
/// `distribution_covariance_invalid` / `invalid_distribution` (esm::parameter_distribution),
/// `unsupported_event` / `unsupported_algebraic` (events, parameter updates and algebraic
/// unknowns in stochastic models), `missing_parameter_value`, and the distribution codes.
std::unique_ptr<SdeModel> build_sde_model(const esm::System& system, const esm::ResolvedDocument& document);

/// Lanes per block of ensemble members (an entry of kernel::kLaneWidths).
inline constexpr std::size_t kBlockLanes = 64;

/// One thread's view of an SdeModel over a block of up to kBlockLanes lanes: a workspace per
/// program (made and prepared on first use), the per-lane values of the sampled parameters.
struct LaneBlock {
  const SdeModel* model = nullptr;
  std::size_t lanes = 0;

  explicit LaneBlock(const SdeModel& m);
  /// Draws the sampled parameters of `members` (one per lane) and sets `lanes`.
  void set_members(std::span<const std::uint32_t> members, std::uint64_t seed);
  /// Runs `program` (compiled from model->system with the sampled parameters as forcing) at
  /// time t over the block: u[i * lanes + l] -> out[r * lanes + l].
  void run(const kernel::Program& program, double t, const double* u, double* out);
  /// The drawn sampled-parameter values of the block, [s * lanes + l].
  std::span<const double> sampled_values() const { return {forcing_values_.data(), model->sampled.size() * lanes}; }

 private:
  std::vector<std::pair<const kernel::Program*, kernel::Workspace>> workspaces_;
  std::vector<double> forcing_values_;  // [s * lanes + l]
  std::vector<kernel::ForcingField<double>> forcing_;
};

/// The initial state of the block's lanes at t0 (u[i * lanes + l]): defaults, then the
/// initial-value expressions iterated so chains of them settle. Throws `missing_initial_value`.
std::vector<double> initial_values(LaneBlock& block, double t0);

/// Compiles `outputs` of `system` for lanes, with the sampled parameters as forcing fields.
kernel::Program compile_lanes(const esm::System& system, const std::vector<expr::NodeId>& outputs,
                              const std::vector<std::string>& forcing);

}  // namespace esi::exec::detail
