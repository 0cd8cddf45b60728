// Additive Runge-Kutta (IMEX) stepper, generic over ArkTableau (KenCarp3, KenCarp4): the
// explicit part f_E (transport) and the implicit part f_I (stiff chemistry) are integrated
// together in every stage, so the result carries no splitting error, only the method's own
// truncation error, which the embedded estimate controls.
//
// Per attempt: the Jacobian of f_I is taken at (t, u0) once per state (like the SDIRK
// stepper), M = I/(h gamma) - J_I is factorized once, and each implicit stage is a simplified
// Newton solve of Y = psi + h gamma f_I(t_i, Y) that evaluates f_I alone (rhs_implicit when the
// problem has it). f_E is evaluated once per stage at the converged stage value (rhs_explicit
// when the problem has it, so f_I is not evaluated there again).
#include <algorithm>

#include "method/newton.hpp"
#include "method/stepper.hpp"
#include "method/tableau.hpp"

namespace esi::method::detail {
namespace {

class ArkStepper final : public Stepper {
 public:
  ArkStepper(const ArkTableau& tab, const Evaluator& eval, const IntegratorOptions& options)
      : Stepper(eval.problem->size, tab.stages),
        tab_(tab),
        eval_(eval),
        system_(eval, JacobianOf::ImplicitPart),
        newton_(eval, JacobianOf::ImplicitPart, options),
        k_explicit_(n_ * tab.stages),
        k_implicit_(n_ * tab.stages),
        psi_(n_),
        scratch_(n_),
        explicit_error_(n_) {}

  AttemptStatus attempt(double t, double h, const double* u0, const double*, double* u1,
                        double* err) override {
    if (!start_current_) {
      // Stage 0 is explicit in both halves: its slopes depend on (t, u0) only, so a retry
      // with a smaller step after a rejection reuses them and the Jacobian.
      eval_.split(t, u0, explicit_slope(0), implicit_slope(0));
      system_.evaluate_jacobian(t, u0, implicit_slope(0));
      start_current_ = true;
    }
    const double hg = h * tab_.gamma;
    if (!system_.factorize(1.0 / hg)) return AttemptStatus::LinearSolveFailed;
    newton_.set_weights(u0);
    std::copy(u0, u0 + n_, stage_state(0));
    for (int i = 1; i < tab_.stages; ++i) {
      for (std::size_t m = 0; m < n_; ++m) {
        double acc = 0;
        for (int j = 0; j < i; ++j) {
          const std::size_t at = std::size_t(j) * n_ + m;
          if (tab_.ae[i][j] != 0.0) acc += tab_.ae[i][j] * k_explicit_[at];
          if (tab_.ai[i][j] != 0.0) acc += tab_.ai[i][j] * k_implicit_[at];
        }
        psi_[m] = u0[m] + h * acc;
      }
      double* Y = stage_state(i);
      // Predictor: the previous stage's implicit slope carried over the diagonal part.
      const double* previous = implicit_slope(i - 1);
      for (std::size_t m = 0; m < n_; ++m) Y[m] = psi_[m] + hg * previous[m];
      const double ti = t + tab_.c[i] * h;
      const AttemptStatus s = newton_.solve(system_, ti, hg, psi_.data(), Y, implicit_slope(i));
      if (s != AttemptStatus::Ok) return s;
      eval_.explicit_part(ti, Y, explicit_slope(i), scratch_.data());
    }
    for (std::size_t m = 0; m < n_; ++m) {
      double sum = 0, estimate_implicit = 0, estimate_explicit = 0;
      for (int j = 0; j < tab_.stages; ++j) {
        const std::size_t at = std::size_t(j) * n_ + m;
        if (tab_.b[j] != 0.0) sum += tab_.b[j] * (k_explicit_[at] + k_implicit_[at]);
        if (tab_.btilde[j] != 0.0) {
          estimate_implicit += tab_.btilde[j] * k_implicit_[at];
          estimate_explicit += tab_.btilde[j] * k_explicit_[at];
        }
      }
      u1[m] = u0[m] + h * sum;
      err[m] = h * estimate_implicit / hg;
      explicit_error_[m] = h * estimate_explicit;
    }
    // Shampine's filter on the implicit half's estimate only, as in the SDIRK stepper:
    // (I - h gamma J_I)^{-1} e_I keeps it bounded on stiff components, where the implicit slopes
    // are O(1/h). The explicit half's estimate is not filtered: its slopes are bounded, and the
    // error it measures (u1 leaves the slow manifold by h sum (b - ae_last) kE, because only the
    // implicit tableau is stiffly accurate) is not damped within the step. Filtering it too
    // divides it by ~h gamma lambda on stiff components, and the controller then takes steps
    // whose true error is far above the tolerance (measured: error 0.04 at rtol 1e-6 on
    // tests/method/test_imex.cpp's problem with lambda = 1e6).
    if (!system_.solve(err)) return AttemptStatus::LinearSolveFailed;
    for (std::size_t m = 0; m < n_; ++m) err[m] += explicit_error_[m];
    return AttemptStatus::Ok;
  }

  void state_changed() override { start_current_ = false; }

 private:
  double* explicit_slope(int i) { return k_explicit_.data() + std::size_t(i) * n_; }
  double* implicit_slope(int i) { return k_implicit_.data() + std::size_t(i) * n_; }

  const ArkTableau& tab_;
  Evaluator eval_;
  LinearSystem system_;
  NewtonSolver newton_;
  std::vector<double> k_explicit_, k_implicit_, psi_, scratch_, explicit_error_;
  bool start_current_ = false;
};

}  // namespace

std::unique_ptr<Stepper> make_ark_stepper(MethodId id, const Evaluator& eval,
                                          const IntegratorOptions& options) {
  return std::make_unique<ArkStepper>(ark_tableau(id), eval, options);
}

}  // namespace esi::method::detail
