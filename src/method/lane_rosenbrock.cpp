// Rosenbrock steps over lanes (lane_rosenbrock.hpp): the stages, the step controllers and the
// starting steps of every lane of a block at once. Hand-written rather than a SUNDIALS batch:
// each lane keeps its own step size and controller while the linear algebra runs over all
// lanes (the planned lane-batched LU), and the bits must not depend on a lane's position.
#include "esi/method/lane_rosenbrock.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "esi/core/error.hpp"
#include "method/controller.hpp"
#include "method/step_rules.hpp"
#include "method/support.hpp"
#include "method/tableau.hpp"

namespace esi::method {

using namespace detail;

bool LaneRosenbrock::supports(MethodId method) {
  return family_of(method) == Family::Rosenbrock;
}

LaneRosenbrock::LaneRosenbrock(LaneProblem& problem, const linalg::SparseLuPlan& lu,
                               std::size_t n, const LaneStepOptions& options, std::size_t lanes)
    : problem_(problem),
      lu_plan_(lu),
      opt_(options),
      tab_(rosenbrock_tableau(options.method)),
      L_(lanes),
      widest_(lanes),
      n_(n) {
  ESI_ASSERT(opt_.atol.size() == n_);
  const auto& info = method_info(opt_.method);
  order_ = info.order;
  control_order_ = std::max(1, std::min(info.order, info.embedded_order + 1));
  fsal_ = rosenbrock_is_fsal(tab_);
  set_width(L_);
}

LaneRosenbrock::~LaneRosenbrock() = default;

void LaneRosenbrock::set_width(std::size_t width) {
  ESI_ASSERT(width <= widest_);
  L_ = width;
  const std::size_t nl = n_ * L_;
  u0_.resize(nl), f0_.resize(nl), u1_.resize(nl), us_.resize(nl), fs_.resize(nl), ft_.resize(nl);
  k_.resize(nl * std::size_t(tab_.stages));
  lu_.resize(lu_plan_.nonzeros() * L_);
  t_.resize(L_), h_.resize(L_), hh_.resize(L_), tt_.resize(L_), shift_.resize(L_);
  scale_.resize(L_), lands_.resize(L_), failed_.resize(L_), take_.resize(L_);
  status_.resize(L_), enorm_.resize(L_), nonfinite_.resize(L_);
  coef_.resize(std::size_t(tab_.stages) * L_);
  ctl_.resize(L_);
  for (auto& c : ctl_)
    if (!c) c = make_controller(opt_.controller, opt_.method);
}

void LaneRosenbrock::narrow(std::span<const std::size_t> keep, std::size_t width) {
  ESI_ASSERT(keep.size() <= width && width < L_);
  auto restride = [&](linalg::LaneVector<double>& v) {
    for (std::size_t i = 0; i < n_; ++i)  // row i moves down to i * width: never overtakes
      for (std::size_t j = 0; j < keep.size(); ++j) v[i * width + j] = v[i * L_ + keep[j]];
  };
  restride(u0_);
  restride(f0_);
  for (std::size_t j = 0; j < keep.size(); ++j) {
    t_[j] = t_[keep[j]];
    h_[j] = h_[keep[j]];
    status_[j] = status_[keep[j]];
    std::swap(ctl_[j], ctl_[keep[j]]);
  }
  for (std::size_t j = keep.size(); j < width; ++j) status_[j] = {};
  set_width(width);
}

void LaneRosenbrock::start_lane(std::size_t l, double t0, double h) {
  t_[l] = t0;
  h_[l] = h;
  status_[l] = {};
  status_[l].fresh = !(h > 0);
  status_[l].needs_f0 = true;
  ctl_[l]->reset();
}

// Hairer's weighted RMS for lane l of `v` against u0 and (optionally) u1.
double LaneRosenbrock::norm(const double* v, const double* u1, std::size_t l) const {
  double sum = 0;
  for (std::size_t i = 0; i < n_; ++i) {
    const double a = std::abs(u0_[i * L_ + l]);
    const double b = u1 ? std::abs(u1[i * L_ + l]) : a;
    const double w = v[i * L_ + l] / (opt_.atol[i] + opt_.rtol * std::max(a, b));
    sum += w * w;
  }
  return std::sqrt(sum / double(n_));
}

double LaneRosenbrock::dt_min_at(std::size_t l) const {
  return opt_.dt_min > 0 ? opt_.dt_min : default_dt_min(t_[l]);
}

void LaneRosenbrock::rhs(const double* t, const double* u, double* du) {
  problem_.rhs(L_, t, u, du);
  rhs_calls += long(L_);
}

// f(t, u0) only for lanes that lack it, written into those lanes only (an FSAL lane keeps the
// f its last stage computed, as the scalar Integrator does), then the starting steps of the
// lanes that start.
void LaneRosenbrock::derivatives() {
  bool any_f0 = false, any_fresh = false;
  for (std::size_t l = 0; l < L_; ++l) {
    take_[l] = status_[l].needs_f0;
    any_f0 = any_f0 || status_[l].needs_f0;
    status_[l].needs_f0 = false;
  }
  if (any_f0) {
    rhs(t_.data(), u0_.data(), fs_.data());
    linalg::lane_select(n_, int(L_), take_.data(), fs_.data(), f0_.data());
  }
  for (const Status& s : status_) any_fresh = any_fresh || s.fresh;
  if (any_fresh) starting_steps();
}

// Hairer, Nørsett & Wanner I, II.4, per lane, as support.cpp's hairer_initial_step.
void LaneRosenbrock::starting_steps() {
  for (std::size_t l = 0; l < L_; ++l) {
    // A lane past its start evaluates the trial point too (one call for the block), at its own
    // state; what it yields is never read. Its two norms are skipped: a refill starts one lane
    // at a time, and the norms of every lane (272 divisions each) were ~3 % of a fullchem run.
    if (!status_[l].fresh) {
      scale_[l] = 0;
      tt_[l] = t_[l];
      continue;
    }
    const double d0 = norm(u0_.data(), nullptr, l), d1 = norm(f0_.data(), nullptr, l);
    scale_[l] = hairer_trial_step(d0, d1);  // h0 per lane
    tt_[l] = t_[l] + scale_[l];
  }
  for (std::size_t i = 0; i < n_; ++i)
    for (std::size_t l = 0; l < L_; ++l)
      us_[i * L_ + l] = u0_[i * L_ + l] + scale_[l] * f0_[i * L_ + l];
  rhs(tt_.data(), us_.data(), fs_.data());
  for (std::size_t i = 0; i < n_ * L_; ++i) fs_[i] -= f0_[i];
  for (std::size_t l = 0; l < L_; ++l) {
    if (!status_[l].fresh) continue;
    const double h0 = scale_[l];
    const double d1 = norm(f0_.data(), nullptr, l);
    const double d2 = norm(fs_.data(), nullptr, l) / h0;
    h_[l] = hairer_starting_step(h0, d1, d2, order_);
    status_[l].fresh = false;
  }
}

// f_t by the scalar stepper's second-order one-sided difference, per lane (stencil inside
// [t, t + hh]).
void LaneRosenbrock::time_derivative() {
  const double cbrt_eps = std::cbrt(std::numeric_limits<double>::epsilon());
  for (std::size_t l = 0; l < L_; ++l) {
    const double d = std::min(cbrt_eps * std::max(std::abs(t_[l]), std::abs(hh_[l])), 0.5 * hh_[l]);
    tt_[l] = t_[l] + d;
    shift_[l] = t_[l] + 2 * d;  // borrowed as the second time
  }
  rhs(tt_.data(), u0_.data(), ft_.data());
  rhs(shift_.data(), u0_.data(), fs_.data());
  for (std::size_t l = 0; l < L_; ++l) scale_[l] = 2 * (tt_[l] - t_[l]);
  for (std::size_t i = 0; i < n_; ++i)
    for (std::size_t l = 0; l < L_; ++l) {
      const std::size_t x = i * L_ + l;
      ft_[x] = (4 * ft_[x] - fs_[x] - 3 * f0_[x]) / scale_[l];
    }
}

// One Rosenbrock attempt for every lane with its own hh_[l]; u1_ and the error norms enorm_
// out, failed_ set for lanes whose iteration matrix had a tiny pivot. The lane loops over
// whole vectors are linalg's lane operations (lane_ops.hpp: compile-time width, AVX2/AVX-512
// clones).
void LaneRosenbrock::attempt() {
  // J at (t, u0) again for every attempt (the factorisation overwrites it; a lane whose (t,
  // u0) did not change gets the same bits), formed into s I - J and factored in place.
  problem_.jacobian(L_, t_.data(), u0_.data(), lu_.data());
  jacobian_calls += long(L_);
  for (std::size_t l = 0; l < L_; ++l) shift_[l] = 1.0 / (tab_.gamma * hh_[l]);
  std::fill(failed_.begin(), failed_.end(), 0);
  linalg::lu_factor_shifted(lu_plan_, lu_.data(), shift_.data(), int(L_),
                            std::span<std::uint8_t>(failed_));
  factorizations += long(L_);
  const std::size_t nl = n_ * L_;
  const double* f = nullptr;  // f at stage i's point
  bool stage_at_u0 = true;    // stage i's point is u0 itself (us_ not formed)
  for (int i = 0; i < tab_.stages; ++i) {
    // U_i = u0 + sum_j a_ij k_j (zero weights skipped, sums in stage order); stage 0 reads
    // f0 = f(u0) and no U_0.
    // A stage at the previous stage's point reuses its f (and, from stage 0, f0 and u0).
    if (i == 0) {
      f = f0_.data();
      stage_at_u0 = true;
    } else if (!rosenbrock_stage_repeats_previous(tab_, i)) {
      combine(u0_.data(), tab_.a[i], i, us_.data());
      for (std::size_t l = 0; l < L_; ++l) tt_[l] = t_[l] + tab_.c[i] * hh_[l];
      rhs(tt_.data(), us_.data(), fs_.data());
      f = fs_.data();
      stage_at_u0 = false;
    }
    if (fsal_ && i == tab_.stages - 1)
      std::copy((stage_at_u0 ? u0_ : us_).begin(), (stage_at_u0 ? u0_ : us_).end(), u1_.begin());
    double* k = k_.data() + std::size_t(i) * nl;
    // k_i = f + sum_j (C_ij / h) k_j + (h d_i) f_t, per lane with its own h.
    for (int j = 0; j < i; ++j)
      for (std::size_t l = 0; l < L_; ++l) coef_[std::size_t(j) * L_ + l] = tab_.C[i][j] / hh_[l];
    for (std::size_t l = 0; l < L_; ++l) scale_[l] = hh_[l] * tab_.d[i];
    // An autonomous model's f_t is +0 throughout: no term to read (the same bits).
    linalg::lane_stage_rhs(n_, int(L_), f, opt_.autonomous ? nullptr : ft_.data(), k_.data(), nl,
                           tab_.C[i], i, coef_.data(), scale_.data(), k);
    linalg::lu_solve(lu_plan_, lu_.data(), k, int(L_));
    solves += long(L_);
  }
  // u1 (unless FSAL gave it), the error estimate and its norm per lane in one pass.
  linalg::lane_step_end(n_, int(L_), u0_.data(), k_.data(), nl, fsal_ ? nullptr : tab_.b,
                        tab_.btilde, tab_.stages, opt_.atol.data(), opt_.rtol, u1_.data(),
                        enorm_.data(), nonfinite_.data());
}

// Each lane's step as the scalar Integrator plans it (landing slack, dt_max, dt_min). False
// when some lane cannot step any more: those lanes end (in ends_) without an attempt.
bool LaneRosenbrock::plan_steps(double t1) {
  bool stop_lane = false;
  for (std::size_t l = 0; l < L_; ++l) {
    bool lands = false;
    hh_[l] = planned_step(t_[l], h_[l], opt_.dt_max, t1, lands);
    lands_[l] = lands;
    if (status_[l].attempts >= opt_.max_steps || (!(hh_[l] >= dt_min_at(l)) && !lands_[l]))
      stop_lane = true;
  }
  if (!stop_lane) return true;
  for (std::size_t l = 0; l < L_; ++l) {
    if (status_[l].attempts >= opt_.max_steps) {
      ends_.push_back({l, ReturnCode::MaxSteps, std::to_string(opt_.max_steps) + " attempts used"});
    } else if (!(hh_[l] >= dt_min_at(l)) && !lands_[l]) {
      const Cause c = status_[l].cause;
      ends_.push_back({l,
                       c == Cause::NonFinite     ? ReturnCode::NonFinite
                       : c == Cause::LinearSolve ? ReturnCode::LinearSolveFailed
                                                 : ReturnCode::DtBelowMin,
                       "step below dt_min"});
    }
  }
  return false;
}

// Each lane's verdict first, then the accepted lanes' states all at once, then the lanes that
// end (in lane order).
void LaneRosenbrock::judge(double t1) {
  bool any_accepted = false;
  for (std::size_t l = 0; l < L_; ++l) {
    take_[l] = 0;
    Status& lane = status_[l];
    ++lane.attempts;
    double h_next = hh_[l];
    bool accept = false;
    const bool finite = nonfinite_[l] == 0;
    if (failed_[l]) {
      // A pivot that is not finite usually comes from a state or rate that is not: say so.
      bool inputs_finite = true;
      for (std::size_t i = 0; i < n_ && inputs_finite; ++i)
        inputs_finite = std::isfinite(u0_[i * L_ + l]) && std::isfinite(f0_[i * L_ + l]);
      lane.cause = inputs_finite ? Cause::LinearSolve : Cause::NonFinite;
      h_next = hh_[l] * (inputs_finite ? kSolverFailFactor : kNonFiniteFactor);
    } else if (!finite) {
      lane.cause = Cause::NonFinite, h_next = hh_[l] * kNonFiniteFactor;
    } else {
      const double e = enorm_[l];
      if (!std::isfinite(e)) {
        lane.cause = Cause::NonFinite, h_next = hh_[l] * kNonFiniteFactor;
      } else {
        const Proposal p = ctl_[l]->propose(hh_[l], e, control_order_);
        accept = p.accept;
        h_next = p.h_next;
        lane.cause = accept ? Cause::None : Cause::ErrorTest;
      }
    }
    if (!accept) {
      ++lane.rejected;
      h_[l] = h_next;
      if (lands_[l] && !(h_[l] >= dt_min_at(l))) ends_.push_back({l, ReturnCode::DtBelowMin, "step below dt_min"});
      continue;
    }
    t_[l] = lands_[l] ? t1 : t_[l] + hh_[l];
    take_[l] = 1;
    any_accepted = true;
    // With FSAL the last stage evaluated f at (t + h, u1): the next step's f0.
    lane.needs_f0 = !fsal_;
    h_[l] = step_after_accept(hh_[l], lands_[l], h_[l], h_next, opt_.dt_max);
    if (lands_[l]) ends_.push_back({l, ReturnCode::Success, ""});
  }
  if (!any_accepted) return;
  // Every lane accepted (the usual case): the buffers trade places instead of a copy; u1_ and
  // fs_ are written afresh by the next attempt before they are read.
  if (std::all_of(take_.begin(), take_.end(), [](std::uint8_t t) { return t != 0; })) {
    std::swap(u0_, u1_);
    if (fsal_) std::swap(f0_, fs_);
  } else {
    linalg::lane_select(n_, int(L_), take_.data(), u1_.data(), u0_.data());
    if (fsal_) linalg::lane_select(n_, int(L_), take_.data(), fs_.data(), f0_.data());
  }
}

std::span<const LaneEnd> LaneRosenbrock::round(double t1, bool& attempted) {
  ends_.clear();
  attempted = false;
  derivatives();
  if (!plan_steps(t1)) return ends_;
  if (!opt_.autonomous) time_derivative();
  attempt();
  attempted = true;
  judge(t1);
  return ends_;
}

}  // namespace esi::method
