// Coupling checks (spec §10): every system a coupling entry names exists (§4.9.2 walk, any
// depth), every scoped reference in from/to/translate/connector/transform/event fields resolves
// to a variable of the named system (§4.6, §4.9.5), identity maps join equal units, and the
// components' direct cross-references form no cycle.
#include <algorithm>
#include <functional>

#include "esm/checks/structural_detail.hpp"

namespace esi::esm::structural_detail {

namespace {

bool coupling_in_scope(const Context& ctx, const std::string& s) {
  if (s == ctx.time_var || s == "t") return true;
  if (ctx.axis_names.count(s) || ctx.doc_level_names.count(s)) return true;
  const Resolution r = ctx.resolve(s, nullptr);
  return r == Resolution::Found || r == Resolution::Opaque;
}

std::string why_unresolved(const Context& ctx, const std::string& s) {
  if (s.find('.') == std::string::npos)
    return "a coupling reference must be qualified with its system name (System.variable)";
  switch (ctx.resolve(s, nullptr)) {
    case Resolution::NoSystem:
      return "no model or reaction system '" + s.substr(0, s.rfind('.')) + "' exists";
    case Resolution::NoVariable:
      return "system '" + s.substr(0, s.rfind('.')) + "' declares no variable '" +
             s.substr(s.rfind('.') + 1) + "'";
    default:
      return "it does not resolve";
  }
}

class CouplingChecker {
 public:
  explicit CouplingChecker(Context& ctx) : ctx_(ctx) {}

  /// A single scoped reference in a plain string field.
  void ref(const json* v, const std::string& pointer, const std::string& role) {
    if (!v || !v->is_string()) return;
    const std::string s = v->get<std::string>();
    if (s == "_var" || coupling_in_scope(ctx_, s)) return;
    ctx_.report("unresolved_scoped_ref", pointer,
                "The " + role + " reference '" + s + "' of coupling entry " + entry_ +
                    " cannot be resolved: " + why_unresolved(ctx_, s) + ".");
  }

  /// The free symbols of an Expression field.
  void expr(const json* e, const std::string& pointer, const std::string& role) {
    if (!e) return;
    std::vector<std::string> bad;
    for_each_free_symbol(*e, [&](const std::string& s) {
      if (s != "_var" && !coupling_in_scope(ctx_, s) &&
          std::find(bad.begin(), bad.end(), s) == bad.end())
        bad.push_back(s);
    });
    if (bad.empty()) return;
    ctx_.report("unresolved_scoped_ref", pointer,
                "The " + role + " of coupling entry " + entry_ + " uses " + quote_list(bad) +
                    ", which " + (bad.size() == 1 ? "does" : "do") +
                    " not resolve to a variable of any system (" + why_unresolved(ctx_, bad[0]) +
                    ").");
  }

  void systems(const json& e, const std::string& p) {
    const json* sys = get_field(e, "systems");
    if (!sys || !sys->is_array()) return;
    for (const auto& s : *sys) {
      if (!s.is_string()) continue;
      bool opaque = false;
      if (ctx_.find_system(s.get<std::string>(), nullptr, opaque) || opaque) continue;
      ctx_.report("undefined_system", pointer_join(p, "systems"),
                  "Coupling entry " + entry_ + " names system '" + s.get<std::string>() +
                      "', but no model or reaction system of that name exists.");
    }
  }

  void affects(const json* list, const std::string& p) {
    if (!list || !list->is_array()) return;
    for (std::size_t j = 0; j < list->size(); ++j) {
      const json& a = (*list)[j];
      const std::string ap = pointer_join(p, j);
      ref(get_field(a, "lhs"), pointer_join(ap, "lhs"), "event affect target");
      expr(get_field(a, "rhs"), pointer_join(ap, "rhs"), "event affect");
    }
  }

  /// §10.4/§4.7.6: an identity map between two variables whose declared units differ.
  void identity_units(const json& e, const std::string& p) {
    if (get_str(e, "transform") != "identity") return;
    const std::string from = get_str(e, "from"), to = get_str(e, "to");
    const std::string uf = units_of(from), ut = units_of(to);
    if (uf.empty() || ut.empty() || strip(uf) == strip(ut)) return;
    ctx_.report("domain_unit_mismatch", p,
                "Coupling entry " + entry_ + " maps '" + from + "' (" + uf + ") onto '" + to +
                    "' (" + ut +
                    ") with an identity transform, but their units differ; use a "
                    "conversion_factor transform.");
  }

