// From authored JSON to system expressions: template expansion (spec §9.6.2, expanded at
// build, §9.6.4 rule 2), namespacing (§10.7), closed-function checks (§9.2), enum and
// function-table lowering (§9.3, §9.5).
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/expr/parse.hpp"
#include "esm/flatten/flatten_internal.hpp"

namespace esi::esm::detail {
namespace {

using expr::NodeId;
using expr::Op;
using expr::Pool;

constexpr int kMaxTemplateDepth = 32;
// Template expansion stops with a located error once the expression pool holds this many
// nodes: a body that doubles per nesting level would otherwise exhaust memory (validate
// reports the same documents as template_expansion_too_large, structural_templates.cpp).
constexpr std::size_t kMaxPoolNodes = std::size_t{1} << 20;

const std::set<std::string>& closed_functions() {
  static const std::set<std::string> names{
      "datetime.year",   "datetime.month",       "datetime.day",
      "datetime.hour",   "datetime.minute",      "datetime.second",
      "datetime.day_of_year", "datetime.julian_day", "datetime.is_leap_year",
      "interp.searchsorted",  "interp.linear",    "interp.bilinear"};
  return names;
}

bool is_array_op(Op op) {
  switch (op) {
    case Op::Index: case Op::MakeArray: case Op::Aggregate: case Op::Broadcast:
    case Op::Reshape: case Op::Transpose: case Op::Concat: case Op::Skolem: case Op::Rank:
    case Op::Argmin: case Op::Argmax: case Op::IntersectPolygon:
    case Op::PolygonIntersectionArea:
      return true;
    default:
      return false;
  }
}

struct Context {
  FlattenState& st;
  Component* comp;  // nullptr = the coupled (global) scope
  std::string file;
  std::string pointer;
  Pool& pool;
  std::unordered_map<NodeId, NodeId> expand_memo;
  std::unordered_map<NodeId, NodeId> scope_memo;
  std::vector<std::string> expanding;  // template names being expanded (cycle check)
  /// Index symbols bound by the enclosing `aggregate` nodes, innermost last, each with its own
  /// memo (the same subtree means other things under other bindings).
  struct IndexScope {
    std::set<std::string> symbols;
    std::unordered_map<NodeId, NodeId> memo;
  };
  std::vector<IndexScope> index_scopes;

  [[noreturn]] void fail(const std::string& code, const std::string& message) const {
    throw Error(code, file, pointer, message);
  }

  // ---- templates ----

  /// The template `name` visible in this component: its own registry first, then its
  /// enclosing components' (real documents declare shared templates on the parent model).
  const json* template_def(const std::string& name) const {
    if (!comp) return nullptr;
    std::string path = comp->path;
    while (true) {
      auto c = st.component_index.find(path);
      if (c != st.component_index.end()) {
        const json& node = *st.components[c->second].node;
        if (auto it = node.find("expression_templates"); it != node.end() && it->is_object())
          if (auto t = it->find(name); t != it->end()) return &*t;
      }
      const auto dot = path.rfind('.');
      if (dot == std::string::npos) return nullptr;
      path.resize(dot);
    }
  }

  NodeId expand(NodeId id) {
    if (auto m = expand_memo.find(id); m != expand_memo.end()) return m->second;
    const expr::Node n = pool.node(id);
    NodeId result = id;
    if (n.op == Op::ApplyTemplate) {
      result = apply_template(id);
    } else if (n.child_count > 0) {
      std::vector<NodeId> kids(pool.children(id).begin(), pool.children(id).end());
      bool changed = false;
      for (auto& k : kids) {
        const NodeId e = expand(k);
        changed |= e != k;
        k = e;
      }
      if (changed) result = pool.make(n.op, kids, n.arg_count, n.name, n.attrs);
    }
    expand_memo[id] = result;
    return result;
  }

