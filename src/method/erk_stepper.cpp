// Explicit Runge-Kutta stepper, generic over ErkTableau. Sums run in stage order so results
// are bitwise reproducible.
#include <algorithm>
#include <cmath>

#include "method/derivatives.hpp"
#include "method/stepper.hpp"
#include "method/support.hpp"
#include "method/tableau.hpp"

namespace esi::method::detail {
namespace {

// A tableau is first-same-as-last when its last stage is evaluated at (t + h, u1).
bool is_fsal(const ErkTableau& tab) {
  const int last = tab.stages - 1;
  if (tab.stages < 2 || tab.c[last] != 1.0 || tab.b[last] != 0.0) return false;
  for (int j = 0; j < last; ++j)
    if (tab.a[last][j] != tab.b[j]) return false;
  return true;
}

bool has_estimate(const ErkTableau& tab) {
  for (int j = 0; j < tab.stages; ++j)
    if (tab.btilde[j] != 0.0) return true;
  return false;
}

class ErkStepper final : public Stepper {
 public:
  ErkStepper(MethodId id, const Evaluator& eval)
      : Stepper(eval.problem->size, erk_tableau(id).stages),
        tab_(erk_tableau(id)),
        eval_(eval),
        k_(n_ * tab_.stages),
        fsal_(is_fsal(tab_)),
        estimate_(has_estimate(tab_)),
        dense_(erk_dense(id)) {
    if (dense_) k_accepted_.assign(k_.size(), 0.0);  // only methods with their own interpolant
  }

  AttemptStatus attempt(double t, double h, const double* u0, const double* f0, double* u1,
                        double* err) override {
    h_ = h;
    std::copy(u0, u0 + n_, stage_state(0));
    std::copy(f0, f0 + n_, slope(0));
    for (int i = 1; i < tab_.stages; ++i) {
      combine(u0, h, tab_.a[i], i, stage_state(i));
      eval_.rhs(t + tab_.c[i] * h, stage_state(i), slope(i));
    }
    if (fsal_)
      std::copy(stage_state(tab_.stages - 1), stage_state(tab_.stages - 1) + n_, u1);
    else
      combine(u0, h, tab_.b, tab_.stages, u1);
    if (estimate_) combine(nullptr, h, tab_.btilde, tab_.stages, err);
    return AttemptStatus::Ok;
  }

  bool has_sensitivities() const override { return true; }
  // The adjoint and the tangent read only the stage states.
  std::size_t kept_size() const override { return stages_.size(); }
  void keep(double* out) const override { std::copy(stages_.begin(), stages_.end(), out); }
  bool restore(const StepRecord&, const double*, const double* kept) override {
    std::copy(kept, kept + stages_.size(), stages_.begin());
    return true;
  }

  // Y_i = u0 + h sum a_ij k_j, k_i = f(t_i, Y_i), u1 = u0 + h sum b_j k_j (an FSAL u1 = Y_last
  // is the same sum): the tangent follows the stages, the adjoint walks them backwards.
  void tangent(const StepRecord& r, Derivatives& d, const double*, const double* du0,
               const double* df0, const double* dp, double* du1) override {
    dk_.resize(k_.size());
    std::copy(df0, df0 + n_, dk_.begin());
    for (int i = 1; i < tab_.stages; ++i) {
      double* dk = dk_.data() + std::size_t(i) * n_;
      combine_slopes(dk_.data(), n_, du0, r.h, tab_.a[i], i, dk);  // dY_i, in place
      std::copy(dk, dk + n_, scratch(n_));
      std::fill(dk, dk + n_, 0.0);
      d.at(r.t + tab_.c[i] * r.h, stage_state(i));
      d.jv(scratch_.data(), dk);
      d.pv(dp, dk);
    }
    combine_slopes(dk_.data(), n_, du0, r.h, tab_.b, tab_.stages, du1);
  }

  void adjoint(const StepRecord& r, Derivatives& d, const double* u0, const double* lambda1,
               double* lambda0, double* lambda_f0, double* mu) override {
    const int s = tab_.stages;
    dk_.assign(k_.size(), 0.0);  // kappa_j: adjoint of slope j
    for (int j = 0; j < s; ++j)
      if (tab_.b[j] != 0.0)
        for (std::size_t m = 0; m < n_; ++m) dk_[std::size_t(j) * n_ + m] += r.h * tab_.b[j] * lambda1[m];
    std::copy(lambda1, lambda1 + n_, lambda0);
    double* adj_stage = scratch(n_);
    // The stage points and adjoint_step's f0, evaluated together.
    point_times_.clear();
    point_states_.clear();
    for (int i = 1; i < s; ++i) {
      point_times_.push_back(r.t + tab_.c[i] * r.h);
      point_states_.push_back(stage_state(i));
    }
    point_times_.push_back(r.f0_time);
    point_states_.push_back(u0);
    d.at_points(point_times_, point_states_);
    for (int i = s - 1; i >= 1; --i) {
      const double* kappa = dk_.data() + std::size_t(i) * n_;
      std::fill(adj_stage, adj_stage + n_, 0.0);
      d.at(r.t + tab_.c[i] * r.h, stage_state(i));
      d.vjp(kappa, adj_stage, mu);
      for (std::size_t m = 0; m < n_; ++m) lambda0[m] += adj_stage[m];
      for (int j = 0; j < i; ++j)
        if (tab_.a[i][j] != 0.0)
          for (std::size_t m = 0; m < n_; ++m)
            dk_[std::size_t(j) * n_ + m] += r.h * tab_.a[i][j] * adj_stage[m];
    }
    std::copy(dk_.begin(), dk_.begin() + long(n_), lambda_f0);
  }

