// Rosenbrock (W-form) stepper, generic over RosenbrockTableau (transformed variables, see
// tableau.hpp). The Jacobian J = df/du and the time derivative f_t are evaluated once per
// state (t, u0) and reused by retries with a smaller h; only M = I/(gamma h) - J is refactored.
#include <algorithm>
#include <cmath>
#include <limits>

#include "method/derivatives.hpp"
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

  // ||J||_inf at the step's start, an upper bound of its spectral radius (OrdinaryDiffEq's
  // Rosenbrock methods report the same to their AutoSwitch).
  double eigen_estimate(double, double, const double*) const override { return system_.gershgorin_bound(); }

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

  bool has_sensitivities() const override { return true; }
  void describe_attempt(StepRecord& r) const override { r.ft_h = ft_h_; }

  AttemptStatus replay(const StepRecord& r, const double* u0, const double* f0, double* u1,
                       double* err) override {
    system_.evaluate_jacobian(r.t, u0, f0);
    evaluate_time_derivative(r.t, r.ft_h, u0, f0);
    derivatives_current_ = true;
    return attempt(r.t, r.h, u0, f0, u1, err);
  }

  // Slopes, stage states, J(t, u0), M's factors and the f_t stencil: a restore copies them
  // instead of replaying the step (J, LU, the stage right-hand sides and solves).
  // The slopes, J and a planned sparse LU's factors are kept; the stage states are not: they
  // are sums of u0 and the slopes (combine, the forward's own arithmetic, so the same bits),
  // and recomputing them costs less than the fresh tape pages storing them touches (about
  // 0.45 us per KB on this VM). A dense LU is refactorized for the same reason: its n^2
  // values cost POLLU's forward run more than its sweep saves (bench/RESULTS.md, row 28).
  std::size_t kept_size() const override {
    return k_.size() + system_.jacobian_size() + system_.factor_size() + 3;
  }
  void keep(double* out) const override {
    out = std::copy(k_.begin(), k_.end(), out);
    const double* j = system_.jacobian_values();
    out = std::copy(j, j + system_.jacobian_size(), out);
    system_.save_factors(out);
    out += system_.factor_size();
    out[0] = ft_t1_, out[1] = ft_t2_, out[2] = ft_applied_;
  }
  bool restore(const StepRecord& r, const double* u0, const double* kept) override {
    std::copy(kept, kept + k_.size(), k_.begin());
    kept += k_.size();
    for (int i = 0; i < tab_.stages; ++i) combine(u0, tab_.a[i], i, stage_state(i));
    if (!system_.load_jacobian(kept)) return false;
    kept += system_.jacobian_size();
    const bool factors = system_.load_factors(kept);
    kept += system_.factor_size();
    ft_t1_ = kept[0], ft_t2_ = kept[1], ft_applied_ = kept[2];
    derivatives_current_ = false;  // a later attempt() must not reuse this J
    return factors || system_.factorize(1.0 / (tab_.gamma * r.h));
  }

  void tangent(const StepRecord& r, Derivatives& d, const double* u0, const double* du0,
               const double* df0, const double* dp, double* du1) override;
  void adjoint(const StepRecord& r, Derivatives& d, const double* u0, const double* lambda1,
               double* lambda0, double* lambda_f0, double* mu) override;

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
    ft_h_ = h;
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
    ft_t1_ = t1, ft_t2_ = t2, ft_applied_ = applied;
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
  double ft_h_ = 0;       // the attempt size the current f_t was made for
  double ft_t1_ = 0, ft_t2_ = 0, ft_applied_ = 0;  // its stencil (non-autonomous problems)
  std::vector<double> dk_, dt_, xi_, phi_pending_, scratch_, outer_;  // sensitivity buffers
  std::vector<double> point_times_;
  std::vector<const double*> point_states_;
};

// Tangent of M k_i = F_i + sum (C_ij/h) k_j + h d_i f_t with M = I/(gamma h) - J(t, u0):
// M dk_i = dF_i + sum (C_ij/h) dk_j + h d_i df_t + dJ[du0, dp] k_i.
void RosenbrockStepper::tangent(const StepRecord& r, Derivatives& d, const double* u0,
                                const double* du0, const double* df0, const double* dp,
                                double* du1) {
  const int s = tab_.stages;
  const double h = r.h;
  dk_.assign(k_.size(), 0.0);
  dt_.assign(n_, 0.0);
  scratch_.resize(2 * n_);
  double* dF = scratch_.data();
  double* dU = scratch_.data() + n_;
  if (!eval_.problem->autonomous) {  // df_t = (4 df(t1) - df(t2) - 3 df0) / (2 applied)
    std::fill(dF, dF + n_, 0.0);
    d.at(ft_t1_, u0), d.jv(du0, dF), d.pv(dp, dF);
    std::fill(dU, dU + n_, 0.0);
    d.at(ft_t2_, u0), d.jv(du0, dU), d.pv(dp, dU);
    for (std::size_t m = 0; m < n_; ++m)
      dt_[m] = (4 * dF[m] - dU[m] - 3 * df0[m]) / (2 * ft_applied_);
  }
  for (int i = 0; i < s; ++i) {
    double* dk = dk_.data() + std::size_t(i) * n_;
    if (i == 0) {
      std::copy(df0, df0 + n_, dF);
    } else if (!rosenbrock_stage_repeats_previous(tab_, i)) {
      combine_slopes(dk_.data(), n_, du0, 1.0, tab_.a[i], i, dU);
      std::fill(dF, dF + n_, 0.0);
      d.at(r.t + tab_.c[i] * h, stage_state(i));
      d.jv(dU, dF), d.pv(dp, dF);
    }  // a repeated stage has the previous stage's dF
    for (std::size_t m = 0; m < n_; ++m) {
      double coupling = 0;
      for (int j = 0; j < i; ++j)
        if (tab_.C[i][j] != 0.0) coupling += (tab_.C[i][j] / h) * dk_[std::size_t(j) * n_ + m];
      dk[m] = dF[m] + coupling + h * tab_.d[i] * dt_[m];
    }
    d.at(r.t, u0, system_.jacobian_values());
    d.hessian_tangent(du0, dp, slope(i), dk);
    (void)system_.sensitivity_solve(dk, false);
  }
  combine_slopes(dk_.data(), n_, du0, 1.0, tab_.b, s, du1);
}

