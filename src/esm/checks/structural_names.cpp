// Reference integrity inside components (spec §4.9): every free symbol of every Expression a
// model or reaction system carries must resolve. Also the per-reaction checks of §7 and the
// event-affect rules of §5.
#include <algorithm>
#include <cctype>

#include "esm/checks/structural_detail.hpp"

namespace esi::esm::structural_detail {

namespace {

const char* kind_word(const Component& c) {
  return c.kind == CompKind::ReactionSystem ? "reaction system" : "model";
}

/// Is `s` in scope inside component `c`? (§4.9.1 implicit symbols, §4.9.2 scoped references.)
bool in_scope(const Context& ctx, const Component& c, const std::string& s) {
  if (s == ctx.time_var || s == "t" || s == "_var") return true;
  if (c.symbols.count(s)) return true;
  if (ctx.axis_names.count(s) || ctx.doc_level_names.count(s)) return true;
  const Resolution r = ctx.resolve(s, &c);
  return r == Resolution::Found || r == Resolution::Opaque;
}

class NameChecker {
 public:
  NameChecker(Context& ctx, const Component& c) : ctx_(ctx), c_(c) {}

  /// Checks the free symbols of the Expression at `e`; reports `code` at `pointer`.
  void expr(const json& e, const std::string& pointer, const std::string& where,
            const char* code = "undefined_variable", const std::set<std::string>& bound = {}) {
    std::vector<std::string> bad;
    for_each_free_symbol(
        e,
        [&](const std::string& s) {
          if (!in_scope(ctx_, c_, s) && std::find(bad.begin(), bad.end(), s) == bad.end())
            bad.push_back(s);
        },
        bound, c_.field("expression_templates"));
    if (bad.empty()) return;
    std::string msg = where + " in " + kind_word(c_) + " '" + c_.dotted + "' uses " +
                      quote_list(bad) + ", which " + (bad.size() == 1 ? "is" : "are") +
                      " not declared" +
                      (std::string(code) == "undefined_parameter"
                           ? " as a species or parameter of the reaction system"
                           : "");
    if (std::any_of(bad.begin(), bad.end(),
                    [](const std::string& s) { return s.find('.') != std::string::npos; }))
      msg += " (a scoped reference must walk existing systems down to a declared variable)";
    msg[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(msg[0])));
    ctx_.report(code, pointer, msg + ".");
  }

  /// The affects of one event (§5.1–§5.3): each lhs must be a declared unknown / species.
  void affects(const json& list, const std::string& base, const std::string& event_desc) {
    if (!list.is_array()) return;
    for (std::size_t j = 0; j < list.size(); ++j) {
      const json& a = list[j];
      const std::string p = pointer_join(base, j);
      if (const json* rhs = get_field(a, "rhs"))
        expr(*rhs, pointer_join(p, "rhs"), "an affect of " + event_desc);
      const std::string lhs = get_str(a, "lhs");
      if (lhs.empty() || lhs == "_var") continue;  // §4.9.1: _var is legal as an affect target
      SymKind kind = SymKind::Unknown;
      const Resolution r = ctx_.resolve(lhs, &c_, &kind);
      if (r == Resolution::Opaque) continue;
      if (r != Resolution::Found) {
        ctx_.report("event_var_undeclared", pointer_join(p, "lhs"),
                    "The affect of " + event_desc + " in " + kind_word(c_) + " '" + c_.dotted +
                        "' assigns '" + lhs + "', which is not a declared variable.");
      } else if (kind == SymKind::Parameter || kind == SymKind::ReactionParameter) {
        ctx_.report("event_affects_parameter", p,
                    "The affect of " + event_desc + " in " + kind_word(c_) + " '" + c_.dotted +
                        "' assigns '" + lhs +
                        "', which is a parameter; events may affect unknowns only — declare "
                        "the change as the parameter's own update (§5.4).");
      }
    }
  }

