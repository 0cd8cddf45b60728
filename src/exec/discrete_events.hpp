// Private to exec: the discrete events of a compiled model (spec §5.2: preset times, periodic,
// condition-at-step-end) as both drivers fire them: `simulate`'s at the integrator's step ends,
// the schedule interpreter's at macro-step ends. Continuous (crossing) events need root finding
// in dense output and stay with `simulate`'s driver.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "exec/model.hpp"

namespace esi::exec::detail {

/// One application of an event's affects, as a gradient's sweep differentiates it: the
/// assignments, when, and the state and parameters they read (before any of them applied).
struct Firing {
  const std::vector<Assignment>* affects = nullptr;
  double t = 0;
  std::vector<double> u_before, p_before;
};

/// Applies `affects` at (t, u) to u and model.p (every right-hand side reads the pre-event
/// values; a changed parameter prepares the model's programs again). True when a parameter
/// changed. What DiscreteEvents::apply does to the model, and a frozen replay's firing.
bool apply_affects(Model& model, const std::vector<Assignment>& affects, double t, std::vector<double>& u);

class DiscreteEvents {
 public:
  /// Scheduled events of `model`, periodic ones counted from t0; the next firings are those
  /// strictly after `now` (a resumed run passes its restart time). Events marked in `owned`
  /// (by index; a schedule's map nodes apply them) never fire by their own trigger.
  DiscreteEvents(Model& model, double t0, double now, std::vector<bool> owned = {});

  /// The earliest scheduled firing still to come (infinity when none): a stop for the driver.
  double next_time() const;
  /// Preset times equal to t0 fire before the first output; true when any fired.
  bool fire_at_start(std::vector<double>& u);
  /// At a step end t: scheduled events due at or before t (then rescheduled), then condition
  /// events whose condition is nonzero at (t, u); true when any fired.
  bool fire_due(double t, std::vector<double>& u);
  /// Applies `affects` at (t, u): every right-hand side reads the pre-event values; a changed
  /// parameter prepares the model's programs again. False when there is nothing to apply.
  bool apply(const std::vector<Assignment>& affects, double t, std::vector<double>& u);
  std::size_t fired() const { return fired_; }
  /// From now on every apply() appends its Firing to `log` (null: stop).
  void log_firings(std::vector<Firing>* log) { log_ = log; }

 private:
  double periodic_after(const Event& ev, double t) const;
  double next_scheduled(std::size_t e, double t) const;

  Model& m_;
  double t0_;
  std::vector<bool> owned_;
  std::vector<std::pair<std::size_t, double>> next_;  // scheduled event -> next firing time
  std::size_t fired_ = 0;
  std::vector<Firing>* log_ = nullptr;
};

}  // namespace esi::exec::detail
