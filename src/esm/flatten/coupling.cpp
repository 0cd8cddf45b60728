// Coupling entries (spec §10): operator_compose merges tendencies, couple adds connector
// terms, variable_map binds a parameter to another quantity. Events and callbacks are carried
// into the system for the runtime.
#include <algorithm>
#include "esi/core/error.hpp"
#include "esm/flatten/flatten_internal.hpp"

namespace esi::esm::detail {
namespace {

using expr::NodeId;
using expr::Op;

struct Coupler {
  FlattenState& st;
  const std::string& file;

  std::size_t component_of(const std::string& system, const std::string& pointer) {
    auto it = st.component_index.find(system);
    if (it == st.component_index.end())
      throw Error("undefined_system", file, pointer,
                  "coupling names system '" + system + "', which the document does not define");
    return it->second;
  }

  /// Splits "Sys.Sub.var" and checks that it names a variable of a known component.
  std::string scoped_variable(const std::string& ref, const std::string& pointer) {
    const auto dot = ref.rfind('.');
    if (dot == std::string::npos)
      throw Error("unresolved_scoped_ref", file, pointer,
                  "'" + ref + "' must be a scoped reference System.variable in a coupling entry");
    const std::string owner = ref.substr(0, dot), var = ref.substr(dot + 1);
    auto it = st.component_index.find(owner);
    if (it == st.component_index.end())
      throw Error("unresolved_scoped_ref", file, pointer,
                  "'" + ref + "' names no component '" + owner + "'");
    if (!st.components[it->second].locals.count(var))
      throw Error("unresolved_scoped_ref", file, pointer,
                  "component '" + owner + "' has no variable '" + var + "'");
    return ref;
  }

  void compose(const json& entry, const std::string& ptr, std::vector<std::pair<std::size_t, std::size_t>>& links) {
    const json systems = entry.value("systems", json::array());
    std::vector<std::size_t> ids;
    for (std::size_t i = 0; i < systems.size(); ++i)
      ids.push_back(component_of(systems[i].get<std::string>(), pointer_join(pointer_join(ptr, "systems"), i)));
    for (std::size_t i = 1; i < ids.size(); ++i) links.emplace_back(ids[0], ids[i]);
    expand_placeholders(ids);
    for (std::size_t i = 1; i < ids.size(); ++i) identify_same_named_states(ids[0], ids[i]);
    if (auto tr = entry.find("translate"); tr != entry.end() && tr->is_object()) {
      for (auto it = tr->begin(); it != tr->end(); ++it) {
        const std::string tp = pointer_join(pointer_join(ptr, "translate"), it.key());
        const std::string into = scoped_variable(it.key(), tp);
        std::string from;
        double factor = 1.0;
        if (it->is_string()) from = it->get<std::string>();
        else if (it->is_object()) {
          from = it->value("var", std::string());
          factor = it->value("factor", 1.0);
        }
        from = scoped_variable(from, tp);
        // The translated variable is the same quantity: its tendencies join `into`, scaled.
        auto& src = st.tendencies[from];
        for (auto t : src) {
          if (factor != 1.0) {
            const NodeId m[] = {st.sys.pool.number(factor), t.rhs};
            t.rhs = st.sys.pool.make(Op::Mul, m);
          }
          if (!st.tendencies.count(into)) st.tendency_order.push_back(into);
          st.tendencies[into].push_back(t);
        }
        st.tendencies.erase(from);
        st.replacements[from] = st.sys.pool.symbol(into);
        st.removed_parameters.insert(from);
      }
    }
  }

  bool within(std::size_t component, std::size_t system) const {
    const std::string& p = st.components[component].path;
    const std::string& s = st.components[system].path;
    return p == s || p.compare(0, s.size() + 1, s + ".") == 0;
  }

  /// D(_var) equations of an operator model apply to every ODE state of the systems it is
  /// composed with (spec §6.4).
  void expand_placeholders(const std::vector<std::size_t>& systems) {
    expr::Pool& pool = st.sys.pool;
    const expr::StrId var = pool.intern("_var");
    for (std::size_t op_sys : systems)
      for (const auto& ph : st.placeholders) {
        if (!within(ph.component, op_sys)) continue;
        for (std::size_t target : systems) {
          if (target == op_sys) continue;
          const std::vector<std::string> states = st.tendency_order;
          for (const auto& x : states) {
            const auto& list = st.tendencies[x];
            if (list.empty() || !within(list[0].component, target)) continue;
            std::unordered_map<expr::StrId, NodeId> m{{var, pool.symbol(x)}};
            std::unordered_map<NodeId, NodeId> memo;
            st.tendencies[x].push_back({substitute(pool, ph.rhs, m, memo), ph.component, ph.file, ph.pointer});
          }
        }
      }
  }

