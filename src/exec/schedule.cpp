// The schedule interpreter (schedule.hpp): binding a run configuration's operators to the
// system, the macro-step loop, forcing epochs and restart points.
#include "esi/exec/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <map>
#include <optional>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/exec/lane_pool.hpp"
#include "esi/exec/pointwise.hpp"
#include "esi/plan/plan.hpp"
#include "exec/cell_operator.hpp"
#include "exec/discrete_events.hpp"
#include "exec/imex_operator.hpp"
#include "exec/model.hpp"
#include "exec/run_support.hpp"

namespace esi::exec {
namespace {

using detail::Model;
using detail::number_text;

constexpr double kNever = std::numeric_limits<double>::infinity();

/// What a configuration operator (or a leaf) runs on.
enum class Target { Whole, Rest, Cells };

std::string planner_list(const plan::Plan& p) {
  std::string out;
  for (const auto& op : p.operators)
    out += (out.empty() ? "" : ", ") + op.name + " (" + plan::locality_name(op.locality) + ")";
  return out;
}

bool selects(const OperatorSpec& s, const plan::Operator& op) {
  if (!s.locality.empty()) {
    const std::string l = plan::locality_name(op.locality);
    if (std::none_of(s.locality.begin(), s.locality.end(),
                     [&](const std::string& x) { return x == l || x == "all"; }))
      return false;
  }
  if (!s.component.empty()) {
    auto under = [](const std::string& name, const std::string& c) {
      return name == c ||
             (name.size() > c.size() && name.compare(0, c.size(), c) == 0 && name[c.size()] == '.');
    };
    if (std::none_of(s.component.begin(), s.component.end(), [&](const std::string& c) {
          return under(op.component, c) || under(op.name, c);
        }))
      return false;
  }
  return true;
}

void collect_leaves(const ScheduleNode& n, std::vector<const ScheduleNode*>& out) {
  if (n.kind == ScheduleNode::Kind::Leaf) out.push_back(&n);
  for (const auto& c : n.children) collect_leaves(c, out);
}

/// The configuration's operators bound to what esi runs.
struct Binding {
  bool whole = false;                    ///< every leaf is "all"
  std::map<std::string, Target> target;  ///< operator name -> Rest / Cells
  std::string summary;
  /// Leaves with "auto" methods only: per operator, the planner's Gershgorin bound at sampled
  /// states (max over the planner operators it selects) and their names.
  std::map<std::string, double> bound;
  std::map<std::string, std::string> planner_ops;
};

bool any_auto_leaf(const RunConfig& config) {
  std::vector<const ScheduleNode*> leaves;
  collect_leaves(config.schedule, leaves);
  return std::any_of(leaves.begin(), leaves.end(),
                     [](auto* l) { return l->leaf.method == method::MethodId::Auto; });
}

/// The strategy rule for an "auto" leaf (seed 002 §3.5): stiffness from structure first (a
/// pointwise operator runs on lane pools, which take Rosenbrock methods; a grid operator runs
/// without a Jacobian, so explicitly), then the planner's Gershgorin bound at sampled
/// non-default states times the macro step, against the same threshold choose_method uses.
LeafChoice choose_leaf(const ScheduleNode& n, Target target, const Binding& b, double macro_dt) {
  constexpr double kStiff =
      500;  // as choose_method: hundreds of explicit steps for stability alone
  LeafChoice c;
  c.leaf = n.leaf.op;
  c.pointer = n.pointer;
  c.automatic = n.leaf.method == method::MethodId::Auto;
  const auto it = b.bound.find(n.leaf.op);
  const double rho = it == b.bound.end() ? -1 : it->second;
  char buf[160];
  std::string measured = "no sampled bound";
  if (rho >= 0) {
    std::snprintf(buf, sizeof buf, "Gershgorin bound %.3g /s at sampled states (%s)", rho,
                  b.planner_ops.at(n.leaf.op).c_str());
    measured = buf;
    if (macro_dt > 0) {
      std::snprintf(buf, sizeof buf, "; times the %g s macro step: %.3g, %s %g", macro_dt,
                    rho * macro_dt, rho * macro_dt > kStiff ? "stiff, above" : "not stiff, at most",
                    kStiff);
      measured += buf;
    }
  }
  if (target == Target::Cells) {
    c.method = method::MethodId::Rodas3;
    c.why =
        "pointwise operator on lane pools, which take Rosenbrock methods: Rodas3 (order 3, stiffly "
        "accurate, 4 stages); " +
        measured;
  } else if (target == Target::Rest) {
    c.method = method::MethodId::SSPRK43;
    c.why =
        "grid operator run without a Jacobian, so explicit: SSPRK43 (strong-stability preserving "
        "for "
        "the limiters, embedded error estimate); " +
        measured;
  } else {
    c.method = method::MethodId::Auto;
    c.why =
        "the whole right-hand side: chosen at the start by a spectral-radius estimate at the "
        "initial "
        "state (Rodas5P when stiff over the span, else Tsit5)";
  }
  if (!c.automatic) {
    c.method = n.leaf.method;
    c.why = "given in the run configuration";
  }
  return c;
}

/// `planned`: the system's plan when the caller has made one (with its validation, for the
/// strategy rule's bounds); otherwise it is made here.
Binding bind(const esm::System& system, const RunConfig& config,
             const plan::Plan* planned = nullptr) {
  Binding b;
  std::vector<const ScheduleNode*> leaves;
  collect_leaves(config.schedule, leaves);
  const bool any_all =
      std::any_of(leaves.begin(), leaves.end(), [](auto* l) { return l->leaf.op == "all"; });
  const bool all_all =
      std::all_of(leaves.begin(), leaves.end(), [](auto* l) { return l->leaf.op == "all"; });
  if (any_all && !all_all) {
    const auto* l =
        *std::find_if(leaves.begin(), leaves.end(), [](auto* x) { return x->leaf.op == "all"; });
    throw Error(
        "unsupported_operator_split", config.file, pointer_join(l->pointer, "leaf"),
        "a schedule either runs the whole right-hand side (\"all\") or its operators, not both");
  }
  if (all_all) {
    b.whole = true;
    b.summary = "the whole right-hand side as one operator";
    return b;
  }
  if (system.grid.empty())
    throw Error(
        "unsupported_operator_split", config.file, "/operators",
        "esi splits the tendencies of gridded models (per-region programs) into operators; this "
        "model has no arrays on a grid, so run it with one leaf \"all\"");
  std::optional<plan::Plan> made;
  if (!planned) {
    esm::System copy = system;
    plan::PlanOptions po;
    po.validate = any_auto_leaf(config);  // the sampled Gershgorin bounds of the strategy rule
    made = plan::make_plan(copy, po);
  }
  const plan::Plan& p = planned ? *planned : *made;
  std::vector<int> owner(p.operators.size(), -1);
  for (std::size_t s = 0; s < config.operators.size(); ++s) {
    const OperatorSpec& spec = config.operators[s];
    bool any = false, pointwise = false, other = false;
    for (std::size_t k = 0; k < p.operators.size(); ++k) {
      if (!selects(spec, p.operators[k])) continue;
      if (owner[k] >= 0)
        throw Error("operators_overlap", config.file, pointer_join(spec.pointer, "select"),
                    "operators '" + config.operators[owner[k]].name + "' and '" + spec.name +
                        "' both select the planner's operator " + p.operators[k].name +
                        "; each term must belong to one operator");
      owner[k] = static_cast<int>(s);
      any = true;
      (p.operators[k].locality == plan::Locality::Pointwise ? pointwise : other) = true;
    }
    if (!any)
      throw Error("selector_matches_nothing", config.file, pointer_join(spec.pointer, "select"),
                  "operator '" + spec.name +
                      "' selects none of the model's operators (the planner found: " +
                      planner_list(p) + ")");
    if (pointwise && other)
      throw Error("unsupported_operator_split", config.file, pointer_join(spec.pointer, "select"),
                  "operator '" + spec.name +
                      "' mixes pointwise terms with column, stencil or global ones; esi "
                      "runs the pointwise terms on lane pools and the rest on the grid, so select "
                      "them separately "
                      "(the planner found: " +
                      planner_list(p) + ")");
    const Target t = pointwise ? Target::Cells : Target::Rest;
    for (const auto& [name, other_t] : b.target)
      if (other_t == t)
        throw Error(
            "unsupported_operator_split", config.file, pointer_join(spec.pointer, "select"),
            "operators '" + name + "' and '" + spec.name + "' are both " +
                (t == Target::Cells ? "pointwise" : "non-pointwise") +
                "; esi runs all pointwise terms as one operator and all other terms as another, so "
                "select them in one operator");
    b.target[spec.name] = t;
    for (std::size_t k = 0; k < p.operators.size(); ++k)
      if (owner[k] == static_cast<int>(s) && p.operators[k].sampled_gershgorin >= 0) {
        b.bound[spec.name] = std::max(b.bound.count(spec.name) ? b.bound[spec.name] : 0.0,
                                      p.operators[k].sampled_gershgorin);
        std::string& names = b.planner_ops[spec.name];
        names += (names.empty() ? "" : ", ") + p.operators[k].name;
      }
  }
  for (std::size_t k = 0; k < p.operators.size(); ++k)
    if (owner[k] < 0)
      throw Error("operator_terms_unassigned", config.file, "/operators",
                  "no operator selects the planner's operator " + p.operators[k].name + " (" +
                      plan::locality_name(p.operators[k].locality) + ", component " +
                      p.operators[k].component +
                      "); every term of the right-hand side must be run by some operator");
  for (const auto& [name, t] : b.target)
    b.summary +=
        (b.summary.empty() ? "" : "; ") + name + ": " +
        (t == Target::Cells ? "pointwise terms on lane pools" : "the other terms on the grid");
  return b;
}

/// A forcing provider's target in the system: a parameter array or a scalar parameter.
struct ForcingSlot {
  int array = -1;      ///< System::arrays index
  int parameter = -1;  ///< System::parameters index
  int bracket_axis = -1;
  std::size_t values = 1;
  /// Cell form (the array became one parameter per cell): per cell of the array, first index
  /// fastest, its System::parameters index (-1: no equation reads that cell).
  std::vector<int> cell_parameters;
};

ForcingSlot locate_forcing(const esm::System& system, const RunConfig& config,
                           const ForcingProvider& f) {
  ForcingSlot slot;
  for (std::size_t a = 0; a < system.arrays.size(); ++a)
    if (system.arrays[a].name == f.target) slot.array = static_cast<int>(a);
  if (slot.array < 0) {
    slot.parameter = system.parameter_index(f.target);
    if (slot.parameter < 0)
      throw Error("forcing_target_unknown", config.file, f.pointer,
                  "'" + f.target + "' is not a parameter or parameter array of the model");
    if (!f.bracket.empty() || f.record_values != 1)
      throw Error("forcing_shape_mismatch", config.file, f.pointer,
                  "'" + f.target + "' is a scalar parameter, but the provider gives " +
                      std::to_string(f.record_values) + " values per record" +
                      (f.bracket.empty() ? "" : " with a bracket"));
    return slot;
  }
  const auto& arr = system.arrays[static_cast<std::size_t>(slot.array)];
  if (!arr.parameter)
    throw Error("forcing_target_unknown", config.file, f.pointer,
                "'" + f.target +
                    "' is an array the model computes or integrates, not a parameter array; "
                    "forcing sets parameters");
  if (arr.values.empty()) {  // cell form: one parameter per cell that some equation reads
    std::vector<std::int64_t> x(arr.extents.size(), 1);
    std::size_t cells = 1;
    for (std::int64_t e : arr.extents) cells *= static_cast<std::size_t>(e);
    for (std::size_t c = 0; c < cells; ++c) {
      slot.cell_parameters.push_back(system.parameter_index(esm::cell_name(arr.name, x)));
      for (std::size_t d = 0; d < x.size(); ++d) {  // odometer, first index fastest
        if (++x[d] <= arr.extents[d]) break;
        x[d] = 1;
      }
    }
  }
  std::size_t n = 1;
  for (std::size_t d = 0; d < arr.axes.size(); ++d) {
    if (arr.axes[d] == f.bracket) {
      slot.bracket_axis = static_cast<int>(d);
      if (arr.extents[d] != 2)
        throw Error("forcing_shape_mismatch", config.file, pointer_join(f.pointer, "bracket"),
                    "the bracket index set '" + f.bracket + "' has " +
                        std::to_string(arr.extents[d]) + " entries along '" + f.target +
                        "'; it must hold two records");
      continue;
    }
    n *= static_cast<std::size_t>(arr.extents[d]);
  }
  if (!f.bracket.empty() && slot.bracket_axis < 0)
    throw Error("forcing_shape_mismatch", config.file, pointer_join(f.pointer, "bracket"),
                "'" + f.target + "' has no axis '" + f.bracket + "'");
  if (n != f.record_values)
    throw Error("forcing_shape_mismatch", config.file, f.pointer,
                "'" + f.target + "' holds " + std::to_string(n) +
                    " values per record, the provider gives " + std::to_string(f.record_values));
  slot.values = n;
  return slot;
}

std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

/// The configuration's parts that decide the bits of a run (not the end time, output or
/// threads), the system's states and the caller's salt.
std::uint64_t fingerprint(const esm::System& system, const RunConfig& config, std::uint64_t salt) {
  nlohmann::json key = config.source.is_object() ? config.source : nlohmann::json::object();
  for (const char* k : {"time", "output", "partition", "description"}) key.erase(k);
  std::uint64_t h = fnv1a(14695981039346656037ULL, canonical_json(key));
  h = fnv1a(h, canonical_json(config.inputs));
  for (std::size_t i = 0; i < system.states.size(); ++i) h = fnv1a(h, system.states.name(i) + "\n");
  h = fnv1a(h, std::to_string(config.start));
  return h ^ (salt * 0x9E3779B97F4A7C15ULL);
}

class Runner {
 public:
  /// `bound` and `split`: a binding and a split the caller already has (simulate's split).
  Runner(const esm::System& given, const RunConfig& config, const ScheduleOptions& options,
         ScheduleResult& out, const Binding* bound = nullptr,
         std::optional<PointwiseSplit> split = std::nullopt)
      : c_(config), o_(options), out_(out), traj_(out.trajectory), split_(std::move(split)) {
    // Forcing targets get their values from the providers before anything is evaluated; until
    // then they hold 0 where nothing else gave a value (compiling refuses NaN parameter cells).
    esm::System system = given;
    for (const ForcingProvider& f : o_.forcing) {
      for (auto& a : system.arrays)
        if (a.name == f.target && a.parameter)
          for (double& v : a.values)
            if (std::isnan(v)) v = 0;
      for (auto& p : system.parameters)  // the cell form: one parameter per cell
        if ((p.name == f.target || p.array == f.target) && !p.default_value) p.default_value = 0.0;
    }
    binding_ = bound ? *bound : bind(system, config);
    std::vector<const ScheduleNode*> nodes;
    collect_leaves(config.schedule, nodes);
    bool implicit = false;
    const ScheduleNode* imex_leaf = nullptr;
    for (const ScheduleNode* n : nodes) {
      implicit = implicit || n->leaf.method == method::MethodId::Auto ||
                 method::method_info(n->leaf.method).needs_jacobian;
      if (method::is_imex(n->leaf.method) && !imex_leaf) imex_leaf = n;
    }
    if (binding_.whole && imex_leaf) {
      // The monolithic reference of a split run: the grid terms explicit, the pointwise terms
      // of every cell implicit, integrated together (exec/imex_operator.hpp).
      const std::string name(method::method_info(imex_leaf->leaf.method).name);
      const std::string where = pointer_join(imex_leaf->pointer, "alg");
      if (system.grid.empty())
        throw Error(
            "unsupported_method_for_operator", config.file, where,
            name +
                " integrates a gridded model's grid terms explicitly and its pointwise terms "
                "implicitly, and this model is not in the per-region grid form (it has no arrays "
                "on a "
                "grid, or another leaf runs an implicit method on the cell form): give it an "
                "implicit "
                "method such as Rodas5P");
      std::string why;
      if (!split_) split_ = split_pointwise(system, why);
      if (!split_)
        throw Error(
            "unsupported_method_for_operator", config.file, where,
            name +
                " integrates the pointwise terms (chemistry) implicitly and the rest explicitly, "
                "and this model has no pointwise part that can be separated: " +
                why);
      model_ = detail::build_model(split_->rest, o_.document, false, true, o_.native,
                                   static_cast<unsigned>(c_.threads));
      imex_.emplace(*model_, *split_);
      binding_.summary =
          "the whole right-hand side as one IMEX problem: the grid terms explicit, the pointwise "
          "terms of " +
          std::to_string(imex_->cells()) + " cells x " + std::to_string(imex_->cell_states()) +
          " states implicit (block-diagonal Jacobian)";
    } else if (binding_.whole) {
      model_ = detail::build_model(system, o_.document, implicit && system.grid.empty(), true,
                                   o_.native, static_cast<unsigned>(c_.threads));
    } else {
      std::string why;
      if (!split_) split_ = split_pointwise(system, why);
      if (!split_)
        throw Error("unsupported_operator_split", config.file, "/operators",
                    "the pointwise terms cannot be separated from the rest: " + why);
      model_ = detail::build_model(split_->rest, o_.document, false, true, o_.native,
                                   static_cast<unsigned>(c_.threads));
      CellModelOptions co;
      co.cell_parameters = split_->cell_input_names;
      co.native = o_.native;
      co.native_lanes = c_.lanes;  // the run's block width (a leaf may still choose another)
      cells_ = CellModel::build(split_->cell, co);
      cell_op_.emplace(*model_, *split_, *cells_);
    }
    bind_maps(c_.schedule);
    check_events();
    for (const ScheduleNode* n : nodes) leaves_.push_back(make_leaf(*n));
    for (const ForcingProvider& f : o_.forcing)
      slots_.push_back(locate_forcing(model_->system, c_, f));
    loaded_.assign(o_.forcing.size(), -1);
    cache_.resize(o_.forcing.size());
    // The leaves' integrators see the model through this problem, which picks the forcing
    // epoch by stage time (see rhs_at_stage).
    inner_ = imex_ ? &imex_->problem() : &model_->problem;
    problem_ = *inner_;
    problem_.context = this;
    problem_.rhs = &Runner::rhs_at_stage;
    if (problem_.jacobian) problem_.jacobian = &Runner::jacobian_at_stage;
    if (problem_.rhs_split) problem_.rhs_split = &Runner::rhs_split_at_stage;
    if (problem_.rhs_implicit) problem_.rhs_implicit = &Runner::rhs_implicit_at_stage;
    if (problem_.rhs_explicit) problem_.rhs_explicit = &Runner::rhs_explicit_at_stage;
    if (problem_.implicit_jacobian)
      problem_.implicit_jacobian = &Runner::implicit_jacobian_at_stage;
    for (std::size_t i = 0; i < model_->system.states.size(); ++i)
      traj_.names.push_back(model_->system.states.name(i));
    for (const auto& s : model_->system.observed) traj_.names.push_back(s.name);
    traj_.state_count = model_->system.states.size();
    if (model_->grid) {
      const auto gs = model_->grid->stats();
      traj_.grid_summary = std::to_string(gs.programs) + " programs over " +
                           std::to_string(gs.boxes) + " boxes, " +
                           std::to_string(gs.lane_instructions) + " lane instructions";
    }
    traj_.held_data.assign(model_->events.held_data.begin(), model_->events.held_data.end());
    if (cells_) {
      const auto first = std::find_if(leaves_.begin(), leaves_.end(),
                                      [](const Leaf& l) { return l.target == Target::Cells; });
      const LanePoolOptions& lp = first->lanes;
      traj_.cell_summary = std::to_string(cell_op_->cells()) + " cells x " +
                           std::to_string(cells_->state_count()) + " states, " +
                           std::string(method::method_info(lp.method).name) +
                           " with one controller per cell on " + std::to_string(lp.lanes) +
                           " lanes, " + std::to_string(lp.threads) +
                           (lp.threads == 1 ? " thread" : " threads") + "; " + cells_->describe();
      if (o_.native) traj_.native_status = cells_->native_status();
    } else if (o_.native && model_->rhs) {
      traj_.native_status = model_->rhs->native_status();
    }
    out_.operators = binding_.summary;
    sim_.t0 = c_.start;
    sim_.t1 = c_.stop;
    sim_.saveat = c_.output_every;
    sim_.sample_times = o_.sample_times;
    sim_.on_row = o_.on_row;
    print_ = fingerprint(system, c_, o_.fingerprint_salt);
  }

