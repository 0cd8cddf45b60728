// Binding a run configuration's operators to the planner's (binding.hpp) and the strategy
// rule that picks an "auto" leaf's method; run_strategy and whole_implicit (schedule.hpp).
#include "exec/schedule/binding.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"

namespace esi::exec {
namespace detail {
namespace {

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

bool any_auto_leaf(const RunConfig& config) {
  std::vector<const ScheduleNode*> leaves;
  collect_leaves(config.schedule, leaves);
  return std::any_of(leaves.begin(), leaves.end(),
                     [](auto* l) { return l->leaf.method == method::MethodId::Auto; });
}

}  // namespace

void collect_leaves(const ScheduleNode& n, std::vector<const ScheduleNode*>& out) {
  if (n.kind == ScheduleNode::Kind::Leaf) out.push_back(&n);
  for (const auto& c : n.children) collect_leaves(c, out);
}

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

Binding bind(const esm::System& system, const RunConfig& config, const plan::Plan* planned) {
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
  // The split runs bind to: the plan's own (moved out of a plan made here).
  if (made) {
    b.split = std::move(made->pointwise_split);
  } else {
    b.split = planned->pointwise_split;
  }
  b.split_why = p.pointwise_split_why;
  return b;
}

}  // namespace detail

using detail::Binding;
using detail::collect_leaves;
using detail::Target;

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
  const Binding b = detail::bind(system, config, planned);
  std::vector<const ScheduleNode*> leaves;
  collect_leaves(config.schedule, leaves);
  std::vector<LeafChoice> out;
  for (const ScheduleNode* n : leaves)
    out.push_back(detail::choose_leaf(*n, b.whole ? Target::Whole : b.target.at(n->leaf.op), b,
                                      config.macro_dt));
  return out;
}

}  // namespace esi::exec