  void events() {
    if (const json* ce = c_.field("continuous_events"); ce && ce->is_array()) {
      const std::string base = pointer_join(c_.pointer, "continuous_events");
      for (std::size_t i = 0; i < ce->size(); ++i) {
        const json& ev = (*ce)[i];
        const std::string p = pointer_join(base, i);
        const std::string desc = describe_event(ev, "continuous", i);
        if (const json* conds = get_field(ev, "conditions"); conds && conds->is_array())
          for (std::size_t j = 0; j < conds->size(); ++j)
            expr((*conds)[j], pointer_join(pointer_join(p, "conditions"), j),
                 "a condition of " + desc);
        if (const json* a = get_field(ev, "affects")) affects(*a, pointer_join(p, "affects"), desc);
        if (const json* a = get_field(ev, "affect_neg"))
          affects(*a, pointer_join(p, "affect_neg"), desc);
      }
    }
    if (const json* de = c_.field("discrete_events"); de && de->is_array()) {
      const std::string base = pointer_join(c_.pointer, "discrete_events");
      for (std::size_t i = 0; i < de->size(); ++i) {
        const json& ev = (*de)[i];
        const std::string p = pointer_join(base, i);
        const std::string desc = describe_event(ev, "discrete", i);
        if (const json* trig = get_field(ev, "trigger"))
          if (const json* x = get_field(*trig, "expression"))
            expr(*x, pointer_join(pointer_join(p, "trigger"), "expression"),
                 "the trigger of " + desc);
        if (const json* a = get_field(ev, "affects")) affects(*a, pointer_join(p, "affects"), desc);
      }
    }
  }

  /// Inline tests (§6.6): assertion targets and inline reference expressions.
  void tests() {
    const json* ts = c_.field("tests");
    if (!ts || !ts->is_array()) return;
    const std::string base = pointer_join(c_.pointer, "tests");
    for (std::size_t i = 0; i < ts->size(); ++i) {
      const json* as = get_field((*ts)[i], "assertions");
      if (!as || !as->is_array()) continue;
      const std::string ap = pointer_join(pointer_join(base, i), "assertions");
      for (std::size_t j = 0; j < as->size(); ++j) {
        const json& a = (*as)[j];
        const std::string p = pointer_join(ap, j);
        // An element of an arrayed variable is written `u[3]` (§6.6.5 examples).
        std::string v = get_str(a, "variable");
        v = v.substr(0, v.find('['));
        if (!v.empty() && !in_scope(ctx_, c_, v))
          ctx_.report("undefined_variable", pointer_join(p, "variable"),
                      "Test assertion " + std::to_string(j) + " of " + kind_word(c_) + " '" +
                          c_.dotted + "' checks '" + v + "', which is not a declared variable.");
        const json* ref = get_field(a, "reference");
        // The from_file form is a path, not an Expression.
        // Its free variables may name the domain's dimensions (§6.6.5: sin(pi x)).
        if (ref && !(ref->is_object() && !ref->contains("op")))
          expr(*ref, pointer_join(p, "reference"), "the reference of a test assertion", "undefined_variable",
               coordinate_names(v));
      }
    }
  }

 private:
  /// The spatial coordinate names of variable `var`'s cells: x, y, z, lon, lat, lev and the
  /// index sets it is shaped over.
  std::set<std::string> coordinate_names(const std::string& var) const {
    std::set<std::string> out{"x", "y", "z", "lon", "lat", "lev"};
    const json* vars = c_.field("variables");
    const json* v = vars ? get_field(*vars, var.c_str()) : nullptr;
    if (const json* shape = v ? get_field(*v, "shape") : nullptr; shape && shape->is_array())
      for (const auto& a : *shape)
        if (a.is_string()) out.insert(a.get<std::string>());
    return out;
  }

  static std::string describe_event(const json& ev, const char* kind, std::size_t i) {
    const std::string name = get_str(ev, "name");
    return name.empty() ? std::string(kind) + " event " + std::to_string(i)
                        : std::string(kind) + " event '" + name + "'";
  }