  void run() {
    detail::RowWriter rows(*model_, sim_, traj_);
    detail::OutputClock clock(sim_);
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
      epoch_end_ = next_forcing_time(t);
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
        const auto& st = l.integrator->stats();
        method::IntegratorStats& sum = traj_.stats;
        sum.accepted += st.accepted, sum.rejected += st.rejected;
        sum.rhs_evaluations += st.rhs_evaluations,
            sum.jacobian_evaluations += st.jacobian_evaluations;
        sum.factorizations += st.factorizations, sum.linear_solves += st.linear_solves;
      }
  }

 private:
  struct Leaf {
    const ScheduleNode* node = nullptr;
    Target target = Target::Whole;
    method::IntegratorOptions io;
    LanePoolOptions lanes;
    std::optional<method::Integrator> integrator;
    std::vector<double> step_size;
    LanePoolStats cells;
    LeafReport report;
  };

  Leaf make_leaf(const ScheduleNode& n) {
    const LeafSpec& s = n.leaf;
    Leaf l;
    l.node = &n;
    l.target = binding_.whole ? Target::Whole : binding_.target.at(s.op);
    const std::string where = pointer_join(n.pointer, "alg");
    if (l.target == Target::Cells) {
      if (!s.dt_scope.empty() && s.dt_scope != "cell")
        throw Error("unsupported_dt_scope", c_.file,
                    pointer_join(pointer_join(n.pointer, "control"), "dt_scope"),
                    "operator '" + s.op +
                        "' runs on lane pools, where every cell takes its own step (dt_scope "
                        "\"cell\"); one global step over all cells is not offered");
      if (s.nonnegative != method::DomainPolicy::None)
        throw Error(
            "unsupported_domain_policy", c_.file, pointer_join(n.pointer, "domain"),
            "lane pools do not enforce a domain yet; remove \"domain\" from this leaf (the cells' "
            "Rosenbrock steps are not clipped or rejected for negative values)");
      const LeafChoice choice = choose_leaf(n, l.target, binding_, c_.macro_dt);
      l.lanes.method = choice.method;
      if (choice.automatic) l.report.why = choice.why;
      if (!method::is_rosenbrock(l.lanes.method))
        throw Error("unsupported_method_for_operator", c_.file, where,
                    "operator '" + s.op +
                        "' runs on lane pools, which take Rosenbrock methods (Rodas3, "
                        "Rosenbrock23, ROS34PW2, ...), not " +
                        std::string(method::method_info(l.lanes.method).name));
      if (s.rtol) l.lanes.rtol = *s.rtol;
      if (s.atol) l.lanes.atol = {*s.atol};
      l.lanes.dt_initial = s.dt0;
      l.lanes.dt_max = s.dt_max;
      if (s.max_steps > 0) l.lanes.max_steps = s.max_steps;
      l.lanes.controller = s.controller;
      l.lanes.threads = c_.threads;
      l.lanes.lanes = c_.lanes;
      if (s.lanes) l.lanes = *s.lanes;
      l.step_size.assign(cell_op_->cells(), 0.0);
      l.report.what = s.op + ": " + std::string(method::method_info(l.lanes.method).name) +
                      ", one step per cell";
      return l;
    }
    if (!s.dt_scope.empty() && s.dt_scope != "global")
      throw Error("unsupported_dt_scope", c_.file,
                  pointer_join(pointer_join(n.pointer, "control"), "dt_scope"),
                  "operator '" + s.op +
                      "' runs as one system with one step (dt_scope \"global\"); per-cell "
                      "steps are for the pointwise operator");
    const LeafChoice choice = choose_leaf(n, l.target, binding_, c_.macro_dt);
    l.io.method = choice.method;
    if (choice.automatic) l.report.why = choice.why;
    const bool monolithic_imex = imex_ && method::is_imex(l.io.method);
    if (model_->grid && !monolithic_imex &&
        (l.io.method == method::MethodId::Auto || method::method_info(l.io.method).needs_jacobian))
      throw Error(
          "unsupported_method_for_operator", c_.file, where,
          "operator '" + s.op +
              "' runs over the grid without a Jacobian; give it an explicit method "
              "(SSPRK43, Tsit5, ...) and put stiff pointwise terms in an operator of their own");
    if (s.rtol) l.io.rtol = *s.rtol;
    if (s.atol) l.io.atol = *s.atol;
    l.io.dt_initial = s.dt0;
    l.io.dt_max = s.dt_max;
    if (s.max_steps > 0) l.io.max_steps = s.max_steps;
    l.io.controller = s.controller;
    l.io.nonnegative = s.nonnegative;
    if (s.integrator) {
      const method::MethodId m = l.io.method;
      l.io = *s.integrator;
      l.io.method = m;
    }
    l.report.what = s.op + ": " +
                    (l.io.method == method::MethodId::Auto
                         ? std::string("automatic method")
                         : std::string(method::method_info(l.io.method).name)) +
                    ", one step for the operator";
    return l;
  }

