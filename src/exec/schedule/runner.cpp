// Running the schedule (runner.hpp): the macro-step loop (output times, forcing epochs, restart
// points, `every` periods and events end macro steps), the tree's nodes over a macro step, the
// leaves' integrators and lane pools, and the forcing epoch seen by a stage on a record time.
#include <algorithm>
#include <cmath>
#include <string>

#include "esi/core/error.hpp"
#include "exec/run_support.hpp"
#include "exec/schedule/runner.hpp"

namespace esi::exec::detail {

void Runner::run() {
  RowWriter rows(*model_, sim_, traj_);
  OutputClock clock(sim_);
  double t = c_.start;
  std::vector<double> u;
  if (o_.resume) {
    const RestartState& r = *o_.resume;
    if (r.fingerprint != print_)
      throw Error(
          "restart_mismatch", "", "",
          "the restart file was written by a run of another model or configuration (operators, "
          "schedule, step, forcing and inputs must be the same to resume)");
    if (r.u.size() != model_->system.states.size() || r.leaves.size() != leaves_.size() ||
        !(r.t >= c_.start && r.t < c_.stop))
      throw Error("restart_mismatch", "", "",
                  "the restart file's state or time (t = " + number_text(r.t) +
                      ") does not fit this run");
    t = r.t;
    u = r.u;
    macro_steps_ = r.macro_steps;
    if (r.p.size() != model_->p.size())
      throw Error("restart_mismatch", "", "",
                  "the restart file's parameters do not fit this model");
    model_->p = r.p;
    model_->prepare_all();
    events_.emplace(*model_, c_.start, t, mapped_);
    while (!clock.done() && clock.peek() < t) clock.pop();
    refresh_forcing(t);
    for (std::size_t k = 0; k < leaves_.size(); ++k) {
      Leaf& l = leaves_[k];
      const RestartState::Leaf& s = r.leaves[k];
      if (s.has_integrator) {
        l.integrator.emplace(problem_, l.io, t, u);
        l.integrator->resume(t, u, s.carry);
        l.report.accepted = s.carry.stats.accepted;
        l.report.rejected = s.carry.stats.rejected;
      }
      if (!s.step_size.empty()) l.step_size = s.step_size;
      l.cells = s.cells;
    }
  } else {
    refresh_forcing(t);
    u = model_->initial_state();
    events_.emplace(*model_, c_.start, t, mapped_);
    events_->fire_at_start(u);
  }
  if (o_.on_columns) o_.on_columns(traj_.names);
  if (!clock.done() && clock.peek() == t) {
    clock.pop();
    rows.record(t, u);
  }
  while (!rows.stopped && t < c_.stop) {
    refresh_forcing(t);
    double t_next = std::min(clock.done() ? c_.stop : clock.peek(), c_.stop);
    if (c_.macro_dt > 0) t_next = std::min(t_next, t + c_.macro_dt);
    epoch_start_ = t;
    epoch_end_ = forcing_.next_time(t);
    t_next = std::min(t_next, epoch_end_);
    t_next = std::min(t_next, next_multiple(t, o_.restart_every));
    t_next = std::min(t_next, next_every(c_.schedule, t));
    t_next = std::min(t_next, events_->next_time());
    if (!execute(c_.schedule, t, t_next, u)) break;
    t = t_next;
    ++macro_steps_;
    events_->fire_due(t, u);  // before the output at t, as esi simulate records post-event
    if (o_.on_step) o_.on_step(t, reports());
    const bool due = !clock.done() && clock.peek() == t;
    if (due) {
      clock.pop();
      rows.record(t, u);
    }
    if (rows.stopped) break;
    const bool interrupted = o_.stop && o_.stop->load(std::memory_order_relaxed) && t < c_.stop;
    if (o_.on_restart && t < c_.stop && (interrupted || on_multiple(t, o_.restart_every)))
      o_.on_restart(restart_state(t, u));
    if (interrupted) {
      if (!due) rows.record(t, u);
      traj_.code = method::ReturnCode::Interrupted;
      traj_.message = "Interrupted at t = " + number_text(t) + ": stopped on request (Ctrl-C)";
      break;
    }
  }
  out_.leaves = reports();
  out_.macro_steps = macro_steps_;
  traj_.events_fired = static_cast<long>(events_->fired());  // since the run (or resume) started
  sum_statistics();
}

void Runner::sum_statistics() {
  for (const Leaf& l : leaves_)
    if (l.target == Target::Cells) {
      LanePoolStats& s = traj_.cell_stats;
      s.cells = l.cells.cells;
      s.failed_cells += l.cells.failed_cells;
      s.accepted += l.cells.accepted, s.rejected += l.cells.rejected;
      s.rhs_evaluations += l.cells.rhs_evaluations,
          s.jacobian_evaluations += l.cells.jacobian_evaluations;
      s.factorizations += l.cells.factorizations, s.linear_solves += l.cells.linear_solves;
      s.lane_slots += l.cells.lane_slots;
      s.max_cell_steps = std::max(s.max_cell_steps, l.cells.max_cell_steps);
      if (traj_.method == method::MethodId::Auto)
        traj_.method = l.lanes.method;  // no grid leaf ran
    } else if (l.integrator) {
      traj_.method = l.integrator->method();
      traj_.switches.insert(traj_.switches.end(), l.integrator->switches().begin(), l.integrator->switches().end());
      const auto& st = l.integrator->stats();
      method::IntegratorStats& sum = traj_.stats;
      sum.accepted += st.accepted, sum.rejected += st.rejected;
      sum.rhs_evaluations += st.rhs_evaluations,
          sum.jacobian_evaluations += st.jacobian_evaluations;
      sum.factorizations += st.factorizations, sum.linear_solves += st.linear_solves;
    }
}

std::size_t Runner::map_event(const ScheduleNode& n) const {
  for (const auto& [node, e] : maps_)
    if (node == &n) return e;
  ESI_ASSERT(false);
  return 0;
}

Runner::Leaf& Runner::leaf_of(const ScheduleNode& n) {
  for (Leaf& l : leaves_)
    if (l.node == &n) return l;
  ESI_ASSERT(false);
  return leaves_.front();
}

bool Runner::execute(const ScheduleNode& n, double a, double b, std::vector<double>& u) {
  switch (n.kind) {
    case ScheduleNode::Kind::Leaf:
      return run_leaf(leaf_of(n), a, b, u);
    case ScheduleNode::Kind::Sequence:
      for (const auto& c : n.children)
        if (!execute(c, a, b, u)) return false;
      return true;
    case ScheduleNode::Kind::Strang: {
      const double m = a + 0.5 * (b - a);
      const std::size_t last = n.children.size() - 1;
      for (std::size_t k = 0; k < last; ++k)
        if (!execute(n.children[k], a, m, u)) return false;
      if (!execute(n.children[last], a, b, u)) return false;
      for (std::size_t k = last; k-- > 0;)
        if (!execute(n.children[k], m, b, u)) return false;
      return true;
    }
    case ScheduleNode::Kind::Map:
      events_->apply(model_->events.events[map_event(n)].affects, b, u);
      return true;
    case ScheduleNode::Kind::Subcycle: {
      const double h = (b - a) / n.substeps;
      for (int k = 0; k < n.substeps; ++k) {
        const double lo = a + h * k, hi = k + 1 == n.substeps ? b : a + h * (k + 1);
        if (!execute(n.children.front(), lo, hi, u)) return false;
      }
      return true;
    }
    case ScheduleNode::Kind::Every: {
      if (!on_multiple(b, n.period)) {  // not due: run what is below only when it is
        return true;
      }
      return execute(n.children.front(), std::max(c_.start, b - n.period), b, u);
    }
  }
  return true;
}

bool Runner::run_leaf(Leaf& l, double a, double b, std::vector<double>& u) {
  ++l.report.calls;
  if (l.target == Target::Cells) {
    cell_op_->step_size().swap(l.step_size);
    method::ReturnCode code = method::ReturnCode::Success;
    const bool ok = cell_op_->run(a, b, u, l.lanes, l.cells, code, traj_.message);
    cell_op_->step_size().swap(l.step_size);
    l.report.accepted = l.cells.accepted;
    l.report.rejected = l.cells.rejected;
    if (!ok) {
      traj_.code = code;
      if (!c_.file.empty())
        traj_.message = l.node->leaf.op + " (" + l.node->pointer + "): " + traj_.message;
    }
    return ok;
  }
  if (!l.integrator) {
    l.integrator.emplace(problem_, l.io, a, u);
  } else {
    l.integrator->restart(a, u);
  }
  while (l.integrator->t() < b) {
    const method::ReturnCode rc = l.integrator->step(b);
    if (rc != method::ReturnCode::Success) {
      traj_.code = rc;
      traj_.message =
          l.node->leaf.op + " (" + std::string(method::method_info(l.integrator->method()).name) +
          (c_.file.empty() ? "" : ", " + l.node->pointer) + "): " + l.integrator->message();
      return false;
    }
  }
  u.assign(l.integrator->u().begin(), l.integrator->u().end());
  l.report.accepted = l.integrator->stats().accepted;
  l.report.rejected = l.integrator->stats().rejected;
  if (l.io.method == method::MethodId::Auto) {
    l.report.method_now = method::method_info(l.integrator->method()).name;
    l.report.method_switches = l.integrator->switch_count();
  }
  return true;
}

std::vector<LeafReport> Runner::reports() const {
  std::vector<LeafReport> r;
  for (const Leaf& l : leaves_) r.push_back(l.report);
  return r;
}

double Runner::next_multiple(double t, double period) const {
  if (!(period > 0)) return kNever;
  double k = std::floor((t - c_.start) / period) + 1;
  double next = c_.start + k * period;
  while (next <= t) next = c_.start + (++k) * period;
  return next;
}
bool Runner::on_multiple(double t, double period) const {
  if (!(period > 0)) return false;
  const double k = std::round((t - c_.start) / period);
  return k >= 1 && c_.start + k * period == t;
}
double Runner::next_every(const ScheduleNode& n, double t) const {
  double next = n.kind == ScheduleNode::Kind::Every ? next_multiple(t, n.period) : kNever;
  for (const auto& c : n.children) next = std::min(next, next_every(c, t));
  return next;
}

void Runner::refresh_forcing(double t, bool stage) {
  const bool changed = forcing_.load(t, stage, *model_);
  if (changed) model_->prepare_all();
  if (changed && imex_) imex_->prepare();
  if (changed && !stage) forcing_.prefetch_next();
}

RestartState Runner::restart_state(double t, const std::vector<double>& u) const {
  RestartState r;
  r.fingerprint = print_;
  r.t = t;
  r.macro_steps = macro_steps_;
  r.u = u;
  r.p = model_->p;
  for (const Leaf& l : leaves_) {
    RestartState::Leaf s;
    s.has_integrator = l.integrator.has_value();
    if (l.integrator) s.carry = l.integrator->carry();
    s.step_size = l.step_size;
    s.cells = l.cells;
    r.leaves.push_back(std::move(s));
  }
  return r;
}

template <class Call>
void Runner::at_stage(double t, Call call) {
  const bool next = t >= epoch_end_ && forcing_.has_epoch(t);
  if (next) refresh_forcing(t, true);
  call(*inner_);
  if (next) refresh_forcing(epoch_start_);
}
void Runner::rhs_implicit_at_stage(void* c, double t, const double* u, double* di) {
  static_cast<Runner*>(c)->at_stage(
      t, [&](const method::OdeProblem& p) { p.rhs_implicit(p.context, t, u, di); });
}
void Runner::rhs_explicit_at_stage(void* c, double t, const double* u, double* de) {
  static_cast<Runner*>(c)->at_stage(
      t, [&](const method::OdeProblem& p) { p.rhs_explicit(p.context, t, u, de); });
}
void Runner::rhs_at_stage(void* c, double t, const double* u, double* du) {
  static_cast<Runner*>(c)->at_stage(
      t, [&](const method::OdeProblem& p) { p.rhs(p.context, t, u, du); });
}
void Runner::jacobian_at_stage(void* c, double t, const double* u, double* v) {
  static_cast<Runner*>(c)->at_stage(
      t, [&](const method::OdeProblem& p) { p.jacobian(p.context, t, u, v); });
}
void Runner::rhs_split_at_stage(void* c, double t, const double* u, double* de, double* di) {
  static_cast<Runner*>(c)->at_stage(
      t, [&](const method::OdeProblem& p) { p.rhs_split(p.context, t, u, de, di); });
}
void Runner::implicit_jacobian_at_stage(void* c, double t, const double* u, double* v) {
  static_cast<Runner*>(c)->at_stage(
      t, [&](const method::OdeProblem& p) { p.implicit_jacobian(p.context, t, u, v); });
}

}  // namespace esi::exec::detail