// The transpose of tangent(), stages last to first: kappa_j is the adjoint of k_j, xi the
// adjoint of stage i's right-hand side (M^T xi = kappa_i), phi the adjoint of F_i.
void RosenbrockStepper::adjoint(const StepRecord& r, Derivatives& d, const double* u0,
                                const double* lambda1, double* lambda0, double* lambda_f0,
                                double* mu) {
  const int s = tab_.stages;
  const double h = r.h;
  dk_.assign(k_.size(), 0.0);
  for (int j = 0; j < s; ++j)
    if (tab_.b[j] != 0.0)
      for (std::size_t m = 0; m < n_; ++m) dk_[std::size_t(j) * n_ + m] = tab_.b[j] * lambda1[m];
  std::copy(lambda1, lambda1 + n_, lambda0);
  dt_.assign(n_, 0.0);
  phi_pending_.assign(n_, 0.0);
  outer_.assign(eval_.problem->jac_col.size(), 0.0);
  xi_.resize(n_);
  scratch_.resize(n_);
  double* adj_stage = scratch_.data();
  // Every point the sweep below and adjoint_step's f0 ask products at, evaluated together.
  point_times_.clear();
  point_states_.clear();
  for (int i = 1; i < s; ++i)
    if (!rosenbrock_stage_repeats_previous(tab_, i)) {
      point_times_.push_back(r.t + tab_.c[i] * h);
      point_states_.push_back(stage_state(i));
    }
  point_times_.push_back(r.f0_time);
  point_states_.push_back(u0);
  if (!eval_.problem->autonomous)
    for (double time : {ft_t1_, ft_t2_}) {
      point_times_.push_back(time);
      point_states_.push_back(u0);
    }
  d.at_points(point_times_, point_states_);
  for (int i = s - 1; i >= 0; --i) {
    std::copy(dk_.begin() + long(i * n_), dk_.begin() + long((i + 1) * n_), xi_.begin());
    (void)system_.sensitivity_solve(xi_.data(), true);
    for (int j = 0; j < i; ++j)
      if (tab_.C[i][j] != 0.0)
        for (std::size_t m = 0; m < n_; ++m) dk_[std::size_t(j) * n_ + m] += (tab_.C[i][j] / h) * xi_[m];
    if (tab_.d[i] != 0.0)
      for (std::size_t m = 0; m < n_; ++m) dt_[m] += h * tab_.d[i] * xi_[m];
    d.add_outer(xi_.data(), slope(i), outer_.data());  // xi_i^T dJ k_i, contracted below
    for (std::size_t m = 0; m < n_; ++m) xi_[m] += phi_pending_[m];  // now phi_i
    std::fill(phi_pending_.begin(), phi_pending_.end(), 0.0);
    if (i == 0) break;
    if (rosenbrock_stage_repeats_previous(tab_, i)) {
      phi_pending_.swap(xi_);
      continue;
    }
    std::fill(adj_stage, adj_stage + n_, 0.0);
    d.at(r.t + tab_.c[i] * h, stage_state(i));
    d.vjp(xi_.data(), adj_stage, mu);
    for (std::size_t m = 0; m < n_; ++m) lambda0[m] += adj_stage[m];
    for (int j = 0; j < i; ++j)
      if (tab_.a[i][j] != 0.0)
        for (std::size_t m = 0; m < n_; ++m) dk_[std::size_t(j) * n_ + m] += tab_.a[i][j] * adj_stage[m];
  }
  std::copy(xi_.begin(), xi_.end(), lambda_f0);  // phi_0
  d.at(r.t, u0, system_.jacobian_values());
  d.hessian_adjoint_weighted(outer_.data(), lambda0, mu);
  if (eval_.problem->autonomous) return;
  const double w1 = 4 / (2 * ft_applied_), w2 = -1 / (2 * ft_applied_), w0 = -3 / (2 * ft_applied_);
  for (std::size_t m = 0; m < n_; ++m) lambda_f0[m] += w0 * dt_[m];
  for (const auto& [time, w] : {std::pair{ft_t1_, w1}, std::pair{ft_t2_, w2}}) {
    for (std::size_t m = 0; m < n_; ++m) adj_stage[m] = w * dt_[m];
    d.at(time, u0);
    d.vjp(adj_stage, lambda0, mu);
  }
}

}  // namespace

std::unique_ptr<Stepper> make_rosenbrock_stepper(MethodId id, const Evaluator& eval) {
  return std::make_unique<RosenbrockStepper>(id, eval);
}

}  // namespace esi::method::detail