  NodeId apply_template(NodeId id) {
    const expr::Node n = pool.node(id);
    const std::string name(pool.str(n.name));
    const json* def = template_def(name);
    if (!def)
      fail("apply_expression_template_unknown_template",
           "template '" + name + "' is not declared in or imported into component '" +
               (comp ? comp->path : std::string("<coupling>")) + "'");
    if (def->contains("match"))
      fail("apply_expression_template_unknown_template",
           "template '" + name + "' is a match rule; only match-less templates can be applied by name");
    for (const auto& e : expanding)
      if (e == name)
        fail("apply_expression_template_recursive_body",
             "template '" + name + "' refers to itself through its body");
    if (expanding.size() >= kMaxTemplateDepth)
      fail("template_body_expansion_too_deep",
           "template expansion nests deeper than " + std::to_string(kMaxTemplateDepth));
    const json attrs = expr::attrs_json(pool, id);
    const json bindings = attrs.value("bindings", json::object());
    std::set<std::string> params;
    for (const auto& p : def->value("params", json::array()))
      if (p.is_string()) params.insert(p.get<std::string>());
    std::set<std::string> bound;
    for (auto it = bindings.begin(); it != bindings.end(); ++it) bound.insert(it.key());
    if (bound != params) {
      std::string missing, extra;
      for (const auto& p : params)
        if (!bound.count(p)) missing += " " + p;
      for (const auto& b : bound)
        if (!params.count(b)) extra += " " + b;
      fail("apply_expression_template_bindings_mismatch",
           "bindings of template '" + name + "' do not match its params" +
               (missing.empty() ? "" : " (missing:" + missing + ")") +
               (extra.empty() ? "" : " (unexpected:" + extra + ")"));
    }
    // A copy: expanding a binding interns nodes, which may move the pool's child storage.
    const std::vector<NodeId> children(pool.children(id).begin(), pool.children(id).end());
    std::unordered_map<expr::StrId, NodeId> subst;
    for (auto it = bindings.begin(); it != bindings.end(); ++it) {
      const auto slot = it.value().at("$child").get<std::size_t>();
      subst[pool.intern(it.key())] = expand(children[slot]);
    }
    if (!def->contains("body")) fail("apply_expression_template_invalid_declaration",
                                     "template '" + name + "' has no body");
    // Nested references in the body expand once per template and component (they see this
    // template's params only through their own bindings); the params are substituted after.
    NodeId expanded_body;
    if (auto cached = comp->template_bodies.find(name); cached != comp->template_bodies.end()) {
      expanded_body = cached->second;
    } else {
      const NodeId body = expr::parse(pool, (*def)["body"], file, pointer);
      expanding.push_back(name);
      expanded_body = expand(body);
      expanding.pop_back();
      comp->template_bodies.emplace(name, expanded_body);
    }
    std::unordered_map<NodeId, NodeId> memo;
    return substitute_params(expanded_body, subst, memo);
  }

  NodeId substitute_params(NodeId id, const std::unordered_map<expr::StrId, NodeId>& subst,
                           std::unordered_map<NodeId, NodeId>& memo) {
    if (auto m = memo.find(id); m != memo.end()) return m->second;
    const expr::Node n = pool.node(id);
    NodeId result = id;
    if (n.op == Op::Symbol) {
      if (auto s = subst.find(n.name); s != subst.end()) result = s->second;
    } else if (n.child_count > 0 || (n.op == Op::D && n.name)) {
      std::vector<NodeId> kids(pool.children(id).begin(), pool.children(id).end());
      for (auto& k : kids) k = substitute_params(k, subst, memo);
      expr::StrId name = n.name;
      // Scalar-field substitution site (§9.6.1): a param naming the D axis.
      if (n.op == Op::D && name)
        if (auto s = subst.find(name); s != subst.end() && pool.node(s->second).op == Op::Symbol)
          name = pool.node(s->second).name;
      result = pool.make(n.op, kids, n.arg_count, name, n.attrs);
      if (pool.size() > kMaxPoolNodes)
        fail("template_expansion_too_large",
             "expanding the expression templates applied here produces more than " +
                 std::to_string(kMaxPoolNodes) + " expression nodes");
    }
    memo[id] = result;
    return result;
  }

