// Rosenbrock (W-form) stepper, generic over RosenbrockTableau (transformed variables, see
// tableau.hpp). The Jacobian J = df/du and the time derivative f_t are evaluated once per
// state (t, u0) and reused by retries with a smaller h; only M = I/(gamma h) - J is refactored.
#include <algorithm>
#include <cmath>
#include <limits>

#include "method/stepper.hpp"
#include "method/tableau.hpp"

namespace esi::method::detail {
namespace {

class RosenbrockStepper final : public Stepper {
 public:
  RosenbrockStepper(MethodId id, const Evaluator& eval)
      : Stepper(eval.problem->size, rosenbrock_tableau(id).stages),
        tab_(rosenbrock_tableau(id)),
        eval_(eval),
        system_(eval, JacobianOf::Rhs),
        k_(n_ * tab_.stages),
        f_stage_(n_),
        f_last_(n_),
        f_t_(n_),
        fsal_(rosenbrock_is_fsal(tab_)),
        dense_(rosenbrock_dense(id)) {
    if (dense_) k_accepted_.assign(k_.size(), 0.0);  // only methods with their own interpolant
  }

  AttemptStatus attempt(double t, double h, const double* u0, const double* f0, double* u1,
                        double* err) override {
    if (!derivatives_current_) {
      system_.evaluate_jacobian(t, u0, f0);
      evaluate_time_derivative(t, h, u0, f0);
      derivatives_current_ = true;
    } else if (f_t_reach_ > h) {
      evaluate_time_derivative(t, h, u0, f0);  // a retry: keep the stencil inside the step
    }
    if (!system_.factorize(1.0 / (tab_.gamma * h))) return AttemptStatus::LinearSolveFailed;
    for (int i = 0; i < tab_.stages; ++i)
      if (!solve_stage(i, t, h, u0, f0)) return AttemptStatus::LinearSolveFailed;
    if (fsal_) {
      const double* last = stage_state(tab_.stages - 1);
      std::copy(last, last + n_, u1);
    } else {
      combine(u0, tab_.b, tab_.stages, u1);
    }
    combine(nullptr, tab_.btilde, tab_.stages, err);
    return AttemptStatus::Ok;
  }

  const double* f_at_end() const override { return fsal_ ? f_last_.data() : nullptr; }
  void state_changed() override { derivatives_current_ = false; }

  bool has_dense() const override { return dense_ != nullptr; }
  bool dense_uses_end() const override { return true; }

  // Rodas form (tableau.hpp): Horner in theta over K_rows-1 .. K_0, each K_r summed in stage
  // order so reruns are bitwise equal.
  void dense(double theta, const double* u0, const double* u1, double* out) const override {
    const int s = tab_.stages;
    for (std::size_t m = 0; m < n_; ++m) {
      double poly = 0;
      for (int r = dense_->rows - 1; r >= 0; --r) {
        const double* row = dense_->H[r];
        double kr = 0;
        for (int j = 0; j < s; ++j)
          if (row[j] != 0.0) kr += row[j] * k_accepted_[std::size_t(j) * n_ + m];
        poly = r == dense_->rows - 1 ? kr : kr + theta * poly;
      }
      out[m] = (1 - theta) * u0[m] + theta * (u1[m] + (1 - theta) * poly);
    }
  }

 private:
  double* slope(int i) { return k_.data() + std::size_t(i) * n_; }

  void commit_dense() override {
    if (dense_) k_accepted_.swap(k_);
  }

  // f_t by the second-order one-sided difference (4 f(t+d) - f(t+2d) - 3 f(t)) / (2d) with
  // d = min(eps^(1/3) max(|t|, |h|), h/2): O(d^2) accurate, so it stays below the local error
  // of the 4th/5th-order methods (a plain forward difference visibly flattened Rodas4's
  // convergence), and the stencil stays inside [t, t + h], so a retry with a smaller step never
  // evaluates the rhs beyond the end of the step (nor before t).
  void evaluate_time_derivative(double t, double h, const double* u0, const double* f0) {
    if (eval_.problem->autonomous) {
      std::fill(f_t_.begin(), f_t_.end(), 0.0);
      f_t_reach_ = 0;
      return;
    }
    const double d = std::min(std::cbrt(std::numeric_limits<double>::epsilon()) *
                                  std::max(std::abs(t), std::abs(h)),
                              0.5 * h);
    const double t1 = t + d, t2 = t + 2 * d;
    eval_.rhs(t1, u0, f_t_.data());
    eval_.rhs(t2, u0, f_stage_.data());
    const double applied = t1 - t;
    for (std::size_t m = 0; m < n_; ++m)
      f_t_[m] = (4 * f_t_[m] - f_stage_[m] - 3 * f0[m]) / (2 * applied);
    f_t_reach_ = t2 - t;
  }

  // Stage i: U_i = u0 + sum a_ij k_j; M k_i = f(U_i) + sum (C_ij/h) k_j + h d_i f_t.
  bool solve_stage(int i, double t, double h, const double* u0, const double* f0) {
    double* state = stage_state(i);
    combine(u0, tab_.a[i], i, state);
    const double* f = f0;
    if (i > 0) {
      double* target = (fsal_ && i == tab_.stages - 1) ? f_last_.data() : f_stage_.data();
      if (rosenbrock_stage_repeats_previous(tab_, i)) {
        // f at the previous stage's point (f0 or the stage buffer); an FSAL last stage keeps
        // its copy for the next step.
        f = stage_f_;
        if (target == f_last_.data()) f = std::copy(stage_f_, stage_f_ + n_, target) - n_;
      } else {
        eval_.rhs(t + tab_.c[i] * h, state, target);
        f = target;
      }
    }
    stage_f_ = f;
    double* k = slope(i);
    const double hd = h * tab_.d[i];
    for (std::size_t m = 0; m < n_; ++m) {
      double coupling = 0;
      for (int j = 0; j < i; ++j)
        if (tab_.C[i][j] != 0.0) coupling += (tab_.C[i][j] / h) * k_[std::size_t(j) * n_ + m];
      k[m] = f[m] + coupling + hd * f_t_[m];
    }
    return system_.solve(k);
  }

  void combine(const double* base, const double* w, int count, double* out) const {
    for (std::size_t m = 0; m < n_; ++m) {
      double acc = 0;
      for (int j = 0; j < count; ++j)
        if (w[j] != 0.0) acc += w[j] * k_[std::size_t(j) * n_ + m];
      out[m] = base ? base[m] + acc : acc;
    }
  }

  const RosenbrockTableau& tab_;
  Evaluator eval_;
  LinearSystem system_;
  std::vector<double> k_, f_stage_, f_last_, f_t_;
  const double* stage_f_ = nullptr;  // f at the point of the stage solved last
  bool fsal_;
  const RosenbrockDense* dense_;
  std::vector<double> k_accepted_;  // slopes of the last accepted step (dense output)
  bool derivatives_current_ = false;
  double f_t_reach_ = 0;  // 2d of the current f_t stencil
};

}  // namespace

std::unique_ptr<Stepper> make_rosenbrock_stepper(MethodId id, const Evaluator& eval) {
  return std::make_unique<RosenbrockStepper>(id, eval);
}

}  // namespace esi::method::detail
