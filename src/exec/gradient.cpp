// exec::gradient: the recorded forward run, the loss, the adjoint sweep and the optional
// checks (gradient.hpp).
#include "esi/exec/gradient.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "esi/core/error.hpp"
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

Targets resolve_targets(const Model& m, const std::vector<std::string>& wrt) {
  const esm::System& sys = m.system;
  std::vector<int> position(sys.parameters.size(), -1);
  for (std::size_t k = 0; k < m.derivative_parameters.size(); ++k)
    position[std::size_t(m.derivative_parameters[k])] = int(k);
  Targets t;
  if (wrt.empty()) {
    for (std::size_t i = 0; i < sys.states.size(); ++i) t.states.push_back(i);
    for (std::size_t k = 0; k < m.derivative_parameters.size(); ++k) t.parameters.push_back(k);
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

/// The loss of the frozen steps from (u0, p) moved along (du, dp) by `step`.
double frozen_loss(Model& m, const method::IntegratorOptions& io, const method::ForwardTape& tape,
                   const std::vector<double>& u0, const std::vector<double>& du,
                   const std::vector<double>& dp, double step, detail::Loss loss) {
  const std::vector<double> p_saved = m.p;
  for (std::size_t k = 0; k < dp.size(); ++k) m.p[std::size_t(m.derivative_parameters[k])] += step * dp[k];
  m.prepare_all();
  loss.prepare(m.p);
  std::vector<double> start = u0;
  for (std::size_t i = 0; i < start.size(); ++i) start[i] += step * du[i];
  loss.start(start);
  std::vector<double> previous = start;
  method::replay(m.problem, io, tape, start, [&](std::size_t k, std::span<const double> u) {
    loss.step(tape.steps[k].t, previous, tape.steps[k].t_end, u);
    previous.assign(u.begin(), u.end());
  });
  m.p = p_saved;
  m.prepare_all();
  const double value = loss.value();
  loss.prepare(m.p);  // the copy shares its observeds' programs with the caller's loss
  return value;
}

/// The loss's derivative along (du, dp) by the tangent: dL/du at every step end against the
/// tangent there.
double loss_tangent(Model& m, const method::IntegratorOptions& io, const method::ForwardTape& tape,
                    const std::vector<double>& du, const std::vector<double>& dp, const detail::Loss& loss) {
  std::vector<double> g(du.size(), 0.0), t = du;
  loss.add_gradient_at_start(tape, g);
  double sum = dot(g, du);
  const auto sink = [&](std::size_t k, std::span<const double> tangent) {
    std::fill(g.begin(), g.end(), 0.0);
    loss.add_gradient_at_step_end(tape, k, g);
    for (std::size_t i = 0; i < g.size(); ++i) sum += g[i] * tangent[i];
  };
  if (!method::tangent(m.problem, io, tape, t, dp, sink).ok()) return std::nan("");
  const std::vector<double>& direct = loss.direct_parameter_gradient();
  for (std::size_t k = 0; k < direct.size(); ++k) sum += direct[k] * dp[k];
  return sum;
}

/// Random directions scaled by each variable's magnitude (concentrations of 1e-9 and rate
/// constants of 1e-12 in one vector): tangent against adjoint, and central differences.
void run_checks(Model& m, const method::IntegratorOptions& io, const method::ForwardTape& tape,
                const std::vector<double>& u0, const detail::Loss& loss, int count, GradientResult& r) {
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
    if (!method::tangent(m.problem, io, tape, t, dp).ok()) continue;
    std::vector<double> l = lambda, mu(np, 0.0);
    if (!method::adjoint(m.problem, io, tape, l, mu).ok()) continue;
    g.tangent = dot(lambda, t);
    g.adjoint = dot(l, du) + dot(mu, dp);
    // Relative to sum |lambda_i t_i|, the scale the dot product's rounding lives on.
    double magnitude = 0;
    for (std::size_t i = 0; i < t.size(); ++i) magnitude += std::abs(lambda[i] * t[i]);
    g.dot_relative = std::abs(g.tangent - g.adjoint) / std::max(magnitude, 1e-300);
    g.loss_tangent = loss_tangent(m, io, tape, du, dp, loss);
    g.step = 1e-6;
    g.finite_difference = (frozen_loss(m, io, tape, u0, du, dp, g.step, loss) -
                           frozen_loss(m, io, tape, u0, du, dp, -g.step, loss)) / (2 * g.step);
    g.difference_relative = std::abs(g.finite_difference - g.loss_tangent) / std::max(std::abs(g.loss_tangent), 1e-300);
    r.checks.push_back(g);
  }
}

void refuse_events(const Model& m, const esm::ResolvedDocument* document) {
  if (m.events.events.empty()) return;
  const detail::Event& e = m.events.events.front();
  refuse("adjoint_unsupported_event",
         e.name + ": gradients through events and parameter updates are not supported yet (the "
         "model has " + std::to_string(m.events.events.size()) + "); run without --gradient, or "
         "remove the events", document ? document->file : "");
}

/// A model bound with its derivative programs, what to differentiate with respect to, and the
/// integrator's options with the method resolved: what gradients and sensitivities share.
struct Bound {
  std::unique_ptr<Model> model;
  Targets targets;
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
  m.ensure_derivatives();
  b.targets = resolve_targets(m, wrt);
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
  r.states = m.system.states.size();
  r.parameters = m.derivative_parameters.size();
  r.method = io.method;

  if (options.time_plain_forward) {
    const auto plain_start = std::chrono::steady_clock::now();
    method::Integrator plain(m.problem, io, run.t0, u0);
    while (plain.t() < run.t1)
      if (plain.step(run.t1) != method::ReturnCode::Success) break;
    r.plain_seconds = seconds_since(plain_start);
  }

  // Forward, recording every accepted step.
  method::ForwardTape tape;
  tape.checkpoint_every = std::max<std::size_t>(1, options.checkpoint_every);
  tape.keep_stages = tape.checkpoint_every == 1;  // no replays; K > 1 trades them for memory
  const auto forward_start = std::chrono::steady_clock::now();
  method::Integrator integrator(m.problem, io, run.t0, u0);
  integrator.record(&tape);
  loss.start(u0);
  std::vector<double> previous = u0;
  std::size_t next_stop = 0;
  while (integrator.t() < run.t1) {
    const auto& stops = loss.stops();
    const double limit = next_stop < stops.size() ? stops[next_stop] : run.t1;
    const method::ReturnCode rc = integrator.step(limit);
    if (rc != method::ReturnCode::Success) {
      r.code = rc;
      r.message = integrator.message();
      r.forward_stats = integrator.stats();
      return r;
    }
    loss.step(integrator.t_previous(), previous, integrator.t(), integrator.u());
    previous.assign(integrator.u().begin(), integrator.u().end());
    if (integrator.t() == limit) ++next_stop;
  }
  r.forward_seconds = seconds_since(forward_start);
  r.forward_stats = integrator.stats();
  r.steps = tape.steps.size();
  r.tape_bytes = tape.bytes();
  r.loss = loss.value();

  // Backward.
  const auto sweep_start = std::chrono::steady_clock::now();
  std::vector<double> lambda(u0.size(), 0.0), mu(m.derivative_parameters.size(), 0.0);
  r.sweep = method::adjoint(m.problem, io, tape, lambda, mu, [&](std::size_t k, std::span<double> l) {
    loss.add_gradient_at_step_end(tape, k, l);
  });
  loss.add_gradient_at_start(tape, lambda);
  const std::vector<double>& direct = loss.direct_parameter_gradient();
  for (std::size_t k = 0; k < direct.size(); ++k) mu[k] += direct[k];
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
  if (options.check_directions > 0) run_checks(m, io, tape, u0, loss, options.check_directions, r);
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
  // Output times are step ends: the run steps to each.
  if (planned_output_rows(run) > kMaxOutputRows)
    refuse("too_many_outputs", "saveat " + number_text(run.saveat) + " would produce more than " +
                                   number_text(kMaxOutputRows) + " output rows");
  std::vector<double> times{run.t0};
  for (double k = 1; run.saveat > 0 && run.t0 + k * run.saveat < run.t1; ++k) times.push_back(run.t0 + k * run.saveat);
  times.push_back(run.t1);
  method::ForwardTape tape;
  tape.keep_stages = true;
  method::Integrator integrator(m.problem, io, run.t0, u0);
  integrator.record(&tape);
  std::vector<std::size_t> row_step;  // the step whose end each row after the first is
  for (std::size_t k = 1; k < times.size(); ++k) {
    while (integrator.t() < times[k]) {
      const method::ReturnCode rc = integrator.step(times[k]);
      if (rc != method::ReturnCode::Success) {
        out.code = rc;
        out.message = integrator.message();
        break;
      }
    }
    if (!out.ok()) break;
    row_step.push_back(tape.steps.size() - 1);
  }
  out.steps = tape.steps.size();
  const std::size_t rows = 1 + row_step.size(), width = out.names.size();
  out.times.assign(times.begin(), times.begin() + long(rows));
  out.values.assign(rows * width, 0.0);
  for (std::size_t i = 0; i < n; ++i) out.values[i] = u0[i];
  for (std::size_t r = 1; r < rows; ++r) {
    const std::size_t k = row_step[r - 1];
    const auto u = k + 1 < tape.steps.size() ? tape.checkpoint(k + 1) : std::span<const double>(tape.final_state);
    std::copy(u.begin(), u.end(), out.values.begin() + long(r * width));
  }
  for (std::size_t d = 0; d < directions.size(); ++d) {
    std::vector<double> du(n, 0.0), dp(m.derivative_parameters.size(), 0.0);
    (directions[d].first ? dp : du)[directions[d].second] = 1;
    const std::size_t column = n * (1 + d);
    for (std::size_t i = 0; i < n; ++i) out.values[column + i] = du[i];  // row 0: d u0 / d name
    std::size_t next_row = 1;
    const auto sink = [&](std::size_t k, std::span<const double> tangent) {
      if (next_row < rows && row_step[next_row - 1] == k) {
        std::copy(tangent.begin(), tangent.end(), out.values.begin() + long(next_row * width + column));
        ++next_row;
      }
    };
    const method::SweepResult sr = method::tangent(m.problem, io, tape, du, dp, sink);
    if (!sr.ok()) {
      out.code = sr.code;
      out.message = sr.message;
      return out;
    }
  }
  return out;
}

}  // namespace esi::exec