  // ---- match rules (§9.6.3): outermost-first, priority-ordered, bounded fixpoint ----

  struct Rule {
    std::string name;
    const json* def;
    long priority;
  };
  std::vector<Rule> rules;
  bool rules_collected = false;

  void collect_rules() {
    rules_collected = true;
    if (!comp) return;
    const json& node = *comp->node;
    auto it = node.find("expression_templates");
    if (it == node.end() || !it->is_object()) return;
    std::vector<std::string> order;
    if (auto o = node.find("$template_order"); o != node.end() && o->is_array())
      for (const auto& n : *o) order.push_back(n.get<std::string>());
    else
      for (auto t = it->begin(); t != it->end(); ++t) order.push_back(t.key());
    for (const auto& n : order) {
      const json& def = (*it)[n];
      if (def.is_object() && def.contains("match"))
        rules.push_back({n, &def, def.value("priority", 0L)});
    }
    // Highest priority first; ties keep declaration order (stable sort).
    std::stable_sort(rules.begin(), rules.end(),
                     [](const Rule& a, const Rule& b) { return a.priority > b.priority; });
  }

  bool match(const json& pat, NodeId id, const std::set<std::string>& params,
             std::unordered_map<expr::StrId, NodeId>& bound) {
    const expr::Node& n = pool.node(id);
    if (pat.is_string()) {
      const std::string& p = pat.get_ref<const std::string&>();
      if (params.count(p)) {
        auto [it, inserted] = bound.emplace(pool.intern(p), id);
        return inserted || it->second == id;
      }
      return n.op == Op::Symbol && pool.str(n.name) == p;
    }
    if (pat.is_number()) return n.op == Op::Number && n.number == pat.get<double>();
    if (!pat.is_object() || !pat.contains("op")) return false;
    const std::string op = pat["op"].get<std::string>();
    const Op pop = expr::op_from_name(op);
    if (pop != n.op || (pop == Op::Other && pool.str(n.name) != op)) return false;
    const json pargs = pat.value("args", json::array());
    const auto args = pool.args(id);
    if (pargs.size() != args.size()) return false;
    for (std::size_t i = 0; i < args.size(); ++i)
      if (!match(pargs[i], args[i], params, bound)) return false;
    if (auto w = pat.find("wrt"); w != pat.end() && w->is_string()) {
      const std::string wrt = n.name ? std::string(pool.str(n.name)) : "t";
      const std::string& p = w->get_ref<const std::string&>();
      if (params.count(p)) {
        const NodeId sym = pool.symbol(wrt);
        auto [it, inserted] = bound.emplace(pool.intern(p), sym);
        if (!inserted && it->second != sym) return false;
      } else if (p != wrt) {
        return false;
      }
    }
    return true;
  }

  bool where_holds(const json& def, const std::unordered_map<expr::StrId, NodeId>& bound) {
    auto w = def.find("where");
    if (w == def.end() || !w->is_object()) return true;
    for (auto c = w->begin(); c != w->end(); ++c) {
      auto b = bound.find(pool.intern(c.key()));
      if (b == bound.end() || pool.node(b->second).op != Op::Symbol) return false;
      const std::string var(pool.str(pool.node(b->second).name));
      const json vars = comp->node->value("variables", json::object());
      if (!vars.contains(var) || !vars[var].contains("shape")) return false;
      if (vars[var]["shape"] != c->value("shape", json())) return false;
    }
    return true;
  }

