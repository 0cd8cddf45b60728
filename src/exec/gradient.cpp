// exec::gradient: the recorded forward run, the loss, the adjoint sweep and the optional
// checks (gradient.hpp).
#include "esi/exec/gradient.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "esi/core/error.hpp"
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

/// Weight of each state in the loss: 1 for a state, 1/cells for each cell of a state array.
std::vector<double> loss_weights(const esm::System& sys, const std::string& name, std::string& units) {
  std::vector<double> w(sys.states.size(), 0.0);
  if (const int i = sys.state_index(name); i >= 0) {
    w[std::size_t(i)] = 1;
    units = sys.states[std::size_t(i)].units;
    return w;
  }
  std::vector<std::size_t> cells;
  for (std::size_t i = 0; i < sys.states.size(); ++i)
    if (sys.states[i].array == name) cells.push_back(i);
  if (!cells.empty()) {
    for (std::size_t i : cells) w[i] = 1.0 / double(cells.size());
    for (const auto& a : sys.arrays)
      if (a.name == name) units = a.units;
    return w;
  }
  if (const int o = sys.observed_index(name); o >= 0) {
    const auto& v = sys.observed[std::size_t(o)];
    refuse("adjoint_unsupported_loss",
           "the loss " + name + " is an observed: gradients of observeds are not supported yet; "
           "use a state (or a state array, whose cells are averaged)", v.file, v.pointer);
  }
  refuse("unknown_gradient_variable", "--loss " + name + " names no state or state array of the model");
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
                   const std::vector<double>& dp, double step, const std::vector<double>& weights) {
  const std::vector<double> p_saved = m.p;
  for (std::size_t k = 0; k < dp.size(); ++k) m.p[std::size_t(m.derivative_parameters[k])] += step * dp[k];
  m.prepare_all();
  std::vector<double> start = u0;
  for (std::size_t i = 0; i < start.size(); ++i) start[i] += step * du[i];
  const std::vector<double> end = method::replay(m.problem, io, tape, start);
  m.p = p_saved;
  m.prepare_all();
  return dot(weights, end);
}

/// Random directions scaled by each variable's magnitude (concentrations of 1e-9 and rate
/// constants of 1e-12 in one vector): tangent against adjoint, and central differences.
void run_checks(Model& m, const method::IntegratorOptions& io, const method::ForwardTape& tape,
                const std::vector<double>& u0, const std::vector<double>& weights, int count,
                GradientResult& r) {
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
    g.dot_relative = std::abs(g.tangent - g.adjoint) / std::max(std::abs(g.tangent), 1e-300);
    // The loss's own directional derivative, by central differences of the frozen steps.
    std::vector<double> tw = du;
    if (!method::tangent(m.problem, io, tape, tw, dp).ok()) continue;
    const double exact = dot(weights, tw);
    g.loss_tangent = exact;
    g.step = 1e-6;
    g.finite_difference = (frozen_loss(m, io, tape, u0, du, dp, g.step, weights) -
                           frozen_loss(m, io, tape, u0, du, dp, -g.step, weights)) / (2 * g.step);
    g.difference_relative = std::abs(g.finite_difference - exact) / std::max(std::abs(exact), 1e-300);
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

}  // namespace

GradientResult gradient(const esm::System& system, const GradientOptions& options) {
  if (!system.grid.empty())
    refuse("adjoint_unsupported_grid", "gradients need arrays as one equation per cell (esi "
                                       "simulate --gradient flattens them so)");
  const SimulateOptions& run = options.run;
  if (!std::isfinite(run.t0) || !std::isfinite(run.t1) || !(run.t1 > run.t0))
    refuse("invalid_time_span", "the time span must be finite with t1 > t0 (got " +
                                    number_text(run.t0) + ", " + number_text(run.t1) + ")");
  GradientResult r;
  std::vector<double> weights = loss_weights(system, options.loss, r.loss_units);
  const auto model = detail::build_model(system, run.document, true, false, run.native);
  Model& m = *model;
  refuse_events(m, run.document);
  m.ensure_jacobian();
  m.ensure_derivatives();
  const Targets targets = resolve_targets(m, options.wrt);
  r.states = m.system.states.size();
  r.parameters = m.derivative_parameters.size();

  const std::vector<double> u0 = m.initial_state();
  method::IntegratorOptions io = run.integrator;
  if (io.method == method::MethodId::Auto) io.method = method::choose_method(m.problem, run.t0, run.t1, u0);
  r.method = io.method;
  if (const std::string why = method::sensitivity_unsupported(io.method); !why.empty())
    refuse("adjoint_unsupported_method", why);

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
  const auto forward_start = std::chrono::steady_clock::now();
  method::Integrator integrator(m.problem, io, run.t0, u0);
  integrator.record(&tape);
  while (integrator.t() < run.t1) {
    const method::ReturnCode rc = integrator.step(run.t1);
    if (rc != method::ReturnCode::Success) {
      r.code = rc;
      r.message = integrator.message();
      r.forward_stats = integrator.stats();
      return r;
    }
  }
  r.forward_seconds = seconds_since(forward_start);
  r.forward_stats = integrator.stats();
  r.steps = tape.steps.size();
  r.tape_bytes = tape.bytes();
  r.loss = dot(weights, std::vector<double>(integrator.u().begin(), integrator.u().end()));

  // Backward.
  const auto sweep_start = std::chrono::steady_clock::now();
  std::vector<double> lambda = weights, mu(m.derivative_parameters.size(), 0.0);
  r.sweep = method::adjoint(m.problem, io, tape, lambda, mu);
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
  if (options.check_directions > 0) run_checks(m, io, tape, u0, weights, options.check_directions, r);
  return r;
}

}  // namespace esi::exec
