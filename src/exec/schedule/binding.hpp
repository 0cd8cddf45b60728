// Private to exec: a run configuration's operators bound to what esi runs (the planner's
// operators selected by locality and component) and the strategy rule for "auto" leaves.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "esi/esm/system.hpp"
#include "esi/exec/run_config.hpp"
#include "esi/exec/schedule.hpp"
#include "esi/plan/plan.hpp"

namespace esi::exec::detail {

/// What a configuration operator (or a leaf) runs on.
enum class Target { Whole, Rest, Cells };

/// The configuration's operators bound to what esi runs.
struct Binding {
  bool whole = false;                    ///< every leaf is "all"
  std::map<std::string, Target> target;  ///< operator name -> Rest / Cells
  std::string summary;
  /// Leaves with "auto" methods only: per operator, the planner's Gershgorin bound at sampled
  /// states (max over the planner operators it selects) and their names.
  std::map<std::string, double> bound;
  std::map<std::string, std::string> planner_ops;
  /// Operator runs: the planner's executable pointwise split they bind to (nullopt, with
  /// `split_why`, when there is none).
  std::optional<plan::PointwiseSplit> split;
  std::string split_why;
};

/// The schedule's leaves, in schedule order.
void collect_leaves(const ScheduleNode& n, std::vector<const ScheduleNode*>& out);

/// `planned`: the system's plan when the caller has made one (with its validation, for the
/// strategy rule's bounds); otherwise it is made here.
Binding bind(const esm::System& system, const RunConfig& config,
             const plan::Plan* planned = nullptr);

/// The strategy rule for an "auto" leaf (seed 002 §3.5): stiffness from structure first (a
/// pointwise operator runs on lane pools, which take Rosenbrock methods; a grid operator runs
/// without a Jacobian, so explicitly), then the planner's Gershgorin bound at sampled
/// non-default states times the macro step, against the same threshold choose_method uses.
LeafChoice choose_leaf(const ScheduleNode& n, Target target, const Binding& b, double macro_dt);

}  // namespace esi::exec::detail
