// Building a run of the schedule (runner.hpp): the model in the form the leaves need (whole,
// split into grid and cells, or one IMEX problem), each leaf's method and step control, the
// schedule's map nodes and events, and the forcing bound to the model.
#include <algorithm>
#include <string>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "exec/schedule/runner.hpp"

namespace esi::exec::detail {

Runner::Runner(const esm::System& given, const RunConfig& config, const ScheduleOptions& options,
               ScheduleResult& out, const Binding* bound, std::optional<plan::PointwiseSplit> split)
    : c_(config), o_(options), out_(out), traj_(out.trajectory), split_(std::move(split)) {
  esm::System system = given;
  zero_forcing_targets(system, o_.forcing);
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
    if (!split_) split_ = plan::split_pointwise(system, why);
    if (!split_)
      throw Error(
          "unsupported_method_for_operator", config.file, where,
          name +
              " integrates the pointwise terms (chemistry) implicitly and the rest explicitly, "
              "and this model has no pointwise part that can be separated: " +
              why);
    model_ = build_model(split_->rest, o_.document, false, true, o_.native,
                                 static_cast<unsigned>(c_.threads));
    imex_.emplace(*model_, *split_);
    binding_.summary =
        "the whole right-hand side as one IMEX problem: the grid terms explicit, the pointwise "
        "terms of " +
        std::to_string(imex_->cells()) + " cells x " + std::to_string(imex_->cell_states()) +
        " states implicit (block-diagonal Jacobian)";
  } else if (binding_.whole) {
    model_ = build_model(system, o_.document, implicit && system.grid.empty(), true,
                                 o_.native, static_cast<unsigned>(c_.threads));
  } else {
    // The planner's split, which the binding selected operators from (run_cell_split passes
    // its own).
    if (!split_) split_ = std::move(binding_.split);
    if (!split_)
      throw Error("unsupported_operator_split", config.file, "/operators",
                  "the pointwise terms cannot be separated from the rest: " + binding_.split_why);
    model_ = build_model(split_->rest, o_.document, false, true, o_.native,
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
  forcing_.bind(model_->system, c_, o_.forcing);
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
  print_ = run_fingerprint(system, c_, o_.fingerprint_salt);
}

Runner::Leaf Runner::make_leaf(const ScheduleNode& n) {
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

void Runner::check_events() const {
  for (std::size_t e = 0; e < model_->events.events.size(); ++e) {
    const Event& ev = model_->events.events[e];
    if (ev.trigger == Trigger::Crossing && !mapped_[e])
      throw Error(
          "unsupported_event", c_.file, "",
          "event '" + ev.name +
              "' fires when a condition crosses zero, which needs root finding inside "
              "an integrator's step: esi run fires discrete events (preset times, periodic, "
              "conditions "
              "checked at the end of each macro step); esi simulate runs crossing events");
    if (binding_.whole && !imex_) continue;  // the IMEX operator's cells hold parameters too
    for (const auto* list : {&ev.affects, &ev.affects_down})
      for (const Assignment& a : *list)
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

void Runner::bind_maps(const ScheduleNode& n) {
  const auto& events = model_->events.events;
  mapped_.resize(events.size(), false);
  if (n.kind == ScheduleNode::Kind::Map) {
    std::vector<std::size_t> found;
    std::string names;
    for (std::size_t e = 0; e < events.size(); ++e) {
      const Event& ev = events[e];
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

}  // namespace esi::exec::detail