  NodeId rewrite_pass(NodeId id, std::unordered_map<NodeId, NodeId>& memo, bool& changed) {
    if (auto m = memo.find(id); m != memo.end()) return m->second;
    NodeId result = id;
    bool rewritten = false;
    for (const Rule& r : rules) {
      std::set<std::string> params;
      for (const auto& p : r.def->value("params", json::array())) params.insert(p.get<std::string>());
      std::unordered_map<expr::StrId, NodeId> bound;
      if (!match((*r.def)["match"], id, params, bound) || !where_holds(*r.def, bound)) continue;
      NodeId body;
      if (auto cached = comp->template_bodies.find(r.name); cached != comp->template_bodies.end()) {
        body = cached->second;
      } else {
        body = expand(expr::parse(pool, (*r.def)["body"], file, pointer));
        comp->template_bodies.emplace(r.name, body);
      }
      std::unordered_map<NodeId, NodeId> smemo;
      result = expand(substitute_params(body, bound, smemo));
      rewritten = changed = true;
      break;
    }
    if (!rewritten && pool.node(id).child_count > 0) {
      const expr::Node n = pool.node(id);
      std::vector<NodeId> kids(pool.children(id).begin(), pool.children(id).end());
      bool any = false;
      for (auto& k : kids) {
        const NodeId s = rewrite_pass(k, memo, changed);
        any |= s != k;
        k = s;
      }
      if (any) result = pool.make(n.op, kids, n.arg_count, n.name, n.attrs);
    }
    memo[id] = result;
    return result;
  }

  NodeId apply_rules(NodeId id) {
    if (!rules_collected) collect_rules();
    if (rules.empty()) return id;
    for (int pass = 0; pass < 64; ++pass) {
      std::unordered_map<NodeId, NodeId> memo;
      bool changed = false;
      id = rewrite_pass(id, memo, changed);
      if (!changed) return id;
    }
    fail("rewrite_rule_nonterminating", "rewrite rules did not reach a fixpoint within 64 passes");
  }

  // ---- names ----

  std::string resolve(const std::string& s) {
    if (comp && comp->locals.count(s)) return comp->path + "." + s;
    if (s == "t") return "t";
    if (s == "_var" && comp) return "_var";  // operator placeholder (spec §6.4)
    const auto dot = s.find('.');
    if (dot == std::string::npos) {
      fail("undefined_variable",
           "'" + s + "' is not a variable, parameter or species of " +
               (comp ? "component '" + comp->path + "'" : std::string("the coupled system")) +
               (comp ? "" : " (coupling expressions need scoped names such as System.var)"));
    }
    std::string flat = s;
    const std::string head = s.substr(0, dot);
    if (comp && comp->subsystems.count(head)) flat = comp->path + "." + s;
    const auto last = flat.rfind('.');
    const std::string owner = flat.substr(0, last), var = flat.substr(last + 1);
    auto c = st.component_index.find(owner);
    if (c == st.component_index.end() || !st.components[c->second].locals.count(var))
      fail("unresolved_scoped_ref",
           "scoped reference '" + s + "' does not name a variable of a component in this "
           "system" + (c == st.component_index.end() ? " (no component '" + owner + "')" : ""));
    return flat;
  }

  // ---- lowering and checks ----

  NodeId lower_enum(NodeId id) {
    const auto args = pool.args(id);
    if (args.size() != 2 || pool.node(args[0]).op != Op::Symbol || pool.node(args[1]).op != Op::Symbol)
      fail("invalid_enum", "'enum' takes two names: the enum and the symbol");
    const std::string en(pool.str(pool.node(args[0]).name)), sym(pool.str(pool.node(args[1]).name));
    const json& enums = st.doc.doc.value("enums", json::object());
    if (!enums.contains(en)) fail("undefined_enum", "enum '" + en + "' is not declared in 'enums'");
    const json& e = enums[en];
    const json* v = nullptr;
    if (e.is_object() && e.contains(sym)) v = &e[sym];
    else if (e.is_object() && e.contains("symbols") && e["symbols"].contains(sym)) v = &e["symbols"][sym];
    if (!v || !v->is_number_integer())
      fail("undefined_enum_symbol", "enum '" + en + "' has no symbol '" + sym + "'");
    return pool.number(v->get<double>(), true);
  }

  NodeId const_array(const json& values) {
    json node = {{"op", "const"}, {"args", json::array()}, {"value", values}};
    return expr::parse(pool, node, file, pointer);
  }

