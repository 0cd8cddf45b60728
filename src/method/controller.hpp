// Step-size controllers: small objects with one verb, `propose(h, err, order)`, in the shape
// of SUNDIALS' SUNAdaptController (style-anchors §3). `err` is the weighted RMS error norm of
// the attempted step (accept when err <= 1 unless the controller says otherwise); `order` is
// k = min(order, embedded order + 1), the exponent scale of the method's estimate.
//
// PI and PID follow OrdinaryDiffEq.jl (lib/OrdinaryDiffEqCore/src/integrators/controllers.jl);
// the I controller follows KPP/MICM's Rosenbrock driver so results can be compared with them.
#pragma once

#include <memory>

#include "esi/method/integrator.hpp"

namespace esi::method::detail {

struct Proposal {
  bool accept = false;
  double h_next = 0;  ///< step to try next (after acceptance or for the retry)
};

class StepController {
 public:
  virtual ~StepController() = default;
  /// Judges the step of size h with error norm err and proposes the next step. Keeps its
  /// history only for accepted steps.
  virtual Proposal propose(double h, double err, int order) = 0;
  /// Forget the history (restart after an event).
  virtual void reset() = 0;
};

/// OrdinaryDiffEq's PIController: q = err^b1 / errold^b2 / safety clamped to [1/qmax, 1/qmin],
/// b1 = beta1_over_k / k, b2 = beta2_over_k / k; 1 <= q <= 1.2 keeps h; rejection divides h by
/// min(1/qmin, err^b1 / safety). The first step may grow by qmax_first_step.
struct PiParams {
  double beta1_over_k = 0.7, beta2_over_k = 0.4;
  double qmin = 0.2, qmax = 10, qmax_first_step = 10000, safety = 0.9;
  double qsteady_min = 1, qsteady_max = 1.2, errold_init = 1e-4;
};
class PiController final : public StepController {
 public:
  explicit PiController(PiParams p = {}) : p_(p) {}
  Proposal propose(double h, double err, int order) override;
  void reset() override { errold_ = p_.errold_init, accepted_any_ = false; }

 private:
  PiParams p_;
  double errold_ = 1e-4;
  bool accepted_any_ = false;
};

/// KPP / MICM Rosenbrock control: fac = clamp(safety / err^(1/k), 0.2, 6); accept when
/// err <= 1, and right after a rejection the accepted step may not grow. KPP's flags
/// RejectLastH / RejectMoreH: once the two previous attempts were rejected too, a rejection
/// multiplies h by 0.1 instead of fac.
struct IParams {
  double fac_min = 0.2, fac_max = 6, safety = 0.9, fac_reject = 0.1;
};
class IController final : public StepController {
 public:
  explicit IController(IParams p = {}) : p_(p) {}
  Proposal propose(double h, double err, int order) override;
  void reset() override { reject_last_ = reject_more_ = false; }

 private:
  IParams p_;
  bool reject_last_ = false, reject_more_ = false;
};

/// Söderlind's digital filter as in OrdinaryDiffEq's PIDController:
/// factor = limiter(e1^(b1/k) e2^(b2/k) e3^(b3/k)) with e_i = 1/err_i (newest first) and
/// limiter(x) = 1 + atan(x - 1); accept when factor >= 0.81. Default beta = (0.7, -0.4, 0),
/// OrdinaryDiffEq's PI defaults written as a PID (PI34 in Söderlind's table).
struct PidParams {
  double beta1 = 0.7, beta2 = -0.4, beta3 = 0;
  double accept_safety = 0.81, qsteady_min = 1, qsteady_max = 1.2;
};
class PidController final : public StepController {
 public:
  explicit PidController(PidParams p = {}) : p_(p) {}
  Proposal propose(double h, double err, int order) override;
  void reset() override { inv_err_[1] = inv_err_[2] = 1; }

 private:
  PidParams p_;
  double inv_err_[3] = {1, 1, 1};
};

/// The controller for `kind` (Default = PI) with the method's OrdinaryDiffEq defaults.
std::unique_ptr<StepController> make_controller(ControllerKind kind, MethodId method);

}  // namespace esi::method::detail
