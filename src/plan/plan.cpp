// The planner's entry point, the scalar form (passes 1-4), block structure and plan.json.
//
// Operator formation in the scalar form (a box model or a reaction system): each state's
// right-hand side is the sum of one contribution per component that writes it (operator_compose
// parts; System::state_sources names them); each contribution is split into its additive terms
// and every term goes to the operator of its component. So a reaction system is one pointwise
// operator (its mass-action terms), and a deposition model composed onto it is another. The
// scalar form has no grid: every operator is pointwise over one cell, the whole system.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "esi/core/error.hpp"
#include "esi/expr/differentiate.hpp"
#include "esi/expr/parse.hpp"
#include "esi/plan/plan.hpp"

#include "esi/kernel/jacobian.hpp"
#include "esi/linalg/sparse_lu.hpp"
#include "plan/plan_internal.hpp"

namespace esi::plan {

using expr::NodeId;
using expr::Op;

const char* locality_name(Locality l) {
  switch (l) {
    case Locality::Pointwise: return "pointwise";
    case Locality::Column: return "column";
    case Locality::Stencil: return "stencil";
    case Locality::Global: return "global";
  }
  return "?";
}

std::string vertical_axis_of(const std::vector<std::string>& axes) {
  static const std::set<std::string> names = {"lev", "level", "levels", "layer", "layers", "lay", "z", "k",
                                              "height", "altitude", "alt", "vertical", "pressure", "eta", "nz"};
  for (const auto& a : axes) {
    std::string s;
    for (char c : a) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s.size() > 6 && s.compare(s.size() - 6, 6, "_nodes") == 0) s.resize(s.size() - 6);
    // A prefixed name such as gf_lev counts too.
    if (const auto u = s.rfind('_'); u != std::string::npos && !names.count(s)) s = s.substr(u + 1);
    if (names.count(s)) return a;
  }
  return "";
}

