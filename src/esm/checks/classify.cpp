// The derived classification of a model (spec §6.3.1): the format declares only `unknown` and
// `parameter`; ODE-state-ness, observed/algebraic unknowns, parameter cadences and the system
// kind are pure functions of the equations and the parameters' update/distribution fields.
#include <algorithm>
#include <set>

#include "esi/esm/structural.hpp"
#include "esm/checks/structural_detail.hpp"

namespace esi::esm {

namespace structural_detail {

/// Spatial derivative (§6.3.1): a D whose wrt is present and is not the time variable, or one of
/// the grad/div/laplacian sugar ops — anywhere in the expression, every child descended.
bool has_spatial_derivative(const json& e, const std::string& time_var) {
  bool found = false;
  visit_nodes(e, [&](const json& n) {
    if (found) return false;
    const std::string op = get_str(n, "op");
    if (op == "grad" || op == "div" || op == "laplacian") {
      found = true;
    } else if (op == "D") {
      const json* w = get_field(n, "wrt");
      if (w && w->is_string() && w->get<std::string>() != time_var && w->get<std::string>() != "t")
        found = true;
    }
    return !found;
  });
  return found;
}

Classification classify(const json& model, const std::string& time_var) {
  Classification out;
  if (!model.is_object()) return out;
  std::set<std::string> unknowns, ode, observed;
  if (const json* vars = get_field(model, "variables"); vars && vars->is_object()) {
    for (const auto& [name, v] : vars->items()) {
      if (get_str(v, "type") != "parameter") {
        unknowns.insert(name);
        continue;
      }
      const json* up = get_field(v, "update");
      if (up && !up->is_null()) {
        const bool wiener = up->is_object() && get_str(*up, "kind") == "wiener";
        (wiener ? out.brownian_parameters : out.discrete_parameters).push_back(name);
      } else if (const json* d = get_field(v, "distribution"); d && !d->is_null()) {
        out.sampled_parameters.push_back(name);
      } else {
        out.constant_parameters.push_back(name);
      }
    }
  }

  bool any_time_derivative = false, any_spatial = false;
  if (const json* eqs = get_field(model, "equations"); eqs && eqs->is_array()) {
    for (const auto& eq : *eqs) {
      const json* lhs = get_field(eq, "lhs");
      const json* rhs = get_field(eq, "rhs");
      if (lhs) any_spatial = any_spatial || has_spatial_derivative(*lhs, time_var);
      if (rhs) any_spatial = any_spatial || has_spatial_derivative(*rhs, time_var);
      if (!lhs) continue;
      bool deriv = false, ic = false;
      const std::string target = lhs_target(*lhs, time_var, deriv, ic);
      if (ic) continue;  // an initial condition defines nothing about the dynamics (§11.4)
      if (deriv) {
        any_time_derivative = true;
        if (unknowns.count(target)) ode.insert(target);
      } else if (!target.empty() && unknowns.count(target)) {
        observed.insert(target);
      }
    }
  }
  for (const auto& u : unknowns) {
    if (ode.count(u))
      out.ode_states.push_back(u);
    else if (observed.count(u))
      out.observed_unknowns.push_back(u);
    else
      out.algebraic_unknowns.push_back(u);
  }
  for (auto* list : {&out.brownian_parameters, &out.discrete_parameters, &out.sampled_parameters,
                     &out.constant_parameters})
    std::sort(list->begin(), list->end());

  if (!out.brownian_parameters.empty())
    out.system_kind = "sde";
  else if (any_spatial)
    out.system_kind = "pde";
  else if (!any_time_derivative)
    out.system_kind = "nonlinear";
  else
    out.system_kind = "ode";
  out.declared_system_kind = get_str(model, "system_kind");
  return out;
}

}  // namespace structural_detail

Classification classify_model(const nlohmann::json& model) {
  try {
    return structural_detail::classify(model, "t");
  } catch (const std::exception&) {
    return Classification{};
  }
}

}  // namespace esi::esm
