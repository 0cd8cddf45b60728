// Private to exec: a loss (exec::LossTerm list) evaluated along a run's step ends, and its
// derivative with respect to the state at each step end (what the adjoint sweep adds there).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "esi/esm/system.hpp"
#include "esi/exec/gradient.hpp"
#include "esi/method/sensitivity.hpp"

namespace esi::exec::detail {

class Loss {
 public:
  /// Resolves every term's variable and checks its times against [t0, t1]; throws
  /// `unknown_gradient_variable`, `adjoint_unsupported_loss` or `invalid_loss` at the term.
  Loss(const esm::System& system, std::vector<LossTerm> terms, double t0, double t1);

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

 private:
  struct Resolved {
    LossTerm term;
    std::vector<std::pair<std::size_t, double>> cells;  // state index, weight in the variable
    std::vector<double> residuals;                      // Misfit: (x - value) / sigma^2 per time
  };
  double variable(const Resolved& r, std::span<const double> u) const;
  void add_variable(const Resolved& r, double scale, std::span<double> lambda) const;
  /// The term's interval weight for a step [a, b] (0 outside; steps never straddle a bound).
  static double interval_share(const LossTerm& t, double a, double b);

  std::vector<Resolved> terms_;
  std::vector<double> stops_;
  std::string units_;
  double t0_ = 0, value_ = 0;
};

}  // namespace esi::exec::detail
