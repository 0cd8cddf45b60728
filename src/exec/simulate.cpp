// The run driver: output times, the step loop, event location and application.
#include "esi/exec/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "esi/core/error.hpp"
#include "exec/model.hpp"

namespace esi::exec {
namespace {

using detail::Assignment;
using detail::Event;
using detail::Model;
using detail::Trigger;

/// t0, t0 + k * saveat, t1 and the sample times, sorted and without duplicates.
std::vector<double> output_times(const SimulateOptions& o) {
  std::vector<double> times{o.t0, o.t1};
  if (o.saveat > 0)
    for (long k = 1;; ++k) {
      const double t = o.t0 + static_cast<double>(k) * o.saveat;
      if (!(t < o.t1)) break;
      times.push_back(t);
    }
  for (double t : o.sample_times)
    if (t >= o.t0 && t <= o.t1) times.push_back(t);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  return times;
}

void check_span(const SimulateOptions& o) {
  if (!std::isfinite(o.t0) || !std::isfinite(o.t1) || !(o.t1 >= o.t0))
    throw Error("invalid_time_span", "", "",
                "the time span must be finite with t1 >= t0 (got " + std::to_string(o.t0) + ", " +
                    std::to_string(o.t1) + ")");
  if (!(o.saveat >= 0) || !std::isfinite(o.saveat))
    throw Error("invalid_time_span", "", "", "saveat must be a finite interval >= 0");
  for (double t : o.sample_times)
    if (!(t >= o.t0 && t <= o.t1))
      throw Error("invalid_time_span", "", "",
                  "sample time " + std::to_string(t) + " lies outside the time span");
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
      : m_(model), o_(options), out_(out), times_(output_times(options)) {
    for (std::size_t e = 0; e < m_.events.events.size(); ++e)
      if (m_.events.events[e].trigger == Trigger::Scheduled) next_firing_.push_back({e, first_firing(e)});
    last_sign_.assign(m_.events.conditions.size(), 0);
    scratch_.resize(m_.system.states.size());
  }

  void run(std::vector<double> u0) {
    if (u0.empty()) return record_without_states();
    method::IntegratorOptions io = o_.integrator;
    if (io.method == method::MethodId::Auto)
      io.method = method::choose_method(m_.problem, o_.t0, o_.t1, u0);
    integrator_.emplace(m_.problem, io, o_.t0, u0);
    out_.method = integrator_->method();
    fire_presets_at_start();
    update_signs(o_.t0, integrator_->u());
    record_current();
    while (integrator_->t() < o_.t1) {
      const method::ReturnCode rc = integrator_->step(next_stop());
      if (rc != method::ReturnCode::Success) {
        out_.code = rc;
        out_.message = integrator_->message();
        break;
      }
      if (!handle_crossing()) handle_step_end();
    }
    out_.stats = integrator_->stats();
  }

 private:
  /// Preset times equal to t0 fire before the first output (the output at t0 is post-event).
  void fire_presets_at_start() {
    std::vector<double> u(integrator_->u().begin(), integrator_->u().end());
    bool fired = false;
    for (const auto& [e, when] : next_firing_) {
      const Event& ev = m_.events.events[e];
      if (std::find(ev.times.begin(), ev.times.end(), o_.t0) == ev.times.end()) continue;
      apply(ev.affects, o_.t0, u);
      fired = true;
    }
    if (fired) integrator_->restart(o_.t0, u);
  }

  double first_firing(std::size_t e) const {
    const Event& ev = m_.events.events[e];
    double next = std::numeric_limits<double>::infinity();
    for (double t : ev.times)
      if (t > o_.t0) next = std::min(next, t);
    if (ev.interval > 0) next = std::min(next, periodic_after(ev, o_.t0));
    return next;
  }

  /// First periodic firing strictly after `t`: t0 + offset + k * interval, k >= 1 when the
  /// offset is 0 (no firing at t0), k >= 0 otherwise.
  double periodic_after(const Event& ev, double t) const {
    const double base = o_.t0 + ev.offset;
    double k = std::floor((t - base) / ev.interval) + 1;
    if (ev.offset == 0) k = std::max(k, 1.0);
    else k = std::max(k, 0.0);
    double next = base + k * ev.interval;
    while (next <= t) next = base + (++k) * ev.interval;
    return next;
  }

  double next_scheduled(std::size_t e, double t) const {
    const Event& ev = m_.events.events[e];
    double next = std::numeric_limits<double>::infinity();
    for (double s : ev.times)
      if (s > t) next = std::min(next, s);
    if (ev.interval > 0) next = std::min(next, periodic_after(ev, t));
    return next;
  }

  double next_stop() const {
    double stop = o_.t1;
    if (o_.stop_at_sample_times)
      for (double t : o_.sample_times)
        if (t > integrator_->t()) stop = std::min(stop, t);
    for (const auto& [e, t] : next_firing_) stop = std::min(stop, t);
    return stop;
  }

  // ---- outputs ----

  void record(double t, std::span<const double> u) {
    const auto obs = m_.observed->evaluate(t, u);
    out_.times.push_back(t);
    out_.values.insert(out_.values.end(), u.begin(), u.end());
    out_.values.insert(out_.values.end(), obs.begin(), obs.end());
  }

  /// Outputs strictly before `t_end` inside the last step, from its dense output.
  void record_before(double t_end) {
    while (next_output_ < times_.size() && times_[next_output_] < t_end) {
      const double t = times_[next_output_++];
      integrator_->interpolate(t, scratch_);
      record(t, scratch_);
    }
  }

  /// The output at the integrator's current time, if one is due (after events at that time).
  void record_current() {
    const double t = integrator_->t();
    record_before(t);
    if (next_output_ < times_.size() && times_[next_output_] == t) {
      record(t, integrator_->u());
      ++next_output_;
    }
  }

  void record_without_states() {
    for (double t : times_) record(t, {});
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

  /// Applies `affects` at (t, u, p): every right-hand side reads the pre-event values.
  bool apply(const std::vector<Assignment>& affects, double t, std::vector<double>& u) {
    if (affects.empty()) return false;
    const auto rhs = m_.affects->evaluate(t, u);
    std::vector<double> values;
    for (const Assignment& a : affects) values.push_back(rhs[static_cast<std::size_t>(a.row)]);
    bool parameters_changed = false;
    for (std::size_t k = 0; k < affects.size(); ++k) {
      const Assignment& a = affects[k];
      if (a.parameter) {
        parameters_changed |= m_.p[static_cast<std::size_t>(a.index)] != values[k];
        m_.p[static_cast<std::size_t>(a.index)] = values[k];
      } else {
        u[static_cast<std::size_t>(a.index)] = values[k];
      }
    }
    if (parameters_changed) m_.prepare_all();
    ++out_.events_fired;
    return true;
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
    apply(crossing->upward ? ev.affects : ev.affects_down, crossing->time, u);
    integrator_->restart(crossing->time, u);
    reset_signs(crossing->time, u);
    record_current();
    return true;
  }

  void handle_step_end() {
    const double t = integrator_->t();
    record_before(t);
    std::vector<double> u(integrator_->u().begin(), integrator_->u().end());
    bool fired = false;
    for (auto& [e, when] : next_firing_)
      if (when <= t) {
        apply(m_.events.events[e].affects, t, u);
        when = next_scheduled(e, t);
        fired = true;
      }
    for (const Event& ev : m_.events.events) {
      if (ev.trigger != Trigger::Condition) continue;
      if (m_.conditions->evaluate(t, u)[static_cast<std::size_t>(ev.condition_rows[0])] != 0) {
        apply(ev.affects, t, u);
        fired = true;
      }
    }
    if (fired) {
      integrator_->restart(t, u);
      reset_signs(t, u);
    }
    record_current();
  }

  Model& m_;
  const SimulateOptions& o_;
  Trajectory& out_;
  std::vector<double> times_;
  std::size_t next_output_ = 0;
  std::vector<std::pair<std::size_t, double>> next_firing_;  // scheduled event -> next time
  std::vector<int> last_sign_;  // per condition row: last nonzero sign seen, 0 = none yet
  std::vector<double> scratch_;
  std::optional<method::Integrator> integrator_;
};

}  // namespace

int Trajectory::column(const std::string& name) const {
  for (std::size_t j = 0; j < names.size(); ++j)
    if (names[j] == name) return static_cast<int>(j);
  return -1;
}

Trajectory simulate(const esm::System& system, const SimulateOptions& options) {
  check_span(options);
  const method::MethodId requested = options.integrator.method;
  const bool implicit_possible =
      requested == method::MethodId::Auto || method::method_info(requested).needs_jacobian;
  const auto model = detail::build_model(system, options.document, implicit_possible,
                                         options.require_observed_values, options.native);
  Trajectory out;
  for (const auto& s : model->system.states) out.names.push_back(s.name);
  for (const auto& o : model->system.observed) out.names.push_back(o.name);
  out.state_count = model->system.states.size();
  Driver(*model, options, out).run(model->initial_state());
  return out;
}

}  // namespace esi::exec
