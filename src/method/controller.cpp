#include "method/controller.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace esi::method::detail {

Proposal PiController::propose(double h, double err, int order) {
  const double b1 = p_.beta1_over_k / order, b2 = p_.beta2_over_k / order;
  const double qmax = accepted_any_ ? p_.qmax : p_.qmax_first_step;
  double q11 = 1, q = 1 / qmax;
  if (err > 0) {
    q11 = std::pow(err, b1);
    q = std::clamp(q11 / std::pow(errold_, b2) / p_.safety, 1 / qmax, 1 / p_.qmin);
  }
  if (err <= 1) {
    if (q >= p_.qsteady_min && q <= p_.qsteady_max) q = 1;
    errold_ = std::max(err, p_.errold_init);
    accepted_any_ = true;
    return {true, h / q};
  }
  return {false, h / std::min(1 / p_.qmin, q11 / p_.safety)};
}

Proposal IController::propose(double h, double err, int order) {
  const double fac =
      std::clamp(p_.safety / std::pow(err, 1.0 / order), p_.fac_min, p_.fac_max);
  double h_next = h * fac;
  if (err <= 1) {
    if (reject_last_) h_next = std::min(h_next, h);
    reject_last_ = reject_more_ = false;
    return {true, h_next};
  }
  if (reject_more_) h_next = h * p_.fac_reject;
  reject_more_ = reject_last_;
  reject_last_ = true;
  return {false, h_next};
}

Proposal PidController::propose(double h, double err, int order) {
  // A zero error would make 1/err infinite and the product NaN (OrdinaryDiffEq's guard).
  inv_err_[0] = 1 / std::max(err, std::numeric_limits<double>::epsilon());
  const double k = order;
  const double raw = std::pow(inv_err_[0], p_.beta1 / k) * std::pow(inv_err_[1], p_.beta2 / k) *
                     std::pow(inv_err_[2], p_.beta3 / k);
  double factor = 1 + std::atan(raw - 1);
  if (factor < p_.accept_safety) return {false, h * factor};
  if (1 / factor >= p_.qsteady_min && 1 / factor <= p_.qsteady_max) factor = 1;
  inv_err_[2] = inv_err_[1];
  inv_err_[1] = inv_err_[0];
  return {true, h * factor};
}

std::unique_ptr<StepController> make_controller(ControllerKind kind, MethodId method) {
  switch (kind) {
    case ControllerKind::I: return std::make_unique<IController>();
    case ControllerKind::PID: return std::make_unique<PidController>();
    case ControllerKind::Default:
    case ControllerKind::PI: break;
  }
  PiParams p;
  if (method == MethodId::DP5) {
    // OrdinaryDiffEq: beta2 = 0.04, beta1 = 1/5 - 0.75 beta2 (Hairer's DOPRI5), times k = 5.
    p.beta2_over_k = 0.04 * 5;
    p.beta1_over_k = (0.2 - 0.75 * 0.04) * 5;
  }
  return std::make_unique<PiController>(p);
}

}  // namespace esi::method::detail