  NodeId lower_table_lookup(NodeId id) {
    const json attrs = expr::attrs_json(pool, id);
    const std::string table = attrs.value("table", std::string());
    const json& tables = st.doc.doc.value("function_tables", json::object());
    if (!tables.contains(table))
      fail("undefined_function_table", "function table '" + table + "' is not declared");
    const json& t = tables[table];
    const json axes = t.value("axes", json::array());
    json data = t.value("data", json::array());
    if (attrs.contains("output")) {
      const json& out = attrs["output"];
      std::size_t k = 0;
      if (out.is_number_integer()) k = out.get<std::size_t>();
      else if (t.contains("outputs") && out.is_string()) {
        const auto& names = t["outputs"];
        auto pos = std::find(names.begin(), names.end(), out);
        if (pos == names.end()) fail("undefined_function_table", "table '" + table + "' has no output " + out.dump());
        k = static_cast<std::size_t>(pos - names.begin());
      }
      if (!data.is_array() || k >= data.size())
        fail("undefined_function_table", "table '" + table + "' has no output " + out.dump());
      data = data[k];
    }
    const auto children = pool.children(id);
    std::vector<NodeId> fn_args{const_array(data)};
    std::vector<NodeId> queries;
    for (const auto& ax : axes) {
      fn_args.push_back(const_array(ax.value("values", json::array())));
      const std::string an = ax.value("name", std::string());
      if (!attrs.contains("axes") || !attrs["axes"].contains(an))
        fail("function_table_axis_unbound", "table_lookup of '" + table + "' gives no input for axis '" + an + "'");
      queries.push_back(children[attrs["axes"][an]["$child"].get<std::size_t>()]);
    }
    for (NodeId q : queries) fn_args.push_back(q);
    const char* fn = axes.size() == 1 ? "interp.linear" : axes.size() == 2 ? "interp.bilinear" : nullptr;
    if (!fn) fail("unsupported_function_table", "function tables with " + std::to_string(axes.size()) +
                                                    " axes are not supported (1 or 2)");
    return pool.make(Op::Fn, fn_args, static_cast<std::uint16_t>(fn_args.size()), pool.intern(fn), 0);
  }

  const json const_value(NodeId id, const char* what, const std::string& fn_name) {
    if (pool.node(id).op != Op::Const)
      fail(std::string("interp_") + what + "_not_const",
           fn_name + ": the " + what + " must be a literal 'const' array");
    return expr::attrs_json(pool, id).value("value", json());
  }

  void check_axis(const json& axis, const std::string& fn_name) {
    if (!axis.is_array()) fail("interp_axis_not_const", fn_name + ": the axis must be an array of numbers");
    if (axis.size() < 2) fail("interp_axis_too_short", fn_name + ": an axis needs at least 2 entries");
    double prev = 0;
    for (std::size_t i = 0; i < axis.size(); ++i) {
      if (!axis[i].is_number()) fail("interp_nan_in_axis", fn_name + ": axis entries must be finite numbers");
      const double x = axis[i].get<double>();
      if (std::isnan(x)) fail("interp_nan_in_axis", fn_name + ": the axis contains NaN");
      if (i > 0 && !(x > prev))
        fail("interp_non_monotonic_axis", fn_name + ": the axis is not strictly increasing at entry " +
                                              std::to_string(i + 1));
      prev = x;
    }
  }

