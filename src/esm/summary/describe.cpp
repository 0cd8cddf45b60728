// A plain summary of a flattened system (`esi inspect`, human and --json): variables with their
// equations and units, reactions as people write them, each array once. Groups are sorted in
// natural name order so `j_2` comes before `j_10`; reactions keep document order (their
// authors number and order them).
#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <unordered_map>

#include "esi/core/text.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/expr/parse.hpp"

namespace esi::esm {
namespace {

using nlohmann::json;

const char* cadence_name(Cadence c) {
  switch (c) {
    case Cadence::Constant: return "constant";
    case Cadence::Sampled: return "sampled";
    case Cadence::Discrete: return "discrete";
    case Cadence::Brownian: return "brownian";
  }
  return "constant";
}

/// The infix printer parenthesizes every compound node, also a lone function argument
/// (`exp((-1500 / T))`) and a whole right-hand side. Drops the pairs that say nothing: one
/// that is the only content of another pair (function-call parentheses included), and the
/// outermost pair of the whole text.
std::string without_redundant_parens(const std::string& text) {
  std::vector<std::size_t> match(text.size(), std::string::npos), open;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') open.push_back(i);
    else if (text[i] == ')' && !open.empty()) {
      match[open.back()] = i;
      match[i] = open.back();
      open.pop_back();
    }
  }
  if (!open.empty()) return text;  // unbalanced (a name with a parenthesis): leave it alone
  std::vector<bool> drop(text.size(), false);
  for (std::size_t i = 0; i + 1 < text.size(); ++i)
    if (text[i] == '(' && text[i + 1] == '(' && match[i + 1] + 1 == match[i]) drop[i + 1] = drop[match[i + 1]] = true;
  if (!text.empty() && text.front() == '(' && match[0] == text.size() - 1) drop[0] = drop[text.size() - 1] = true;
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i)
    if (!drop[i]) out += text[i];
  return out;
}

std::string infix(const expr::Pool& pool, expr::NodeId id) { return without_redundant_parens(expr::to_infix(pool, id)); }

json variable(const System& s, const FlatVariable& v) {
  json j = {{"name", v.name}, {"units", v.units}};
  j["default"] = v.default_value ? json(*v.default_value) : json(nullptr);
  if (v.initial != expr::kNoNode) j["initial"] = infix(s.pool, v.initial);
  if (!v.shape.empty()) j["shape"] = v.shape;
  return j;
}

/// Whether an entry passes the --grep filter: its name or any of its printed texts match.
bool kept(const DescribeOptions& o, std::initializer_list<const std::string*> texts) {
  if (!o.keep) return true;
  for (const std::string* t : texts)
    if (t != nullptr && o.keep(*t)) return true;
  return false;
}

/// Entries of a group sorted by their "name" member in natural order.
json sorted_by_name(json list, const char* key = "name") {
  std::vector<json> v(list.begin(), list.end());
  std::stable_sort(v.begin(), v.end(), [key](const json& a, const json& b) {
    return natural_less(a[key].get<std::string>(), b[key].get<std::string>());
  });
  return json(v);
}

/// The rate law copied into `to` with the names of `component` made local ("SuperFast.k1" ->
/// "k1"), so a reaction reads as its author wrote it. Memoized: the DAG shares subtrees.
expr::NodeId localized(const expr::Pool& from, expr::NodeId id, const std::string& prefix, expr::Pool& to,
                       std::unordered_map<expr::NodeId, expr::NodeId>& memo) {
  if (auto it = memo.find(id); it != memo.end()) return it->second;
  const expr::Node& n = from.node(id);
  expr::NodeId out;
  if (n.op == expr::Op::Number) {
    out = to.number(n.number, n.integer_literal);
  } else if (n.op == expr::Op::Symbol) {
    std::string_view name = from.str(n.name);
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) name.remove_prefix(prefix.size());
    out = to.symbol(name);
  } else {
    std::vector<expr::NodeId> children;
    for (expr::NodeId c : from.children(id)) children.push_back(localized(from, c, prefix, to, memo));
    out = to.make(n.op, children, n.arg_count, to.intern(from.str(n.name)), to.intern(from.str(n.attrs)));
  }
  memo.emplace(id, out);
  return out;
}

