// Rosenbrock steps for a batch of independent systems side by side, one step size and
// controller per lane: the batched seam next to OdeProblem (problem.hpp) that exec's lane pools
// drive cell by cell.
//
// Layout: lane-SoA, entry i of lane l at [i * lanes + l], the lane index fastest, so every
// stage runs for all lanes of the block at once and the loops vectorize. A lane follows the
// scalar Integrator's step logic step for step (landing slack, rejection factors, dt_min and
// max_steps, the PI/I/PID controllers, Hairer's starting step, the one-sided f_t difference of
// the scalar Rosenbrock stepper: method/step_rules.hpp holds what both share). What differs is
// the linear algebra (a planned lane-batched LU without pivoting instead of Eigen's partial
// pivoting), so a lane's result is close to, not bitwise equal to, a scalar run.
//
// Lanes never read each other: every per-lane loop writes lane l from lane l only, and the
// problem's callbacks and the LU must be lane-independent too, so a lane's bits do not depend
// on its position, the block's width or what the other lanes hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "esi/linalg/lane_ops.hpp"
#include "esi/linalg/sparse_lu.hpp"
#include "esi/method/integrator.hpp"

namespace esi::method {

/// A batch of systems of `n` states each, lane-SoA. The callbacks are called with the block's
/// current width `lanes` and one time per lane.
class LaneProblem {
 public:
  virtual ~LaneProblem() = default;
  /// du = f(t, u) for every lane.
  virtual void rhs(std::size_t lanes, const double* t, const double* u, double* du) = 0;
  /// J(t, u) of every lane into `values`, laid out as the LU plan's factor storage (lanes
  /// fastest, 0 at fill-in), where the step forms s I - J and factors it in place.
  virtual void jacobian(std::size_t lanes, const double* t, const double* u, double* values) = 0;
};

struct LaneStepOptions {
  MethodId method = MethodId::Rodas3;  ///< a Rosenbrock method (supports())
  ControllerKind controller = ControllerKind::Default;
  double rtol = 1e-4;
  std::vector<double> atol;  ///< one per state
  double dt_min = 0;         ///< 0 = 16 ulp of |t|
  double dt_max = 0;         ///< 0 = unbounded
  long max_steps = 100000;   ///< attempted steps per lane
  bool autonomous = false;   ///< f does not read t: f_t = 0, no difference quotient
};

/// A lane that stopped during a round: landed on t1 (Success) or failed.
struct LaneEnd {
  std::size_t lane = 0;
  ReturnCode code = ReturnCode::Success;
  std::string why;  ///< "" when landed
};

namespace detail {
class StepController;
struct RosenbrockTableau;
}  // namespace detail

class LaneRosenbrock {
 public:
  /// True when `method` is a Rosenbrock method (the only family lanes run).
  static bool supports(MethodId method);

  /// A block of `lanes` lanes (its widest) over `problem`, whose Jacobian has the LU plan `lu`.
  LaneRosenbrock(LaneProblem& problem, const linalg::SparseLuPlan& lu, std::size_t n,
                 const LaneStepOptions& options, std::size_t lanes);
  ~LaneRosenbrock();
  LaneRosenbrock(const LaneRosenbrock&) = delete;
  LaneRosenbrock& operator=(const LaneRosenbrock&) = delete;

  std::size_t width() const { return L_; }
  std::size_t widest() const { return widest_; }
  /// Every lane buffer sized for `width` lanes (<= widest(); no allocation but controllers of
  /// lanes added back). Lane contents are not moved: see narrow().
  void set_width(std::size_t width);
  /// Continues `width` lanes wide with lanes `keep` (in order, at most `width`) moved to lanes
  /// 0, 1, ... with everything that outlives an attempt (u0, f0, t, h, counts, controller).
  void narrow(std::span<const std::size_t> keep, std::size_t width);

  /// Lane l starts at t0 from the state the caller wrote into u0()'s column l; first step h
  /// (0 or less: Hairer's starting step at the next round).
  void start_lane(std::size_t l, double t0, double h);
  /// The states at the lanes' times (lane-SoA, width() lanes).
  double* u0() { return u0_.data(); }
  const double* u0() const { return u0_.data(); }
  double t(std::size_t l) const { return t_[l]; }
  double h(std::size_t l) const { return h_[l]; }  ///< the step the lane would try next
  long attempts(std::size_t l) const { return status_[l].attempts; }
  long rejected(std::size_t l) const { return status_[l].rejected; }

  /// One round for every lane towards t1: derivatives for lanes that lack them, then either
  /// the lanes that cannot step any more (max_steps, step below dt_min) end without an attempt,
  /// or every lane attempts one step and is judged (accepted lanes advance). Returns the lanes
  /// that ended, in lane order; the caller refills them (start_lane) or leaves them as padding.
  /// `attempted` says whether the round attempted a step (width() lane slots).
  std::span<const LaneEnd> round(double t1, bool& attempted);

  /// Lane-weighted call counts since the last reset_counts(): what a cell-by-cell solver would
  /// have counted for the same lane slots.
  long rhs_calls = 0, jacobian_calls = 0, factorizations = 0, solves = 0;
  void reset_counts() { rhs_calls = jacobian_calls = factorizations = solves = 0; }

 private:
  enum class Cause : std::uint8_t { None, ErrorTest, NonFinite, LinearSolve };
  struct Status {
    bool fresh = false;    // needs a starting step
    bool needs_f0 = true;  // f(t, u0) not known (a new lane, or a method without FSAL)
    long attempts = 0, rejected = 0;
    Cause cause = Cause::None;
  };

  double norm(const double* v, const double* u1, std::size_t l) const;
  double dt_min_at(std::size_t l) const;
  void rhs(const double* t, const double* u, double* du);
  void derivatives();
  void starting_steps();
  void time_derivative();
  void attempt();
  bool plan_steps(double t1);
  void judge(double t1);
  void combine(const double* base, const double* w, int count, double* out) const {
    linalg::lane_combination(n_, int(L_), base, k_.data(), n_ * L_, w, count, out);
  }

  LaneProblem& problem_;
  const linalg::SparseLuPlan& lu_plan_;
  LaneStepOptions opt_;
  const detail::RosenbrockTableau& tab_;
  std::size_t L_, widest_, n_;  // L_: lanes now (narrow() shrinks it in a shard's tail)
  int order_ = 1, control_order_ = 1;
  bool fsal_ = false;
  // 64-byte aligned: the LU runs about 1.6x slower on buffers off a cache line.
  linalg::LaneVector<double> u0_, f0_, u1_, us_, fs_, ft_, k_, lu_;
  std::vector<double> t_, h_, hh_, tt_, shift_, scale_, enorm_, coef_;
  std::vector<std::uint8_t> lands_, failed_, take_, nonfinite_;
  std::vector<Status> status_;
  std::vector<std::unique_ptr<detail::StepController>> ctl_;
  std::vector<LaneEnd> ends_;
};

}  // namespace esi::method