  void check_fn(NodeId id) {
    const std::string name(pool.str(pool.node(id).name));
    if (!closed_functions().count(name))
      fail("unknown_closed_function", "'" + name + "' is not a function of the closed registry (spec §9.2)");
    const auto args = pool.args(id);
    auto arity = [&](std::size_t n) {
      if (args.size() != n)
        fail("closed_function_arity", name + " takes " + std::to_string(n) + " arguments, got " +
                                          std::to_string(args.size()));
    };
    if (name.rfind("datetime.", 0) == 0) return arity(1);
    if (name == "interp.searchsorted") {
      arity(2);
      const json xs = const_value(args[1], "axis", name);
      if (!xs.is_array() || xs.empty()) fail("interp_axis_not_const", name + ": xs must be a non-empty array");
      for (std::size_t i = 1; i < xs.size(); ++i)
        if (!xs[i].is_number() || xs[i].get<double>() < xs[i - 1].get<double>())
          fail("searchsorted_non_monotonic", name + ": xs must be non-decreasing");
      return;
    }
    if (name == "interp.linear") {
      arity(3);
      const json table = const_value(args[0], "table", name);
      const json axis = const_value(args[1], "axis", name);
      check_axis(axis, name);
      if (!table.is_array() || table.size() != axis.size())
        fail("interp_axis_length_mismatch", name + ": table and axis lengths differ");
      return;
    }
    arity(5);  // interp.bilinear
    const json table = const_value(args[0], "table", name);
    const json ax = const_value(args[1], "axis", name);
    const json ay = const_value(args[2], "axis", name);
    check_axis(ax, name);
    check_axis(ay, name);
    if (!table.is_array() || table.size() != ax.size())
      fail("interp_axis_length_mismatch", name + ": table rows differ from axis_x length");
    for (const auto& row : table)
      if (!row.is_array() || row.size() != ay.size())
        fail("interp_axis_length_mismatch", name + ": a table row differs from axis_y length");
  }

  /// The symbols an `aggregate` binds (spec §4.3.1): its output indices, its `ranges` keys, and
  /// contracted indices used in index positions of `index` nodes of its body without a declared
  /// range (inferred from the operand's shape) that name no variable of the component.
  std::set<std::string> bound_index_symbols(NodeId id) {
    std::set<std::string> out;
    const json attrs = expr::attrs_json(pool, id);
    if (auto o = attrs.find("output_idx"); o != attrs.end() && o->is_array())
      for (const auto& e : *o)
        if (e.is_string()) out.insert(e.get<std::string>());
    if (auto r = attrs.find("ranges"); r != attrs.end() && r->is_object())
      for (auto it = r->begin(); it != r->end(); ++it) out.insert(it.key());
    for (std::size_t i = pool.node(id).arg_count; i < pool.children(id).size(); ++i)
      for (const auto& sym : free_index_symbols(pool.children(id)[i])) out.insert(sym);
    return out;
  }

  /// Names in index positions of `index` nodes of `root` (outside nested aggregates) that name
  /// no variable of the component.
  std::set<std::string> free_index_symbols(NodeId root) {
    std::set<std::string> out;
    std::vector<std::pair<NodeId, bool>> stack{{root, false}};
    std::set<std::pair<NodeId, bool>> seen;
    while (!stack.empty()) {
      const auto [k, in_index] = stack.back();
      stack.pop_back();
      if (!seen.insert({k, in_index}).second) continue;
      const expr::Node& kn = pool.node(k);
      if (kn.op == Op::Symbol) {
        const std::string s(pool.str(kn.name));
        if (in_index && s.find('.') == std::string::npos && s != "t" && !(comp && comp->locals.count(s)))
          out.insert(s);
        continue;
      }
      if (kn.op == Op::Aggregate) continue;
      const auto kids = pool.children(k);
      for (std::size_t i = 0; i < kids.size(); ++i)
        stack.push_back({kids[i], in_index || (kn.op == Op::Index && i > 0)});
    }
    return out;
  }

  /// An aggregate's `join` key columns (spec §4.3.1, RFC semiring-faq §5.3) named the way the
  /// expander reads them: "$i" for an index symbol in scope, "#set" for an index-set name (the
  /// one index of the aggregate drawing from it), the flat name of a variable otherwise.
  expr::StrId scope_join_keys(NodeId id, expr::StrId attrs_id) {
    json attrs = expr::attrs_json(pool, id);
    auto join = attrs.find("join");
    if (join == attrs.end()) return attrs_id;
    const json* sets = nullptr;
    if (auto it = st.doc.doc.find("index_sets"); it != st.doc.doc.end() && it->is_object()) sets = &*it;
    if (!join->is_array()) fail("invalid_join", "'join' must be an array of {\"on\": [[left, right], ...]} clauses");
    for (auto& clause : *join) {
      if (!clause.is_object() || !clause.contains("on") || !clause["on"].is_array() || clause["on"].empty())
        fail("unsupported_array_feature",
             "a join clause other than {\"on\": [[left, right], ...]} (an 'overlap' join) is "
             "not supported yet when arrays become cells");
      for (auto& pair : clause["on"]) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
          fail("invalid_join", "a join key pair must be two names [left, right], not " + pair.dump());
        for (auto& key : pair) {
          const std::string name = key.get<std::string>();
          if (is_index_symbol(name)) key = "$" + name;
          else if (sets && sets->contains(name)) key = "#" + name;
          else key = resolve(name);
        }
      }
    }
    return pool.intern(canonical_json(attrs));
  }