  void entry(const json& e, std::size_t i) {
    const std::string p = pointer_join("/coupling", i);
    entry_ = std::to_string(i);
    const std::string type = get_str(e, "type");
    if (type == "operator_compose" || type == "couple") {
      systems(e, p);
      if (const json* tr = get_field(e, "translate"); tr && tr->is_object())
        for (const auto& [k, v] : tr->items()) {
          const std::string tp = pointer_join(pointer_join(p, "translate"), k);
          json key = k;
          ref(&key, tp, "translate");
          ref(v.is_object() ? get_field(v, "var") : &v, tp, "translate");
        }
      if (const json* con = get_field(e, "connector"))
        if (const json* eqs = get_field(*con, "equations"); eqs && eqs->is_array())
          for (std::size_t j = 0; j < eqs->size(); ++j) {
            const json& ce = (*eqs)[j];
            const std::string cp =
                pointer_join(pointer_join(pointer_join(p, "connector"), "equations"), j);
            // Only the expression is a reference-bearing field here (§4.9.5 table); the
            // corpus uses placeholder from/to strings (valid/scoped_refs_coupling.esm).
            expr(get_field(ce, "expression"), pointer_join(cp, "expression"),
                 "connector expression");
          }
    } else if (type == "variable_map") {
      ref(get_field(e, "from"), pointer_join(p, "from"), "from");
      ref(get_field(e, "to"), pointer_join(p, "to"), "to");
      if (const json* t = get_field(e, "transform"); t && t->is_object())
        expr(t, pointer_join(p, "transform"), "transform expression");
      identity_units(e, p);
    } else if (type == "event") {
      if (const json* c = get_field(e, "conditions"); c && c->is_array())
        for (std::size_t j = 0; j < c->size(); ++j)
          expr(&(*c)[j], pointer_join(pointer_join(p, "conditions"), j), "event condition");
      if (const json* trig = get_field(e, "trigger"))
        expr(get_field(*trig, "expression"), pointer_join(pointer_join(p, "trigger"), "expression"),
             "event trigger");
      affects(get_field(e, "affects"), pointer_join(p, "affects"));
      affects(get_field(e, "affect_neg"), pointer_join(p, "affect_neg"));
    }
  }

 private:
  static std::string strip(const std::string& s) {
    std::string o;
    for (char ch : s)
      if (ch != ' ') o += ch;
    return o;
  }

  std::string units_of(const std::string& ref) const {
    const auto dot = ref.rfind('.');
    if (dot == std::string::npos) return "";
    bool opaque = false;
    Component* sys = ctx_.find_system(ref.substr(0, dot), nullptr, opaque);
    if (!sys || sys->is_stub()) return "";
    const std::string var = ref.substr(dot + 1);
    for (const char* reg : {"variables", "species", "parameters"})
      if (const json* m = sys->field(reg))
        if (const json* v = get_field(*m, var.c_str())) return get_str(*v, "units");
    return "";
  }

  Context& ctx_;
  std::string entry_;
};

Component* root_of(Component* c) {
  while (c && c->parent) c = c->parent;
  return c;
}

/// Edges between top-level components through the scoped references in their equations and
/// reaction rates (ModelA's equation reads ModelB.y: A -> B). A cycle is circular_dependency.
void check_cycles(Context& ctx) {
  std::map<std::string, std::set<std::string>> edges;
  for (Component* c : ctx.all_components()) {
    if (c->is_stub()) continue;
    Component* root = root_of(c);
    auto add = [&](const std::string& s) {
      const auto dot = s.rfind('.');
      if (dot == std::string::npos || c->symbols.count(s)) return;
      bool opaque = false;
      Component* target = root_of(ctx.find_system(s.substr(0, dot), c, opaque));
      if (target && target != root) edges[root->name].insert(target->name);
    };
    auto scan = [&](const json* list, const char* a, const char* b) {
      if (!list || !list->is_array()) return;
      for (const auto& item : *list) {
        if (const json* x = get_field(item, a)) for_each_free_symbol(*x, add);
        if (const json* x = get_field(item, b)) for_each_free_symbol(*x, add);
      }
    };
    scan(c->field("equations"), "lhs", "rhs");
    scan(c->field("reactions"), "rate", "rate");
  }
  // Depth-first search for a back edge; report the first cycle found.
  std::map<std::string, int> state;  // 0 new, 1 on stack, 2 done
  std::vector<std::string> stack;
  std::vector<std::string> cycle;
  std::function<bool(const std::string&)> dfs = [&](const std::string& n) {
    state[n] = 1;
    stack.push_back(n);
    for (const auto& m : edges[n]) {
      if (state[m] == 1) {
        auto it = std::find(stack.begin(), stack.end(), m);
        cycle.assign(it, stack.end());
        cycle.push_back(m);
        return true;
      }
      if (state[m] == 0 && dfs(m)) return true;
    }
    stack.pop_back();
    state[n] = 2;
    return false;
  };
  for (const auto& [n, targets] : edges) {
    if (state[n] != 0 || !dfs(n)) continue;
    std::string chain;
    for (std::size_t i = 0; i < cycle.size(); ++i) chain += (i ? " -> " : "") + cycle[i];
    const bool models = ctx.doc.contains("models");
    ctx.report("circular_dependency", models ? "/models" : "/reaction_systems",
               "Components reference each other's variables in a cycle (" + chain +
                   "); break the cycle with a coupling entry.");
    return;
  }
}

}  // namespace

void check_coupling(Context& ctx) {
  const json* cp = get_field(ctx.doc, "coupling");
  if (cp && cp->is_array()) {
    CouplingChecker cc(ctx);
    for (std::size_t i = 0; i < cp->size(); ++i)
      if ((*cp)[i].is_object()) cc.entry((*cp)[i], i);
  }
  check_cycles(ctx);
}

}  // namespace esi::esm::structural_detail