  Leaf& leaf_of(const ScheduleNode& n) {
    for (Leaf& l : leaves_)
      if (l.node == &n) return l;
    ESI_ASSERT(false);
    return leaves_.front();
  }

  bool execute(const ScheduleNode& n, double a, double b, std::vector<double>& u) {
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

  bool run_leaf(Leaf& l, double a, double b, std::vector<double>& u) {
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
    return true;
  }

  std::vector<LeafReport> reports() const {
    std::vector<LeafReport> r;
    for (const Leaf& l : leaves_) r.push_back(l.report);
    return r;
  }

  /// The first multiple of `period` after the start that is later than t (kNever for 0).
  double next_multiple(double t, double period) const {
    if (!(period > 0)) return kNever;
    double k = std::floor((t - c_.start) / period) + 1;
    double next = c_.start + k * period;
    while (next <= t) next = c_.start + (++k) * period;
    return next;
  }
  bool on_multiple(double t, double period) const {
    if (!(period > 0)) return false;
    const double k = std::round((t - c_.start) / period);
    return k >= 1 && c_.start + k * period == t;
  }
  double next_every(const ScheduleNode& n, double t) const {
    double next = n.kind == ScheduleNode::Kind::Every ? next_multiple(t, n.period) : kNever;
    for (const auto& c : n.children) next = std::min(next, next_every(c, t));
    return next;
  }
  double next_forcing_time(double t) const {
    double next = kNever;
    for (const ForcingProvider& f : o_.forcing) {
      const auto it = std::upper_bound(f.times.begin(), f.times.end(), t);
      if (it != f.times.end()) next = std::min(next, *it);
    }
    return next;
  }

  // Macro steps never cross a record time, but a step's last stages can land exactly on the
  // one that ends it (t_k+1), where the next epoch holds (selection is half-open). Those
  // evaluations, and only those, run with the next epoch loaded.
  template <class Call>
  void at_stage(double t, Call call) {
    const bool next = t >= epoch_end_ && has_epoch(t);
    if (next) refresh_forcing(t, true);
    call(*inner_);
    if (next) refresh_forcing(epoch_start_);
  }
  static void rhs_implicit_at_stage(void* c, double t, const double* u, double* di) {
    static_cast<Runner*>(c)->at_stage(
        t, [&](const method::OdeProblem& p) { p.rhs_implicit(p.context, t, u, di); });
  }
  static void rhs_explicit_at_stage(void* c, double t, const double* u, double* de) {
    static_cast<Runner*>(c)->at_stage(
        t, [&](const method::OdeProblem& p) { p.rhs_explicit(p.context, t, u, de); });
  }
  static void rhs_at_stage(void* c, double t, const double* u, double* du) {
    static_cast<Runner*>(c)->at_stage(
        t, [&](const method::OdeProblem& p) { p.rhs(p.context, t, u, du); });
  }
  static void jacobian_at_stage(void* c, double t, const double* u, double* v) {
    static_cast<Runner*>(c)->at_stage(
        t, [&](const method::OdeProblem& p) { p.jacobian(p.context, t, u, v); });
  }
  static void rhs_split_at_stage(void* c, double t, const double* u, double* de, double* di) {
    static_cast<Runner*>(c)->at_stage(
        t, [&](const method::OdeProblem& p) { p.rhs_split(p.context, t, u, de, di); });
  }
  static void implicit_jacobian_at_stage(void* c, double t, const double* u, double* v) {
    static_cast<Runner*>(c)->at_stage(
        t, [&](const method::OdeProblem& p) { p.implicit_jacobian(p.context, t, u, v); });
  }

  /// Whether every provider has the record(s) a macro step starting at t needs.
  bool has_epoch(double t) const {
    for (const ForcingProvider& f : o_.forcing) {
      if (f.times.size() <= 1 && f.bracket.empty()) continue;
      const auto k = std::upper_bound(f.times.begin(), f.times.end(), t) - f.times.begin() - 1;
      if (k < 0 || (!f.bracket.empty() && static_cast<std::size_t>(k + 1) >= f.times.size() &&
                    t != f.times.back()))
        return false;
    }
    return true;
  }

  /// Record k of provider q, read once and kept while it may be needed again (a run moves
  /// forward, so the last three records suffice).
  const std::vector<double>& record(std::size_t q, std::size_t k) {
    auto& cache = cache_[q];
    for (const auto& [index, values] : cache)
      if (index == k) return values;
    std::vector<double> values;
    const bool prefetched = prefetch_.valid() && prefetch_q_ == q && prefetch_k_ == k;
    // One read at a time, whichever thread: NetCDF-C is not thread-safe.
    if (prefetch_.valid() && !prefetched) keep(prefetch_q_, prefetch_k_, prefetch_.get());
    if (prefetched) {
      values = prefetch_.get();  // a read error surfaces here, when the record is needed
    } else {
      values.resize(o_.forcing[q].record_values);
      o_.forcing[q].read(k, values);
    }
    return keep(q, k, std::move(values));
  }
  const std::vector<double>& keep(std::size_t q, std::size_t k, std::vector<double> values) {
    auto& cache = cache_[q];
    if (cache.size() >= 3) cache.erase(cache.begin());
    cache.emplace_back(k, std::move(values));
    return cache.back().second;
  }

  /// Starts reading, on another thread, the first record some provider needs next that is not
  /// read yet (the one after the loaded epoch's), so the file is read while the leaves step.
  void prefetch_next() {
    if (prefetch_.valid()) return;
    for (std::size_t q = 0; q < o_.forcing.size(); ++q) {
      const ForcingProvider& f = o_.forcing[q];
      if (loaded_[q] < 0) continue;
      const std::size_t next = static_cast<std::size_t>(loaded_[q]) + (f.bracket.empty() ? 1 : 2);
      if (next >= f.times.size()) continue;
      const auto& cache = cache_[q];
      if (std::any_of(cache.begin(), cache.end(), [&](const auto& e) { return e.first == next; }))
        continue;
      prefetch_q_ = q;
      prefetch_k_ = next;
      prefetch_ = std::async(std::launch::async, [&f, next] {
        std::vector<double> values(f.record_values);
        f.read(next, values);
        return values;
      });
      return;
    }
  }

  /// Loads, for every provider, the record(s) that hold over a macro step starting at t. A
  /// stage exactly on a bracketed provider's last record time (a run ending there) gets that
  /// record in both slots: whatever the document's blend weight, it reads the record.
  void refresh_forcing(double t, bool stage = false) {
    bool changed = false;
    for (std::size_t q = 0; q < o_.forcing.size(); ++q) {
      const ForcingProvider& f = o_.forcing[q];
      const ForcingSlot& slot = slots_[q];
      std::ptrdiff_t k = 0;
      if (f.times.size() > 1 || !f.bracket.empty()) {
        k = std::upper_bound(f.times.begin(), f.times.end(), t) - f.times.begin() - 1;
        const bool on_last = stage && t == f.times.back();
        const bool beyond =
            !f.bracket.empty() && static_cast<std::size_t>(k + 1) >= f.times.size() && !on_last;
        if (k < 0 || beyond)
          throw Error("forcing_out_of_range", c_.file, f.pointer,
                      "'" + f.target + "' has records from t = " + number_text(f.times.front()) +
                          " to " + number_text(f.times.back()) + " s; the run needs " +
                          (f.bracket.empty() ? "one at or before" : "a pair around") +
                          " t = " + number_text(t));
      }
      if (loaded_[q] == k) continue;
      loaded_[q] = k;
      changed = true;
      if (slot.parameter >= 0) {
        model_->p[static_cast<std::size_t>(slot.parameter)] =
            record(q, static_cast<std::size_t>(k))[0];
        continue;
      }
      auto& arr = model_->system.arrays[static_cast<std::size_t>(slot.array)];
      std::vector<double>& full = slot.cell_parameters.empty() ? arr.values : scratch_;
      full.resize(slot.bracket_axis < 0 ? f.record_values : 2 * f.record_values);
      if (slot.bracket_axis < 0) {
        const auto& values = record(q, static_cast<std::size_t>(k));
        std::copy(values.begin(), values.end(), full.begin());
      } else {
        // Cells first index fastest: inner = cells per step of the bracket axis.
        std::size_t inner = 1;
        for (int d = 0; d < slot.bracket_axis; ++d)
          inner *= static_cast<std::size_t>(arr.extents[static_cast<std::size_t>(d)]);
        const auto last = static_cast<std::ptrdiff_t>(f.times.size()) - 1;
        for (int side = 0; side < 2; ++side) {
          const auto& values =
              record(q, static_cast<std::size_t>(std::min<std::ptrdiff_t>(k + side, last)));
          for (std::size_t v = 0; v < f.record_values; ++v) {
            const std::size_t lo = v % inner, hi = v / inner;
            full[hi * inner * 2 + static_cast<std::size_t>(side) * inner + lo] = values[v];
          }
        }
      }
      for (std::size_t c = 0; c < slot.cell_parameters.size(); ++c)
        if (slot.cell_parameters[c] >= 0)
          model_->p[static_cast<std::size_t>(slot.cell_parameters[c])] = full[c];
    }
    if (changed) model_->prepare_all();
    if (changed && imex_) imex_->prepare();
    if (changed && !stage) prefetch_next();
  }

  /// Discrete events (seed 002 §9, v1) fire at macro-step ends: preset and periodic times
  /// are stops of the macro step, conditions are checked at its end. Crossing events need
  /// root finding inside a leaf's step and are refused; so are parameter changes in split runs,
  /// whose cells hold their own copies of the parameters.
  void check_events() const {
    for (std::size_t e = 0; e < model_->events.events.size(); ++e) {
      const detail::Event& ev = model_->events.events[e];
      if (ev.trigger == detail::Trigger::Crossing && !mapped_[e])
        throw Error(
            "unsupported_event", c_.file, "",
            "event '" + ev.name +
                "' fires when a condition crosses zero, which needs root finding inside "
                "an integrator's step: esi run fires discrete events (preset times, periodic, "
                "conditions "
                "checked at the end of each macro step); esi simulate runs crossing events");
      if (binding_.whole && !imex_) continue;  // the IMEX operator's cells hold parameters too
      for (const auto* list : {&ev.affects, &ev.affects_down})
        for (const detail::Assignment& a : *list)
          if (a.parameter)
            throw Error(
                "unsupported_event", c_.file, "",
                "event '" + ev.name + "' sets parameter '" +
                    model_->system.parameters[static_cast<std::size_t>(a.index)].name +
                    "'; in a split run the cells hold their own parameter values, so events there "
                    "may "
                    "set states only (run the model with one leaf \"all\" to change parameters)");
    }
  }

  /// The schedule's map nodes name discrete events of the model; those events then belong to
  /// the schedule (mapped_), whatever their trigger.
  void bind_maps(const ScheduleNode& n) {
    const auto& events = model_->events.events;
    mapped_.resize(events.size(), false);
    if (n.kind == ScheduleNode::Kind::Map) {
      std::vector<std::size_t> found;
      std::string names;
      for (std::size_t e = 0; e < events.size(); ++e) {
        const detail::Event& ev = events[e];
        if (ev.authored_name.empty()) continue;
        if (n.map == ev.authored_name || n.map == ev.component + "." + ev.authored_name)
          found.push_back(e);
        names += (names.empty() ? "" : ", ") + ev.component + "." + ev.authored_name;
      }
      if (found.size() != 1)
        throw Error(
            found.empty() ? "unknown_map_event" : "ambiguous_map_event", c_.file,
            n.pointer + "/map",
            found.empty()
                ? "the map names event '" + n.map + "', which the model does not declare (" +
                      (names.empty() ? std::string("it has no named events")
                                     : "its named events: " + names) +
                      ")"
                : "the map names event '" + n.map + "', which several components declare (" +
                      names + "): write it as Component." + n.map);
      mapped_[found[0]] = true;
      maps_.emplace_back(&n, found[0]);
      return;
    }
    for (const auto& c : n.children) bind_maps(c);
  }
  std::size_t map_event(const ScheduleNode& n) const {
    for (const auto& [node, e] : maps_)
      if (node == &n) return e;
    ESI_ASSERT(false);
    return 0;
  }

  RestartState restart_state(double t, const std::vector<double>& u) const {
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

  const RunConfig& c_;
  const ScheduleOptions& o_;
  ScheduleResult& out_;
  Trajectory& traj_;
  Binding binding_;
  std::unique_ptr<Model> model_;
  std::optional<PointwiseSplit> split_;
  std::shared_ptr<const CellModel> cells_;
  std::optional<detail::CellOperator> cell_op_;
  std::optional<detail::ImexOperator> imex_;   ///< a monolithic IMEX leaf's problem
  const method::OdeProblem* inner_ = nullptr;  ///< what the leaves' problem_ wraps
  std::vector<Leaf> leaves_;
  std::vector<ForcingSlot> slots_;
  std::vector<std::ptrdiff_t> loaded_;
  std::vector<double> scratch_;
  std::vector<std::vector<std::pair<std::size_t, std::vector<double>>>> cache_;
  std::optional<detail::DiscreteEvents> events_;
  std::vector<bool> mapped_;  ///< by event: applied by a map node, never by its trigger
  std::vector<std::pair<const ScheduleNode*, std::size_t>> maps_;  ///< map node -> event
  std::future<std::vector<double>> prefetch_;  ///< at most one record read ahead
  std::size_t prefetch_q_ = 0, prefetch_k_ = 0;
  method::OdeProblem problem_;
  double epoch_start_ = 0, epoch_end_ = kNever;
  SimulateOptions sim_;
  std::uint64_t print_ = 0;
  std::uint64_t macro_steps_ = 0;
};

}  // namespace

bool whole_implicit(const RunConfig& config) {
  std::vector<const ScheduleNode*> leaves;
  collect_leaves(config.schedule, leaves);
  bool implicit = false;
  for (const ScheduleNode* l : leaves) {
    if (l->leaf.op != "all") return false;
    // IMEX methods run the per-region form (grid terms explicit, cells implicit).
    implicit =
        implicit || l->leaf.method == method::MethodId::Auto ||
        (method::method_info(l->leaf.method).needs_jacobian && !method::is_imex(l->leaf.method));
  }
  return implicit;
}

std::vector<LeafChoice> run_strategy(const esm::System& system, const RunConfig& config,
                                     const plan::Plan* planned) {
  const Binding b = bind(system, config, planned);
  std::vector<const ScheduleNode*> leaves;
  collect_leaves(config.schedule, leaves);
  std::vector<LeafChoice> out;
  for (const ScheduleNode* n : leaves)
    out.push_back(
        choose_leaf(*n, b.whole ? Target::Whole : b.target.at(n->leaf.op), b, config.macro_dt));
  return out;
}

void check_schedule(const esm::System& system, const RunConfig& config,
                    const std::vector<ForcingProvider>& forcing) {
  const Binding b = bind(system, config);
  (void)b;
  for (const ForcingProvider& f : forcing) (void)locate_forcing(system, config, f);
}

namespace detail {

Trajectory run_cell_split(const esm::System& system, const SimulateOptions& options) {
  std::string why;
  std::optional<PointwiseSplit> split = split_pointwise(system, why);
  if (!split)
    throw Error("no_pointwise_part", "", "",
                "lane pools run the pointwise part of a gridded system's tendencies, and this "
                "system has none that can be separated: " +
                    why);
  // Lie splitting, the grid part (if any) then the cells, as a two-leaf schedule bound
  // without the planner (the split is pointwise_split's own).
  const bool has_rest = split->has_rest;
  RunConfig config;
  config.start = options.t0;
  config.stop = options.t1;
  config.output_every = options.saveat;
  config.macro_dt = options.cell_split->step;
  config.threads = options.cell_split->cells.threads;  // the grid part's too
  config.schedule.kind = ScheduleNode::Kind::Sequence;
  config.schedule.pointer = "/schedule";
  Binding bound;
  bound.summary = "the pointwise terms on lane pools, Lie-split from the rest";
  if (has_rest) {
    ScheduleNode grid;
    grid.leaf.op = "the grid part";
    grid.leaf.method = options.integrator.method;
    grid.leaf.integrator = options.integrator;
    grid.pointer = "/schedule/sequence/0";
    config.schedule.children.push_back(grid);
    bound.target[grid.leaf.op] = Target::Rest;
  }
  ScheduleNode cells;
  cells.leaf.op = "the cells";
  cells.leaf.method = options.cell_split->cells.method;
  cells.leaf.lanes = options.cell_split->cells;
  cells.pointer = "/schedule/sequence/" + std::to_string(config.schedule.children.size());
  config.schedule.children.push_back(cells);
  bound.target[cells.leaf.op] = Target::Cells;
  ScheduleOptions so;
  so.document = options.document;
  so.native = options.native;
  so.on_columns = options.on_columns;
  so.on_row = options.on_row;
  so.stop = options.stop;
  so.sample_times = options.sample_times;
  if (options.on_step)
    so.on_step = [&](double t, const std::vector<LeafReport>&) { options.on_step(t); };
  ScheduleResult out;
  Runner runner(system, config, so, out, &bound, std::move(split));
  runner.run();
  return std::move(out.trajectory);
}

}  // namespace detail

ScheduleResult run_schedule(const esm::System& system, const RunConfig& config,
                            const ScheduleOptions& options) {
  ScheduleResult out;
  Runner runner(system, config, options, out);
  runner.run();
  return out;
}

}  // namespace esi::exec
