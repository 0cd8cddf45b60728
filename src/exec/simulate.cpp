// The run driver: output times, the step loop, event location and application.
#include "esi/exec/simulate.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "esi/core/error.hpp"
#include "esi/plan/pointwise_split.hpp"
#include "esi/kernel/grid.hpp"
#include "exec/discrete_events.hpp"
#include "exec/model.hpp"
#include "exec/run_support.hpp"

namespace esi::exec {
namespace {

using detail::DiscreteEvents;
using detail::Event;
using detail::Model;
using detail::Trigger;
using detail::number_text;
using detail::non_finite_text;
using detail::OutputClock;
using detail::RowWriter;

void check_span(const SimulateOptions& o) {
  if (!std::isfinite(o.t0) || !std::isfinite(o.t1) || !(o.t1 >= o.t0))
    throw Error("invalid_time_span", "", "",
                "the time span must be finite with t1 >= t0 (got " + number_text(o.t0) + ", " +
                    number_text(o.t1) + ")");
  if (!(o.saveat >= 0) || !std::isfinite(o.saveat))
    throw Error("invalid_time_span", "", "", "saveat must be a finite interval >= 0");
  for (double t : o.sample_times)
    if (!(t >= o.t0 && t <= o.t1))
      throw Error("invalid_time_span", "", "",
                  "sample time " + number_text(t) + " lies outside the time span");
  if (const double rows = planned_output_rows(o); rows > kMaxOutputRows)
    throw Error("too_many_outputs", "", "",
                "saveat " + number_text(o.saveat) + " over [" + number_text(o.t0) + ", " +
                    number_text(o.t1) + "] would produce about " + number_text(std::floor(rows)) +
                    " output rows; the limit is " + number_text(kMaxOutputRows));
}

int sign_of(double x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }

/// One crossing located inside the last step: the event, its direction and the time just past
/// the root (on the condition's new side, so applying the event consumes the crossing).
struct Crossing {
  std::size_t event = 0;
  bool upward = false;
  double time = 0;
};

class Driver {
 public:
  Driver(Model& model, const SimulateOptions& options, Trajectory& out)
      : m_(model), o_(options), out_(out), rows_(model, options, out), clock_(options),
        events_(model, options.t0, options.t0) {
    last_sign_.assign(m_.events.conditions.size(), 0);
    scratch_.resize(m_.system.states.size());
  }

  void run(std::vector<double> u0) {
    run_steps(std::move(u0));
    out_.events_fired = static_cast<long>(events_.fired());
  }

 private:
  void run_steps(std::vector<double> u0) {
    if (u0.empty()) return record_without_states();
    method::IntegratorOptions io = o_.integrator;
    if (o_.atol_from_scales && io.atol_each.empty()) {
      io.atol_each = atol_from_scales(m_.system, u0, io.atol);
      out_.atol_each = io.atol_each;
      largest_.assign(u0.size(), 0.0);
    }
    if (io.method == method::MethodId::Auto)
      io.auto_span = o_.t1 - o_.t0;  // the Jacobian is compiled when Rodas5P first runs
    else if (method::method_info(io.method).needs_jacobian)
      m_.ensure_jacobian();
    integrator_.emplace(m_.problem, io, o_.t0, u0);
    out_.method = integrator_->method();
    fire_presets_at_start();
    if (derivative_not_finite(o_.t0, integrator_->u())) return;
    update_signs(o_.t0, integrator_->u());
    record_current();
    track_largest();
    while (!rows_.stopped && integrator_->t() < o_.t1) {
      const method::ReturnCode rc = integrator_->step(next_stop());
      if (rc != method::ReturnCode::Success) {
        // A derivative that is not finite at the last accepted state is the likely cause of
        // a failure: name it rather than the step size the controller ran into.
        if (!derivative_not_finite(integrator_->t(), integrator_->u())) {
          out_.code = rc;
          out_.message = integrator_->message();
        }
        break;
      }
      if (!handle_crossing()) handle_step_end();
      track_largest();
      if (o_.on_step) o_.on_step(integrator_->t());
      if (!rows_.stopped && o_.stop && o_.stop->load(std::memory_order_relaxed) && integrator_->t() < o_.t1) {
        if (out_.rows == 0 || out_.last_time != integrator_->t()) rows_.record(integrator_->t(), integrator_->u());
        out_.code = method::ReturnCode::Interrupted;
        out_.message = "Interrupted at t = " + number_text(integrator_->t()) + ": stopped on request (Ctrl-C)";
        break;
      }
    }
    out_.stats = integrator_->stats();
    out_.switches.assign(integrator_->switches().begin(), integrator_->switches().end());
    for (std::size_t i = 0; i < largest_.size(); ++i)
      if (largest_[i] < out_.atol_each[i]) out_.below_atol.push_back(i);
  }

