// The Integrator: owns the state, a stepper and a controller, and reads like CVODE's cvStep:
// validate, start, then per attempt plan_step -> run_attempt (stepper) -> judge (finite,
// domain, error test) -> complete_step or retry with the proposed step. A self-stepping solver
// (CVODE_BDF) replaces that loop: step_self_stepping hands it the step and copies its result.
#include "esi/method/integrator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "esi/core/error.hpp"
#include "method/controller.hpp"
#include "method/stepper.hpp"
#include "method/support.hpp"
#include "method/step_rules.hpp"
#include "method/tableau.hpp"

namespace esi::method {

using namespace detail;

namespace {

// Why the last attempt was rejected; decides the code when the step size runs out.
enum class Cause { None, ErrorTest, NonFinite, LinearSolve, Newton, Domain };

// MethodId::Auto: Tsit5 and Rodas5P, after OrdinaryDiffEq's AutoTsit5(Rodas5P()) with
// Hairer's counting of stiffness tests (DOPRI5, Solving ODEs II, IV.2). After each accepted
// step the stiffness s = |lambda| h / S is tested, S = Tsit5's stability size along the negative
// real axis (OrdinaryDiffEq's alg_stability_size(Tsit5) = 3.5068), |lambda| from the stepper
// (eigen_estimate: the explicit stages' difference quotient on Tsit5, ||J||_inf on Rodas5P).
// - On Tsit5, a test with s > 0.7 counts as stiff; 6 non-stiff tests in a row clear the count
//   (Hairer's reset); more than 10 stiff tests switch to Rodas5P with twice the step
//   (OrdinaryDiffEq's maxstiffstep and dtfac). A stability-limited Tsit5 step bounces between
//   s = 0.6 and 1.0 under the PI controller, so OrdinaryDiffEq's "10 in a row above 0.9" waits
//   long on a problem that stiffens slowly: on tests/method/test_auto_switch.cpp's
//   problems and the landis biomass model it took 1.4-1.8x Rodas5P's steps, this rule 1.0-1.3x.
// - On Rodas5P, more than 3 successive tests with s <= 0.9 (maxnonstiffstep, stifftol) switch
//   back with half the step. ||J||_inf >= |lambda| and Rodas5P's steps are long, so this side
//   says "not stiff" later than the other says "stiff": the hysteresis.
constexpr MethodId kAutoNonstiff = MethodId::Tsit5;
constexpr MethodId kAutoStiff = MethodId::Rodas5P;
constexpr double kTsit5StabilitySize = 3.5068;
constexpr double kStiffTest = 0.7;
constexpr double kNonstiffTest = 0.9;
constexpr int kMaxStiffTests = 10;
constexpr int kCalmTestsThatReset = 6;
constexpr int kMaxNonstiffTests = 3;
constexpr double kSwitchStepFactor = 2;


bool all_finite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

std::string format_double(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

}  // namespace

std::unique_ptr<Stepper> detail::make_stepper(MethodId id, const Evaluator& eval,
                                              const IntegratorOptions& options) {
  switch (family_of(id)) {
    case Family::Explicit: return make_erk_stepper(id, eval);
    case Family::Rosenbrock: return make_rosenbrock_stepper(id, eval);
    case Family::Sdirk:
    case Family::Imex: return make_implicit_stepper(id, eval, options);
    case Family::Sundials: return nullptr;  // a SelfSteppingSolver, made by the Impl
  }
  return nullptr;
}

struct Integrator::Impl {
  const OdeProblem* problem;
  IntegratorOptions opt;
  MethodId method;
  const MethodInfo* info;
  IntegratorStats stats;
  Evaluator eval;
  bool adaptive;
  int control_order;
  std::string invalid;  // non-empty: every step() returns InvalidOptions with this message
  std::unique_ptr<Stepper> stepper;
  std::unique_ptr<SelfSteppingSolver> self_stepping;  // CVODE_BDF instead of stepper + controller
  std::unique_ptr<StepController> controller;
  double t, t_prev, dt;
  bool started = false;
  long attempts = 0;
  std::vector<double> u, u_prev, f, f_prev, u_new, f_new, err;
  Cause cause = Cause::None;
  bool own_dense = false;  // interpolate() uses the method's interpolant for the last step
  std::size_t culprit = 0;  // state with the largest weighted error in the last attempt
  std::string message;