  /// operator_compose matches time derivatives by name (§10.1-10.2): a state `B.x` of a later
  /// system whose local name equals a state `A.x` of the first is the same quantity. Its
  /// tendencies join `A.x` and every reference to `B.x` reads `A.x`.
  void identify_same_named_states(std::size_t primary, std::size_t other) {
    const std::string& a = st.components[primary].path;
    const std::string& b = st.components[other].path;
    const std::vector<std::string> states = st.tendency_order;
    for (const auto& x : states) {
      if (x.compare(0, b.size() + 1, b + ".") != 0) continue;
      const std::string twin = a + x.substr(b.size());
      if (twin == x || !st.tendencies.count(twin) || st.tendencies[twin].empty()) continue;
      auto moved = std::move(st.tendencies[x]);
      st.tendencies.erase(x);
      for (auto& t : moved) st.tendencies[twin].push_back(std::move(t));
      st.replacements[x] = st.sys.pool.symbol(twin);
      st.removed_parameters.insert(x);
    }
  }

  void couple(const json& entry, const std::string& ptr) {
    const json systems = entry.value("systems", json::array());
    for (std::size_t i = 0; i < systems.size(); ++i)
      component_of(systems[i].get<std::string>(), pointer_join(pointer_join(ptr, "systems"), i));
    const json eqs = entry.value("connector", json::object()).value("equations", json::array());
    for (std::size_t i = 0; i < eqs.size(); ++i) {
      const std::string ep = pointer_join(pointer_join(pointer_join(ptr, "connector"), "equations"), i);
      const json& eq = eqs[i];
      const std::string to = scoped_variable(eq.value("to", std::string()), pointer_join(ep, "to"));
      const NodeId e = localize_global(st, eq.value("expression", json(0)), file, pointer_join(ep, "expression"));
      const std::string transform = eq.value("transform", std::string("additive"));
      auto& list = st.tendencies[to];
      if (list.empty() && std::find(st.tendency_order.begin(), st.tendency_order.end(), to) == st.tendency_order.end())
        st.tendency_order.push_back(to);
      // Connector terms are authored in the coupled scope; record them with a sentinel component.
      const std::size_t owner = st.component_index.at(to.substr(0, to.rfind('.')));
      if (transform == "additive") {
        list.push_back({e, owner, file, ep});
      } else if (transform == "multiplicative" || transform == "replacement") {
        if (list.empty())
          throw Error("invalid_connector", file, ep,
                      "'" + to + "' has no tendency to " +
                          (transform == "multiplicative" ? std::string("multiply") : std::string("replace")));
        NodeId current = sum(list);
        if (transform == "multiplicative") {
          const NodeId m[] = {current, e};
          current = st.sys.pool.make(Op::Mul, m);
        } else {
          current = e;
        }
        list.assign(1, {current, owner, file, ep});
      } else {
        throw Error("invalid_connector", file, pointer_join(ep, "transform"),
                    "connector transform '" + transform + "' is not one of additive, "
                    "multiplicative, replacement");
      }
      connector_targets.insert(to);
    }
  }

  NodeId sum(const std::vector<Tendency>& list) {
    if (list.size() == 1) return list[0].rhs;
    std::vector<NodeId> parts;
    for (const auto& t : list) parts.push_back(t.rhs);
    return st.sys.pool.make(Op::Add, parts);
  }

