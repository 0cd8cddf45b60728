// Walking Expression positions inside raw ESM JSON (json_walk.hpp).
#include "esm/load/json_walk.hpp"

namespace esi::esm::detail {
namespace {

bool is_single_expr_field(const std::string& k) {
  return k == "expr" || k == "filter" || k == "lower" || k == "upper";
}

void bound_indices(const json& node, std::set<std::string>& out) {
  if (auto it = node.find("output_idx"); it != node.end() && it->is_array())
    for (const auto& s : *it)
      if (s.is_string()) out.insert(s.get<std::string>());
  if (auto it = node.find("ranges"); it != node.end() && it->is_object())
    for (auto r = it->begin(); r != it->end(); ++r) out.insert(r.key());
}

void rewrite(json& e, const std::function<json(const std::string&)>& f,
             const std::set<std::string>& shadow) {
  if (e.is_string()) {
    const std::string s = e.get<std::string>();
    if (shadow.count(s)) return;
    json r = f(s);
    if (!r.is_null()) e = std::move(r);
    return;
  }
  if (!e.is_object()) return;
  std::set<std::string> inner = shadow;
  bound_indices(e, inner);
  for (auto it = e.begin(); it != e.end(); ++it) {
    const std::string& k = it.key();
    if (k == "args" || k == "values") {
      if (it->is_array())
        for (auto& a : *it) rewrite(a, f, inner);
    } else if (is_single_expr_field(k)) {
      rewrite(*it, f, inner);
    } else if (k == "bindings" || k == "axes") {
      if (it->is_object())
        for (auto& v : *it) rewrite(v, f, inner);
    }
  }
}

void collect(const json& e, std::set<std::string>& out, const std::set<std::string>& shadow) {
  if (e.is_string()) {
    const auto& s = e.get_ref<const std::string&>();
    if (!shadow.count(s)) out.insert(s);
    return;
  }
  if (!e.is_object()) return;
  std::set<std::string> inner = shadow;
  bound_indices(e, inner);
  for (auto it = e.begin(); it != e.end(); ++it) {
    const std::string& k = it.key();
    if (k == "args" || k == "values") {
      if (it->is_array())
        for (const auto& a : *it) collect(a, out, inner);
    } else if (is_single_expr_field(k)) {
      collect(*it, out, inner);
    } else if (k == "bindings" || k == "axes") {
      if (it->is_object())
        for (const auto& v : *it) collect(v, out, inner);
    }
  }
}

}  // namespace

void rewrite_expression_names(json& e, const std::function<json(const std::string&)>& f) {
  rewrite(e, f, {});
}

void collect_expression_names(const json& e, std::set<std::string>& out) { collect(e, out, {}); }

void rename_axis_fields(json& e, const std::map<std::string, std::string>& names) {
  if (e.is_array()) {
    for (auto& x : e) rename_axis_fields(x, names);
    return;
  }
  if (!e.is_object()) return;
  for (auto it = e.begin(); it != e.end(); ++it) {
    const std::string& k = it.key();
    if ((k == "wrt" || k == "dim" || k == "from") && it->is_string()) {
      auto r = names.find(it->get<std::string>());
      if (r != names.end()) *it = r->second;
    } else {
      rename_axis_fields(*it, names);
    }
  }
}

void rename_template_refs(json& e, const std::map<std::string, std::string>& names) {
  if (e.is_array()) {
    for (auto& x : e) rename_template_refs(x, names);
    return;
  }
  if (!e.is_object()) return;
  if (auto op = e.find("op");
      op != e.end() && *op == "apply_expression_template" && e.contains("name") &&
      e["name"].is_string()) {
    auto r = names.find(e["name"].get<std::string>());
    if (r != names.end()) e["name"] = r->second;
  }
  for (auto& v : e) rename_template_refs(v, names);
}

void for_each_component_expression(json& c, const std::function<void(json&)>& f) {
  if (!c.is_object()) return;
  auto eqs = [&](const char* key) {
    if (auto it = c.find(key); it != c.end() && it->is_array())
      for (auto& eq : *it)
        if (eq.is_object()) {
          if (eq.contains("lhs")) f(eq["lhs"]);
          if (eq.contains("rhs")) f(eq["rhs"]);
        }
  };
  eqs("equations");
  eqs("initialization_equations");
  eqs("constraint_equations");
  if (auto it = c.find("guesses"); it != c.end() && it->is_object())
    for (auto& g : *it) f(g);
  if (auto it = c.find("reactions"); it != c.end() && it->is_array())
    for (auto& r : *it)
      if (r.is_object() && r.contains("rate")) f(r["rate"]);
  if (auto it = c.find("variables"); it != c.end() && it->is_object())
    for (auto& v : *it)
      if (v.is_object() && v.contains("default") && v["default"].is_object()) f(v["default"]);
  for (const char* key : {"continuous_events", "discrete_events"}) {
    auto it = c.find(key);
    if (it == c.end() || !it->is_array()) continue;
    for (auto& ev : *it) {
      if (!ev.is_object()) continue;
      if (auto cs = ev.find("conditions"); cs != ev.end() && cs->is_array())
        for (auto& x : *cs) f(x);
      for (const char* ak : {"affects", "affect_neg"})
        if (auto as = ev.find(ak); as != ev.end() && as->is_array())
          for (auto& a : *as)
            if (a.is_object()) {
              if (a.contains("lhs")) f(a["lhs"]);
              if (a.contains("rhs")) f(a["rhs"]);
            }
      if (auto tr = ev.find("trigger"); tr != ev.end() && tr->is_object() && tr->contains("expression"))
        f((*tr)["expression"]);
    }
  }
  if (auto it = c.find("expression_templates"); it != c.end() && it->is_object())
    for (auto& t : *it)
      if (t.is_object()) {
        if (t.contains("body")) f(t["body"]);
        if (t.contains("match")) f(t["match"]);
      }
}

}  // namespace esi::esm::detail
