// Array-level checks (spec §4.3): broadcast operators (§4.3.4), index-set references (§4.3.1,
// §6.3 `shape`), name-aligned operand shapes (§4.3.4), relational join keys and relational
// nodes on the continuous path (RFC semiring-faq-unified-ir, as pinned by the conformance
// fixtures).
#include <algorithm>
#include <cmath>
#include <map>

#include "esm/checks/structural_detail.hpp"

namespace esi::esm::structural_detail {

namespace {

// ---- §4.3.4: the scalar operators `broadcast` may carry, with the arities they admit --------

struct Arity {
  std::size_t min, max;
};

const std::map<std::string, Arity>& scalar_ops() {
  static const std::map<std::string, Arity> ops = [] {
    std::map<std::string, Arity> m;
    const std::size_t many = static_cast<std::size_t>(-1);
    m["+"] = {1, many};
    m["*"] = {1, many};
    m["-"] = {1, 2};
    m["/"] = {2, 2};
    m["^"] = {2, 2};
    m["neg"] = {1, 1};
    for (const char* f :
         {"exp",  "log",  "log10", "sqrt", "abs",  "sign", "floor", "ceil",  "sin",   "cos", "tan",
          "asin", "acos", "atan",  "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "not"})
      m[f] = {1, 1};
    m["atan2"] = {2, 2};
    m["min"] = {2, many};
    m["max"] = {2, many};
    for (const char* f : {"==", "!=", "<", "<=", ">", ">="}) m[f] = {2, 2};
    m["and"] = {2, many};
    m["or"] = {2, many};
    m["ifelse"] = {3, 3};
    return m;
  }();
  return ops;
}

/// Ops through which array operands are aligned element-wise (§4.3.4 "array-level expression").
bool is_elementwise(const std::string& op) {
  return scalar_ops().count(op) > 0 || op == "broadcast" || op == "Pre";
}

// ---- expression roots -------------------------------------------------------------------------

using RootFn = std::function<void(const Component&, const json&, const std::string&)>;

void equations(const Component& c, const char* field, const RootFn& f) {
  const json* eqs = c.field(field);
  if (!eqs || !eqs->is_array()) return;
  const std::string base = pointer_join(c.pointer, field);
  for (std::size_t i = 0; i < eqs->size(); ++i)
    for (const char* side : {"lhs", "rhs"})
      if (const json* e = get_field((*eqs)[i], side))
        f(c, *e, pointer_join(pointer_join(base, i), side));
}

/// The Expression roots of a component that the array checks look at: equations, constraint
/// equations, reaction rates, guesses and update expressions.
void for_each_root(const Context& ctx, const RootFn& f) {
  for (Component* c : ctx.all_components()) {
    if (c->is_stub()) continue;
    equations(*c, "equations", f);
    equations(*c, "initialization_equations", f);
    equations(*c, "constraint_equations", f);
    if (const json* rs = c->field("reactions"); rs && rs->is_array())
      for (std::size_t i = 0; i < rs->size(); ++i)
        if (const json* r = get_field((*rs)[i], "rate"))
          f(*c, *r, pointer_join(pointer_join(pointer_join(c->pointer, "reactions"), i), "rate"));
    if (const json* g = c->field("guesses"); g && g->is_object())
      for (const auto& [k, v] : g->items())
        f(*c, v, pointer_join(pointer_join(c->pointer, "guesses"), k));
  }
}

// ---- checks -------------------------------------------------------------------------------------

void check_broadcast(Context& ctx, const Component& c, const json& e, const std::string& p) {
  visit_nodes(e, [&](const json& n) {
    if (get_str(n, "op") != "broadcast") return true;
    const json* fn = get_field(n, "fn");
    const json* args = get_field(n, "args");
    const std::size_t argc = (args && args->is_array()) ? args->size() : 0;
    std::string why;
    if (!fn || !fn->is_string()) {
      why = "carries no `fn` naming the operator to apply";
    } else {
      auto it = scalar_ops().find(fn->get<std::string>());
      if (it == scalar_ops().end())
        why = "names '" + fn->get<std::string>() + "', which is not a scalar operator";
      else if (argc < it->second.min || argc > it->second.max)
        why = "applies '" + fn->get<std::string>() + "' to " + std::to_string(argc) + " operand" +
              (argc == 1 ? "" : "s") + ", which that operator does not admit";
    }
    if (!why.empty())
      ctx.report("invalid_broadcast_fn", p,
                 "A broadcast in " + c.dotted + " " + why + " (§4.3.4).");
    return true;
  });
}

void check_index_set_refs(Context& ctx, const Component& c, const json& e, const std::string& p) {
  std::vector<std::string> bad;
  visit_nodes(e, [&](const json& n) {
    const json* r = get_field(n, "ranges");
    if (!r || !r->is_object()) return true;
    for (const auto& [k, v] : r->items()) {
      const std::string from = get_str(v, "from");
      if (!from.empty() && !ctx.index_sets.count(from) &&
          std::find(bad.begin(), bad.end(), from) == bad.end())
        bad.push_back(from);
    }
    return true;
  });
  if (!bad.empty())
    ctx.report("undefined_index_set", p,
               "An aggregate range in " + c.dotted + " iterates over " + quote_list(bad) +
                   ", which the document's index_sets do not declare.");
}

/// What makes a categorical index set unusable as a value-equality join key, or "": keys are
/// integers or strings (equality on a float representation is not portable; a null, boolean or
/// structured member has no key value at all).
std::string invalid_key_members(const Context& ctx, const std::string& set) {
  const json* is = get_field(ctx.doc, "index_sets");
  const json* def = is ? get_field(*is, set.c_str()) : nullptr;
  const json* mem = def ? get_field(*def, "members") : nullptr;
  if (!mem || !mem->is_array()) return "";
  for (const json& m : *mem) {
    if (m.is_number_float()) return "floating-point numbers";
    if (m.is_null()) return "null";
    if (!m.is_number_integer() && !m.is_number_unsigned() && !m.is_string())
      return std::string("a ") + m.type_name() + " (" + m.dump() + ")";
  }
  return "";
}

void check_join_keys(Context& ctx, const Component& c, const json& e, const std::string& p) {
  visit_nodes(e, [&](const json& n) {
    const json* join = get_field(n, "join");
    if (!join || !join->is_array()) return true;
    const json* ranges = get_field(n, "ranges");
    for (const auto& clause : *join) {
      const json* on = get_field(clause, "on");
      if (!on || !on->is_array()) continue;
      for (const auto& pair : *on) {
        if (!pair.is_array()) continue;
        for (const auto& col : pair) {
          if (col.is_null()) {  // the schema's string type is checked first when a schema is given
            ctx.report("join_key_invalid_type", p,
                       "A join in " + c.dotted + " has a null key column; a key column names an index set, "
                       "a range's loop symbol or a declared local buffer.");
            continue;
          }
          if (!col.is_string()) continue;
          std::string set = col.get<std::string>();
          if (ranges && ranges->is_object())
            if (const json* rv = get_field(*ranges, set.c_str()); rv && rv->is_object())
              set = get_str(*rv, "from");
          if (const std::string bad = invalid_key_members(ctx, set); !bad.empty())
            ctx.report("join_key_invalid_type", p,
                       "A join in " + c.dotted + " uses index set '" + set + "' as a key column, but " +
                           (bad == "floating-point numbers" ? "its members are " : "its members include ") + bad +
                           "; join keys must be integers or strings.");
        }
      }
    }
    return true;
  });
}

std::vector<std::string> shape_of(const Component& c, const std::string& var) {
  std::vector<std::string> out;
  const json* vars = c.field("variables");
  const json* v = vars ? get_field(*vars, var.c_str()) : nullptr;
  const json* s = v ? get_field(*v, "shape") : nullptr;
  if (s && s->is_array())
    for (const auto& x : *s)
      if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}

/// §4.3.4 named regime: an operand of a bare array-level expression may only carry index sets
/// the defined unknown is shaped over.
void check_operand_shapes(Context& ctx, const Component& c) {
  const json* eqs = c.field("equations");
  if (!eqs || !eqs->is_array()) return;
  for (std::size_t i = 0; i < eqs->size(); ++i) {
    const json* lhs = get_field((*eqs)[i], "lhs");
    const json* rhs = get_field((*eqs)[i], "rhs");
    // Only the bare and D(x) forms: element and aggregate LHSs index explicitly.
    if (!lhs || !rhs || !(lhs->is_string() || is_time_derivative(*lhs, ctx.time_var))) continue;
    bool deriv = false, ic = false;
    const std::string target = lhs_target(*lhs, ctx.time_var, deriv, ic);
    const auto result = shape_of(c, target);
    if (target.empty() || result.empty()) continue;
    std::function<void(const json&, int)> walk = [&](const json& e, int depth) {
      if (depth > 500) return;
      if (e.is_string()) {
        const std::string s = e.get<std::string>();
        if (s == target) return;
        for (const auto& set : shape_of(c, s))
          if (std::find(result.begin(), result.end(), set) == result.end()) {
            ctx.report("array_shape_mismatch",
                       pointer_join(pointer_join(pointer_join(c.pointer, "equations"), i), "rhs"),
                       "Operand '" + s + "' of the array-level expression for '" + target +
                           "' in " + c.dotted + " is declared over index set '" + set +
                           "', which '" + target + "' is not shaped over.");
            return;
          }
        return;
      }
      if (!e.is_object() || !is_elementwise(get_str(e, "op"))) return;
      if (const json* a = get_field(e, "args"); a && a->is_array())
        for (const auto& x : *a) walk(x, depth + 1);
    };
    walk(*rhs, 0);
  }
}

/// Relational / value-invention nodes (distinct aggregates, skolem, rank) are build-time
/// machinery: one that reads a continuously varying value cannot run on the per-step path.
void check_relational(Context& ctx, const Component& c) {
  if (c.kind != CompKind::Model) return;
  const json* eqs = c.field("equations");
  if (!eqs || !eqs->is_array()) return;
  const Classification cl = classify(*c.node, ctx.time_var);
  std::set<std::string> cont(cl.ode_states.begin(), cl.ode_states.end());
  cont.insert(cl.algebraic_unknowns.begin(), cl.algebraic_unknowns.end());
  cont.insert(ctx.time_var);
  // Observed unknowns inherit the continuous class from what defines them.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& eq : *eqs) {
      const json* lhs = get_field(eq, "lhs");
      const json* rhs = get_field(eq, "rhs");
      if (!lhs || !rhs) continue;
      bool deriv = false, ic = false;
      const std::string t = lhs_target(*lhs, ctx.time_var, deriv, ic);
      if (t.empty() || deriv || ic || cont.count(t)) continue;
      bool reads = false;
      for_each_free_symbol(*rhs, [&](const std::string& s) { reads = reads || cont.count(s); });
      if (reads) changed = cont.insert(t).second || changed;
    }
  }
  for (std::size_t i = 0; i < eqs->size(); ++i) {
    const json* rhs = get_field((*eqs)[i], "rhs");
    if (!rhs) continue;
    std::string hit;
    visit_nodes(*rhs, [&](const json& n) {
      if (!hit.empty()) return false;
      const std::string op = get_str(n, "op");
      const json* distinct = get_field(n, "distinct");
      const bool relational = op == "skolem" || op == "rank" ||
                              (distinct && distinct->is_boolean() && distinct->get<bool>());
      if (!relational) return true;
      for_each_free_symbol(n, [&](const std::string& s) {
        if (hit.empty() && cont.count(s)) hit = s;
      });
      return false;
    });
    if (!hit.empty())
      ctx.report("relational_node_in_continuous",
                 pointer_join(pointer_join(pointer_join(c.pointer, "equations"), i), "rhs"),
                 "A relational node (distinct/skolem/rank) in equation " + std::to_string(i) +
                     " of " + c.dotted + " reads '" + hit +
                     "', which varies continuously; relational nodes may only read constant or "
                     "discretely updated inputs.");
  }
}

}  // namespace

void check_arrays(Context& ctx) {
  for_each_root(ctx, [&](const Component& c, const json& e, const std::string& p) {
    check_broadcast(ctx, c, e, p);
    check_join_keys(ctx, c, e, p);
    if (!ctx.index_sets_may_be_incomplete) check_index_set_refs(ctx, c, e, p);
  });
  for (Component* c : ctx.all_components()) {
    if (c->kind != CompKind::Model) continue;
    check_operand_shapes(ctx, *c);
    check_relational(ctx, *c);
  }
}

}  // namespace esi::esm::structural_detail