std::string side_text(const std::vector<std::pair<std::string, double>>& side) {
  if (side.empty()) return "\u2205";
  std::string out;
  for (const auto& [species, coefficient] : side) {
    if (!out.empty()) out += " + ";
    if (coefficient != 1.0) out += number_text(coefficient) + " ";
    out += species;
  }
  return out;
}

std::string local_rate(const System& s, const FlatReaction& r) {
  if (r.rate == expr::kNoNode) return "?";
  expr::Pool local;
  std::unordered_map<expr::NodeId, expr::NodeId> memo;
  return infix(local, localized(s.pool, r.rate, r.component + ".", local, memo));
}

json stoichiometry(const std::vector<std::pair<std::string, double>>& side) {
  json out = json::array();
  for (const auto& [species, coefficient] : side) out.push_back({{"species", species}, {"stoichiometry", coefficient}});
  return out;
}

/// Array cells are summarized once per array (`arrays`), not listed: a gridded system has 10^5
/// of them, and their expressions printed as trees would dwarf the document.
json arrays(const System& s, const DescribeOptions& o) {
  std::map<std::string, std::size_t> states, observed, parameters;
  s.states.for_each_stored([&](std::size_t, const FlatVariable& v) {
    if (!v.array.empty()) ++states[v.array];
  });
  s.states.for_each_lazy_run([&](std::size_t, std::size_t count, const FlatVariable& cell) {
    states[cell.array] += count;
  });
  for (const auto& v : s.observed)
    if (!v.array.empty()) ++observed[v.array];
  for (const auto& v : s.parameters)
    if (!v.array.empty()) ++parameters[v.array];
  std::set<std::string> region_observed;  // per-region form: observed arrays have no cells
  for (const auto& g : s.grid)
    if (g.kind == System::GridEquation::Kind::Observed) region_observed.insert(g.targets.begin(), g.targets.end());
  json out = json::array();
  for (const auto& a : s.arrays) {
    std::int64_t cells = 1;
    for (auto e : a.extents) cells *= e;
    if (a.name.find('~') != std::string::npos) continue;  // a split-off operator term (`regions`)
    if (region_observed.count(a.name)) {
      if (!o.observed || !kept(o, {&a.name})) continue;
      out.push_back({{"name", a.name}, {"axes", a.axes}, {"extents", a.extents}, {"cells", cells},
                     {"kind", "observed"}, {"units", a.units}, {"cells_held", 0}, {"program", true}});
      continue;
    }
    const char* kind = states.count(a.name) ? "state" : observed.count(a.name) ? "observed"
                       : a.parameter ? "parameter" : "unknown";
    const std::string k = kind;
    const bool group = k == "state" ? o.states || o.equations : k == "observed" ? o.observed
                       : k == "parameter" ? o.parameters : o.states;
    if (!group || !kept(o, {&a.name})) continue;
    json j = {{"name", a.name}, {"axes", a.axes}, {"extents", a.extents}, {"cells", cells},
              {"kind", kind}, {"units", a.units}};
    if (a.parameter) j["cells_read"] = s.grid.empty() ? static_cast<std::int64_t>(parameters[a.name]) : cells;
    if (states.count(a.name)) j["cells_held"] = states[a.name];
    if (observed.count(a.name)) j["cells_held"] = observed[a.name];
    out.push_back(std::move(j));
  }
  return sorted_by_name(std::move(out));
}

/// The per-region form: per array equation, its boxes and how many distinct programs cover them.
json regions(const System& s) {
  json out = json::object();
  if (!s.grid_fallback.empty()) out["fallback"] = s.grid_fallback;
  json eqs = json::array();
  for (const auto& g : s.grid) {
    std::map<std::vector<expr::NodeId>, std::size_t> program_of;
    json boxes = json::array();
    for (const auto& r : g.regions) {
      const auto [it, fresh] = program_of.emplace(r.rhs, program_of.size());
      boxes.push_back({{"lo", r.lo}, {"hi", r.hi}, {"program", it->second}});
    }
    const char* kind = g.kind == System::GridEquation::Kind::Tendency  ? "tendency"
                       : g.kind == System::GridEquation::Kind::Initial ? "initial"
                                                                       : "observed";
    eqs.push_back({{"kind", kind}, {"targets", g.targets}, {"extents", g.extents}, {"boxes", std::move(boxes)},
                   {"programs", program_of.size()}, {"pointer", g.pointer}});
  }
  out["equations"] = std::move(eqs);
  return out;
}

}  // namespace

