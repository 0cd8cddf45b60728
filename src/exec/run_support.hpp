// Private to exec: what the run drivers (simulate.cpp, schedule/runner.cpp) share: output times,
// output rows and number spelling for messages.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "esi/core/text.hpp"
#include "esi/exec/simulate.hpp"
#include "exec/model.hpp"

namespace esi::exec::detail {

using esi::number_text;  ///< shortest round-trip spelling, for messages (core/text.hpp)

/// The output times in increasing order, generated one at a time: t0, t0 + k * saveat (while
/// below t1), t1, merged with the sample times; a time not above the previous one is skipped.
class OutputClock {
 public:
  explicit OutputClock(const SimulateOptions& o) : o_(o) {
    for (double t : o.sample_times)
      if (t >= o.t0 && t <= o.t1) samples_.push_back(t);
    std::sort(samples_.begin(), samples_.end());
    skip_passed();
  }

  bool done() const { return peek() == kNone; }
  /// The next output time (kNone when there is none).
  double peek() const { return std::min(grid_time(), sample_time()); }
  /// Consumes the next output time and every later one that does not exceed it.
  void pop() {
    last_ = peek();
    has_last_ = true;
    skip_passed();
  }

 private:
  static constexpr double kNone = std::numeric_limits<double>::infinity();
  enum Phase { Start, Grid, End, Done };

  double grid_time() const {
    switch (phase_) {
      case Start: return o_.t0;
      case Grid: return o_.t0 + static_cast<double>(k_) * o_.saveat;
      case End: return o_.t1;
      case Done: break;
    }
    return kNone;
  }
  double sample_time() const { return next_sample_ < samples_.size() ? samples_[next_sample_] : kNone; }

  void advance_grid() {
    if (phase_ == Start) {
      phase_ = Grid;
      k_ = 1;
    } else if (phase_ == Grid) {
      ++k_;
    } else {
      phase_ = Done;
      return;
    }
    if (!(o_.saveat > 0 && o_.t0 + static_cast<double>(k_) * o_.saveat < o_.t1)) phase_ = End;
  }

  void skip_passed() {
    if (!has_last_) return;
    while (grid_time() <= last_) advance_grid();
    while (sample_time() <= last_) ++next_sample_;
  }

  const SimulateOptions& o_;
  std::vector<double> samples_;  // sorted, inside [t0, t1]
  std::size_t next_sample_ = 0;
  Phase phase_ = Start;
  long k_ = 0;
  double last_ = 0;
  bool has_last_ = false;
};

/// "nan", "inf" or "-inf".
inline std::string non_finite_text(double x) { return std::isnan(x) ? "NaN" : (x > 0 ? "+inf" : "-inf"); }

/// Output rows (states, then observeds) into a Trajectory or the caller's on_row; a state or
/// observed that is not finite ends the run with ReturnCode::NonFinite instead.
class RowWriter {
 public:
  RowWriter(Model& model, const SimulateOptions& options, Trajectory& out)
      : m_(model), o_(options), out_(out) {}
  bool stopped = false;  // a non-finite value ended the run

  /// Ends the run with ReturnCode::NonFinite: `what` is not finite at time t.
  void stop_non_finite(double t, const std::string& what) {
    out_.code = method::ReturnCode::NonFinite;
    out_.message = "NonFinite at t = " + number_text(t) + ": " + what;
    stopped = true;
  }

  void record(double t, std::span<const double> u) {
    if (stopped) return;
    const auto obs = m_.observed->evaluate(t, u);
    for (std::size_t i = 0; i < u.size(); ++i)
      if (!std::isfinite(u[i]))
        return stop_non_finite(t, "state " + m_.system.states[i].name + " is " + non_finite_text(u[i]));
    // Observeds the caller does not read may lack parameter values (and read NaN) by design.
    if (o_.require_observed_values)
      for (std::size_t i = 0; i < obs.size(); ++i)
        if (!std::isfinite(obs[i]))
          return stop_non_finite(t, "observed " + m_.system.observed[i].name + " is " +
                                        non_finite_text(obs[i]) +
                                        " (its equation has no finite value at this state)");
    ++out_.rows;
    out_.last_time = t;
    if (o_.on_row) {
      row_.assign(u.begin(), u.end());
      row_.insert(row_.end(), obs.begin(), obs.end());
      o_.on_row(t, row_);
      return;
    }
    out_.times.push_back(t);
    out_.values.insert(out_.values.end(), u.begin(), u.end());
    out_.values.insert(out_.values.end(), obs.begin(), obs.end());
  }

 private:
  Model& m_;
  const SimulateOptions& o_;
  Trajectory& out_;
  std::vector<double> row_;
};

/// SimulateOptions::cell_split: the pointwise part on lane pools Lie-split from the rest, run
/// as a two-leaf schedule (schedule.cpp).
Trajectory run_cell_split(const esm::System& system, const SimulateOptions& options);

struct Model;
/// `simulate` on a model already built (build_model with `options`' method family, native and
/// require_observed_values): what a sweep runs for each point after Model::reset_parameters.
/// The span is checked by the caller; cell_split is not supported here.
Trajectory simulate_model(Model& model, const SimulateOptions& options);

}  // namespace esi::exec::detail
