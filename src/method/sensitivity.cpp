// The sweeps over a ForwardTape (sensitivity.hpp): replays of recorded steps, the tangent
// forwards and the adjoint backwards interval by interval. Each stepper differentiates its
// own step (Stepper::tangent / adjoint); here live what is common to every method: f0's
// dependence on the step's start state, clipped components, checkpoints, and the check that
// a replay reproduced the forward run.
#include "esi/method/sensitivity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "method/derivatives.hpp"
#include "method/stepper.hpp"
#include "method/tableau.hpp"

namespace esi::method {

using namespace detail;

std::string sensitivity_unsupported(MethodId method) {
  if (method == MethodId::Auto) return "";
  switch (family_of(method)) {
    case Family::Explicit:
    case Family::Rosenbrock:
    case Family::Sdirk: return "";
    case Family::Imex:
      return std::string(method_info(method).name) +
             " is an IMEX method: esi has no sensitivities for IMEX steps yet (use a Rosenbrock, "
             "SDIRK or explicit method)";
    case Family::Sundials:
      return "CVODE_BDF steps inside SUNDIALS: esi has no discrete adjoint of its steps (use a "
             "Rosenbrock, SDIRK or explicit method)";
  }
  return "";
}

namespace {

std::string text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

class Sweep {
 public:
  Sweep(const OdeProblem& problem, const IntegratorOptions& options, const ForwardTape& tape)
      : problem_(problem), tape_(tape), n_(tape.size),
        eval_{&problem, &result_.stats}, d_(problem, result_),
        f0_(n_), err_(n_) {
    result_.message = why_not(options);
    if (!result_.message.empty()) {
      result_.code = ReturnCode::InvalidOptions;
      return;
    }
    IntegratorOptions o = options;
    o.method = tape.method;
    stepper_ = make_stepper(tape.method, eval_, o);
  }

  bool ok() const { return result_.ok(); }
  SweepResult& result() { return result_; }
  const OdeProblem& problem() const { return problem_; }
  Stepper& stepper() { return *stepper_; }
  Derivatives& derivatives() { return d_; }
  std::span<const double> f0() const { return f0_; }

  /// Replays step k from u0 into u1 (clipped components set to 0); false (and the result
  /// says why) when the step failed, which a faithful replay never does.
  bool replay_step(std::size_t k, const double* u0, double* u1) {
    const StepRecord& r = tape_.steps[k];
    eval_.rhs(r.f0_time, u0, f0_.data());
    const AttemptStatus status = stepper_->replay(r, u0, f0_.data(), u1, err_.data());
    for (std::size_t c = r.clip_begin; c < r.clip_end; ++c) u1[tape_.clipped[c]] = 0;
    if (status == AttemptStatus::Ok) return true;
    return fail(ReturnCode::LinearSolveFailed, "the replay of step " + std::to_string(k) +
                                                   " at t = " + text(r.t) + " failed");
  }

  /// Puts the stepper in the state replay_step(k) leaves it in, from what the tape kept of
  /// step k; false when it kept nothing (the caller replays).
  bool restore_step(std::size_t k) {
    if (!tape_.has_kept(k)) return false;
    return stepper_->restore(tape_.steps[k], tape_.checkpoint(k).data(), tape_.kept_at(k));
  }

  /// Whether u1, the replay of step k, is the state the forward run reached (when the tape
  /// holds it: the next checkpoint or the final state).
  bool verify(std::size_t k, const double* u1) {
    const double* expected = nullptr;
    if (k + 1 == tape_.steps.size())
      expected = tape_.final_state.data();
    else if ((k + 1) % tape_.checkpoint_every == 0)
      expected = tape_.checkpoint(k + 1).data();
    if (expected == nullptr || std::equal(u1, u1 + n_, expected)) return true;
    return fail(ReturnCode::InvalidOptions,
                "the replay of step " + std::to_string(k) + " at t = " + text(tape_.steps[k].t) +
                    " did not reproduce the forward run bit for bit (was the problem's context "
                    "changed since it was recorded?)");
  }

  void zero_clipped(std::size_t k, double* v) const {
    const StepRecord& r = tape_.steps[k];
    for (std::size_t c = r.clip_begin; c < r.clip_end; ++c) v[tape_.clipped[c]] = 0;
  }

  bool fail(ReturnCode code, std::string message) {
    result_.code = code;
    result_.message = std::move(message);
    return false;
  }

 private:
  std::string why_not(const IntegratorOptions& options) const {
    (void)options;
    if (!tape_.unsupported.empty()) return tape_.unsupported;
    if (tape_.size != problem_.size)
      return "the tape holds " + std::to_string(tape_.size) + " states, the problem " +
             std::to_string(problem_.size);
    if (const std::string why = sensitivity_unsupported(tape_.method); !why.empty()) return why;
    if (!problem_.jacobian || problem_.jac_row_ptr.size() != problem_.size + 1)
      return "sensitivities need the analytic Jacobian (OdeProblem::jacobian with its pattern)";
    if (family_of(tape_.method) == Family::Rosenbrock && !problem_.second_derivatives)
      return std::string(method_info(tape_.method).name) +
             " steps use J(u0, p) in every stage: their sensitivities need the second "
             "derivatives (OdeProblem::second_derivatives)";
    if (problem_.parameter_count > 0 && !problem_.parameter_jacobian)
      return "parameter_count is set but parameter_jacobian is null";
    return "";
  }

