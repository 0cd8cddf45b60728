// Equation balance (spec §4.9.4) and the declared-vs-derived system kind (§6.3.1).
//
// The balance is unknowns vs equations: every unknown needs a defining equation — a D(x, t)
// LHS, a bare-variable LHS, or (for algebraic unknowns) an implicit expression-LHS constraint —
// and no equation may be left over. `initialization_equations` are a separate block and are not
// counted (§4.9.4). An arrayed unknown may be defined piecewise by several element equations
// (`index(x, i) ~ ...`), so repeated definitions are only counted for scalars.
//
// What also defines an unknown, as the conformance corpus pins it:
//  - an `ic` equation alone: an unknown with an initial condition and no dynamics is held at
//    that value (valid/wildfire_atmosphere_ocean.esm); `ic` equations are not counted as
//    equations, they only credit their target;
//  - a coupling entry whose `to` is the unknown (variable_map, connector equations, §10).
// And the check applies to top-level models without subsystems only: a model with subsystems
// may keep its dynamics in the hierarchy and its coupling, and subsystems are assembled by their
// parents (the invalid/empty_required_arrays.esm notes; valid/scoped_refs_coupling.esm carries
// subsystems whose unknowns are defined nowhere locally). Equations on declared parameters are
// left to the operator/coupling machinery (valid/full_coupled.esm) and are not counted.
#include <set>

#include "esm/checks/structural_detail.hpp"

namespace esi::esm::structural_detail {

namespace {

bool mentions_placeholder(const json& e) {
  bool found = false;
  for_each_free_symbol(e, [&](const std::string& s) { found = found || s == "_var"; });
  return found;
}

bool is_arrayed(const Component& c, const std::string& var) {
  const json* vars = c.field("variables");
  if (!vars) return false;
  const json* v = get_field(*vars, var.c_str());
  if (!v) return false;
  const json* shape = get_field(*v, "shape");
  return shape && shape->is_array() && !shape->empty();
}

/// True for a left-hand side that defines cells of an array rather than a whole variable:
/// index(x, ...), index(D(x), ...), D(index(x, ...)) or an aggregate over such a body.
bool addresses_cells(const json& lhs) {
  const std::string op = get_str(lhs, "op");
  if (op == "index" || op == "aggregate") return true;
  if (op != "D") return false;
  const json* args = get_field(lhs, "args");
  return args && args->is_array() && !args->empty() && get_str((*args)[0], "op") == "index";
}

/// Fully-qualified targets of coupling entries (variable_map `to`, connector equation `to`).
std::set<std::string> coupling_targets(const Context& ctx) {
  std::set<std::string> out;
  const json* cp = get_field(ctx.doc, "coupling");
  if (!cp || !cp->is_array()) return out;
  for (const auto& e : *cp) {
    if (std::string to = get_str(e, "to"); !to.empty()) out.insert(to);
    const json* con = get_field(e, "connector");
    const json* eqs = con ? get_field(*con, "equations") : nullptr;
    if (eqs && eqs->is_array())
      for (const auto& ce : *eqs)
        if (std::string to = get_str(ce, "to"); !to.empty()) out.insert(to);
  }
  return out;
}

void check_model_balance(Context& ctx, const Component& c, const std::set<std::string>& targets) {
  std::set<std::string> unknowns;
  for (const auto& [k, kind] : c.symbols)
    if (kind == SymKind::Unknown) unknowns.insert(k);

  std::set<std::string> defined, arrayed_defined, credited;
  std::size_t equations = 0;
  std::vector<std::string> undeclared_targets;
  for (const auto& u : unknowns)
    if (targets.count(c.dotted + "." + u)) credited.insert(u);
  if (const json* eqs = c.field("equations"); eqs && eqs->is_array()) {
    for (const auto& eq : *eqs) {
      const json* lhs = get_field(eq, "lhs");
      if (!lhs) continue;
      bool deriv = false, ic = false;
      const std::string target = lhs_target(*lhs, ctx.time_var, deriv, ic);
      if (ic) {
        if (unknowns.count(target)) credited.insert(target);
        continue;
      }
      // Operator-model template equations (D(_var) ~ ...) are expanded onto another system's
      // states at composition time (§4.9.1, §10.2); they define nothing here.
      if (mentions_placeholder(*lhs)) continue;
      if (target.empty()) {
        ++equations;  // an implicit (expression-LHS) constraint
      } else if (unknowns.count(target)) {
        defined.insert(target);
        // Element equations of one arrayed unknown together make one array equation; so do
        // those of an unknown declared without a shape whose left-hand sides address cells
        // (its extent follows from them: spec §4.3, implicit dimensions). Flattening checks
        // that they cover every cell exactly once.
        if (!(is_arrayed(c, target) || addresses_cells(*lhs)) || arrayed_defined.insert(target).second)
          ++equations;
      } else if (!c.symbols.count(target) && target.find('.') == std::string::npos) {
        ++equations;  // defines a name the model does not declare
        undeclared_targets.push_back(target);
      }
      // Equations on a declared parameter or on a scoped target (D(Sub.x) ~ ...) belong to the
      // operator / coupling machinery and to the owning system, not to this balance.
    }
  }
  std::size_t needed = 0;
  std::vector<std::string> missing;
  for (const auto& u : unknowns) {
    if (credited.count(u) && !defined.count(u)) continue;
    ++needed;
    if (!defined.count(u)) missing.push_back(u);
  }
  if (equations == needed) return;

  std::string msg = "Model '" + c.dotted + "' has " + std::to_string(equations) + " equation" +
                    (equations == 1 ? "" : "s") + " for " + std::to_string(needed) + " unknown" +
                    (needed == 1 ? "" : "s");
  if (equations < needed && !missing.empty()) msg += "; nothing defines " + quote_list(missing);
  if (!undeclared_targets.empty())
    msg += undeclared_targets.size() == 1
               ? "; an equation defines " + quote_list(undeclared_targets) +
                     ", which is not a declared unknown"
               : "; equations define " + quote_list(undeclared_targets) +
                     ", which are not declared unknowns";
  ctx.report("equation_count_mismatch", c.pointer, msg + ".");
}

}  // namespace

void check_balance(Context& ctx) {
  const std::set<std::string> targets = coupling_targets(ctx);
  for (Component* c : ctx.all_components()) {
    if (c->kind != CompKind::Model) continue;
    if (c->parent == nullptr && c->subs.empty()) check_model_balance(ctx, *c, targets);
    const Classification cl = classify(*c->node, ctx.time_var);
    if (!cl.declared_system_kind.empty() && cl.declared_system_kind != cl.system_kind)
      ctx.report("system_kind_mismatch", pointer_join(c->pointer, "system_kind"),
                 "Model '" + c->dotted + "' declares system_kind '" + cl.declared_system_kind +
                     "', but its equations and parameters make it '" + cl.system_kind + "'.");
  }
}

}  // namespace esi::esm::structural_detail
