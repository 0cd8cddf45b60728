// ESDIRK steppers (generic over SdirkTableau) and IMEX Euler, sharing one simplified Newton
// iteration (Hairer-Wanner IV.8): the Jacobian is taken at (t, u0) once per state, the matrix
// M = I/(h gamma) - J is factorized once per attempt, and the iteration stops by the
// convergence-rate test eta * ||dY|| <= kappa (eta = theta / (1 - theta)). A diverging or
// slow iteration is a failed attempt, which the integrator retries with a smaller step.
#include <cmath>
#include <limits>

#include "method/newton.hpp"
#include "method/stepper.hpp"
#include "method/tableau.hpp"

namespace esi::method::detail {
namespace {

bool stiffly_accurate(const SdirkTableau& tab) {
  const int last = tab.stages - 1;
  for (int j = 0; j <= last; ++j)
    if ((j < last ? tab.a[last][j] : tab.gamma) != tab.b[j]) return false;
  return true;
}

class SdirkStepper final : public Stepper {
 public:
  SdirkStepper(const SdirkTableau& tab, const Evaluator& eval, const IntegratorOptions& options)
      : Stepper(eval.problem->size, tab.stages),
        tab_(tab),
        system_(eval, JacobianOf::Rhs),
        newton_(eval, JacobianOf::Rhs, options),
        k_(n_ * tab.stages),
        psi_(n_),
        stiffly_accurate_(stiffly_accurate(tab)) {}

  AttemptStatus attempt(double t, double h, const double* u0, const double* f0, double* u1,
                        double* err) override {
    if (!jacobian_current_) system_.evaluate_jacobian(t, u0, f0), jacobian_current_ = true;
    const double hg = h * tab_.gamma;
    if (!system_.factorize(1.0 / hg)) return AttemptStatus::LinearSolveFailed;
    newton_.set_weights(u0);
    std::copy(u0, u0 + n_, stage_state(0));
    std::copy(f0, f0 + n_, slope(0));
    for (int i = 1; i < tab_.stages; ++i) {
      combine(u0, h, tab_.a[i], i, psi_.data());
      double* Y = stage_state(i);
      // Predictor: the previous stage's slope carried over the diagonal part.
      for (std::size_t m = 0; m < n_; ++m) Y[m] = psi_[m] + hg * slope(i - 1)[m];
      const AttemptStatus s = newton_.solve(system_, t + tab_.c[i] * h, hg, psi_.data(), Y, slope(i));
      if (s != AttemptStatus::Ok) return s;
    }
    const double* last = stage_state(tab_.stages - 1);
    if (stiffly_accurate_)
      std::copy(last, last + n_, u1);
    else
      combine(u0, h, tab_.b, tab_.stages, u1);
    // Shampine's filter keeps the estimate bounded on stiff components: err = (I - hgJ)^-1 e.
    combine(nullptr, h, tab_.btilde, tab_.stages, err);
    for (std::size_t m = 0; m < n_; ++m) err[m] /= hg;
    if (!system_.solve(err)) return AttemptStatus::LinearSolveFailed;
    return AttemptStatus::Ok;
  }

  void state_changed() override { jacobian_current_ = false; }

 private:
  double* slope(int i) { return k_.data() + std::size_t(i) * n_; }

  void combine(const double* base, double h, const double* w, int count, double* out) const {
    combine_slopes(k_.data(), n_, base, h, w, count, out);
  }

  const SdirkTableau& tab_;
  LinearSystem system_;
  NewtonSolver newton_;
  std::vector<double> k_, psi_;
  bool stiffly_accurate_;
  bool jacobian_current_ = false;
};

// IMEX Euler: u1 = u0 + h f_E(t, u0) + h f_I(t + h, u1), fixed step.
class ImexEulerStepper final : public Stepper {
 public:
  ImexEulerStepper(const Evaluator& eval, const IntegratorOptions& options)
      : Stepper(eval.problem->size, 1),
        eval_(eval),
        system_(eval, JacobianOf::ImplicitPart),
        newton_(eval, JacobianOf::ImplicitPart, options),
        f_explicit_(n_),
        f_implicit_(n_),
        psi_(n_),
        slope_(n_) {}

  AttemptStatus attempt(double t, double h, const double* u0, const double*, double* u1,
                        double*) override {
    if (!split_current_) {
      eval_.split(t, u0, f_explicit_.data(), f_implicit_.data());
      system_.evaluate_jacobian(t, u0, f_implicit_.data());
      split_current_ = true;
    }
    if (!system_.factorize(1.0 / h)) return AttemptStatus::LinearSolveFailed;
    newton_.set_weights(u0);
    double* Y = stage_state(0);
    for (std::size_t m = 0; m < n_; ++m) {
      psi_[m] = u0[m] + h * f_explicit_[m];
      Y[m] = psi_[m] + h * f_implicit_[m];
    }
    const AttemptStatus s = newton_.solve(system_, t + h, h, psi_.data(), Y, slope_.data());
    if (s != AttemptStatus::Ok) return s;
    std::copy(Y, Y + n_, u1);
    return AttemptStatus::Ok;
  }

  void state_changed() override { split_current_ = false; }

 private:
  Evaluator eval_;
  LinearSystem system_;
  NewtonSolver newton_;
  std::vector<double> f_explicit_, f_implicit_, psi_, slope_;
  bool split_current_ = false;
};

}  // namespace

std::unique_ptr<Stepper> make_implicit_stepper(MethodId id, const Evaluator& eval,
                                               const IntegratorOptions& options) {
  if (id == MethodId::IMEXEuler) return std::make_unique<ImexEulerStepper>(eval, options);
  if (family_of(id) == Family::Imex) return make_ark_stepper(id, eval, options);
  return std::make_unique<SdirkStepper>(sdirk_tableau(id), eval, options);
}

}  // namespace esi::method::detail
