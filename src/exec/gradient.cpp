// exec::gradient: the recorded forward run, the loss, the adjoint sweep and the optional
// checks (gradient.hpp).
#include "esi/exec/gradient.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <random>

#include "esi/core/error.hpp"
#include "exec/discrete_events.hpp"
#include "exec/expression_probe.hpp"
#include "exec/loss.hpp"
#include "exec/model.hpp"
#include "exec/run_support.hpp"

namespace esi::exec {
namespace {

using detail::Model;
using detail::number_text;

[[noreturn]] void refuse(const std::string& code, const std::string& message,
                         const std::string& file = "", const std::string& pointer = "") {
  throw Error(code, file, pointer, message);
}

std::string per_unit(const std::string& loss, const std::string& of) {
  if (loss.empty() || of.empty()) return "";
  if (of == "1") return loss;
  return loss + " / (" + of + ")";
}

/// What the gradient is reported for: positions into the adjoint's lambda (states) and mu
/// (parameter positions of the model's derivative programs).
struct Targets {
  std::vector<std::size_t> states;
  std::vector<std::size_t> parameters;  // positions in model.derivative_parameters
};

/// `fixed`: how many of model.derivative_parameters are numbers fixed for the run (the rest
/// are parameters events change, carried by the sweep but not reported).
Targets resolve_targets(const Model& m, const std::vector<std::string>& wrt, std::size_t fixed) {
  const esm::System& sys = m.system;
  std::vector<int> position(sys.parameters.size(), -1);
  for (std::size_t k = 0; k < fixed; ++k) position[std::size_t(m.derivative_parameters[k])] = int(k);
  Targets t;
  if (wrt.empty()) {
    for (std::size_t i = 0; i < sys.states.size(); ++i) t.states.push_back(i);
    for (std::size_t k = 0; k < fixed; ++k) t.parameters.push_back(k);
    return t;
  }
  for (const std::string& name : wrt) {
    if (const int i = sys.state_index(name); i >= 0) {
      t.states.push_back(std::size_t(i));
      continue;
    }
    if (const int j = sys.parameter_index(name); j >= 0) {
      const auto& v = sys.parameters[std::size_t(j)];
      if (position[std::size_t(j)] < 0)
        refuse("adjoint_unsupported_parameter",
               "--wrt " + name + ": the parameter is not a number fixed for the run (it is read per "
               "cell, changed by events or drawn at random), so it has no gradient", v.file, v.pointer);
      t.parameters.push_back(std::size_t(position[std::size_t(j)]));
      continue;
    }
    if (const int o = sys.observed_index(name); o >= 0) {
      const auto& v = sys.observed[std::size_t(o)];
      refuse("adjoint_unsupported_parameter",
             "--wrt " + name + " is an observed (computed from states and parameters), not a "
             "parameter or state a gradient can be taken with respect to", v.file, v.pointer);
    }
    refuse("unknown_gradient_variable", "--wrt " + name + " names no state or parameter of the model");
  }
  return t;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

/// One stretch of the forward run between event firings: the affects applied at its start
/// (in firing order, each with the state it read), its steps, the part of the loss it reads.
struct Segment {
  std::vector<detail::Firing> firings;
  method::ForwardTape tape;
  detail::Loss loss;
  std::vector<double> start;  ///< the state its first step starts from (after the firings)
  std::vector<double> p;      ///< the parameters it ran with (System::parameters order)
  double t_begin = 0, t_end = 0;
  bool last = false;  ///< ends at t1 with no firing after it
};

/// The forward run in segments; `segments` is empty only when it could not start.
struct ForwardRun {
  std::vector<Segment> segments;
  std::vector<double> p0;  ///< the parameters before any firing
  method::ReturnCode code = method::ReturnCode::Success;
  std::string message;
  method::IntegratorStats stats;
  std::size_t steps = 0, tape_bytes = 0, checkpoint_every = 1;
  double loss = 0;
};

/// Derivatives of events' affects: x+ = g(t, u-, p-) for each assigned state or parameter x
/// (the last assignment of x wins, every one reads u- and p-), unassigned ones unchanged. The
/// adjoint of a parameter is its position in mu (Model::derivative_parameters, which lists
/// the parameters events set after the fixed ones). One probe per affect row, compiled on
/// first need.
class AffectDerivatives {
 public:
  explicit AffectDerivatives(Model& m) : m_(m), probes_(m.events.affects.size()), position_(m.system.parameters.size(), -1) {
    for (std::size_t k = 0; k < m.derivative_parameters.size(); ++k)
      position_[std::size_t(m.derivative_parameters[k])] = int(k);
  }

  /// lambda and mu (of u+, p+) become those of u-, p-.
  void adjoint(const detail::Firing& f, std::vector<double>& lambda, std::vector<double>& mu) {
    const std::vector<double> plus_u = lambda, plus_p = mu;
    const auto assigned = effective(f);
    for (const detail::Assignment* a : assigned) slot(*a, lambda, mu) = 0;
    for (const detail::Assignment* a : assigned) {
      const double w = slot(*a, plus_u, plus_p);
      if (w == 0) continue;
      detail::ExpressionProbe& g = probe(a->row, f);
      for (std::size_t j = 0; j < g.nonzeros(); ++j) lambda[std::size_t(g.columns()[j])] += w * g.values()[j];
      for (std::size_t k = 0; k < mu.size(); ++k) mu[k] += w * g.gradient_p()[k];
    }
  }

  /// The tangent (du, dp) of u-, p- becomes that of u+, p+.
  void tangent(const detail::Firing& f, std::vector<double>& du, std::vector<double>& dp) {
    const std::vector<double> minus_u = du, minus_p = dp;
    for (const detail::Assignment* a : effective(f)) {
      detail::ExpressionProbe& g = probe(a->row, f);
      double d = 0;
      for (std::size_t j = 0; j < g.nonzeros(); ++j) d += g.values()[j] * minus_u[std::size_t(g.columns()[j])];
      for (std::size_t k = 0; k < minus_p.size(); ++k) d += g.gradient_p()[k] * minus_p[k];
      slot(*a, du, dp) = d;
    }
  }

 private:
  static std::vector<const detail::Assignment*> effective(const detail::Firing& f) {
    std::vector<const detail::Assignment*> out;
    for (const detail::Assignment& a : *f.affects) {
      std::erase_if(out, [&](const detail::Assignment* b) { return b->index == a.index && b->parameter == a.parameter; });
      out.push_back(&a);
    }
    return out;
  }
  /// Where an assignment's target lives in (state vector, parameter vector).
  template <class V>
  auto slot(const detail::Assignment& a, V& u, V& p) const -> decltype(u[0]) {
    return a.parameter ? p[std::size_t(position_[std::size_t(a.index)])] : u[std::size_t(a.index)];
  }
  /// Row's probe, evaluated at the firing's (t, u-, p-) with its derivatives.
  detail::ExpressionProbe& probe(int row, const detail::Firing& f) {
    auto& g = probes_[std::size_t(row)];
    if (!g) g = std::make_unique<detail::ExpressionProbe>(m_, m_.events.affects[std::size_t(row)]);
    g->prepare(f.p_before);
    g->evaluate(f.t, f.u_before.data(), true);
    return *g;
  }

  Model& m_;
  std::vector<std::unique_ptr<detail::ExpressionProbe>> probes_;
  std::vector<int> position_;  // System::parameters index -> position in mu, or -1
};

/// Sets the model's parameters to `p` (a segment's, during a sweep) and prepares its programs.
void use_parameters(Model& m, const std::vector<double>& p) {
  if (m.p == p) return;
  m.p = p;
  m.prepare_all();
}

/// The forward run, recording every accepted step: one segment per stretch between event
/// firings, each a fresh Integrator resumed with the last one's history (Integrator::carry),
/// which continues bit for bit as `esi simulate`'s restart does.
ForwardRun record_forward(Model& m, const method::IntegratorOptions& io, const SimulateOptions& run,
                          const std::vector<double>& u0, const detail::Loss& loss, std::size_t every,
                          std::size_t memory) {
  ForwardRun f;
  f.p0 = m.p;
  detail::DiscreteEvents events(m, run.t0, run.t0);
  std::vector<detail::Firing> firings;
  events.log_firings(&firings);
  std::vector<double> u = u0;
  events.fire_at_start(u);
  const std::vector<double>& stops = loss.stops();
  std::size_t next_stop = 0;
  double t = run.t0;
  std::optional<method::Integrator> integrator;
  std::optional<method::Integrator::Carry> carry;
  for (;;) {
    const double next_event = events.next_time();
    const bool last = !(next_event <= run.t1);
    const double end = last ? run.t1 : next_event;
    f.segments.push_back({std::move(firings), {}, loss.part(t, end, last), u, m.p, t, end, last});
    firings.clear();
    Segment& s = f.segments.back();
    s.loss.prepare(m.p);  // an observed reads the parameters the firings set
    s.tape.checkpoint_every = every;
    s.tape.keep_stages = every == 1;  // no replays; K > 1 trades them for memory
    if (memory > 0) s.tape.memory_budget = std::max<std::size_t>(1, memory - std::min(memory, f.tape_bytes));
    integrator.emplace(m.problem, io, t, u);
    if (carry) integrator->resume(t, u, *carry);
    integrator->record(&s.tape);
    s.loss.start(u);
    std::vector<double> previous = u;
    while (integrator->t() < end) {
      while (next_stop < stops.size() && stops[next_stop] <= integrator->t()) ++next_stop;
      const double limit = next_stop < stops.size() ? std::min(stops[next_stop], end) : end;
      const method::ReturnCode rc = integrator->step(limit);
      if (rc != method::ReturnCode::Success) {
        f.code = rc;
        f.message = integrator->message();
        f.stats = integrator->stats();
        return f;
      }
      s.loss.step(integrator->t_previous(), previous, integrator->t(), integrator->u());
      previous.assign(integrator->u().begin(), integrator->u().end());
    }
    f.steps += s.tape.steps.size();
    f.tape_bytes += s.tape.bytes();
    f.checkpoint_every = std::max(f.checkpoint_every, s.tape.checkpoint_every);
    f.loss += s.loss.value();
    f.stats = integrator->stats();  // carried through resume: the whole run's
    if (!s.tape.unsupported.empty()) {
      f.code = method::ReturnCode::InvalidOptions;
      f.message = s.tape.unsupported;
      return f;
    }
    t = end;
    u.assign(integrator->u().begin(), integrator->u().end());
    if (last) return f;
    carry = integrator->carry();
    events.fire_due(t, u);
  }
}

/// The adjoint of the whole run: lambda holds dL/du at the end on entry (the loss's sources
/// are added when `with_loss`), dL/du0 on return; mu accumulates dL/dp. Sweeps last segment
/// first, each then its firings in reverse.
method::SweepResult adjoint_run(Model& m, const method::IntegratorOptions& io, ForwardRun& f,
                                AffectDerivatives& affects, std::vector<double>& lambda,
                                std::vector<double>& mu, bool with_loss) {
  method::SweepResult total;
  for (std::size_t i = f.segments.size(); i-- > 0;) {
    Segment& s = f.segments[i];
    use_parameters(m, s.p);
    method::AdjointSource source;
    if (with_loss) source = [&](std::size_t k, std::span<double> l) { s.loss.add_gradient_at_step_end(s.tape, k, l); };
    const method::SweepResult r = method::adjoint(m.problem, io, s.tape, lambda, mu, source);
    total.stats.accepted += r.stats.accepted;
    total.stats.rhs_evaluations += r.stats.rhs_evaluations;
    total.stats.jacobian_evaluations += r.stats.jacobian_evaluations;
    total.stats.factorizations += r.stats.factorizations;
    total.stats.linear_solves += r.stats.linear_solves;
    total.jacobian_transpose_products += r.jacobian_transpose_products;
    total.vector_jacobian_products += r.vector_jacobian_products;
    total.point_batches += r.point_batches;
    total.second_order_evaluations += r.second_order_evaluations;
    if (!r.ok()) {
      total.code = r.code;
      total.message = r.message;
      return total;
    }
    if (with_loss) {
      s.loss.add_gradient_at_start(s.tape, lambda);
      const std::vector<double>& direct = s.loss.direct_parameter_gradient();
      for (std::size_t k = 0; k < direct.size() && !mu.empty(); ++k) mu[k] += direct[k];
    }
    for (std::size_t j = s.firings.size(); j-- > 0;) affects.adjoint(s.firings[j], lambda, mu);
  }
  use_parameters(m, f.segments.empty() ? m.p : f.segments.back().p);
  return total;
}

/// The tangent of the whole run along (du, dp): du becomes the tangent of the final state;
/// returns the loss's derivative along it (dL/du at every step end against the tangent there,
/// plus the direct parameter terms), NaN when a sweep failed.
double tangent_run(Model& m, const method::IntegratorOptions& io, const ForwardRun& f,
                   AffectDerivatives& affects, std::vector<double>& du, std::vector<double> dp) {
  double sum = 0;
  std::vector<double> g(du.size());
  for (const Segment& s : f.segments) {
    for (const detail::Firing& firing : s.firings) affects.tangent(firing, du, dp);
    use_parameters(m, s.p);
    std::fill(g.begin(), g.end(), 0.0);
    s.loss.add_gradient_at_start(s.tape, g);
    sum += dot(g, du);
    const auto sink = [&](std::size_t k, std::span<const double> tangent) {
      std::fill(g.begin(), g.end(), 0.0);
      s.loss.add_gradient_at_step_end(s.tape, k, g);
      for (std::size_t i = 0; i < g.size(); ++i) sum += g[i] * tangent[i];
    };
    if (!method::tangent(m.problem, io, s.tape, du, dp, sink).ok()) return std::nan("");
    const std::vector<double>& direct = s.loss.direct_parameter_gradient();
    for (std::size_t k = 0; k < direct.size(); ++k) sum += direct[k] * dp[k];
  }
  use_parameters(m, f.segments.empty() ? m.p : f.segments.back().p);
  return sum;
}

/// The loss of the frozen steps and firings from (u0, p) moved along (du, dp) by `step`.
double frozen_loss(Model& m, const method::IntegratorOptions& io, const ForwardRun& f,
                   const std::vector<double>& u0, const std::vector<double>& du, const std::vector<double>& dp,
                   double step) {
  const std::vector<double> p_saved = m.p;
  m.p = f.p0;
  for (std::size_t k = 0; k < dp.size(); ++k) m.p[std::size_t(m.derivative_parameters[k])] += step * dp[k];
  m.prepare_all();
  std::vector<double> u = u0;
  for (std::size_t i = 0; i < u.size(); ++i) u[i] += step * du[i];
  double total = 0;
  for (const Segment& s : f.segments) {
    for (const detail::Firing& firing : s.firings) detail::apply_affects(m, *firing.affects, firing.t, u);
    detail::Loss loss = s.loss;  // shares its observeds' programs with the run's
    loss.prepare(m.p);
    loss.start(u);
    std::vector<double> previous = u;
    method::replay(m.problem, io, s.tape, u, [&](std::size_t k, std::span<const double> next) {
      loss.step(s.tape.steps[k].t, previous, s.tape.steps[k].t_end, next);
      previous.assign(next.begin(), next.end());
    });
    total += loss.value();
    u = previous;
  }
  m.p = p_saved;
  m.prepare_all();  // the run's observeds are not evaluated again: their rows are recorded
  return total;
}

/// Random directions scaled by each variable's magnitude (concentrations of 1e-9 and rate
/// constants of 1e-12 in one vector): tangent against adjoint, and central differences.
void run_checks(Model& m, const method::IntegratorOptions& io, ForwardRun& f, AffectDerivatives& affects,
                const std::vector<double>& u0, int count, GradientResult& r) {
  std::mt19937_64 rng(20261207);
  std::uniform_real_distribution<double> unit(-1, 1);
  const std::size_t np = m.derivative_parameters.size();
  for (int c = 0; c < count; ++c) {
    std::vector<double> du(u0.size()), dp(np), lambda(u0.size());
    for (std::size_t i = 0; i < du.size(); ++i) du[i] = unit(rng) * std::abs(u0[i]);
    for (std::size_t k = 0; k < np; ++k) dp[k] = unit(rng) * std::abs(m.p[std::size_t(m.derivative_parameters[k])]);
    for (double& x : lambda) x = unit(rng);
    GradientCheck g;
    std::vector<double> t = du;
    g.loss_tangent = tangent_run(m, io, f, affects, t, dp);
    if (std::isnan(g.loss_tangent)) continue;
    std::vector<double> l = lambda, mu(np, 0.0);
    if (!adjoint_run(m, io, f, affects, l, mu, false).ok()) continue;
    g.tangent = dot(lambda, t);
    g.adjoint = dot(l, du) + dot(mu, dp);
    // Relative to sum |lambda_i t_i|, the scale the dot product's rounding lives on.
    double magnitude = 0;
    for (std::size_t i = 0; i < t.size(); ++i) magnitude += std::abs(lambda[i] * t[i]);
    g.dot_relative = std::abs(g.tangent - g.adjoint) / std::max(magnitude, 1e-300);
    g.step = 1e-6;
    g.finite_difference = (frozen_loss(m, io, f, u0, du, dp, g.step) - frozen_loss(m, io, f, u0, du, dp, -g.step)) /
                          (2 * g.step);
    g.difference_relative = std::abs(g.finite_difference - g.loss_tangent) / std::max(std::abs(g.loss_tangent), 1e-300);
    r.checks.push_back(g);
  }
}

/// Events a gradient differentiates with their firing held fixed: preset times and periodic
/// schedules, whether they set states or parameters (§5.4 schedule updates). The others are
/// refused, located at the document.
void refuse_events(const Model& m, const esm::ResolvedDocument* document) {
  const std::string file = document ? document->file : "";
  for (const detail::Event& e : m.events.events) {
    if (e.trigger == detail::Trigger::Crossing)
      refuse("adjoint_unsupported_event", e.name + ": gradients through events that fire where a condition "
             "crosses zero need the derivative of their firing time, which is not supported yet; "
             "preset-time and periodic events are", file);
    if (e.trigger == detail::Trigger::Condition)
      refuse("adjoint_unsupported_event", e.name + ": gradients through events that fire at the step ends "
             "where a condition holds are not supported (which step ends those are depends on the "
             "steps); preset-time and periodic events are", file);
  }
}

/// A model bound with its derivative programs, what to differentiate with respect to, and the
/// integrator's options with the method resolved: what gradients and sensitivities share.
struct Bound {
  std::unique_ptr<Model> model;
  Targets targets;
  bool events_set_parameters = false;  ///< the sweep must carry mu through firings
  std::vector<double> u0;
  method::IntegratorOptions io;
};

Bound bind_for_derivatives(const esm::System& system, const SimulateOptions& run,
                           const std::vector<std::string>& wrt) {
  if (!system.grid.empty())
    refuse("adjoint_unsupported_grid", "gradients and sensitivities need arrays as one equation per "
                                       "cell (esi simulate --gradient flattens them so)");
  if (!std::isfinite(run.t0) || !std::isfinite(run.t1) || !(run.t1 > run.t0))
    refuse("invalid_time_span", "the time span must be finite with t1 > t0 (got " +
                                    number_text(run.t0) + ", " + number_text(run.t1) + ")");
  Bound b;
  b.model = detail::build_model(system, run.document, true, false, run.native);
  Model& m = *b.model;
  refuse_events(m, run.document);
  m.ensure_jacobian();
  // Parameters scheduled events set: the sweep carries their adjoint between firings.
  std::vector<int> updated;
  for (const detail::Event& e : m.events.events)
    for (const detail::Assignment& a : e.affects)
      if (a.parameter) updated.push_back(a.index);
  const std::size_t fixed = kernel::differentiable_parameters(m.system).size();
  m.ensure_derivatives(updated);
  // One LU plan for the forward segments and the sweeps' replays.
  m.problem.lu_plans = std::make_shared<method::SparseLuPlanCache>();
  b.events_set_parameters = !updated.empty();
  b.targets = resolve_targets(m, wrt, fixed);
  b.u0 = m.initial_state();
  b.io = run.integrator;
  if (b.io.method == method::MethodId::Auto) b.io.method = method::choose_method(m.problem, run.t0, run.t1, b.u0);
  if (const std::string why = method::sensitivity_unsupported(b.io.method); !why.empty())
    refuse("adjoint_unsupported_method", why);
  return b;
}

}  // namespace

GradientResult gradient(const esm::System& system, const GradientOptions& options) {
  const SimulateOptions& run = options.run;
  GradientResult r;
  std::vector<LossTerm> terms = options.loss_terms;
  if (terms.empty()) {
    LossTerm at_end;
    at_end.variable = options.loss;
    at_end.times = {run.t1};
    terms.push_back(at_end);
  }
  detail::Loss loss(system, std::move(terms), run.t0, run.t1);
  r.loss_units = loss.units();
  const Bound bound = bind_for_derivatives(system, run, options.wrt);
  Model& m = *bound.model;
  const Targets& targets = bound.targets;
  const std::vector<double>& u0 = bound.u0;
  const method::IntegratorOptions& io = bound.io;
  loss.bind(m);
  // No parameter asked for and none set by events: the sweep skips every df/dp (mu empty).
  const bool parameters = !targets.parameters.empty() || bound.events_set_parameters;
  m.ensure_vector_jacobian_product(parameters);
  r.states = m.system.states.size();
  r.parameters = m.derivative_parameters.size();
  r.method = io.method;

  if (options.time_plain_forward) {
    const auto plain_start = std::chrono::steady_clock::now();
    // Its own LU plan, as a run of `esi simulate` makes: the recorded forward run below pays
    // for the plan the sweep then shares.
    method::OdeProblem alone = m.problem;
    alone.lu_plans = nullptr;
    method::Integrator plain(alone, io, run.t0, u0);
    while (plain.t() < run.t1)
      if (plain.step(run.t1) != method::ReturnCode::Success) break;
    r.plain_seconds = seconds_since(plain_start);
  }

  // Forward, recording every accepted step.
  const auto forward_start = std::chrono::steady_clock::now();
  ForwardRun forward = record_forward(m, io, run, u0, loss, std::max<std::size_t>(1, options.checkpoint_every),
                                      options.checkpoint_memory);
  r.forward_seconds = seconds_since(forward_start);
  r.forward_stats = forward.stats;
  if (forward.code != method::ReturnCode::Success) {
    r.code = forward.code;
    r.message = forward.message;
    return r;
  }
  r.steps = forward.steps;
  r.tape_bytes = forward.tape_bytes;
  r.checkpoint_every = forward.checkpoint_every;
  r.loss = forward.loss;

  // Backward.
  const auto sweep_start = std::chrono::steady_clock::now();
  AffectDerivatives affects(m);
  std::vector<double> lambda(u0.size(), 0.0), mu(parameters ? m.derivative_parameters.size() : 0, 0.0);
  r.sweep = adjoint_run(m, io, forward, affects, lambda, mu, true);
  r.sweep_seconds = seconds_since(sweep_start);
  if (!r.sweep.ok()) {
    r.code = r.sweep.code;
    r.message = r.sweep.message;
    return r;
  }
  for (std::size_t k : targets.parameters) {
    const auto& v = m.system.parameters[std::size_t(m.derivative_parameters[k])];
    r.gradient.push_back({v.name, false, mu[k], per_unit(r.loss_units, v.units)});
  }
  for (std::size_t i : targets.states) {
    const auto& v = m.system.states[i];
    r.gradient.push_back({v.name, true, lambda[i], per_unit(r.loss_units, v.units)});
  }
  if (options.check_directions > 0) run_checks(m, io, forward, affects, u0, options.check_directions, r);
  return r;
}

SensitivityTrajectory forward_sensitivities(const esm::System& system, const SimulateOptions& run,
                                            const std::vector<std::string>& wrt) {
  if (wrt.empty()) refuse("unknown_gradient_variable", "--sensitivities names no parameter or state");
  const Bound bound = bind_for_derivatives(system, run, wrt);
  Model& m = *bound.model;
  const Targets& targets = bound.targets;
  const std::vector<double>& u0 = bound.u0;
  const method::IntegratorOptions& io = bound.io;
  SensitivityTrajectory out;
  const std::size_t n = m.system.states.size();
  out.state_count = n;
  for (std::size_t i = 0; i < n; ++i) out.names.push_back(m.system.states[i].name);
  // In the order given: one direction per name.
  std::vector<std::pair<bool, std::size_t>> directions;  // (is a parameter, index)
  std::size_t ps = 0, ss = 0;
  for (const std::string& name : wrt) {
    const bool parameter = m.system.state_index(name) < 0;
    directions.emplace_back(parameter, parameter ? targets.parameters[ps++] : targets.states[ss++]);
    for (std::size_t i = 0; i < n; ++i) out.names.push_back("d(" + out.names[i] + ")/d(" + name + ")");
  }
  out.method = io.method;
  // Output times are step ends: the run stops at each (a loss reading the first state there
  // gives the forward run those stops).
  if (planned_output_rows(run) > kMaxOutputRows)
    refuse("too_many_outputs", "saveat " + number_text(run.saveat) + " would produce more than " +
                                   number_text(kMaxOutputRows) + " output rows");
  std::vector<double> times{run.t0};
  for (double k = 1; run.saveat > 0 && run.t0 + k * run.saveat < run.t1; ++k) times.push_back(run.t0 + k * run.saveat);
  times.push_back(run.t1);
  LossTerm stops;
  stops.variable = m.system.states.front().name;
  stops.times = times;
  const detail::Loss loss(m.system, {stops}, run.t0, run.t1);
  ForwardRun f = record_forward(m, io, run, u0, loss, 1, 0);
  out.steps = f.steps;
  if (f.code != method::ReturnCode::Success) {
    out.code = f.code;
    out.message = f.message;
  }

  // Walks the run as the trajectory shows it: a row at an event's time is the state after the
  // firings there (the next segment's start), every other row a step end. `row(state, du)` is
  // called once per output time reached, in order; `du` (and `dp`) are carried through the
  // firings and the tangent of every segment.
  AffectDerivatives affects(m);
  const auto walk = [&](std::vector<double> du, std::vector<double> dp, const auto& row) -> bool {
    std::size_t next = 0;
    for (const Segment& s : f.segments) {
      for (const detail::Firing& firing : s.firings) affects.tangent(firing, du, dp);
      use_parameters(m, s.p);
      if (next < times.size() && times[next] == s.t_begin) row(next++, s.start, du);
      const auto sink = [&](std::size_t k, std::span<const double> tangent) {
        const double t_end = s.tape.steps[k].t_end;
        if (next >= times.size() || t_end != times[next] || (t_end == s.t_end && !s.last)) return;
        const auto u = k + 1 < s.tape.steps.size() ? s.tape.checkpoint(k + 1) : std::span<const double>(s.tape.final_state);
        row(next++, u, tangent);
      };
      if (!method::tangent(m.problem, io, s.tape, du, dp, sink).ok()) return false;
    }
    return true;
  };
  const std::size_t width = out.names.size();
  std::vector<double> values(times.size() * width, 0.0);
  std::size_t rows = 0;
  for (std::size_t d = 0; d < directions.size(); ++d) {
    std::vector<double> du(n, 0.0), dp(m.derivative_parameters.size(), 0.0);
    (directions[d].first ? dp : du)[directions[d].second] = 1;
    const std::size_t column = n * (1 + d);
    std::size_t reached = 0;
    const bool ok = walk(du, dp, [&](std::size_t r, std::span<const double> u, std::span<const double> tangent) {
      if (d == 0) std::copy(u.begin(), u.end(), values.begin() + long(r * width));
      std::copy(tangent.begin(), tangent.end(), values.begin() + long(r * width + column));
      reached = r + 1;
    });
    if (!ok && out.ok()) {
      out.code = method::ReturnCode::LinearSolveFailed;
      out.message = "the tangent sweep failed";
    }
    rows = d == 0 ? reached : std::min(rows, reached);
  }
  use_parameters(m, f.p0);
  out.times.assign(times.begin(), times.begin() + long(rows));
  values.resize(rows * width);
  out.values = std::move(values);
  return out;
}

}  // namespace esi::exec