  const OdeProblem& problem_;
  const ForwardTape& tape_;
  std::size_t n_;
  SweepResult result_;
  Evaluator eval_;
  Derivatives d_;
  std::unique_ptr<Stepper> stepper_;
  std::vector<double> f0_, err_;
};

/// Step k's adjoint once the stepper holds its stages: lambda (dL/du at the step's end) becomes
/// dL/du at its start; mu accumulates.
void adjoint_step(Sweep& sweep, const ForwardTape& tape, std::size_t k, const double* u0,
                  std::span<double> lambda, std::vector<double>& lambda0, std::vector<double>& lambda_f0,
                  double* mu, const AdjointSource& source) {
  Derivatives& d = sweep.derivatives();
  if (source) source(k, lambda);
  sweep.zero_clipped(k, lambda.data());
  sweep.stepper().adjoint(tape.steps[k], d, u0, lambda.data(), lambda0.data(), lambda_f0.data(), mu);
  // f0 = f(f0_time, u0) is the step's own function of its start state.
  d.at(tape.steps[k].f0_time, u0);
  d.vjp(lambda_f0.data(), lambda0.data(), mu);
  std::copy(lambda0.begin(), lambda0.end(), lambda.begin());
}

}  // namespace

SweepResult adjoint(const OdeProblem& problem, const IntegratorOptions& options,
                    const ForwardTape& tape, std::span<double> lambda, std::span<double> mu,
                    const AdjointSource& source) {
  Sweep sweep(problem, options, tape);
  if (!sweep.ok()) return sweep.result();
  if (mu.size() != problem.parameter_count && !mu.empty()) {
    sweep.fail(ReturnCode::InvalidOptions, "mu must hold parameter_count values");
    return sweep.result();
  }
  const std::size_t n = tape.size, steps = tape.steps.size(), every = tape.checkpoint_every;
  double* mu_data = mu.empty() ? nullptr : mu.data();
  sweep.derivatives().want_parameters(mu_data != nullptr && problem.parameter_count > 0);
  std::vector<double> interval(every * n), u1(n), lambda0(n), lambda_f0(n);
  if (every == 1 && steps > 0 && tape.has_kept(steps - 1)) {
    // Every step kept what its sweep needs: no replays.
    for (std::size_t k = steps; k-- > 0;) {
      if (!sweep.restore_step(k)) {
        sweep.fail(ReturnCode::LinearSolveFailed, "the kept step " + std::to_string(k) + " could not be restored");
        return sweep.result();
      }
      adjoint_step(sweep, tape, k, tape.checkpoint(k).data(), lambda, lambda0, lambda_f0, mu_data, source);
    }
    return sweep.result();
  }
  for (std::size_t start = steps == 0 ? 0 : ((steps - 1) / every) * every; steps > 0;
       start -= every) {
    const std::size_t end = std::min(start + every, steps);
    // Forward through the interval from its checkpoint, keeping each step's start state; the
    // stepper is left holding the interval's last step, the first one swept.
    const auto first = tape.checkpoint(start);
    std::copy(first.begin(), first.end(), interval.begin());
    for (std::size_t k = start; k < end; ++k) {
      double* next = k + 1 < end ? interval.data() + (k + 1 - start) * n : u1.data();
      if (!sweep.replay_step(k, interval.data() + (k - start) * n, next) || !sweep.verify(k, next))
        return sweep.result();
    }
    for (std::size_t k = end; k-- > start;) {
      const double* u0 = interval.data() + (k - start) * n;
      if (k + 1 < end && !sweep.replay_step(k, u0, u1.data())) return sweep.result();
      adjoint_step(sweep, tape, k, u0, lambda, lambda0, lambda_f0, mu_data, source);
    }
    if (start == 0) break;
  }
  return sweep.result();
}

SweepResult tangent(const OdeProblem& problem, const IntegratorOptions& options,
                    const ForwardTape& tape, std::span<double> du, std::span<const double> dp,
                    const TangentSink& sink) {
  Sweep sweep(problem, options, tape);
  if (!sweep.ok()) return sweep.result();
  const std::size_t n = tape.size;
  const double* dp_data = dp.empty() ? nullptr : dp.data();
  sweep.derivatives().want_parameters(dp_data != nullptr && problem.parameter_count > 0);
  std::vector<double> u(n), u1(n), df0(n), du1(n);
  if (!tape.steps.empty()) u.assign(tape.checkpoint(0).begin(), tape.checkpoint(0).end());
  Derivatives& d = sweep.derivatives();
  for (std::size_t k = 0; k < tape.steps.size(); ++k) {
    if (sweep.restore_step(k)) {
      const auto next = k + 1 < tape.steps.size() ? tape.checkpoint(k + 1) : std::span<const double>(tape.final_state);
      std::copy(next.begin(), next.end(), u1.begin());
    } else if (!sweep.replay_step(k, u.data(), u1.data()) || !sweep.verify(k, u1.data())) {
      return sweep.result();
    }
    std::fill(df0.begin(), df0.end(), 0.0);
    d.at(tape.steps[k].f0_time, u.data());
    d.jv(du.data(), df0.data());
    d.pv(dp_data, df0.data());
    sweep.stepper().tangent(tape.steps[k], d, u.data(), du.data(), df0.data(), dp_data, du1.data());
    sweep.zero_clipped(k, du1.data());
    std::copy(du1.begin(), du1.end(), du.begin());
    u.swap(u1);
    if (sink) sink(k, du);
  }
  return sweep.result();
}

std::vector<double> replay(const OdeProblem& problem, const IntegratorOptions& options,
                           const ForwardTape& tape, std::span<const double> u0,
                           const TangentSink& sink) {
  Sweep sweep(problem, options, tape);
  std::vector<double> u(u0.begin(), u0.end()), u1(u.size());
  if (!sweep.ok()) return u;
  for (std::size_t k = 0; k < tape.steps.size(); ++k) {
    if (!sweep.replay_step(k, u.data(), u1.data())) break;
    u.swap(u1);
    if (sink) sink(k, u);
  }
  return u;
}

}  // namespace esi::method
