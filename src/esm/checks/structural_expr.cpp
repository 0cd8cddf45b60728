// Expression walkers shared by the structural checks. One traversal descends every Expression
// child of a node (spec §4.9.5), so no check misses a name hidden in `expr`, `filter`, `lower`,
// `bindings`, ...
#include "esm/checks/structural_detail.hpp"

namespace esi::esm::structural_detail {

namespace {

constexpr int kMaxDepth = 2000;  // deeper trees are cut off rather than overflowing the stack

// Expression-valued children of a node (§4.9.5). `axes` and `bindings` are objects whose values
// are Expressions; `values` and `args` are arrays of Expressions.
constexpr const char* kSingleChildren[] = {"expr", "filter", "key", "lower", "upper"};
constexpr const char* kArrayChildren[] = {"args", "values"};
constexpr const char* kMapChildren[] = {"axes", "bindings"};

/// Template params of `tmpl` that its body uses in a scalar-field position (`manifold`, `dim`,
/// ...; §9.6.1): a string bound to one is a literal, not a variable reference.
std::set<std::string> scalar_site_params(const json& tmpl) {
  std::set<std::string> params, out;
  if (const json* ps = get_field(tmpl, "params"); ps && ps->is_array())
    for (const auto& p : *ps)
      if (p.is_string()) params.insert(p.get<std::string>());
  const json* body = get_field(tmpl, "body");
  if (params.empty() || !body) return out;
  static const std::set<std::string> expr_fields = {
      "op",     "args", "expr",     "filter",     "key",    "lower",   "upper",
      "values", "axes", "bindings", "output_idx", "ranges", "regions", "join"};
  visit_nodes(*body, [&](const json& n) {
    for (const auto& [k, v] : n.items())
      if (!expr_fields.count(k) && v.is_string() && params.count(v.get<std::string>()))
        out.insert(v.get<std::string>());
    return true;
  });
  return out;
}

/// Literals admissible in the geometry kernels' `manifold` field (§4.2); a binding of one of
/// these to an imported template's param fills a scalar field.
bool is_field_literal(const std::string& s) {
  return s == "planar" || s == "spherical" || s == "geodesic";
}

/// Names written directly in the index positions of `index` nodes of an aggregate's body
/// (outside nested aggregates): index symbols whose ranges the operands' shapes give (spec
/// §4.3.1, "indices not listed are inferred from the operand shapes"), e.g. the contracted k of
/// a matrix product written without `ranges`.
void index_position_names(const json& e, const std::function<void(const std::string&)>& bind, int depth) {
  if (depth > kMaxDepth || !e.is_object()) return;
  const std::string op = get_str(e, "op");
  if (op == "aggregate" || op == "const" || op == "enum") return;
  const json* args = get_field(e, "args");
  if (op == "index" && args && args->is_array())
    for (std::size_t i = 1; i < args->size(); ++i)
      if ((*args)[i].is_string()) bind((*args)[i].get<std::string>());
  for (const char* c : kSingleChildren)
    if (const json* ch = get_field(e, c)) index_position_names(*ch, bind, depth + 1);
  for (const char* c : kArrayChildren)
    if (const json* ch = get_field(e, c); ch && ch->is_array())
      for (const auto& a : *ch) index_position_names(a, bind, depth + 1);
}

void free_symbols(const json& e, const std::function<void(const std::string&)>& f,
                  std::set<std::string>& bound, const json* templates, int depth) {
  if (depth > kMaxDepth) return;
  if (e.is_string()) {
    const auto& s = e.get_ref<const std::string&>();
    if (!s.empty() && !bound.count(s)) f(s);
    return;
  }
  if (!e.is_object()) return;
  const std::string op = get_str(e, "op");
  if (op == "const" || op == "enum") return;  // literal payloads, no references

  // Binders: index symbols of aggregate / argmin / argmax (§4.3.1), the integration variable of
  // `integral` (§4.2). They are in scope for the node's own children only.
  std::vector<std::string> added;
  auto bind = [&](const std::string& s) {
    if (!s.empty() && bound.insert(s).second) added.push_back(s);
  };
  if (const json* oi = get_field(e, "output_idx"); oi && oi->is_array())
    for (const auto& i : *oi)
      if (i.is_string()) bind(i.get<std::string>());
  if (const json* r = get_field(e, "ranges"); r && r->is_object())
    for (const auto& [k, v] : r->items()) bind(k);
  if (op == "aggregate")  // contracted indices without a range: inferred from the operands' shapes
    if (const json* body = get_field(e, "expr")) index_position_names(*body, bind, 0);
  if (op == "argmin" || op == "argmax") bind(get_str(e, "arg"));
  if (op == "integral") bind(get_str(e, "var"));

  if (op == "apply_expression_template") {
    // Only the bindings are evaluated in the caller's scope (§9.6.2). A string bound to a
    // param the body uses as a scalar field is a literal (§9.6.1).
    const json* tmpl = templates ? get_field(*templates, get_str(e, "name").c_str()) : nullptr;
    const std::set<std::string> literal_params =
        tmpl ? scalar_site_params(*tmpl) : std::set<std::string>{};
    if (const json* b = get_field(e, "bindings"); b && b->is_object())
      for (const auto& [k, v] : b->items()) {
        if (v.is_string() &&
            (literal_params.count(k) || (!tmpl && is_field_literal(v.get<std::string>()))))
          continue;
        free_symbols(v, f, bound, templates, depth + 1);
      }
  } else {
    for (const char* c : kSingleChildren)
      if (const json* ch = get_field(e, c)) free_symbols(*ch, f, bound, templates, depth + 1);
    for (const char* c : kArrayChildren)
      if (const json* ch = get_field(e, c); ch && ch->is_array())
        for (const auto& a : *ch) free_symbols(a, f, bound, templates, depth + 1);
    for (const char* c : kMapChildren)
      if (const json* ch = get_field(e, c); ch && ch->is_object())
        for (const auto& [k, v] : ch->items()) free_symbols(v, f, bound, templates, depth + 1);
  }
  for (const auto& s : added) bound.erase(s);
}

bool visit(const json& e, const std::function<bool(const json&)>& f, int depth) {
  if (depth > kMaxDepth || !e.is_object() || !e.contains("op")) return true;
  if (!f(e)) return true;
  for (const char* c : kSingleChildren)
    if (const json* ch = get_field(e, c)) visit(*ch, f, depth + 1);
  for (const char* c : kArrayChildren)
    if (const json* ch = get_field(e, c); ch && ch->is_array())
      for (const auto& a : *ch) visit(a, f, depth + 1);
  for (const char* c : kMapChildren)
    if (const json* ch = get_field(e, c); ch && ch->is_object())
      for (const auto& [k, v] : ch->items()) visit(v, f, depth + 1);
  return true;
}

void axis_names(const json& j, const std::string& tv, std::set<std::string>& out, int depth) {
  if (depth > kMaxDepth) return;
  if (j.is_object()) {
    if (j.contains("op")) {
      if (std::string d = get_str(j, "dim"); !d.empty()) out.insert(d);
      if (get_str(j, "op") == "D") {
        std::string w = get_str(j, "wrt");
        if (!w.empty() && w != tv && w != "t") out.insert(w);
      }
    }
    for (const auto& [k, v] : j.items()) axis_names(v, tv, out, depth + 1);
  } else if (j.is_array()) {
    for (const auto& v : j) axis_names(v, tv, out, depth + 1);
  }
}

/// The variable under `index(...)` wrappers: index(index(X, i), j) -> X.
std::string base_name(const json& e, int depth = 0) {
  if (depth > 64) return "";
  if (e.is_string()) return e.get<std::string>();
  if (e.is_object() && get_str(e, "op") == "index") {
    const json* a = get_field(e, "args");
    if (a && a->is_array() && !a->empty()) return base_name((*a)[0], depth + 1);
  }
  return "";
}

}  // namespace

std::string get_str(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

const json* get_field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

void for_each_free_symbol(const json& e, const std::function<void(const std::string&)>& f,
                          const std::set<std::string>& bound, const json* templates) {
  std::set<std::string> b = bound;
  free_symbols(e, f, b, templates, 0);
}

void visit_nodes(const json& e, const std::function<bool(const json& node)>& f) {
  visit(e, f, 0);
}

void collect_axis_names(const json& j, const std::string& time_var, std::set<std::string>& out) {
  axis_names(j, time_var, out, 0);
}

bool is_time_derivative(const json& e, const std::string& time_var) {
  if (!e.is_object() || get_str(e, "op") != "D") return false;
  const json* w = get_field(e, "wrt");
  if (w == nullptr || w->is_null()) return true;
  if (!w->is_string()) return false;
  const auto& s = w->get_ref<const std::string&>();
  return s == time_var || s == "t";
}

std::string lhs_target(const json& lhs, const std::string& time_var, bool& derivative,
                       bool& is_ic) {
  derivative = false;
  is_ic = false;
  const json* cur = &lhs;
  for (int depth = 0; depth < 64; ++depth) {
    if (cur->is_string()) return cur->get<std::string>();
    if (!cur->is_object()) return "";
    const std::string op = get_str(*cur, "op");
    const json* args = get_field(*cur, "args");
    const json* first = (args && args->is_array() && !args->empty()) ? &(*args)[0] : nullptr;
    if (op == "ic") {
      is_ic = true;
      return first ? base_name(*first) : "";
    }
    if (is_time_derivative(*cur, time_var)) {
      derivative = true;
      return first ? base_name(*first) : "";
    }
    if (op == "index" && first) {
      cur = first;  // index(D(x), i) or index(x, i): an element of x
      continue;
    }
    if (op == "aggregate") {
      const json* ex = get_field(*cur, "expr");
      if (ex == nullptr) return "";
      cur = ex;  // aggregate over D(index(x, i)) or index(x, i)
      continue;
    }
    return "";
  }
  return "";
}

}  // namespace esi::esm::structural_detail
