// Lifting a 0-D system onto the grid of the gridded system it is composed with (spec §10.5,
// lifting "pointwise").
#include <unordered_map>

#include "esm/arrays/lowering.hpp"

namespace esi::esm::detail::arrays {

namespace {

bool in_component(const std::string& name, const std::string& system) {
  return name.size() > system.size() && name.compare(0, system.size(), system) == 0 && name[system.size()] == '.';
}

/// The grid a 0-D system is lifted onto: the most frequent highest-rank shape among the arrays
/// the gridded side's equations for the 0-D system's unknowns read (`D(Chem.NO) = -div(M NO)/m`
/// reads m over [lon, lat, lev]); failing that, among the gridded system's unknowns.
const ArrayShape* lifting_grid(const FlattenState& st, const std::string& scalar_system,
                               const std::string& grid_system) {
  std::map<std::vector<std::string>, std::pair<int, const ArrayShape*>> votes;
  auto vote = [&](const std::string& name) {
    auto a = st.arrays.find(name);
    if (a == st.arrays.end()) return;
    auto& v = votes[a->second.axes];
    ++v.first;
    v.second = &a->second;
  };
  for (const auto& [x, list] : st.tendencies) {
    if (!in_component(x, scalar_system)) continue;
    for (const auto& t : list) {
      std::set<std::string> names;
      free_symbols(st.sys.pool, t.rhs, names);
      for (const auto& n : names) vote(n);
    }
  }
  if (votes.empty())
    for (const auto& [name, shape] : st.arrays)
      if (in_component(name, grid_system) && st.declared.count(name) && st.declared.at(name).unknown) vote(name);
  const ArrayShape* best = nullptr;
  int best_votes = 0;
  for (const auto& [axes, v] : votes)
    if (!best || axes.size() > best->axes.size() || (axes.size() == best->axes.size() && v.first > best_votes)) {
      best = v.second;
      best_votes = v.first;
    }
  return best;
}

}  // namespace

void lift_pointwise(FlattenState& st) {
  const json& coupling = st.doc.doc.value("coupling", json::array());
  if (!coupling.is_array()) return;
  auto gridded = [&](const std::string& system) {
    for (const auto& [name, shape] : st.arrays)
      if (in_component(name, system)) return true;
    return false;
  };
  for (std::size_t i = 0; i < coupling.size(); ++i) {
    const json& c = coupling[i];
    if (!c.is_object() || c.value("type", std::string()) != "operator_compose") continue;
    std::vector<std::string> grids, scalars;
    for (const auto& s : c.value("systems", json::array()))
      if (s.is_string() && st.component_index.count(s.get<std::string>()))
        (gridded(s.get<std::string>()) ? grids : scalars).push_back(s.get<std::string>());
    if (grids.empty() || scalars.empty()) continue;
    const std::string lifting = c.value("lifting", std::string("pointwise"));
    const std::string ptr = pointer_join("/coupling", i);
    if (lifting != "pointwise")
      throw Error("unsupported_array_feature", st.doc.file, pointer_join(ptr, "lifting"),
                  "lifting '" + lifting + "' (spec §10.5) is not supported yet; 'pointwise' is");
    for (const auto& system : scalars) {
      const ArrayShape* grid = lifting_grid(st, system, grids[0]);
      if (!grid)
        throw Error("array_shape_mismatch", st.doc.file, ptr,
                    "found no grid to lift '" + system + "' onto: '" + grids[0] + "' has no array unknowns");
      const ArrayShape shape{grid->axes, grid->extents};
      for (auto& [name, d] : st.declared)
        if (in_component(name, system) && d.unknown && !st.arrays.count(name)) {
          st.arrays[name] = shape;
          d.var.shape = shape.axes;
        }
    }
  }
  // Bindings by variable_map: an array-valued binding is substituted now, so the cells see the
  // array; a scalar data-source field bound to an array parameter (a reanalysis variable read
  // from files) leaves the array in place, a parameter the caller supplies (--inputs).
  std::unordered_map<expr::StrId, NodeId> now;
  Pool& pool = st.sys.pool;
  for (auto it = st.replacements.begin(); it != st.replacements.end();) {
    std::set<std::string> names;
    free_symbols(pool, it->second, names);
    bool reads_array = false;
    for (const auto& n : names) reads_array = reads_array || st.arrays.count(n);
    if (st.arrays.count(it->first) && !reads_array) {
      st.removed_parameters.erase(it->first);
      it = st.replacements.erase(it);
      continue;
    }
    if (reads_array) {
      now[pool.intern(it->first)] = it->second;
      it = st.replacements.erase(it);
      continue;
    }
    ++it;
  }
  if (now.empty()) return;
  std::unordered_map<NodeId, NodeId> memo;
  auto sub = [&](NodeId& e) {
    if (e != expr::kNoNode) e = substitute(pool, e, now, memo);
  };
  for (auto& [x, list] : st.tendencies)
    for (auto& t : list) sub(t.rhs);
  for (auto& [y, eq] : st.observed_eqs) sub(eq.rhs);
  for (auto& [y, pieces] : st.observed_pieces)
    for (auto& eq : pieces) sub(eq.rhs);
  for (auto& [x, eq] : st.initial_eqs) sub(eq.rhs);
  for (auto& eq : st.algebraic_eqs) {
    sub(eq.lhs);
    sub(eq.rhs);
  }
  for (auto& [name, d] : st.declared) sub(d.var.initial);
}

}  // namespace esi::esm::detail::arrays
