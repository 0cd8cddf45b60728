// A plain JSON summary of a flattened system (`esi inspect --json`).
#include <map>

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

json variable(const System& s, const FlatVariable& v) {
  json j = {{"name", v.name}, {"units", v.units}};
  j["default"] = v.default_value ? json(*v.default_value) : json(nullptr);
  if (v.initial != expr::kNoNode) j["initial"] = expr::to_infix(s.pool, v.initial);
  if (!v.shape.empty()) j["shape"] = v.shape;
  return j;
}

/// Array cells are summarized once per array (`arrays`), not listed: a gridded system has 10^5
/// of them, and their expressions printed as trees would dwarf the document.
json arrays(const System& s) {
  std::map<std::string, std::size_t> states, observed, parameters;
  for (const auto& v : s.states)
    if (!v.array.empty()) ++states[v.array];
  for (const auto& v : s.observed)
    if (!v.array.empty()) ++observed[v.array];
  for (const auto& v : s.parameters)
    if (!v.array.empty()) ++parameters[v.array];
  json out = json::array();
  for (const auto& a : s.arrays) {
    std::int64_t cells = 1;
    for (auto e : a.extents) cells *= e;
    const char* kind = states.count(a.name) ? "state" : observed.count(a.name) ? "observed"
                       : a.parameter ? "parameter" : "unknown";
    json j = {{"name", a.name}, {"axes", a.axes}, {"extents", a.extents}, {"cells", cells},
              {"kind", kind}, {"units", a.units}};
    if (a.parameter) j["cells_read"] = parameters[a.name];
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

json describe(const System& s) {
  json out;
  out["components"] = s.components;
  json states = json::array();
  for (std::size_t i = 0; i < s.states.size(); ++i) {
    if (!s.states[i].array.empty()) continue;
    json v = variable(s, s.states[i]);
    v["rhs"] = expr::to_infix(s.pool, s.state_rhs[i]);
    states.push_back(std::move(v));
  }
  json observed = json::array();
  for (std::size_t i = 0; i < s.observed.size(); ++i) {
    if (!s.observed[i].array.empty()) continue;
    json v = variable(s, s.observed[i]);
    v["rhs"] = expr::to_infix(s.pool, s.observed_rhs[i]);
    observed.push_back(std::move(v));
  }
  json algebraic = json::array();
  for (const auto& v : s.algebraic) algebraic.push_back(variable(s, v));
  json equations = json::array();
  for (const auto& e : s.algebraic_equations)
    equations.push_back(expr::to_infix(s.pool, e.lhs) + " = " + expr::to_infix(s.pool, e.rhs));
  json parameters = json::array();
  for (const auto& p : s.parameters) {
    if (!p.array.empty()) continue;
    json v = variable(s, p);
    v["cadence"] = cadence_name(p.cadence);
    parameters.push_back(std::move(v));
  }
  out["states"] = std::move(states);
  out["observed"] = std::move(observed);
  out["algebraic"] = std::move(algebraic);
  out["algebraic_equations"] = std::move(equations);
  out["parameters"] = std::move(parameters);
  out["arrays"] = arrays(s);
  out["index_sets"] = s.index_sets;
  out["events"] = s.events.size();
  out["counts"] = {{"states", s.states.size()},
                   {"observed", s.observed.size()},
                   {"algebraic", s.algebraic.size()},
                   {"parameters", s.parameters.size()},
                   {"expression_nodes", s.pool.size()}};
  return out;
}

}  // namespace esi::esm