  void track_largest() {
    const auto u = integrator_->u();
    for (std::size_t i = 0; i < largest_.size(); ++i) largest_[i] = std::max(largest_[i], std::abs(u[i]));
  }

  /// Preset times equal to t0 fire before the first output (the output at t0 is post-event).
  void fire_presets_at_start() {
    std::vector<double> u(integrator_->u().begin(), integrator_->u().end());
    if (events_.fire_at_start(u)) integrator_->restart(o_.t0, u);
  }

  double next_stop() const {
    double stop = o_.t1;
    if (o_.stop_at_sample_times)
      for (double t : o_.sample_times)
        if (t > integrator_->t()) stop = std::min(stop, t);
    return std::min(stop, events_.next_time());
  }

  // ---- outputs ----

  /// Whether some derivative f(t, u) is not finite (then the run is stopped, naming it).
  bool derivative_not_finite(double t, std::span<const double> u) {
    if (m_.problem.rhs == nullptr || u.empty()) return false;
    scratch_du_.resize(u.size());
    m_.problem.rhs(m_.problem.context, t, u.data(), scratch_du_.data());
    for (std::size_t i = 0; i < u.size(); ++i)
      if (!std::isfinite(scratch_du_[i])) {
        rows_.stop_non_finite(t, "the derivative of " + m_.system.states[i].name + " is " +
                               non_finite_text(scratch_du_[i]) + " (at " + m_.system.states[i].name +
                               " = " + number_text(u[i]) + ")");
        return true;
      }
    return false;
  }

  /// Outputs strictly before `t_end` inside the last step, from its dense output.
  void record_before(double t_end) {
    while (!rows_.stopped && clock_.peek() < t_end) {
      const double t = clock_.peek();
      clock_.pop();
      integrator_->interpolate(t, scratch_);
      rows_.record(t, scratch_);
    }
  }

  /// The output at the integrator's current time, if one is due (after events at that time).
  void record_current() {
    const double t = integrator_->t();
    record_before(t);
    if (!rows_.stopped && clock_.peek() == t) {
      clock_.pop();
      rows_.record(t, integrator_->u());
    }
  }

  void record_without_states() {
    while (!rows_.stopped && !clock_.done()) {
      const double t = clock_.peek();
      clock_.pop();
      rows_.record(t, {});
    }
  }

  // ---- events ----

  void update_signs(double t, std::span<const double> u) {
    if (last_sign_.empty()) return;
    const auto g = m_.conditions->evaluate(t, u);
    for (std::size_t j = 0; j < g.size(); ++j)
      if (g[j] != 0) last_sign_[j] = sign_of(g[j]);
  }

  /// After an event: the signs seen at the new state are the baseline (0 = not yet known).
  void reset_signs(double t, std::span<const double> u) {
    std::fill(last_sign_.begin(), last_sign_.end(), 0);
    update_signs(t, u);
  }

  double condition_at(int row, double t) {
    integrator_->interpolate(t, scratch_);
    return m_.conditions->evaluate(t, scratch_)[static_cast<std::size_t>(row)];
  }

  /// Illinois (modified regula falsi) on [a, b] where the condition changes sign; returns the
  /// end of the final bracket on the far (new) side of the root.
  double locate_root(int row, double a, double ga, double b, double gb) {
    const double tol = 1e-12 * std::max({std::abs(a), std::abs(b), o_.t1 - o_.t0});
    int side = 0;
    for (int iter = 0; iter < 200 && b - a > tol; ++iter) {
      double c = (a * gb - b * ga) / (gb - ga);
      if (!(c > a && c < b)) c = 0.5 * (a + b);
      const double gc = condition_at(row, c);
      if (gc == 0) return c;
      if (sign_of(gc) == sign_of(gb)) {
        b = c;
        gb = gc;
        if (side == -1) ga *= 0.5;
        side = -1;
      } else {
        a = c;
        ga = gc;
        if (side == +1) gb *= 0.5;
        side = +1;
      }
    }
    return b;
  }

  std::optional<Crossing> earliest_crossing() {
    const double tp = integrator_->t_previous(), t = integrator_->t();
    const auto g = m_.conditions->evaluate(t, integrator_->u());
    const std::vector<double> g_end(g.begin(), g.end());
    std::optional<Crossing> best;
    for (std::size_t e = 0; e < m_.events.events.size(); ++e) {
      const Event& ev = m_.events.events[e];
      if (ev.trigger != Trigger::Crossing) continue;
      for (int row : ev.condition_rows) {
        const int before = last_sign_[static_cast<std::size_t>(row)];
        const double gb = g_end[static_cast<std::size_t>(row)];
        if (before == 0 || sign_of(gb) == before) continue;
        double root = t;
        if (gb != 0) {
          const double ga = condition_at(row, tp);
          root = sign_of(ga) == before ? locate_root(row, tp, ga, t, gb) : tp;
        }
        if (!best || root < best->time) best = Crossing{e, before < 0, root};
      }
    }
    return best;
  }

