#include "exec/discrete_events.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace esi::exec::detail {

DiscreteEvents::DiscreteEvents(Model& model, double t0, double now, std::vector<bool> owned)
    : m_(model), t0_(t0), owned_(std::move(owned)) {
  owned_.resize(m_.events.events.size(), false);
  for (std::size_t e = 0; e < m_.events.events.size(); ++e)
    if (m_.events.events[e].trigger == Trigger::Scheduled && !owned_[e])
      next_.emplace_back(e, next_scheduled(e, now));
}

/// First periodic firing strictly after `t`: t0 + offset + k * interval, k >= 1 when the
/// offset is 0 (no firing at t0), k >= 0 otherwise.
double DiscreteEvents::periodic_after(const Event& ev, double t) const {
  const double base = t0_ + ev.offset;
  double k = std::floor((t - base) / ev.interval) + 1;
  if (ev.offset == 0)
    k = std::max(k, 1.0);
  else
    k = std::max(k, 0.0);
  double next = base + k * ev.interval;
  while (next <= t) next = base + (++k) * ev.interval;
  return next;
}

double DiscreteEvents::next_scheduled(std::size_t e, double t) const {
  const Event& ev = m_.events.events[e];
  double next = std::numeric_limits<double>::infinity();
  for (double s : ev.times)
    if (s > t) next = std::min(next, s);
  if (ev.interval > 0) next = std::min(next, periodic_after(ev, t));
  return next;
}

double DiscreteEvents::next_time() const {
  double next = std::numeric_limits<double>::infinity();
  for (const auto& [e, when] : next_) next = std::min(next, when);
  return next;
}

bool DiscreteEvents::fire_at_start(std::vector<double>& u) {
  bool fired = false;
  for (const auto& [e, when] : next_) {
    const Event& ev = m_.events.events[e];
    if (std::find(ev.times.begin(), ev.times.end(), t0_) == ev.times.end()) continue;
    fired = apply(ev.affects, t0_, u) || fired;
  }
  return fired;
}

bool DiscreteEvents::fire_due(double t, std::vector<double>& u) {
  bool fired = false;
  for (auto& [e, when] : next_)
    if (when <= t) {
      fired = apply(m_.events.events[e].affects, t, u) || fired;
      when = next_scheduled(e, t);
    }
  for (std::size_t e = 0; e < m_.events.events.size(); ++e) {
    const Event& ev = m_.events.events[e];
    if (ev.trigger != Trigger::Condition || owned_[e]) continue;
    if (m_.conditions->evaluate(t, u)[static_cast<std::size_t>(ev.condition_rows[0])] != 0)
      fired = apply(ev.affects, t, u) || fired;
  }
  return fired;
}

bool DiscreteEvents::apply(const std::vector<Assignment>& affects, double t,
                           std::vector<double>& u) {
  if (affects.empty()) return false;
  if (log_) log_->push_back({&affects, t, u, m_.p});
  apply_affects(m_, affects, t, u);
  ++fired_;
  return true;
}

bool apply_affects(Model& model, const std::vector<Assignment>& affects, double t, std::vector<double>& u) {
  const auto rhs = model.affects->evaluate(t, u);
  std::vector<double> values;
  for (const Assignment& a : affects) values.push_back(rhs[static_cast<std::size_t>(a.row)]);
  bool parameters_changed = false;
  for (std::size_t k = 0; k < affects.size(); ++k) {
    const Assignment& a = affects[k];
    if (a.parameter) {
      parameters_changed |= model.p[static_cast<std::size_t>(a.index)] != values[k];
      model.p[static_cast<std::size_t>(a.index)] = values[k];
    } else {
      u[static_cast<std::size_t>(a.index)] = values[k];
    }
  }
  if (parameters_changed) model.prepare_all();
  return parameters_changed;
}

}  // namespace esi::exec::detail