  bool is_index_symbol(const std::string& s) const {
    for (const auto& sc : index_scopes)
      if (sc.symbols.count(s)) return true;
    return false;
  }

  NodeId scope(NodeId id) {
    {
      // (looked up again below: entering an aggregate grows index_scopes)
      auto& memo = index_scopes.empty() ? scope_memo : index_scopes.back().memo;
      if (auto m = memo.find(id); m != memo.end()) return m->second;
    }
    const expr::Node n = pool.node(id);
    NodeId result = id;
    switch (n.op) {
      case Op::Number:
        break;
      case Op::Symbol: {
        // Index symbols get a '$' prefix, which no variable name can carry.
        const std::string s(pool.str(n.name));
        result = is_index_symbol(s) ? pool.symbol("$" + s) : pool.symbol(resolve(s));
        break;
      }
      case Op::MakeArray: {
        // A region value may use index symbols no aggregate binds (`index(f, i + 1, j)`): they
        // run along the array's axes in the positions they index (expand_arrays binds them).
        std::vector<NodeId> kids(pool.children(id).begin(), pool.children(id).end());
        for (auto& k : kids) {
          index_scopes.push_back({free_index_symbols(k), {}});
          k = scope(k);
          index_scopes.pop_back();
        }
        result = pool.make(n.op, kids, n.arg_count, n.name, n.attrs);
        break;
      }
      case Op::Aggregate: case Op::Argmin: case Op::Argmax: {
        index_scopes.push_back({bound_index_symbols(id), {}});
        std::vector<NodeId> kids(pool.children(id).begin(), pool.children(id).end());
        for (std::size_t i = 0; i < kids.size(); ++i) {
          // The `args` list the factors; one naming an index set (the domain iterated) is
          // not a variable and is kept as "#set".
          if (i < n.arg_count && pool.node(kids[i]).op == Op::Symbol) {
            const std::string s(pool.str(pool.node(kids[i]).name));
            const json* sets = nullptr;
            if (auto it = st.doc.doc.find("index_sets"); it != st.doc.doc.end() && it->is_object()) sets = &*it;
            if (sets && sets->contains(s) && !is_index_symbol(s) && !(comp && comp->locals.count(s))) {
              kids[i] = pool.symbol("#" + s);
              continue;
            }
          }
          kids[i] = scope(kids[i]);
        }
        const expr::StrId attrs = scope_join_keys(id, n.attrs);
        index_scopes.pop_back();
        result = pool.make(n.op, kids, n.arg_count, n.name, attrs);
        break;
      }
      case Op::Enum:
        result = lower_enum(id);
        break;
      case Op::TableLookup:
        result = scope(lower_table_lookup(id));
        break;
      case Op::Const: {
        const json v = expr::attrs_json(pool, id).value("value", json());
        if (v.is_number()) {
          result = pool.number(v.get<double>(), v.is_number_integer());
          break;
        }
        break;  // a literal array: gathered from by `index` when arrays become cells
      }
      case Op::Rank: {
        // rank(S): the dense id of the member of index set S the enclosing aggregate's index
        // over S is at (spec §4.2, RFC §5.7). Its operand names an index set, not a variable.
        const json* sets = nullptr;
        if (auto it = st.doc.doc.find("index_sets"); it != st.doc.doc.end() && it->is_object()) sets = &*it;
        const auto args = pool.args(id);
        const std::string set = args.size() == 1 && pool.node(args[0]).op == Op::Symbol
                                    ? std::string(pool.str(pool.node(args[0]).name))
                                    : std::string();
        if (set.empty() || !sets || !sets->contains(set))
          fail("unsupported_array_feature",
               "'rank' is supported only as rank(S) of a declared index set S (the dense id of "
               "the member an index over S is at)");
        result = pool.make(n.op, std::vector<NodeId>{pool.symbol("#" + set)}, 1, n.name, n.attrs);
        break;
      }
      case Op::ApplyTemplate:
        fail("apply_expression_template_unknown_template", "template reference left unexpanded");
      case Op::Other: {
        const std::string op(pool.str(n.name));
        fail("unlowered_operator",
             "operator '" + op + "'" + operand_hint(id) +
                 " has no evaluator and no rewrite rule lowered it" +
                 (op == "grad" || op == "div" || op == "laplacian" || op == "integral" || op == "curl"
                      ? std::string("; import a discretization rule for it (spec §9.6.8)")
                      : std::string()));
      }
      default: {
        if (is_array_op(n.op) && n.op != Op::Index && n.op != Op::MakeArray && n.op != Op::Broadcast &&
            n.op != Op::PolygonIntersectionArea && n.op != Op::Skolem && n.op != Op::IntersectPolygon &&
            n.op != Op::Reshape && n.op != Op::Transpose && n.op != Op::Concat)
          fail("unsupported_array_feature",
               "'" + std::string(expr::op_name(n.op)) + "' is not supported yet when arrays "
               "become cells");
        if (n.op == Op::D && n.name != 0 && pool.str(n.name) != "t")
          fail("unlowered_operator",
               "spatial derivative D(..., wrt=" + std::string(pool.str(n.name)) + ")" +
                   operand_hint(id) + " has no rewrite rule that lowers it; import a "
                   "discretization rule for it (spec §9.6.8)");
        if (n.op == Op::Fn) check_fn(id);
        std::vector<NodeId> kids(pool.children(id).begin(), pool.children(id).end());
        bool changed = false;
        for (auto& k : kids) {
          if (n.op == Op::Fn && pool.node(k).op == Op::Const) continue;  // tables stay literal
          const NodeId s = scope(k);
          changed |= s != k;
          k = s;
        }
        if (changed) result = pool.make(n.op, kids, n.arg_count, n.name, n.attrs);
      }
    }
    (index_scopes.empty() ? scope_memo : index_scopes.back().memo)[id] = result;
    return result;
  }

