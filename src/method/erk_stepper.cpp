// Explicit Runge-Kutta stepper, generic over ErkTableau. Sums run in stage order so results
// are bitwise reproducible.
#include "method/stepper.hpp"
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

  const ErkTableau& tab_;
  Evaluator eval_;
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
