// Private to exec: a loss (exec::LossTerm list) evaluated along a run's step ends, and its
// derivative with respect to the state at each step end (what the adjoint sweep adds there)
// and, where it reads an observed that reads parameters, with respect to them directly.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "esi/esm/system.hpp"
#include "esi/exec/gradient.hpp"
#include "esi/method/sensitivity.hpp"

namespace esi::exec::detail {

struct Model;
class ExpressionProbe;

class Loss {
 public:
  /// Resolves every term's variable and checks its times against [t0, t1]; throws
  /// `unknown_gradient_variable` or `invalid_loss` at the term.
  Loss(const esm::System& system, std::vector<LossTerm> terms, double t0, double t1);
  ~Loss();
  Loss(const Loss&);
  Loss(Loss&&) noexcept;
  Loss& operator=(const Loss&) = delete;

  /// Compiles the observeds the terms read (value, d/du and d/dp over the model's derivative
  /// parameters) against `model`, which must have its derivatives (Model::ensure_derivatives).
  /// Throws `adjoint_unsupported_function` (and the compile codes) at the observed.
  void bind(const Model& model);
  /// The parameters changed (a finite-difference check): the observeds read `p` from now on.
  void prepare(const std::vector<double>& p);

  /// The part of the loss a stretch [begin, end] of the run reads, between event firings:
  /// values and misfits at times in [begin, end) (at end too when `last`: a value at an
  /// event's time reads the state after the event, as `esi simulate` writes it there), every
  /// step's integral share. Evaluated like the whole (start at `begin`, then the steps).
  Loss part(double begin, double end, bool last) const;

  /// Times inside (t0, t1) the forward run must step to exactly, increasing.
  const std::vector<double>& stops() const { return stops_; }
  const std::string& units() const { return units_; }

  /// Evaluation along a run: start at (t0, u0), then every step end in order.
  void start(std::span<const double> u0);
  void step(double t_start, std::span<const double> u_start, double t_end, std::span<const double> u_end);
  double value() const { return value_; }

  /// dL/du at the end of step k of `tape` (added to `lambda`): the adjoint's source. Valid
  /// after the run that recorded `tape` was evaluated (misfits use its residuals).
  void add_gradient_at_step_end(const method::ForwardTape& tape, std::size_t k, std::span<double> lambda) const;
  /// dL/du0 through the terms that read the initial state directly.
  void add_gradient_at_start(const method::ForwardTape& tape, std::span<double> lambda) const;
  /// dL/dp through observeds that read parameters themselves (derivative-parameter order;
  /// empty when no term reads one): to be added to the sweep's.
  const std::vector<double>& direct_parameter_gradient() const { return direct_p_; }

 private:
  struct Resolved {
    LossTerm term;
    std::vector<std::pair<std::size_t, double>> cells;  // state index, weight in the variable
    std::vector<double> residuals;                      // Misfit: (x - value) / sigma^2 per time
    std::string observed;                               // the observed read, else ""
    std::shared_ptr<ExpressionProbe> probe;               // its programs (bind)
    /// An observed's d/du nonzeros at t0 (row 0) and at every step end k (row k + 1), and
    /// d/dp at the current step's end and start (the trapezoid reads both).
    std::vector<double> rows, last_dp, start_dp;
    double last_x = 0;  // the observed at the last step end
  };
  /// The variable at (t, u); an observed also records its derivatives (`record`).
  double variable(Resolved& r, double t, std::span<const double> u, bool record);
  /// lambda += scale * d(variable)/du at `row` (0: t0, k + 1: the end of step k).
  void add_variable(const Resolved& r, std::size_t row, double scale, std::span<double> lambda) const;
  /// direct_p_ += scale * dp (dp empty: a state variable, nothing).
  void add_direct(const std::vector<double>& dp, double scale);
  /// The term's interval weight for a step [a, b] (0 outside; steps never straddle a bound).
  static double interval_share(const LossTerm& t, double a, double b);

  std::vector<Resolved> terms_;
  std::vector<double> stops_, direct_p_;
  std::string units_;
  double t0_ = 0, value_ = 0;
};

}  // namespace esi::exec::detail
