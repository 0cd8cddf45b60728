// Operator-level checks over every Expression node of the resolved document (spec §4.2, §4.3.2,
// §9.6.6): operator arity (`operator_arity`), misspelled operators (`unknown_operator`, with a
// suggestion), `makearray` regions inverted past the empty spelling
// (`makearray_region_inverted`) and geometry-kernel manifolds outside the closed set
// (`geometry_manifold_invalid`, checked per call site when a template parameter carries it).
#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <optional>

#include "esi/core/text.hpp"
#include "esi/expr/expr.hpp"
#include "esm/checks/structural_detail.hpp"
#include "esm/load/metaparams.hpp"

namespace esi::esm::structural_detail {

namespace {

constexpr int kMaxDepth = 2000;  // deeper documents are cut off rather than overflowing the stack

/// Operand counts the §4.2 tables admit for the evaluable-core scalar operators.
struct Arity {
  std::size_t min;
  std::size_t max;  // SIZE_MAX: n-ary
};

bool core_arity(const std::string& op, Arity& out) {
  static const std::map<std::string, Arity> table = [] {
    std::map<std::string, Arity> t;
    const std::size_t n = SIZE_MAX;
    t["+"] = {1, n};
    t["*"] = {1, n};
    t["-"] = {1, n};  // §4.2 says unary or binary; valid fixtures fold a - b - c, as flatten does
    t["/"] = {2, 2};
    t["^"] = {2, 2};
    t["neg"] = {1, 1};
    for (const char* f : {"exp",   "log",   "log10", "sqrt", "abs",  "sign", "sin",  "cos",
                          "tan",   "asin",  "acos",  "atan", "sinh", "cosh", "tanh", "asinh",
                          "acosh", "atanh", "floor", "ceil", "not",  "Pre",  "ic"})
      t[f] = {1, 1};
    t["atan2"] = {2, 2};
    t["min"] = {2, n};  // §4.2: n-ary with arity >= 2
    t["max"] = {2, n};
    t["ifelse"] = {3, 3};
    for (const char* c : {">", "<", ">=", "<=", "==", "!="}) t[c] = {2, 2};
    t["and"] = {2, n};
    t["or"] = {2, n};
    t["true"] = {0, 0};
    return t;
  }();
  auto it = table.find(op);
  if (it == table.end()) return false;
  out = it->second;
  return true;
}

std::string arity_words(const Arity& a) {
  if (a.min == a.max) return "exactly " + std::to_string(a.min);
  if (a.max == SIZE_MAX) return "at least " + std::to_string(a.min);
  return std::to_string(a.min) + " or " + std::to_string(a.max);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The core operator names (§4.2) that `op` is a likely misspelling of: a case-only difference,
/// or within one edit (two for names of six letters or more).
std::string suggestion_for(const std::string& op) {
  static const std::vector<std::string> core = [] {
    std::vector<std::string> names;
    for (const char* n : {"+",
                          "-",
                          "*",
                          "/",
                          "^",
                          "exp",
                          "log",
                          "log10",
                          "sqrt",
                          "abs",
                          "sign",
                          "sin",
                          "cos",
                          "tan",
                          "asin",
                          "acos",
                          "atan",
                          "atan2",
                          "sinh",
                          "cosh",
                          "tanh",
                          "asinh",
                          "acosh",
                          "atanh",
                          "min",
                          "max",
                          "floor",
                          "ceil",
                          "ifelse",
                          "and",
                          "or",
                          "not",
                          "true",
                          "D",
                          "ic",
                          "Pre",
                          "fn",
                          "enum",
                          "const",
                          "table_lookup",
                          "aggregate",
                          "makearray",
                          "index",
                          "broadcast",
                          "reshape",
                          "transpose",
                          "concat",
                          "skolem",
                          "rank",
                          "argmin",
                          "argmax",
                          "intersect_polygon",
                          "polygon_intersection_area",
                          "apply_expression_template"})
      names.emplace_back(n);
    return names;
  }();
  if (op.size() < 2) return "";
  const auto common_prefix = [&](const std::string& c) {
    std::size_t n = 0;
    while (n < c.size() && n < op.size() && c[n] == op[n]) ++n;
    return n;
  };
  std::string best;
  std::size_t best_d = SIZE_MAX;
  for (const auto& c : core) {
    if (c.size() < 2) continue;
    std::size_t d = lower(c) == lower(op) ? 0 : edit_distance(op, c);
    const std::size_t allowed = c.size() >= 6 ? 2 : 1;
    // Ties go to the longer shared prefix: 'sinn' is 'sin' doubled, not 'sign' mistyped.
    if (d <= allowed && (d < best_d || (d == best_d && common_prefix(c) > common_prefix(best)))) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

bool is_sugar(const std::string& op) {
  return op == "grad" || op == "div" || op == "laplacian" || op == "integral" || op == "curl";
}

/// Every `op` named by a `match` pattern anywhere in the document: such an op is a rewrite
/// target some rule may lower, never a misspelling.
void collect_match_ops(const json& j, std::set<std::string>& out, bool in_match, int depth) {
  if (depth > kMaxDepth) return;
  if (j.is_object()) {
    if (in_match)
      if (std::string op = get_str(j, "op"); !op.empty()) out.insert(op);
    for (const auto& [k, v] : j.items())
      collect_match_ops(v, out, in_match || k == "match", depth + 1);
  } else if (j.is_array()) {
    for (const auto& v : j) collect_match_ops(v, out, in_match, depth + 1);
  }
}

bool is_admissible_manifold(const std::string& m) {
  return m == "planar" || m == "spherical" || m == "geodesic";
}

bool is_geometry_op(const std::string& op) {
  return op == "intersect_polygon" || op == "polygon_intersection_area";
}

class OperatorChecker {
 public:
  explicit OperatorChecker(Context& ctx) : ctx_(ctx) {
    collect_match_ops(ctx.doc, rule_ops_, false, 0);
    // Inline tests may inject template imports at run time (§9.7.10): their rules are unknown
    // here, so no operator can be called a misspelling.
    suggest_ = !contains_field(ctx.doc, "expression_template_imports", 0);
  }

  void walk(const json& j, const std::string& p, bool in_template, int depth) {
    if (depth > kMaxDepth) return;
    if (j.is_array()) {
      for (std::size_t i = 0; i < j.size(); ++i)
        walk(j[i], pointer_join(p, i), in_template, depth + 1);
      return;
    }
    if (!j.is_object()) return;
    if (j.contains("op") && j["op"].is_string()) node(j, p, in_template);
    // A component's apply sites resolve against its own registry (§9.6.3 constraint 4).
    const json* saved_scope = scope_templates_;
    if (const json* reg = get_field(j, "expression_templates");
        reg && reg->is_object() && !j.contains("op"))
      scope_templates_ = reg;
    for (const auto& [k, v] : j.items()) {
      if (k == "match") continue;  // patterns name rewrite targets and bind wildcards
      if (k == "expression_templates" && v.is_object()) {
        templates(v, pointer_join(p, k), depth);
        continue;
      }
      walk(v, pointer_join(p, k), in_template, depth + 1);
    }
    scope_templates_ = saved_scope;
  }

  void templates(const json& reg, const std::string& p, int depth) {
    const json* saved_scope = scope_templates_;
    scope_templates_ = &reg;
    for (const auto& [name, def] : reg.items()) {
      if (!def.is_object()) continue;
      params_.clear();
      if (const json* ps = get_field(def, "params"); ps && ps->is_array())
        for (const auto& q : *ps)
          if (q.is_string()) params_.insert(q.get<std::string>());
      if (const json* body = get_field(def, "body"))
        walk(*body, pointer_join(pointer_join(p, name), "body"), true, depth + 1);
    }
    params_.clear();
    scope_templates_ = saved_scope;
  }

 private:
  Context& ctx_;
  std::set<std::string> rule_ops_;
  bool suggest_ = true;
  const json* scope_templates_ = nullptr;  // the enclosing component's templates
  std::set<std::string> params_;           // the enclosing template's params

  static bool contains_field(const json& j, const char* key, int depth) {
    if (depth > kMaxDepth) return false;
    if (j.is_object()) {
      if (j.contains(key)) return true;
      for (const auto& [k, v] : j.items())
        if (contains_field(v, key, depth + 1)) return true;
    } else if (j.is_array()) {
      for (const auto& v : j)
        if (contains_field(v, key, depth + 1)) return true;
    }
    return false;
  }

  void node(const json& n, const std::string& p, bool in_template) {
    const std::string op = n["op"].get<std::string>();
    const json* args = get_field(n, "args");
    const std::size_t count = args && args->is_array() ? args->size() : 0;
    Arity a;
    if (core_arity(op, a) && (count < a.min || count > a.max) && !(op == "true" && !args)) {
      ctx_.report("operator_arity", p,
                  "The operator '" + op + "' takes " + arity_words(a) + " operand" +
                      (a.min == 1 && a.max == 1 ? "" : "s") + " but is given " +
                      std::to_string(count) + ".");
    }
    if (expr::op_from_name(op) == expr::Op::Other && !is_sugar(op) && suggest_ &&
        !rule_ops_.count(op)) {
      if (const std::string s = suggestion_for(op); !s.empty())
        ctx_.report("unknown_operator", pointer_join(p, "op"),
                    "'" + op +
                        "' is not an operator of the format and no rewrite rule lowers "
                        "it; did you mean '" +
                        s + "'?");
    }
    if (op == "makearray") regions(n, p);
    if (is_geometry_op(op)) manifold(n, p, in_template);
    if (op == "apply_expression_template") manifold_bindings(n, p);
  }

  /// A region bound folded to an integer, or nullopt while it holds a name (an open
  /// metaparameter) or is not a metaparameter expression at all (the schema reports that).
  static std::optional<std::int64_t> folded_bound(const json& bound) {
    if (bound.is_number_integer()) return bound.get<std::int64_t>();
    if (!bound.is_object()) return std::nullopt;
    try {
      return detail::fold_metaparameter(bound, {}, "", "");
    } catch (const Error&) {
      return std::nullopt;
    }
  }

  void regions(const json& n, const std::string& p) {
    const json* rs = get_field(n, "regions");
    if (!rs || !rs->is_array()) return;
    for (std::size_t r = 0; r < rs->size(); ++r) {
      const json& region = (*rs)[r];
      if (!region.is_array()) continue;
      for (std::size_t d = 0; d < region.size(); ++d) {
        const json& pair = region[d];
        if (!pair.is_array() || pair.size() != 2) continue;
        // Bounds arrive folded, or as metaparameter arithmetic over values the loader already
        // substituted ([2, N-1] at N = 1 is [2, {"-": [1, 1]}]): folded here. Open names fold
        // at a binding site (§4.3.2) and are checked there.
        const std::optional<std::int64_t> start = folded_bound(pair[0]), stop = folded_bound(pair[1]);
        if (!start || !stop) continue;
        if (*stop < *start - 1)
          ctx_.report("makearray_region_inverted",
                      pointer_join(pointer_join(pointer_join(p, "regions"), r), d),
                      "Region " + std::to_string(r) + " of this makearray has the bound pair [" +
                          std::to_string(*start) + ", " + std::to_string(*stop) +
                          "] along dimension " + std::to_string(d) +
                          ", which runs backwards; only [start, start-1] spells an empty region.");
      }
    }
  }

  void manifold(const json& n, const std::string& p, bool in_template) {
    const json* m = get_field(n, "manifold");
    if (m && m->is_string()) {
      const std::string v = m->get<std::string>();
      if (is_admissible_manifold(v)) return;
      if (in_template && params_.count(v)) return;  // a substitution site, checked per call
      ctx_.report("geometry_manifold_invalid", pointer_join(p, "manifold"),
                  "The manifold '" + v + "' of this " + get_str(n, "op") +
                      " node is not one of 'planar', 'spherical', 'geodesic'.");
    } else if (!in_template) {
      ctx_.report("geometry_manifold_invalid", p,
                  "This " + get_str(n, "op") +
                      " node declares no manifold; it must say "
                      "'planar', 'spherical' or 'geodesic'.");
    }
  }

  /// §9.6.9: a template parameter in `manifold` position takes its value from each call site.
  void manifold_bindings(const json& n, const std::string& p) {
    if (!scope_templates_) return;
    const json* def = get_field(*scope_templates_, get_str(n, "name").c_str());
    const json* body = def ? get_field(*def, "body") : nullptr;
    const json* bindings = get_field(n, "bindings");
    if (!body || !bindings || !bindings->is_object()) return;
    std::set<std::string> manifold_params;
    visit_nodes(*body, [&](const json& b) {
      if (is_geometry_op(get_str(b, "op")))
        if (std::string m = get_str(b, "manifold"); !m.empty()) manifold_params.insert(m);
      return true;
    });
    for (const auto& param : manifold_params) {
      const json* v = get_field(*bindings, param.c_str());
      if (!v || !v->is_string() || is_admissible_manifold(v->get<std::string>())) continue;
      if (params_.count(v->get<std::string>())) continue;  // passed through an outer template
      ctx_.report("geometry_manifold_invalid", pointer_join(pointer_join(p, "bindings"), param),
                  "Template '" + get_str(n, "name") + "' uses '" + param +
                      "' as a geometry manifold, and this call binds it to '" +
                      v->get<std::string>() +
                      "', which is not one of 'planar', 'spherical', "
                      "'geodesic'.");
    }
  }
};

}  // namespace

void check_operators(Context& ctx) {
  OperatorChecker checker(ctx);
  for (const char* section : {"models", "reaction_systems", "coupling"})
    if (const json* s = get_field(ctx.doc, section))
      checker.walk(*s, pointer_join("", section), false, 0);
  // A template-library document's own registry (§9.7.1).
  if (const json* reg = get_field(ctx.doc, "expression_templates"); reg && reg->is_object())
    checker.templates(*reg, "/expression_templates", 0);
}

}  // namespace esi::esm::structural_detail
