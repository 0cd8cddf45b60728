// `--set` and `--params` names of `esi simulate` (simulate.hpp): a flat name or a unique local
// name of a state or parameter, refused with the reason and near matches otherwise.
//
// This is not esm::resolve_local (spec §6.6.2, the names of inline tests and analyses): that
// rule resolves under one component's scope and reads observeds and algebraic variables too,
// while --set takes states and parameters only, by any trailing segment ("B.x" for "A.B.x"),
// and its refusals say more (an observed, a name a variable_map replaced, near matches). The
// messages of both are pinned by tests, so each keeps its own.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cli/simulate.hpp"
#include "esi/core/error.hpp"
#include "esi/core/text.hpp"
#include "esi/esm/flatten.hpp"

namespace esi::cli::sim {
namespace {

/// The part of a flat name after its last dot ("x" of "A.B.x").
std::string local_name(const std::string& flat) {
  const auto dot = flat.rfind('.');
  return dot == std::string::npos ? flat : flat.substr(dot + 1);
}

bool ends_with_segment(const std::string& flat, const std::string& name) {
  return flat.size() > name.size() && flat[flat.size() - name.size() - 1] == '.' &&
         flat.compare(flat.size() - name.size(), name.size(), name) == 0;
}

/// Up to five settable names close to `name` (full names and local names), nearest first.
std::vector<std::string> near_names(const esm::System& sys, const std::string& name) {
  const std::size_t limit = std::max<std::size_t>(1, name.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> scored;
  esm::for_each_variable(
      [&](const esm::FlatVariable& v) {
        const std::size_t full = edit_distance(name, v.name),
                          local = edit_distance(name, local_name(v.name));
        if (std::min(full, local) <= limit) scored.emplace_back(std::min(full, local), v.name);
      },
      sys.states, sys.parameters);
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (const auto& [d, n] : scored)
    if (out.size() < 5) out.push_back(n);
  return out;
}

/// "coupling entry /coupling/2 (variable_map from A.y)" for a variable_map whose target is
/// `name` (flat or local), or "".
std::string replacing_variable_map(const nlohmann::json& doc, const std::string& name) {
  const auto coupling = doc.find("coupling");
  if (coupling == doc.end() || !coupling->is_array()) return {};
  for (std::size_t i = 0; i < coupling->size(); ++i) {
    const nlohmann::json& entry = (*coupling)[i];
    if (!entry.is_object() || entry.value("type", nlohmann::json()) != "variable_map") continue;
    const nlohmann::json to = entry.value("to", nlohmann::json()), from = entry.value("from", nlohmann::json());
    if (!to.is_string()) continue;
    const std::string target = to.get<std::string>();
    if (target == name || ends_with_segment(target, name))
      return "'" + target + "' is bound by coupling entry /coupling/" + std::to_string(i) +
             " (variable_map" + (from.is_string() ? " from " + from.get<std::string>() : std::string()) +
             "), so it is no longer a parameter of the flattened system; set the source instead";
  }
  return {};
}

}  // namespace

void check_set_name(const esm::System& sys, const nlohmann::json& doc, const Override& o) {
  const std::string& name = o.name;
  if (sys.state_index(name) >= 0 || sys.parameter_index(name) >= 0) return;
  const auto refuse = [&](const char* code, const std::string& why) {
    throw Error(code, o.file.empty() ? std::string(kCommandLine) : o.file, o.pointer, o.origin + ": " + why);
  };
  std::vector<std::string> hits;
  esm::for_each_variable(
      [&](const esm::FlatVariable& v) {
        if (ends_with_segment(v.name, name)) hits.push_back(v.name);
      },
      sys.states, sys.parameters);
  if (hits.size() == 1) return;
  if (hits.size() > 1) {
    std::string list;
    for (const auto& h : hits) list += (list.empty() ? "" : ", ") + h;
    refuse("ambiguous_override", "the name matches several variables (" + list + "); use the full name");
  }
  for (const esm::FlatVariable& v : sys.observed)
    if (v.name == name || ends_with_segment(v.name, name))
      refuse("unknown_override", "'" + v.name + "' is an observed quantity (defined by an equation); "
                                 "--set and --params take a parameter or a state");
  if (const std::string why = replacing_variable_map(doc, name); !why.empty()) refuse("unknown_override", why);
  std::string message = "no state or parameter of the system has this name";
  const std::vector<std::string> near = near_names(sys, name);
  for (std::size_t k = 0; k < near.size(); ++k)
    message += (k == 0 ? "; did you mean " : ", ") + ("'" + near[k] + "'");
  if (!near.empty()) message += "?";
  refuse("unknown_override", message);
}

bool names_state(const esm::System& sys, const std::string& name) {
  if (sys.state_index(name) >= 0) return true;
  if (sys.parameter_index(name) >= 0) return false;
  const auto ends_with = [&](const esm::FlatVariable& v) { return ends_with_segment(v.name, name); };
  return std::any_of(sys.states.begin(), sys.states.end(), ends_with) &&
         std::none_of(sys.parameters.begin(), sys.parameters.end(), ends_with);
}

std::string flat_target(const esm::System& sys, const std::string& name) {
  if (sys.state_index(name) >= 0 || sys.parameter_index(name) >= 0) return name;
  for (const esm::FlatVariable& v : sys.states)
    if (ends_with_segment(v.name, name)) return v.name;
  for (const esm::FlatVariable& v : sys.parameters)
    if (ends_with_segment(v.name, name)) return v.name;
  return name;
}

}  // namespace esi::cli::sim