std::string reaction_text(const System& s, const FlatReaction& r) {
  return side_text(r.substrates) + " -> " + side_text(r.products) + " : " + local_rate(s, r);
}

json describe(const System& s, const DescribeOptions& o) {
  json out;
  out["components"] = s.components;
  if (o.states) {
    json states = json::array();
    s.states.for_each_stored([&](std::size_t i, const FlatVariable& state) {  // cells: see arrays
      if (!state.array.empty()) return;
      json v = variable(s, state);
      const std::string initial = v.value("initial", std::string());
      if (!kept(o, {&state.name, &initial})) return;
      v["rhs"] = infix(s.pool, s.state_rhs[i]);
      states.push_back(std::move(v));
    });
    json algebraic = json::array();
    for (const auto& v : s.algebraic)
      if (kept(o, {&v.name})) algebraic.push_back(variable(s, v));
    out["states"] = sorted_by_name(std::move(states));
    out["algebraic"] = sorted_by_name(std::move(algebraic));
  }
  if (o.observed) {
    json observed = json::array();
    for (std::size_t i = 0; i < s.observed.size(); ++i) {
      if (!s.observed[i].array.empty()) continue;
      json v = variable(s, s.observed[i]);
      const std::string rhs = infix(s.pool, s.observed_rhs[i]);
      if (!kept(o, {&s.observed[i].name, &rhs})) continue;
      v["rhs"] = rhs;
      observed.push_back(std::move(v));
    }
    out["observed"] = sorted_by_name(std::move(observed));
  }
  if (o.parameters) {
    json parameters = json::array();
    for (const auto& p : s.parameters) {
      if (!p.array.empty() || !kept(o, {&p.name})) continue;
      json v = variable(s, p);
      v["cadence"] = cadence_name(p.cadence);
      parameters.push_back(std::move(v));
    }
    out["parameters"] = sorted_by_name(std::move(parameters));
  }
  if (o.reactions) {
    json reactions = json::array();
    for (const FlatReaction& r : s.reactions) {
      const std::string text = reaction_text(s, r);
      const std::string qualified = r.component + "." + r.id;
      if (!kept(o, {&qualified, &r.name, &text})) continue;
      json j = {{"component", r.component}, {"id", r.id}, {"substrates", stoichiometry(r.substrates)},
                {"products", stoichiometry(r.products)}, {"rate", local_rate(s, r)}, {"text", text},
                {"pointer", r.pointer}};
      if (!r.name.empty()) j["name"] = r.name;
      reactions.push_back(std::move(j));
    }
    out["reactions"] = std::move(reactions);
  }
  if (o.equations) {
    json equations = json::array();
    s.states.for_each_stored([&](std::size_t i, const FlatVariable& v) {
      if (!v.array.empty()) return;
      const std::string lhs = "D(" + v.name + ", t)";
      const std::string text = lhs + " = " + infix(s.pool, s.state_rhs[i]);
      if (!kept(o, {&v.name, &text})) return;
      equations.push_back({{"kind", "ode"}, {"variable", v.name}, {"units", v.units}, {"text", text}});
    });
    json algebraic_equations = json::array();
    for (const auto& e : s.algebraic_equations) {
      const std::string lhs = infix(s.pool, e.lhs);
      const std::string text = lhs + " = " + infix(s.pool, e.rhs);
      if (!kept(o, {&text})) continue;
      algebraic_equations.push_back(text);
      equations.push_back({{"kind", "algebraic"}, {"variable", lhs}, {"units", ""}, {"text", text}});
    }
    out["equations"] = sorted_by_name(std::move(equations), "variable");
    out["algebraic_equations"] = std::move(algebraic_equations);
  }
  out["arrays"] = arrays(s, o);
  if (!s.grid.empty() || !s.grid_fallback.empty()) out["regions"] = regions(s);
  out["index_sets"] = s.index_sets;
  out["events"] = s.events.size();
  out["counts"] = {{"states", s.states.size()},
                   {"observed", s.observed.size()},
                   {"algebraic", s.algebraic.size()},
                   {"parameters", s.parameters.size()},
                   {"reactions", s.reactions.size()},
                   {"algebraic_equations", s.algebraic_equations.size()},
                   {"expression_nodes", s.pool.size()}};
  return out;
}

}  // namespace esi::esm