  bool handle_crossing() {
    if (m_.events.conditions.empty()) return false;
    const auto crossing = earliest_crossing();
    if (!crossing) {
      update_signs(integrator_->t(), integrator_->u());
      return false;
    }
    record_before(crossing->time);
    std::vector<double> u(m_.system.states.size());
    integrator_->interpolate(crossing->time, u);
    const Event& ev = m_.events.events[crossing->event];
    events_.apply(crossing->upward ? ev.affects : ev.affects_down, crossing->time, u);
    integrator_->restart(crossing->time, u);
    reset_signs(crossing->time, u);
    record_current();
    return true;
  }

  void handle_step_end() {
    const double t = integrator_->t();
    record_before(t);
    std::vector<double> u(integrator_->u().begin(), integrator_->u().end());
    if (events_.fire_due(t, u)) {
      integrator_->restart(t, u);
      reset_signs(t, u);
    }
    record_current();
  }

  Model& m_;
  const SimulateOptions& o_;
  Trajectory& out_;
  RowWriter rows_;
  OutputClock clock_;
  std::vector<double> scratch_du_;
  DiscreteEvents events_;
  std::vector<int> last_sign_;  // per condition row: last nonzero sign seen, 0 = none yet
  std::vector<double> scratch_;
  std::vector<double> largest_;  // atol_from_scales: each state's largest |value| so far
  std::optional<method::Integrator> integrator_;
};


}  // namespace

int Trajectory::column(const std::string& name) const {
  for (std::size_t j = 0; j < names.size(); ++j)
    if (names[j] == name) return static_cast<int>(j);
  return -1;
}

double planned_output_rows(const SimulateOptions& o) {
  double rows = 2 + static_cast<double>(o.sample_times.size());
  if (o.saveat > 0) rows += std::floor((o.t1 - o.t0) / o.saveat);
  return rows;
}

Trajectory simulate(const esm::System& system, const SimulateOptions& options) {
  check_span(options);
  if (options.cell_split) {
    if (!system.events.empty())
      throw Error("unsupported_event", "", "", "events are not run when the cells are split from the grid");
    return detail::run_cell_split(system, options);
  }
  const method::MethodId requested = options.integrator.method;
  const bool implicit_possible =
      requested == method::MethodId::Auto || method::method_info(requested).needs_jacobian;
  const auto model = detail::build_model(system, options.document, implicit_possible,
                                         options.require_observed_values, options.native, options.threads);
  return detail::simulate_model(*model, options);
}

Trajectory detail::simulate_model(Model& model, const SimulateOptions& options) {
  check_span(options);
  Trajectory out;
  for (std::size_t i = 0; i < model.system.states.size(); ++i)
    out.names.push_back(model.system.states.name(i));
  for (const auto& o : model.system.observed) out.names.push_back(o.name);
  out.state_count = model.system.states.size();
  if (options.native && model.rhs) out.native_status = model.rhs->native_status();
  if (model.grid) {
    const auto gs = model.grid->stats();
    out.grid_summary = std::to_string(gs.programs) + " programs over " + std::to_string(gs.boxes) +
                       " boxes, " + std::to_string(gs.lane_instructions) + " lane instructions";
  }
  out.held_data.assign(model.events.held_data.begin(), model.events.held_data.end());
  if (options.on_columns) options.on_columns(out.names);
  Driver(model, options, out).run(model.initial_state());
  return out;
}

double state_rate(const esm::System& system, std::size_t state, double t, std::span<const double> u) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (state >= system.states.size() || u.size() != system.states.size()) return nan;
  try {
    kernel::CompileOptions o;
    o.dofs = {static_cast<int>(state)};
    const kernel::Program program = kernel::compile(system, o);
    const std::vector<double> p = detail::default_parameter_values(system);
    kernel::Workspace ws = program.make_workspace(1);
    program.prepare(ws, p);
    double rate = nan;
    kernel::RunArgs<double> args;
    args.u = {u.data(), u.size(), 1, 1};
    args.t = std::span<const double>(&t, 1);
    args.du = {&rate, 1, 1, 1};
    kernel::run(program, ws, args);
    return rate;
  } catch (const Error&) {
    return nan;
  }
}

std::vector<double> atol_from_scales(const esm::System& system, std::span<const double> u0, double atol) {
  const std::size_t n = std::min(u0.size(), system.states.size());
  std::map<std::string, double> unit_scale;
  for (std::size_t i = 0; i < n; ++i) {
    double& s = unit_scale[system.states[i].units];
    if (std::isfinite(u0[i])) s = std::max(s, std::abs(u0[i]));
  }
  std::vector<double> out(u0.size(), atol);
  for (std::size_t i = 0; i < n; ++i) {
    const double scale = unit_scale[system.states[i].units];
    if (scale > 0) out[i] = std::min(atol, kAtolScaleFraction * scale);
  }
  return out;
}

}  // namespace esi::exec