  /// " of 'x'" for an operator whose first operand mentions a variable (the one a modeller
  /// would look for), "" otherwise.
  std::string operand_hint(NodeId id) {
    const auto args = pool.args(id);
    if (args.empty()) return {};
    std::set<std::string> names;
    free_symbols(pool, args[0], names);
    for (const auto& nm : names)
      if (nm != "t" && !is_index_symbol(nm)) return " of '" + nm + "'";
    return {};
  }
};

}  // namespace

NodeId localize(FlattenState& st, std::size_t c, const json& e, const std::string& pointer,
                const std::set<std::string>& index_symbols) {
  Component& comp = st.components[c];
  Context ctx{st, &comp, comp.file, pointer, st.sys.pool, {}, {}, {}};
  if (!index_symbols.empty()) ctx.index_scopes.push_back({index_symbols, {}});
  const NodeId raw = expr::parse(st.sys.pool, e, comp.file, pointer);
  return ctx.scope(ctx.apply_rules(ctx.expand(raw)));
}

NodeId localize_global(FlattenState& st, const json& e, const std::string& file,
                       const std::string& pointer) {
  Context ctx{st, nullptr, file, pointer, st.sys.pool, {}, {}, {}};
  const NodeId raw = expr::parse(st.sys.pool, e, file, pointer);
  return ctx.scope(ctx.expand(raw));
}

}  // namespace esi::esm::detail