  void variable_map(const json& entry, const std::string& ptr) {
    const std::string from = scoped_variable(entry.value("from", std::string()), pointer_join(ptr, "from"));
    const std::string to = scoped_variable(entry.value("to", std::string()), pointer_join(ptr, "to"));
    const json transform = entry.value("transform", json("param_to_var"));
    auto target = st.declared.find(to);
    if (target != st.declared.end() && target->second.unknown &&
        (st.tendencies.count(to) || st.observed_eqs.count(to)))
      throw Error("invalid_variable_map", file, pointer_join(ptr, "to"),
                  "'" + to + "' already has a defining equation; a variable_map can only bind a "
                  "parameter or an undefined unknown");
    expr::Pool& pool = st.sys.pool;
    NodeId value = pool.symbol(from);
    // lifting "mean" (spec §10.5): a 0-D target reads the spatial mean of the array it is
    // bound to, sum over the cells / number of cells (both formed when the arrays become cells).
    if (auto a = st.arrays.find(from); a != st.arrays.end() && !st.arrays.count(to) && !transform.is_object() &&
                                       entry.value("lifting", std::string()) == "mean") {
      json ranges = json::object();
      json index = json{{"op", "index"}, {"args", json::array({from})}};
      for (std::size_t d = 0; d < a->second.axes.size(); ++d) {
        const std::string k = "__mean" + std::to_string(d);
        ranges[k] = json{{"from", a->second.axes[d]}};
        index["args"].push_back(k);
      }
      auto sum_of = [&](const json& body) {
        return json{{"op", "aggregate"}, {"args", json::array()}, {"output_idx", json::array()},
                    {"ranges", ranges}, {"expr", body}};
      };
      value = localize_global(st, json{{"op", "/"}, {"args", json::array({sum_of(index), sum_of(1)})}}, file,
                              pointer_join(ptr, "lifting"));
    }
    if (transform.is_object()) {
      value = localize_global(st, transform, file, pointer_join(ptr, "transform"));
      // The target becomes an observed defined by the transform (§10.4).
      st.observed_eqs[to] = FlatEquation{pool.symbol(to), value, file, ptr};
      st.observed_order.push_back(to);
      if (target != st.declared.end()) target->second.unknown = true;
      return;
    }
    const std::string kind = transform.is_string() ? transform.get<std::string>() : "";
    if (kind == "additive" || kind == "multiplicative" || kind == "conversion_factor") {
      const double factor = entry.value("factor", 1.0);
      if (factor != 1.0) {
        const NodeId m[] = {pool.number(factor), value};
        value = pool.make(Op::Mul, m);
      }
    } else if (kind != "param_to_var" && kind != "identity") {
      throw Error("invalid_variable_map", file, pointer_join(ptr, "transform"),
                  "variable_map transform '" + kind + "' is not one of param_to_var, identity, "
                  "additive, multiplicative, conversion_factor or an expression");
    }
    if (st.replacements.count(to))
      throw Error("conflicting_variable_map", file, ptr, "'" + to + "' is bound twice");
    st.replacements[to] = value;
    st.removed_parameters.insert(to);
  }

  std::set<std::string> connector_targets;
};

std::size_t find_root(std::vector<std::size_t>& parent, std::size_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

void apply_coupling(FlattenState& st) {
  const json coupling = st.doc.doc.value("coupling", json::array());
  Coupler cp{st, st.doc.file};
  std::vector<std::pair<std::size_t, std::size_t>> links;
  for (std::size_t i = 0; i < coupling.size(); ++i) {
    const json& entry = coupling[i];
    const std::string ptr = pointer_join("/coupling", i);
    const std::string type = entry.value("type", std::string());
    if (type == "operator_compose") cp.compose(entry, ptr, links);
    else if (type == "couple") cp.couple(entry, ptr);
    else if (type == "variable_map") cp.variable_map(entry, ptr);
    else if (type == "event" || type == "callback") {
      json e = entry;
      e["$pointer"] = ptr;
      st.sys.events.push_back(std::move(e));
    } else {
      throw Error("unsupported_coupling", st.doc.file, pointer_join(ptr, "type"),
                  "coupling type '" + type + "' cannot be flattened");
    }
  }
  // Several components writing D(x) is legal only when operator_compose joins them (§10.1);
  // connector terms are exempt (they are the coupling).
  std::vector<std::size_t> parent(st.components.size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto top = [&](std::size_t c) {
    const std::string& p = st.components[c].path;
    return st.component_index.at(p.substr(0, p.find('.')));
  };
  for (auto [a, b] : links) parent[find_root(parent, top(a))] = find_root(parent, top(b));
  for (const auto& [var, list] : st.tendencies) {
    if (list.size() < 2) continue;
    // Equations that each define some cells of an array (index(D(u), 1), an aggregate over
    // the interior) are pieces of one definition; the array lowering checks that they cover
    // every cell once.
    if (std::all_of(list.begin(), list.end(), [](const Tendency& t) { return t.lhs_aggregate != expr::kNoNode; }))
      continue;
    std::set<std::size_t> authors;
    for (const auto& t : list) authors.insert(t.component);
    const std::size_t root = find_root(parent, top(*authors.begin()));
    for (const auto& t : list) {
      if (cp.connector_targets.count(var)) break;
      if (find_root(parent, top(t.component)) != root || authors.size() == 1)
        throw Error("conflicting_equations", t.file, t.pointer,
                    "'" + var + "' has more than one time-derivative equation and no "
                    "operator_compose entry joins their systems");
    }
  }
}

}  // namespace esi::esm::detail
