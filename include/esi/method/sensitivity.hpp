// Exact discrete sensitivities of the steps an Integrator took: the tangent linear model
// (forward sensitivities) and the discrete adjoint of the step sequence actually taken
// (seeds 001 D4, D5, D42; 002 §10).
//
// A forward run records a ForwardTape (Integrator::record): for every accepted step its start,
// size and end, the time f0 was evaluated at, what the stepper's attempt depended on beyond
// (t, h, u0) (the size whose stencil made a Rosenbrock f_t, the Newton rate an SDIRK attempt
// started from) and which components were clipped, plus the state before every K-th step.
// Replaying a step from its stored state reproduces the forward bits (the sweeps check it and
// fail with a message when it does not). The step sizes are held fixed: the derivative is the
// one of the discrete map the forward run computed, not of the step-size controller.
//
// The adjoint walks the tape backwards interval by interval: from a checkpoint it replays the
// interval forward keeping every step's start state, then runs each step's adjoint. A
// Rosenbrock step's adjoint solves with the transposed factors of the step's own iteration
// matrix (one factorization per step, shared with its replay) and needs the second derivatives
// of f (the derivative of J(u0, p) in the stages); an SDIRK step solves transposed at its
// converged stages (one factorization each); an explicit step needs J^T at its stages. With
// respect to parameters every method needs df/dp (OdeProblem's derivative fields).
//
// Supported: every explicit Runge-Kutta tableau, every Rosenbrock tableau (FSAL or not,
// autonomous or not) and the SDIRK family. IMEX methods and CVODE_BDF are refused.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "esi/method/integrator.hpp"
#include "esi/method/problem.hpp"

namespace esi::method {

/// One accepted step as the forward run took it.
struct StepRecord {
  double t = 0;        ///< start
  double h = 0;        ///< size of the accepted attempt (the stages use it)
  double t_end = 0;    ///< end: t + h, or the limit the step landed on
  double f0_time = 0;  ///< f0 = f(f0_time, u0) (an FSAL f from the previous step's last stage)
  double ft_h = 0;     ///< Rosenbrock, f depends on t: the attempt size whose stencil made f_t
  double newton_rate = 0;  ///< SDIRK: the Newton rate estimate the attempt started from
  std::size_t clip_begin = 0, clip_end = 0;  ///< components clipped to 0: ForwardTape::clipped
};

/// Everything a sweep needs of a forward run: the step records and, every `checkpoint_every`
/// steps, the state before the step (all of them at 1), plus the final state.
struct ForwardTape {
  std::size_t size = 0;  ///< states
  std::size_t checkpoint_every = 1;
  MethodId method = MethodId::Auto;
  std::vector<StepRecord> steps;
  std::vector<int> clipped;           ///< indices, per step [clip_begin, clip_end)
  std::vector<double> checkpoints;    ///< state before step k*K, k = 0, 1, ...
  std::vector<double> final_state;    ///< after the last step
  /// With checkpoint_every == 1: also keep what each step's sweep would replay (stage values,
  /// slopes, a Rosenbrock step's J), `kept_per_step` values per step, so the sweeps replay
  /// nothing: more memory, about one forward run less work.
  bool keep_stages = false;
  std::size_t kept_per_step = 0, kept_steps = 0;
  /// Chunks of kKeptChunkSteps steps each, allocated uninitialized as the run goes (a growing
  /// vector would copy and zero-fill it all again, which cost more than the replays it saves).
  std::vector<std::unique_ptr<double[]>> kept_chunks;
  static constexpr std::size_t kKeptChunkSteps = 64;

  /// Room for the next step's kept values.
  double* add_kept(std::size_t per_step) {
    kept_per_step = per_step;
    if (kept_steps % kKeptChunkSteps == 0)
      kept_chunks.emplace_back(new double[kKeptChunkSteps * per_step]);
    return kept_at_mutable(kept_steps++);
  }
  const double* kept_at(std::size_t step) const {
    return kept_chunks[step / kKeptChunkSteps].get() + (step % kKeptChunkSteps) * kept_per_step;
  }
  /// Non-empty when the run did something a sweep cannot follow (a restart by an event).
  std::string unsupported;
  /// > 0: when bytes() outgrows it, the recording thins the tape (thin()) until it fits or
  /// holds one checkpoint: the sweep then replays more, bit for bit the same gradient.
  std::size_t memory_budget = 0;