namespace detail {

std::vector<NodeId> fill_block_rows(BlockPattern& block,
                                    std::vector<std::vector<std::pair<int, NodeId>>>& by_row) {
  std::vector<NodeId> entries;
  block.row_ptr.assign(1, 0);
  block.col.clear();
  for (auto& row : by_row) {
    std::sort(row.begin(), row.end());
    for (auto& [c, d] : row) {
      block.col.push_back(c);
      entries.push_back(d);
    }
    block.row_ptr.push_back(static_cast<int>(block.col.size()));
  }
  return entries;
}

void plan_block_structure(esm::System& system, Operator& op, const std::vector<NodeId>& entries) {
  op.block_entries = entries;
  std::size_t text_size = 0;
  for (NodeId e : entries) {
    op.block_entry_text.push_back(expr::to_infix(system.pool, e));
    text_size += op.block_entry_text.back().size();
  }
  if (text_size > (256u << 10)) op.block_entry_text.clear();
  const BlockPattern& b = op.block;
  const int n = static_cast<int>(b.species.size());
  if (n > 0) {
    linalg::Pattern p{n, b.row_ptr, b.col};
    const linalg::SparseLuPlan lu = linalg::plan_sparse_lu(p);
    op.lu.planned = true;
    for (int k : lu.order) op.lu.order.push_back(b.species[k]);
    op.lu.factor_nonzeros = lu.nonzeros();
    op.lu.fill = lu.fill;
    op.lu.divisions = lu.divisions;
    op.lu.multiply_adds = lu.multiply_adds;
    op.lu.solve_multiply_adds = lu.solve_multiply_adds;
  }
  // Gershgorin: every eigenvalue of J lies in a disc centred on J_ii of radius sum_{j!=i}
  // |J_ij|, so |lambda| <= max_i sum_j |J_ij|. Written with the symbolic entries when that
  // stays short enough to read; otherwise with named entries J[row,col].
  std::string full = "max(", named = "max(";
  bool first_row = true;
  for (int r = 0; r < n; ++r) {
    if (b.row_ptr[r] == b.row_ptr[r + 1]) continue;
    std::string row_full, row_named;
    for (int k = b.row_ptr[r]; k < b.row_ptr[r + 1]; ++k) {
      row_full += (k == b.row_ptr[r] ? "" : " + ") + std::string("abs(") +
                  (op.block_entry_text.empty() ? expr::to_infix(system.pool, entries[k]) : op.block_entry_text[k]) + ")";
      row_named += (k == b.row_ptr[r] ? "" : " + ") + std::string("abs(J[") + b.species[r] + "," + b.species[b.col[k]] + "])";
      if (full.size() + row_full.size() > 4000) full.clear();
    }
    if (!full.empty()) full += (first_row ? "" : ", ") + row_full;
    named += (first_row ? "" : ", ") + row_named;
    first_row = false;
  }
  if (first_row) {
    op.gershgorin = "0";
  } else if (!full.empty() && full.size() <= 4000) {
    op.gershgorin = full + ")";
  } else {
    op.gershgorin = named + ")  where J[r,c] = d rhs(r) / d c" +
                    (op.block_entry_text.empty() ? "" : " (listed under \"jacobian\")");
  }
}

void plan_scalar(esm::System& s, Plan& plan) {
  std::set<std::string> reaction_systems;
  for (const auto& r : s.reactions) reaction_systems.insert(r.component);
  std::unordered_map<std::string, int> state_of;
  for (std::size_t i = 0; i < s.states.size(); ++i) state_of[s.states[i].name] = static_cast<int>(i);

  // Pass 1: terms by component, in order of first appearance.
  std::map<std::string, std::size_t> op_of;
  std::vector<std::vector<std::pair<int, std::vector<NodeId>>>> rows_terms;  // per op: (state, terms)
  for (std::size_t i = 0; i < s.states.size(); ++i) {
    const NodeId rhs = s.state_rhs[i];
    if (rhs == expr::kNoNode) continue;
    const std::vector<std::string> none;
    const auto& sources = i < s.state_sources.size() ? s.state_sources[i] : none;
    std::vector<std::pair<std::string, NodeId>> parts;
    const expr::Node& n = s.pool.node(rhs);
    if (sources.size() > 1 && n.op == Op::Add && s.pool.args(rhs).size() == sources.size()) {
      for (std::size_t k = 0; k < sources.size(); ++k) parts.emplace_back(sources[k], s.pool.args(rhs)[k]);
    } else {
      const std::string owner = sources.size() == 1 ? sources[0] : owner_component(s.states[i].name, s.components);
      parts.emplace_back(owner, rhs);
    }
    for (const auto& [component, part] : parts) {
      std::vector<NodeId> terms;
      for (NodeId t : additive_terms(s.pool, part, false))
        if (!(s.pool.node(t).op == Op::Number && s.pool.node(t).number == 0)) terms.push_back(t);
      if (terms.empty()) continue;
      auto [it, fresh] = op_of.emplace(component, plan.operators.size());
      if (fresh) {
        Operator op;
        op.name = component.empty() ? "(top level)" : component;
        op.component = component;
        op.origin = reaction_systems.count(component) ? "reactions of " + component : "equations of " + op.name;
        op.locality = Locality::Pointwise;
        plan.operators.push_back(std::move(op));
        rows_terms.emplace_back();
      }
      auto& rt = rows_terms[it->second];
      if (rt.empty() || rt.back().first != static_cast<int>(i)) rt.emplace_back(static_cast<int>(i), std::vector<NodeId>{});
      rt.back().second.insert(rt.back().second.end(), terms.begin(), terms.end());
    }
  }

  // Passes 3-4: rows, then the symbolic Jacobian of each operator (observeds inlined).
  kernel::DefinitionInliner inline_observed(s, /*tendencies=*/false);
  const NodeId zero = s.pool.number(0.0);
  for (std::size_t o = 0; o < plan.operators.size(); ++o) {
    Operator& op = plan.operators[o];
    std::vector<std::vector<std::pair<int, NodeId>>> row_entries;
    std::set<int> species;
    std::vector<int> row_states;
    for (auto& [state, terms] : rows_terms[o]) {
      op.rows.push_back(s.states[state].name);
      op.terms += terms.size();
      op.rhs.push_back(sum_of(s.pool, terms));
      row_states.push_back(state);
      species.insert(state);
      const NodeId full = inline_observed(op.rhs.back());
      std::vector<std::pair<int, NodeId>> entries;
      for (expr::StrId name : expr::symbols_under(s.pool, full)) {
        auto it = state_of.find(std::string(s.pool.str(name)));
        if (it == state_of.end()) continue;
        const NodeId d = expr::differentiate(s.pool, full, name);
        if (d == zero) continue;
        entries.emplace_back(it->second, d);
        species.insert(it->second);
      }
      row_entries.push_back(std::move(entries));
    }
    // The block over every state the operator writes or reads, in system order.
    std::map<int, int> position;
    for (int st : species) {
      position[st] = static_cast<int>(op.block.species.size());
      op.block.species.push_back(s.states[st].name);
    }
    std::vector<std::vector<std::pair<int, NodeId>>> by_row(species.size());
    for (std::size_t r = 0; r < row_states.size(); ++r)
      for (auto& [col, d] : row_entries[r]) by_row[position[row_states[r]]].emplace_back(position[col], d);
    const std::vector<NodeId> entries = fill_block_rows(op.block, by_row);
    op.has_pattern = true;
    plan_block_structure(s, op, entries);
  }
}

}  // namespace detail

