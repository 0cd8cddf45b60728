// ESDIRK steppers (generic over SdirkTableau) and IMEX Euler, sharing one simplified Newton
// iteration (Hairer-Wanner IV.8): the Jacobian is taken at (t, u0) once per state, the matrix
// M = I/(h gamma) - J is factorized once per attempt, and the iteration stops by the
// convergence-rate test eta * ||dY|| <= kappa (eta = theta / (1 - theta)). A diverging or
// slow iteration is a failed attempt, which the integrator retries with a smaller step.
#include <cmath>
#include <limits>
#include <optional>

#include "method/derivatives.hpp"
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
        stiffly_accurate_(stiffly_accurate(tab)),
        eval_(eval) {}

  AttemptStatus attempt(double t, double h, const double* u0, const double* f0, double* u1,
                        double* err) override {
    rate_at_start_ = newton_.rate();
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

  // ---- Sensitivities at the converged stages (seed D42): Y_i = psi_i + h gamma k_i with
  // k_i = f(t_i, Y_i), so dY_i = M_i^{-1} (dpsi_i / (h gamma) + f_p dp) with
  // M_i = I/(h gamma) - J(t_i, Y_i), and dk_i = J dY_i + f_p dp. The Newton iteration's own
  // path is not differentiated: its result is, to the Newton tolerance, the stage solution.
  bool has_sensitivities() const override { return true; }
  void describe_attempt(StepRecord& r) const override { r.newton_rate = rate_at_start_; }
  // The sweeps read the converged stage values only (they refactorize at each stage).
  std::size_t kept_size() const override { return stages_.size(); }
  void keep(double* out) const override { std::copy(stages_.begin(), stages_.end(), out); }
  bool restore(const StepRecord&, const double*, const double* kept) override {
    std::copy(kept, kept + stages_.size(), stages_.begin());
    return true;
  }
  AttemptStatus replay(const StepRecord& r, const double* u0, const double* f0, double* u1,
                       double* err) override {
    state_changed();
    newton_.set_rate(r.newton_rate);
    return attempt(r.t, r.h, u0, f0, u1, err);
  }

  void tangent(const StepRecord& r, Derivatives& d, const double*, const double* du0,
               const double* df0, const double* dp, double* du1) override {
    const double hg = r.h * tab_.gamma;
    dk_.assign(k_.size(), 0.0);
    std::copy(df0, df0 + n_, dk_.begin());
    scratch_.resize(2 * n_);
    double* dpsi = scratch_.data();
    double* dY = scratch_.data() + n_;
    for (int i = 1; i < tab_.stages; ++i) {
      combine_slopes(dk_.data(), n_, du0, r.h, tab_.a[i], i, dpsi);
      at_stage(r, d, i, hg);
      for (std::size_t m = 0; m < n_; ++m) dY[m] = dpsi[m] / hg;
      d.pv(dp, dY);
      (void)stage_system_->sensitivity_solve(dY, false);
      double* dk = dk_.data() + std::size_t(i) * n_;
      d.jv(dY, dk);
      d.pv(dp, dk);
    }
    combine_slopes(dk_.data(), n_, du0, r.h, tab_.b, tab_.stages, du1);
  }

  void adjoint(const StepRecord& r, Derivatives& d, const double*, const double* lambda1,
               double* lambda0, double* lambda_f0, double* mu) override {
    const double hg = r.h * tab_.gamma;
    dk_.assign(k_.size(), 0.0);
    for (int j = 0; j < tab_.stages; ++j)
      if (tab_.b[j] != 0.0)
        for (std::size_t m = 0; m < n_; ++m) dk_[std::size_t(j) * n_ + m] = r.h * tab_.b[j] * lambda1[m];
    std::copy(lambda1, lambda1 + n_, lambda0);
    scratch_.resize(n_);
    double* zeta = scratch_.data();
    for (int i = tab_.stages - 1; i >= 1; --i) {
      const double* kappa = dk_.data() + std::size_t(i) * n_;
      at_stage(r, d, i, hg);
      d.ptw(kappa, mu);
      std::fill(zeta, zeta + n_, 0.0);
      d.jtw(kappa, zeta);
      (void)stage_system_->sensitivity_solve(zeta, true);
      d.ptw(zeta, mu);
      for (std::size_t m = 0; m < n_; ++m) {
        zeta[m] /= hg;  // the adjoint of psi_i
        lambda0[m] += zeta[m];
      }
      for (int j = 0; j < i; ++j)
        if (tab_.a[i][j] != 0.0)
          for (std::size_t m = 0; m < n_; ++m) dk_[std::size_t(j) * n_ + m] += r.h * tab_.a[i][j] * zeta[m];
    }
    std::copy(dk_.begin(), dk_.begin() + long(n_), lambda_f0);
  }

 private:
  double* slope(int i) { return k_.data() + std::size_t(i) * n_; }

  void combine(const double* base, double h, const double* w, int count, double* out) const {
    combine_slopes(k_.data(), n_, base, h, w, count, out);
  }

  // J and M at converged stage i (one Jacobian and one factorization per stage).
  void at_stage(const StepRecord& r, Derivatives& d, int i, double hg) {
    const double ti = r.t + tab_.c[i] * r.h;
    if (!stage_system_) stage_system_.emplace(eval_, JacobianOf::Rhs);
    stage_system_->evaluate_jacobian(ti, stage_state(i), nullptr);
    (void)stage_system_->factorize(1.0 / hg);
    d.at(ti, stage_state(i), stage_system_->jacobian_values());
  }

  const SdirkTableau& tab_;
  LinearSystem system_;
  NewtonSolver newton_;
  std::vector<double> k_, psi_;
  bool stiffly_accurate_;
  bool jacobian_current_ = false;
  double rate_at_start_ = 1;
  Evaluator eval_;
  std::optional<LinearSystem> stage_system_;  // sensitivities: M at a converged stage
  std::vector<double> dk_, scratch_;
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