  /// Drops what the sweep can recompute: first the kept step data (keep_stages), then every
  /// other checkpoint (checkpoint_every doubles). False when only the first checkpoint is left.
  bool thin() {
    if (keep_stages || kept_per_step > 0) {
      kept_chunks.clear();
      kept_chunks.shrink_to_fit();
      keep_stages = false;
      kept_per_step = kept_steps = 0;
      return true;
    }
    const std::size_t count = size == 0 ? 0 : checkpoints.size() / size;
    if (count <= 1) return false;
    std::size_t kept = 0;
    for (std::size_t c = 0; c < count; c += 2, ++kept)
      std::copy_n(checkpoints.begin() + std::ptrdiff_t(c * size), size, checkpoints.begin() + std::ptrdiff_t(kept * size));
    checkpoints.resize(kept * size);
    checkpoints.shrink_to_fit();
    checkpoint_every *= 2;
    return true;
  }

  std::span<const double> checkpoint(std::size_t step) const {
    return {checkpoints.data() + (step / checkpoint_every) * size, size};
  }
  std::size_t bytes() const {
    return steps.size() * sizeof(StepRecord) + clipped.size() * sizeof(int) +
           (checkpoints.size() + final_state.size() + kept_steps * kept_per_step) * sizeof(double);
  }
  bool has_kept(std::size_t step) const { return kept_per_step > 0 && step < kept_steps; }

 private:
  double* kept_at_mutable(std::size_t step) {
    return kept_chunks[step / kKeptChunkSteps].get() + (step % kKeptChunkSteps) * kept_per_step;
  }
};

/// Why `method` has no sensitivities ("" when it has). IMEX and CVODE_BDF do not.
std::string sensitivity_unsupported(MethodId method);

/// Adds dL/du at the end of step k into `lambda` (a loss read at intermediate step ends).
using AdjointSource = std::function<void(std::size_t step, std::span<double> lambda)>;
/// Sees the tangent at the end of step k.
using TangentSink = std::function<void(std::size_t step, std::span<const double> du)>;

struct SweepResult {
  ReturnCode code = ReturnCode::Success;
  std::string message;  ///< why the sweep failed ("" on success)
  IntegratorStats stats;  ///< evaluations of the replays and the sweep
  long jacobian_transpose_products = 0, second_order_evaluations = 0;
  long vector_jacobian_products = 0;  ///< by OdeProblem::vector_jacobian_product
  long point_batches = 0;             ///< by OdeProblem::first_derivatives_lanes
  bool ok() const { return code == ReturnCode::Success; }
};

/// The discrete adjoint over `tape`: on entry lambda holds dL/du at the end of the run, on
/// return dL/du0; mu (problem.parameter_count values) accumulates dL/dp. `source`, when set,
/// is called for every step k (last first) before that step is swept.
SweepResult adjoint(const OdeProblem& problem, const IntegratorOptions& options,
                    const ForwardTape& tape, std::span<double> lambda, std::span<double> mu,
                    const AdjointSource& source = nullptr);

/// The tangent linear model over `tape`: on entry du holds the direction of u0, on return the
/// derivative of the final state; dp (problem.parameter_count values, may be empty) is the
/// parameter direction. `sink`, when set, sees the tangent after every step.
SweepResult tangent(const OdeProblem& problem, const IntegratorOptions& options,
                    const ForwardTape& tape, std::span<double> du, std::span<const double> dp,
                    const TangentSink& sink = nullptr);

/// Replays the tape forward without derivatives and returns the final state: the frozen step
/// sequence as a function of (u0, p), for finite-difference checks (the problem's parameters
/// are whatever its context holds). `u0` replaces the recorded initial state.
std::vector<double> replay(const OdeProblem& problem, const IntegratorOptions& options,
                           const ForwardTape& tape, std::span<const double> u0,
                           const TangentSink& sink = nullptr);

}  // namespace esi::method