  // Hairer's estimate (Solving ODEs II, IV.2; what OrdinaryDiffEq's Tsit5 reports to its
  // AutoSwitch): the last two stages of a first-same-as-last pair both sit at t + h, so
  // |k_s - k_{s-1}| / |g_s - g_{s-1}| is a difference quotient of f along u there. Both norms
  // weigh component m by 1 / (atol + rtol |u_m|), the weights of the error test: unweighted,
  // species of large magnitude decide the direction and a stiff species present in traces
  // (an ozone box's O(1D), NO3) goes unseen while it holds Tsit5 at its stability limit.
  double eigen_estimate(double rtol, double atol, const double* atol_each) const override {
    const int s = tab_.stages;
    if (!fsal_ || s < 3 || tab_.c[s - 2] != 1.0) return -1;
    const double* k1 = k_.data() + std::size_t(s - 1) * n_;
    const double* k0 = k_.data() + std::size_t(s - 2) * n_;
    const double* g1 = stages_.data() + std::size_t(s - 1) * n_;
    const double* g0 = stages_.data() + std::size_t(s - 2) * n_;
    const double* u0 = stages_.data();
    double num = 0, den = 0;
    for (std::size_t m = 0; m < n_; ++m) {
      const double w = 1 / (atol_at(atol, atol_each, m) + rtol * std::max(std::abs(u0[m]), std::abs(g1[m])));
      const double dk = w * (k1[m] - k0[m]), dg = w * (g1[m] - g0[m]);
      num += dk * dk, den += dg * dg;
    }
    return den > 0 ? std::sqrt(num / den) : 0.0;
  }

  const double* f_at_end() const override {
    return fsal_ ? k_.data() + std::size_t(tab_.stages - 1) * n_ : nullptr;
  }

  bool has_dense() const override { return dense_ != nullptr; }

  // u0 + h sum_i w_i(theta) k_i; u1 is not read (the polynomial ends at the unmodified u1).
  void dense(double theta, const double* u0, const double*, double* out) const override {
    double w[kMaxStages] = {};
    for (int i = 0; i < tab_.stages; ++i) {
      const double* r = dense_->r[i];
      w[i] = theta * (r[0] + theta * (r[1] + theta * (r[2] + theta * r[3])));
    }
    for (std::size_t m = 0; m < n_; ++m) {
      double acc = 0;
      for (int j = 0; j < tab_.stages; ++j) acc += w[j] * k_accepted_[std::size_t(j) * n_ + m];
      out[m] = u0[m] + h_accepted_ * acc;
    }
  }

 private:
  double* slope(int i) { return k_.data() + std::size_t(i) * n_; }

  // Called after the Integrator has copied f_at_end() (which points into k_).
  void commit_dense() override {
    if (!dense_) return;
    k_accepted_.swap(k_);
    h_accepted_ = h_;
  }

  // out = base + h * sum_{j < count} w[j] k_j (base == nullptr: no base term).
  void combine(const double* base, double h, const double* w, int count, double* out) {
    combine_slopes(k_.data(), n_, base, h, w, count, out);
  }

  double* scratch(std::size_t n) {
    scratch_.resize(n);
    return scratch_.data();
  }

  const ErkTableau& tab_;
  Evaluator eval_;
  std::vector<double> dk_, scratch_;  // sensitivities: slope tangents or adjoints
  std::vector<double> point_times_;
  std::vector<const double*> point_states_;
  std::vector<double> k_;  // k_[i*n + m]: slope of stage i, component m
  bool fsal_, estimate_;
  const ErkDense* dense_;
  std::vector<double> k_accepted_;  // slopes of the last accepted step (dense output)
  double h_ = 0, h_accepted_ = 0;
};

}  // namespace

std::unique_ptr<Stepper> make_erk_stepper(MethodId id, const Evaluator& eval) {
  return std::make_unique<ErkStepper>(id, eval);
}

}  // namespace esi::method::detail