  Context& ctx_;
  const Component& c_;
};

/// Index symbols an element-wise LHS introduces: in `index(x, i) ~ f(i)` (or
/// `index(D(x), i, k) ~ ...`) the bare index arguments name the element being defined and are
/// in scope on both sides of the equation (§4.3.3).
void element_symbols(const Component& c, const json& e, std::set<std::string>& out, int depth = 0) {
  if (depth > 64 || !e.is_object() || get_str(e, "op") != "index") return;
  const json* args = get_field(e, "args");
  if (!args || !args->is_array() || args->empty()) return;
  for (std::size_t k = 1; k < args->size(); ++k)
    if ((*args)[k].is_string() && !c.symbols.count((*args)[k].get<std::string>()))
      out.insert((*args)[k].get<std::string>());
  const json& inner = (*args)[0];
  if (inner.is_object() && get_str(inner, "op") == "D")
    if (const json* da = get_field(inner, "args"); da && da->is_array() && !da->empty())
      element_symbols(c, (*da)[0], out, depth + 1);
  element_symbols(c, inner, out, depth + 1);
}

/// Equations of a model (§6.1) or the initialization block (§6.2).
void check_equations(NameChecker& nc, Context& ctx, const Component& c, const char* field,
                     const char* label) {
  const json* eqs = c.field(field);
  if (!eqs || !eqs->is_array()) return;
  const std::string base = pointer_join(c.pointer, field);
  for (std::size_t i = 0; i < eqs->size(); ++i) {
    const json& eq = (*eqs)[i];
    const std::string p = pointer_join(base, i);
    const json* lhs = get_field(eq, "lhs");
    const json* rhs = get_field(eq, "rhs");
    bool deriv = false, ic = false;
    if (lhs) lhs_target(*lhs, ctx.time_var, deriv, ic);
    const std::string n = std::to_string(i);
    std::set<std::string> bound;
    if (lhs) element_symbols(c, *lhs, bound);
    if (lhs)
      nc.expr(*lhs, pointer_join(p, "lhs"), "the left-hand side of " + std::string(label) + " " + n,
              "undefined_variable", bound);
    // §4.9.1 (iii): the free symbols of an `ic` right-hand side are coordinate names.
    if (rhs && !ic)
      nc.expr(*rhs, pointer_join(p, "rhs"),
              "the right-hand side of " + std::string(label) + " " + n, "undefined_variable",
              bound);
  }
}

/// One parameter update rule (§5.4) and its data-source binding (§8.5).
void check_update_rule(NameChecker& nc, Context& ctx, const Component& c, const std::string& var,
                       const json& rule, const std::string& p) {
  if (!rule.is_object()) return;
  const std::string where = "the update of '" + var + "'";
  if (const json* w = get_field(rule, "when")) nc.expr(*w, pointer_join(p, "when"), where);
  if (const json* x = get_field(rule, "expression"))
    nc.expr(*x, pointer_join(p, "expression"), where);
  if (const json* from = get_field(rule, "from"))
    if (const json* uc = get_field(*from, "unit_conversion"))
      nc.expr(*uc, pointer_join(pointer_join(p, "from"), "unit_conversion"), where);
  if (const json* src = get_field(rule, "source"); src && src->is_string()) {
    const json* ds = get_field(ctx.doc, "data_sources");
    if (!ds || !ds->is_object() || !ds->contains(src->get<std::string>()))
      ctx.report("data_source_undefined", p,
                 "Parameter '" + var + "' of model '" + c.dotted +
                     "' is updated from data source '" + src->get<std::string>() +
                     "', which no data_sources entry declares.");
  }
}

void check_model(Context& ctx, const Component& c) {
  NameChecker nc(ctx, c);
  check_equations(nc, ctx, c, "equations", "equation");
  check_equations(nc, ctx, c, "initialization_equations", "initialization equation");
  if (const json* g = c.field("guesses"); g && g->is_object()) {
    const std::string base = pointer_join(c.pointer, "guesses");
    for (const auto& [k, v] : g->items())
      nc.expr(v, pointer_join(base, k), "the initial guess for '" + k + "'");
  }
  if (const json* vars = c.field("variables"); vars && vars->is_object()) {
    const std::string base = pointer_join(c.pointer, "variables");
    for (const auto& [k, v] : vars->items()) {
      const json* up = get_field(v, "update");
      if (!up) continue;
      const std::string p = pointer_join(pointer_join(base, k), "update");
      if (up->is_array()) {
        for (std::size_t i = 0; i < up->size(); ++i)
          check_update_rule(nc, ctx, c, k, (*up)[i], pointer_join(p, i));
      } else {
        check_update_rule(nc, ctx, c, k, *up, p);
      }
    }
  }
  nc.events();
  nc.tests();
  // Template bodies are not walked: their free names are resolved where they expand (a body may
  // name variables of the invoking scope, EarthSciModels urban_canopy_model.esm), and the
  // expanded form is what §4.9.5 checks. Bindings at invocation sites are checked above.
}

/// A stoichiometry list (§7.3): every entry must name a species of the system.
void check_stoich(Context& ctx, const Component& c, const json& list, const std::string& base,
                  const std::string& rid, const char* side) {
  if (!list.is_array()) return;
  for (std::size_t j = 0; j < list.size(); ++j) {
    const std::string sp = get_str(list[j], "species");
    if (sp.empty()) continue;
    SymKind kind = SymKind::Species;
    const Resolution r = ctx.resolve(sp, &c, &kind);
    if (r == Resolution::Opaque || (r == Resolution::Found && kind == SymKind::Species)) continue;
    ctx.report("undefined_species", pointer_join(pointer_join(base, j), "species"),
               "Reaction " + rid + " of reaction system '" + c.dotted + "' lists '" + sp +
                   "' among its " + side + ", but no species of that name is declared.");
  }
}

bool empty_side(const json* side) {
  return !side || side->is_null() || (side->is_array() && side->empty());
}

void check_reaction_system(Context& ctx, const Component& c) {
  NameChecker nc(ctx, c);
  if (const json* rs = c.field("reactions"); rs && rs->is_array()) {
    const std::string base = pointer_join(c.pointer, "reactions");
    for (std::size_t i = 0; i < rs->size(); ++i) {
      const json& r = (*rs)[i];
      const std::string p = pointer_join(base, i);
      std::string rid = get_str(r, "id");
      rid = rid.empty() ? std::to_string(i) : "'" + rid + "'";
      const json* subs = get_field(r, "substrates");
      const json* prods = get_field(r, "products");
      if (subs) check_stoich(ctx, c, *subs, pointer_join(p, "substrates"), rid, "substrates");
      if (prods) check_stoich(ctx, c, *prods, pointer_join(p, "products"), rid, "products");
      if (empty_side(subs) && empty_side(prods))
        ctx.report("null_reaction", p,
                   "Reaction " + rid + " of reaction system '" + c.dotted +
                       "' has neither substrates nor products.");
      if (const json* rate = get_field(r, "rate"))
        nc.expr(*rate, pointer_join(p, "rate"), "the rate of reaction " + rid,
                "undefined_parameter");
    }
  }
  if (const json* ce = c.field("constraint_equations"); ce && ce->is_array()) {
    const std::string base = pointer_join(c.pointer, "constraint_equations");
    for (std::size_t i = 0; i < ce->size(); ++i) {
      const json& eq = (*ce)[i];
      const std::string p = pointer_join(base, i);
      const json* lhs = get_field(eq, "lhs");
      bool deriv = false, ic = false;
      if (lhs) lhs_target(*lhs, ctx.time_var, deriv, ic);
      if (ic) {
        ctx.report("ic_in_reaction_system", p,
                   "Constraint equation " + std::to_string(i) + " of reaction system '" + c.dotted +
                       "' is an initial condition; ic equations belong in a model's equations "
                       "(§11.4.1).");
        continue;
      }
      const std::string n = "constraint equation " + std::to_string(i);
      if (lhs) nc.expr(*lhs, pointer_join(p, "lhs"), "the left-hand side of " + n);
      if (const json* rhs = get_field(eq, "rhs"))
        nc.expr(*rhs, pointer_join(p, "rhs"), "the right-hand side of " + n);
    }
  }
  nc.events();
  nc.tests();
}

}  // namespace

void check_names(Context& ctx) {
  for (Component* c : ctx.all_components()) {
    if (c->kind == CompKind::Model)
      check_model(ctx, *c);
    else if (c->kind == CompKind::ReactionSystem)
      check_reaction_system(ctx, *c);
  }
}

}  // namespace esi::esm::structural_detail