  Impl(const OdeProblem& p, const IntegratorOptions& o, double t0, std::span<const double> u0);
  std::string check_options() const;
  ReturnCode step(double t_limit);
  ReturnCode step_self_stepping(double t_limit);
  void start(double t_limit);
  double plan_step(double t_limit, bool& lands) const;
  bool run_attempt(double h, double& h_next);
  bool reject(Cause why, double h_next_value, double& h_next);
  void complete_step(double h, bool lands, double t_limit, double h_next);
  ReturnCode fail(ReturnCode code, const std::string& what);
  ReturnCode fail_step_size(double h);
  void blame_non_finite_rhs();
  double last_h = 0;  // size of the last attempt
  ForwardTape* tape = nullptr;  // records accepted steps (Integrator::record)
  std::vector<int> clip_list;   // components the last accepted step clipped (when recording)
  double f_time = 0;            // f = f(f_time, u): t, or the previous t + h for an FSAL f
  void record_step(double h, double t_end, std::span<const int> clipped);

  // MethodId::Auto (see kAutoNonstiff): the method not in use keeps its stepper and
  // controller here once built; dense_source is the stepper that took the last accepted step.
  bool automatic = false;
  std::unique_ptr<Stepper> parked_stepper;
  std::unique_ptr<StepController> parked_controller;
  const Stepper* dense_source = nullptr;
  int stiff_tests = 0;  // on the non-stiff method: stiff tests since the last calm run
  int calm_tests = 0;   // successive non-stiff tests
  long switch_count = 0;
  std::vector<MethodSwitch> switches;
  const double* atol_each() const { return opt.atol_each.empty() ? nullptr : opt.atol_each.data(); }
  void use_method(MethodId id);
  void switch_if_stiffness_changed(double eigen, double h);
  void switch_to(MethodId to);
};

Integrator::Impl::Impl(const OdeProblem& p, const IntegratorOptions& o, double t0,
                       std::span<const double> u0)
    : problem(&p), opt(o), t(t0), t_prev(t0), dt(o.dt_initial) {
  eval = Evaluator{problem, &stats};
  const std::size_t n = p.size;
  automatic = opt.method == MethodId::Auto && p.rhs && u0.size() == n && opt.adaptive;
  method = opt.method == MethodId::Auto && p.rhs && u0.size() == n
               ? choose_method(p, t0, t0 + (opt.auto_span > 0 ? opt.auto_span : 1.0), u0)
               : (opt.method == MethodId::Auto ? MethodId::Tsit5 : opt.method);
  use_method(method);
  u.assign(u0.begin(), u0.end());
  u.resize(n);
  u_prev = u;
  f.assign(n, 0), f_prev.assign(n, 0), u_new.assign(n, 0), f_new.assign(n, 0), err.assign(n, 0);
  invalid = u0.size() != n ? "u0 has " + std::to_string(u0.size()) + " values, problem.size is " +
                                 std::to_string(n)
                           : check_options();
  if (invalid.empty() && family_of(method) == Family::Sundials) {
    self_stepping = make_cvode_solver(p, opt, t0, u, invalid);
  } else if (invalid.empty()) {
    if (automatic && info->needs_jacobian && p.prepare_jacobian) p.prepare_jacobian(p.context);
    stepper = make_stepper(method, eval, opt);
    controller = make_controller(opt.controller, method);
  }
}

void Integrator::Impl::use_method(MethodId id) {
  method = id;
  info = &method_info(method);
  adaptive = opt.adaptive && info->embedded_order > 0;
  control_order = std::max(1, std::min(info->order, info->embedded_order + 1));
}

// After an accepted step of size h whose stepper estimated |lambda| = eigen (kAutoNonstiff).
void Integrator::Impl::switch_if_stiffness_changed(double eigen, double h) {
  const double stiffness = std::abs(eigen * h / kTsit5StabilitySize);
  MethodId to;
  double factor;
  int tests;
  if (method == kAutoNonstiff) {
    if (stiffness > kStiffTest) ++stiff_tests, calm_tests = 0;
    else if (++calm_tests >= kCalmTestsThatReset) stiff_tests = 0;
    if (stiff_tests <= kMaxStiffTests) return;
    to = kAutoStiff, factor = kSwitchStepFactor, tests = stiff_tests;
  } else {
    if (stiffness <= kNonstiffTest) ++calm_tests;
    else calm_tests = 0;
    if (calm_tests <= kMaxNonstiffTests) return;
    to = kAutoNonstiff, factor = 1 / kSwitchStepFactor, tests = calm_tests;
  }
  switches.push_back({t, method, to, stiffness, tests});
  ++switch_count;
  stiff_tests = calm_tests = 0;
  switch_to(to);
  dt *= factor;
  if (opt.dt_max > 0) dt = std::min(dt, opt.dt_max);
  if (tape)
    tape->unsupported = "the automatic method switched from " + std::string(method_info(switches.back().from).name) +
                        " to " + std::string(info->name) + " at t = " + format_double(t) +
                        " (sensitivities follow one method: give --method)";
}

void Integrator::Impl::switch_to(MethodId to) {
  if (!parked_stepper) {
    if (method_info(to).needs_jacobian && problem->prepare_jacobian)
      problem->prepare_jacobian(problem->context);
    parked_stepper = make_stepper(to, eval, opt);
    parked_controller = make_controller(opt.controller, to);
  }
  std::swap(stepper, parked_stepper);  // the parked one keeps its last step's dense output
  std::swap(controller, parked_controller);
  use_method(to);
  controller->reset();
  stepper->state_changed();
}

std::string Integrator::Impl::check_options() const {
  if (!problem->rhs) return "problem.rhs is null";
  if (family_of(method) == Family::Imex && !problem->rhs_split)
    return std::string(info->name) + " needs problem.rhs_split";
  if (!(opt.rtol >= 0) || !(opt.atol >= 0) || opt.rtol + opt.atol <= 0)
    return "rtol and atol must be >= 0 and not both 0";
  if (!opt.atol_each.empty()) {
    if (opt.atol_each.size() != problem->size)
      return "atol_each has " + std::to_string(opt.atol_each.size()) + " values, problem.size is " +
             std::to_string(problem->size);
    for (double a : opt.atol_each)
      if (!(a >= 0) || !std::isfinite(a) || (a == 0 && opt.rtol == 0))
        return "atol_each values must be finite, >= 0, and not 0 where rtol is 0";
  }
  if (family_of(method) == Family::Sundials && !opt.adaptive)
    return std::string(info->name) + " chooses its own steps: it has no fixed-step mode";
  if (!adaptive && !(opt.dt_initial > 0))
    return std::string(info->name) +
           " takes fixed steps: give it a step size (dt_initial > 0; esi simulate --dt)";
  if (!(opt.dt_min >= 0) || !(opt.dt_max >= 0) || opt.max_steps <= 0)
    return "dt_min, dt_max must be >= 0 and max_steps > 0";
  for (int i : opt.nonnegative_components)
    if (i < 0 || std::size_t(i) >= problem->size)
      return "nonnegative_components holds " + std::to_string(i) + ", out of range";
  const bool has_pattern = problem->jac_row_ptr.size() == problem->size + 1;
  if ((problem->jacobian || problem->implicit_jacobian) && !has_pattern)
    return "an analytic Jacobian needs jac_row_ptr of size + 1 entries";
  return {};
}

void Integrator::Impl::start(double t_limit) {
  eval.rhs(t, u.data(), f.data());
  f_time = t;
  f_prev = f;
  if (!(opt.dt_initial > 0))
    dt = hairer_initial_step(eval, t, u.data(), f.data(), info->order, opt.rtol, opt.atol,
                             u_new.data(), f_new.data(), atol_each());
  dt = std::min(dt, t_limit - t);
  if (opt.dt_max > 0) dt = std::min(dt, opt.dt_max);
  started = true;
}

double Integrator::Impl::plan_step(double t_limit, bool& lands) const {
  return planned_step(t, dt, opt.dt_max, t_limit, lands);
}

bool Integrator::Impl::reject(Cause why, double h_next_value, double& h_next) {
  cause = why;
  ++stats.rejected;
  h_next = h_next_value;
  return false;
}

// One attempt of size h; true when accepted. h_next receives the step to use next.
bool Integrator::Impl::run_attempt(double h, double& h_next) {
  const std::size_t n = u.size();
  const AttemptStatus status = stepper->attempt(t, h, u.data(), f.data(), u_new.data(), err.data());
  if (status == AttemptStatus::LinearSolveFailed || status == AttemptStatus::NewtonFailed) {
    culprit = largest_weighted(f.data(), u.data(), u.data(), n, opt.rtol, opt.atol, atol_each());
    const Cause why = status == AttemptStatus::NewtonFailed ? Cause::Newton : Cause::LinearSolve;
    return reject(why, h * kSolverFailFactor, h_next);
  }
  if (status == AttemptStatus::NonFinite || !all_finite(u_new)) {
    culprit = largest_weighted(u_new.data(), u.data(), u.data(), n, opt.rtol, opt.atol, atol_each());
    return reject(Cause::NonFinite, h * kNonFiniteFactor, h_next);
  }
  if (opt.nonnegative == DomainPolicy::Reject) {
    bool outside = leaves_nonnegative_domain(u_new, opt.nonnegative_components);
    for (int i = 0; opt.check_stages && !outside && i < stepper->stage_count(); ++i)
      outside = leaves_nonnegative_domain(stepper->attempted_stage(i), opt.nonnegative_components);
    if (outside) return reject(Cause::Domain, h * kDomainFactor, h_next);
  }
  if (!adaptive) {
    h_next = opt.dt_initial;
    return true;
  }
  const double norm = weighted_rms(err.data(), u.data(), u_new.data(), n, opt.rtol, opt.atol, atol_each());
  culprit = largest_weighted(err.data(), u.data(), u_new.data(), n, opt.rtol, opt.atol, atol_each());
  if (!std::isfinite(norm)) return reject(Cause::NonFinite, h * kNonFiniteFactor, h_next);
  const Proposal proposal = controller->propose(h, norm, control_order);
  if (!proposal.accept) return reject(Cause::ErrorTest, proposal.h_next, h_next);
  h_next = proposal.h_next;
  return true;
}

// The step as a sweep replays it (sensitivity.hpp); called before the state moves on.
void Integrator::Impl::record_step(double h, double t_end, std::span<const int> clipped) {
  const std::size_t k = tape->steps.size();
  if (k % tape->checkpoint_every == 0) tape->checkpoints.insert(tape->checkpoints.end(), u.begin(), u.end());
  StepRecord r;
  r.t = t, r.h = h, r.t_end = t_end, r.f0_time = f_time;
  stepper->describe_attempt(r);
  r.clip_begin = tape->clipped.size();
  tape->clipped.insert(tape->clipped.end(), clipped.begin(), clipped.end());
  r.clip_end = tape->clipped.size();
  tape->steps.push_back(r);
  tape->final_state.assign(u_new.begin(), u_new.end());
  if (tape->keep_stages && tape->checkpoint_every == 1) {
    stepper->keep(tape->add_kept(stepper->kept_size()));
  }
  if (tape->memory_budget > 0)
    while (tape->bytes() > tape->memory_budget && tape->thin()) {
    }
}

void Integrator::Impl::complete_step(double h, bool lands, double t_limit, double h_next) {
  const double eigen = automatic ? stepper->eigen_estimate(opt.rtol, opt.atol, atol_each()) : -1;  // before clipping moves u1
  const double* fsal = stepper->f_at_end();
  bool clipped = false;
  clip_list.clear();
  if (opt.nonnegative == DomainPolicy::Clip) {
    auto clip = [&](std::size_t i) {
      if (u_new[i] < 0) {
        u_new[i] = 0, clipped = true;
        if (tape) clip_list.push_back(int(i));
      }
    };
    if (opt.nonnegative_components.empty())
      for (std::size_t i = 0; i < u_new.size(); ++i) clip(i);
    for (int i : opt.nonnegative_components) clip(std::size_t(i));
  }
  const double t_end = lands ? t_limit : t + h;
  if (tape) record_step(h, t_end, clip_list);
  t_prev = t;
  t = t_end;
  u_prev.swap(u), u.swap(u_new);
  f_prev.swap(f);
  if (fsal && !clipped) {
    std::copy(fsal, fsal + u.size(), f.begin());
    f_time = t_prev + h;  // where the last stage evaluated it
  } else {
    eval.rhs(t, u.data(), f.data());
    f_time = t;
  }
  stepper->commit();
  stepper->state_changed();
  // An interpolant rebuilt from the slopes ends at the unclipped u1: after a clip it would
  // jump at the step end, so that step falls back to Hermite (continuous by construction).
  own_dense = stepper->has_dense() && (!clipped || stepper->dense_uses_end());
  dense_source = stepper.get();
  ++stats.accepted;
  cause = Cause::None;
  dt = step_after_accept(h, adaptive && lands, dt, h_next, opt.dt_max);
  if (eigen >= 0) switch_if_stiffness_changed(eigen, h);
}

ReturnCode Integrator::Impl::fail(ReturnCode code, const std::string& what) {
  message = std::string(return_code_name(code)) + " at t = " + format_double(t) + ": " + what;
  if (!u.empty()) message += "; largest weighted error in " + state_name(*problem, culprit);
  return code;
}

// When every component of a failed attempt is NaN the first one says nothing; one more rhs
// call at the end of the last attempt names the component that produced it, if any did.
void Integrator::Impl::blame_non_finite_rhs() {
  eval.rhs(t + last_h, u.data(), f_new.data());
  for (std::size_t i = 0; i < f_new.size(); ++i)
    if (!std::isfinite(f_new[i])) {
      culprit = i;
      return;
    }
}

ReturnCode Integrator::Impl::fail_step_size(double h) {
  const std::string size = "step " + format_double(h) + " is below dt_min";
  switch (cause) {
    case Cause::NonFinite:
      blame_non_finite_rhs();
      return fail(ReturnCode::NonFinite, "non-finite values down to dt_min");
    case Cause::LinearSolve:
      return fail(ReturnCode::LinearSolveFailed, "singular iteration matrix down to dt_min");
    case Cause::Newton: return fail(ReturnCode::DtBelowMin, size + " (Newton iteration failed)");
    case Cause::Domain: return fail(ReturnCode::DtBelowMin, size + " (state left the domain)");
    default: return fail(ReturnCode::DtBelowMin, size);
  }
}

ReturnCode Integrator::Impl::step(double t_limit) {
  message.clear();
  if (!invalid.empty()) {
    message = "InvalidOptions: " + invalid;
    return ReturnCode::InvalidOptions;
  }
  if (!(t_limit > t)) {
    message = "InvalidOptions: t_limit " + format_double(t_limit) + " is not after t() " +
              format_double(t);
    return ReturnCode::InvalidOptions;
  }
  if (self_stepping) return step_self_stepping(t_limit);
  if (!started) start(t_limit);
  for (;;) {
    if (attempts >= opt.max_steps)
      return fail(ReturnCode::MaxSteps, std::to_string(opt.max_steps) + " attempts used");
    bool lands = false;
    const double h = plan_step(t_limit, lands);
    const double dt_min = opt.dt_min > 0 ? opt.dt_min : default_dt_min(t);
    if (!(h >= dt_min) && !lands) return fail_step_size(h);
    ++attempts;
    last_h = h;
    double h_next = h;
    if (run_attempt(h, h_next)) {
      complete_step(h, lands, t_limit, h_next);
      return ReturnCode::Success;
    }
    dt = h_next;
    // A landing step that keeps failing shrinks below the remaining span and stops landing.
    if (lands && !(dt >= dt_min)) return fail_step_size(dt);
  }
}

ReturnCode Integrator::Impl::step_self_stepping(double t_limit) {
  if (tape) tape->unsupported = std::string(info->name) + " keeps no steps a sweep can replay";
  stats = self_stepping->stats();
  if (stats.accepted + stats.rejected >= opt.max_steps)
    return fail(ReturnCode::MaxSteps, std::to_string(opt.max_steps) + " attempts used");
  double t_new = t;
  std::string why;
  const ReturnCode code = self_stepping->step(t_limit, t_new, u_new.data(), why, culprit);
  stats = self_stepping->stats();
  if (code != ReturnCode::Success) return fail(code, why);
  t_prev = t;
  t = t_new;
  u_prev.swap(u), u.swap(u_new);
  dt = self_stepping->proposed_step();
  return ReturnCode::Success;
}

// ---- public surface ----

Integrator::Integrator(const OdeProblem& problem, const IntegratorOptions& options, double t0,
                       std::span<const double> u0)
    : impl_(std::make_unique<Impl>(problem, options, t0, u0)) {}
Integrator::~Integrator() = default;
Integrator::Integrator(Integrator&&) noexcept = default;
Integrator& Integrator::operator=(Integrator&&) noexcept = default;

ReturnCode Integrator::step(double t_limit) { return impl_->step(t_limit); }
double Integrator::t() const { return impl_->t; }
double Integrator::t_previous() const { return impl_->t_prev; }
std::span<const double> Integrator::u() const { return impl_->u; }
MethodId Integrator::method() const { return impl_->method; }
std::span<const MethodSwitch> Integrator::switches() const { return impl_->switches; }
long Integrator::switch_count() const { return impl_->switch_count; }
double Integrator::dt() const { return impl_->dt; }
const IntegratorStats& Integrator::stats() const { return impl_->stats; }
const std::string& Integrator::message() const { return impl_->message; }

/// 0 for CVODE_BDF (a multistep method keeps no stage values).
int Integrator::stage_count() const { return impl_->stepper ? impl_->stepper->stage_count() : 0; }

std::span<const double> Integrator::stage(int i) const {
  ESI_ASSERT(i >= 0 && i < stage_count());
  return impl_->stepper->accepted_stage(i);
}

// The method's own interpolant where it has one (dense_tableaus.cpp), else cubic Hermite
// through (u_prev, f_prev) and (u, f); exact at both ends either way.
void Integrator::interpolate(double time, std::span<double> out) const {
  const Impl& m = *impl_;
  ESI_ASSERT(out.size() == m.u.size());
  const double h = m.t - m.t_prev;
  if (time == m.t || h == 0) {
    std::copy(m.u.begin(), m.u.end(), out.begin());
    return;
  }
  if (time == m.t_prev) {
    std::copy(m.u_prev.begin(), m.u_prev.end(), out.begin());
    return;
  }
  if (m.self_stepping) {
    m.self_stepping->interpolate(time, out.data());
    return;
  }
  const double s = (time - m.t_prev) / h;
  if (m.own_dense) {
    m.dense_source->dense(s, m.u_prev.data(), m.u.data(), out.data());
    return;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double du = m.u[i] - m.u_prev[i];
    out[i] = (1 - s) * m.u_prev[i] + s * m.u[i] +
             s * (s - 1) * ((1 - 2 * s) * du + (s - 1) * h * m.f_prev[i] + s * h * m.f[i]);
  }
}

void Integrator::restart(double time, std::span<const double> u) {
  Impl& m = *impl_;
  ESI_ASSERT(u.size() == m.u.size());
  m.t = m.t_prev = time;
  std::copy(u.begin(), u.end(), m.u.begin());
  m.u_prev = m.u;
  if (!m.invalid.empty()) return;
  if (m.self_stepping) {
    m.self_stepping->restart(time, m.u.data());
    return;
  }
  if (m.started) {
    m.eval.rhs(m.t, m.u.data(), m.f.data());
    m.f_prev = m.f;
  }
  m.f_time = time;
  if (m.tape)
    m.tape->unsupported = "the integration was restarted at t = " + format_double(time) +
                          " (an event changed the state or the parameters)";
  m.controller->reset();
  m.stepper->state_changed();
  m.own_dense = false;
  m.cause = Cause::None;
}

void Integrator::record(ForwardTape* tape) {
  Impl& m = *impl_;
  m.tape = tape;
  if (!tape) return;
  tape->size = m.u.size();
  tape->method = m.method;
  if (tape->checkpoint_every == 0) tape->checkpoint_every = 1;
  if (!m.invalid.empty()) tape->unsupported = m.invalid;
  if (const std::string why = sensitivity_unsupported(m.method); !why.empty()) tape->unsupported = why;
}

Integrator::Carry Integrator::carry() const {
  const Impl& m = *impl_;
  return {m.dt, m.started, m.attempts, m.stats, m.automatic ? m.method : MethodId::Auto,
          m.stiff_tests, m.calm_tests, m.switch_count};
}

void Integrator::resume(double time, std::span<const double> u, const Carry& carry) {
  Impl& m = *impl_;
  m.dt = carry.dt;
  m.started = carry.started;
  m.attempts = carry.attempts;
  m.stats = carry.stats;
  if (m.automatic && carry.automatic_method != MethodId::Auto && carry.automatic_method != m.method &&
      m.invalid.empty()) {
    m.switch_to(carry.automatic_method);  // the run had switched before it was saved
  }
  if (m.automatic)
    m.stiff_tests = carry.stiff_tests, m.calm_tests = carry.calm_tests, m.switch_count = carry.switches;
  restart(time, u);
}

}  // namespace esi::method