Plan make_plan(esm::System& system, const PlanOptions& options) {
  Plan plan;
  plan.document = options.document;
  plan.component = options.component;
  plan.states = system.states.size();
  bool grid = false;
  for (const auto& g : system.grid) grid = grid || g.kind == esm::System::GridEquation::Kind::Tendency;
  plan.form = grid ? "grid" : "scalar";
  // Arrays as one equation per cell carry no grid: every cell would look like its own box
  // model. The planner reads locality from the per-region form only.
  if (!grid)
    for (const auto& v : system.states)
      if (!v.array.empty())
        throw Error("plan_needs_region_form", v.file, v.pointer,
                    "the arrays of this document became one equation per cell" +
                        (system.grid_fallback.empty() ? std::string() : " (" + system.grid_fallback + ")") +
                        "; the planner needs their per-region form (flatten with FlattenOptions::grid)");
  // The executable split first, from the system as given (the passes below add the
  // operators' expressions to its pool).
  if (grid) plan.pointwise_split = split_pointwise(system, plan.pointwise_split_why);
  if (grid) detail::plan_grid(system, plan);
  else detail::plan_scalar(system, plan);
  require_patterns(plan);
  if (options.validate) validate(system, plan, options);
  return plan;
}

void validate(esm::System& system, Plan& plan, const PlanOptions& options) {
  plan.validation = {};
  for (auto& op : plan.operators) op.measured_reach.clear();
  if (plan.form == "grid") detail::validate_grid(system, plan, options);
  else detail::validate_scalar(system, plan, options);
}

void require_patterns(const Plan& plan) {
  for (const Operator& op : plan.operators)
    if (!op.rows.empty() && !op.has_pattern)
      throw Error("missing_pattern", plan.document, "",
                  "operator '" + op.name + "' writes " + op.rows[0] + (op.rows.size() > 1 ? " and more" : "") +
                      " but declares no Jacobian pattern; a solver could not assemble it");
}

nlohmann::json to_json(const Plan& plan) {
  using nlohmann::json;
  json ops = json::array();
  for (const Operator& op : plan.operators) {
    json o = {{"name", op.name},         {"component", op.component}, {"origin", op.origin},
              {"locality", locality_name(op.locality)}, {"rows", op.rows}, {"terms", op.terms}};
    if (!op.term_arrays.empty()) o["term_arrays"] = op.term_arrays;
    if (!op.column_axis.empty()) o["column_axis"] = op.column_axis;
    if (!op.reach.empty()) {
      json r = json::object();
      for (const auto& a : op.reach) {
        json e = {{"minus", a.minus}, {"plus", a.plus}};
        if (a.unbounded) e["unbounded"] = true;
        r[a.axis] = e;
      }
      o["reach"] = r;
    }
    if (op.column_bandwidth >= 0) o["column_bandwidth"] = op.column_bandwidth;
    if (!op.measured_reach.empty()) {
      json r = json::object();
      for (const auto& a : op.measured_reach) r[a.axis] = {{"minus", a.minus}, {"plus", a.plus}};
      o["measured_reach"] = r;
    }
    if (op.has_pattern) {
      json rows = json::object();
      const BlockPattern& b = op.block;
      for (std::size_t r = 0; r < b.species.size(); ++r) {
        json cols = json::array();
        for (int k = b.row_ptr[r]; k < b.row_ptr[r + 1]; ++k) cols.push_back(b.species[b.col[k]]);
        rows[b.species[r]] = cols;
      }
      o["pattern"] = {{"n", b.species.size()}, {"nnz", b.nonzeros()}, {"species", b.species}, {"rows", rows}};
      if (!op.footprint.empty()) {
        json f = json::array();
        for (const auto& e : op.footprint) {
          json axes = json::object();
          for (std::size_t k = 0; k < plan.axes.size() && k < e.lo.size(); ++k) {
            if (e.unbounded[k]) axes[plan.axes[k]] = "all";
            else axes[plan.axes[k]] = json::array({e.lo[k], e.hi[k]});
          }
          f.push_back({{"row", e.row}, {"read", e.read}, {"offsets", axes}});
        }
        o["pattern"]["footprint"] = f;
      }
    }
    if (op.lu.planned)
      o["lu"] = {{"order", op.lu.order},          {"factor_nonzeros", op.lu.factor_nonzeros},
                 {"fill", op.lu.fill},            {"divisions", op.lu.divisions},
                 {"multiply_adds", op.lu.multiply_adds}, {"solve_multiply_adds", op.lu.solve_multiply_adds}};
    if (!op.gershgorin.empty()) o["gershgorin"] = op.gershgorin;
    if (op.sampled_gershgorin >= 0) o["gershgorin_at_samples"] = op.sampled_gershgorin;
    if (!op.block_entry_text.empty()) {
      json jac = json::object();
      const BlockPattern& b = op.block;
      for (std::size_t r = 0; r < b.species.size(); ++r)
        for (int k = b.row_ptr[r]; k < b.row_ptr[r + 1]; ++k) jac[b.species[r]][b.species[b.col[k]]] = op.block_entry_text[k];
      o["jacobian"] = jac;
    }
    ops.push_back(std::move(o));
  }
  json out = {{"document", plan.document}, {"component", plan.component}, {"form", plan.form},
              {"states", plan.states},     {"operators", ops}};
  if (!plan.axes.empty()) {
    json g = json::object();
    for (std::size_t k = 0; k < plan.axes.size(); ++k) g[plan.axes[k]] = plan.extents[k];
    out["grid"] = {{"axes", plan.axes}, {"extents", g}, {"vertical_axis", plan.vertical_axis}};
  }
  const Validation& v = plan.validation;
  if (v.ran) {
    json val = {{"ok", v.ok()},
                {"seed", v.seed},
                {"samples", v.samples},
                {"max_sum_error", v.max_sum_error},
                {"jacobian_nonzeros", v.jacobian_nonzeros},
                {"outside_pattern", v.outside_pattern},
                {"rows_checked", v.rows_checked},
                {"rows_not_finite", v.rows_not_finite},
                {"failures", v.failures}};
    if (v.cells_checked) val["cells_checked"] = v.cells_checked;
    if (v.max_analytic_error >= 0) {
      val["max_analytic_error"] = v.max_analytic_error;
      val["analytic_entries"] = v.analytic_entries;
    }
    out["validation"] = val;
  } else {
    out["validation"] = {{"ran", false}};
  }
  return out;
}

}  // namespace esi::plan
