// exec::flatten_for_run and override names (prepare.hpp): the front `esi simulate` and the
// Python module share.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "esi/exec/prepare.hpp"

#include "esi/core/error.hpp"
#include "esi/core/text.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/plan/pointwise_split.hpp"

namespace esi::exec {
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
    const nlohmann::json to = entry.value("to", nlohmann::json()),
                         from = entry.value("from", nlohmann::json());
    if (!to.is_string()) continue;
    const std::string target = to.get<std::string>();
    if (target == name || ends_with_segment(target, name))
      return "'" + target + "' is bound by coupling entry /coupling/" + std::to_string(i) +
             " (variable_map" +
             (from.is_string() ? " from " + from.get<std::string>() : std::string()) +
             "), so it is no longer a parameter of the flattened system; set the source instead";
  }
  return {};
}

}  // namespace

void check_override_name(const esm::System& sys, const nlohmann::json& doc, const Override& o,
                         const std::string& typed_at) {
  const std::string& name = o.name;
  if (sys.state_index(name) >= 0 || sys.parameter_index(name) >= 0) return;
  const auto refuse = [&](const char* code, const std::string& why) {
    throw Error(code, o.file.empty() ? typed_at : o.file, o.pointer, o.origin + ": " + why);
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
    refuse("ambiguous_override",
           "the name matches several variables (" + list + "); use the full name");
  }
  for (const esm::FlatVariable& v : sys.observed)
    if (v.name == name || ends_with_segment(v.name, name))
      refuse("unknown_override", "'" + v.name +
                                     "' is an observed quantity (defined by an equation); "
                                     "--set and --params take a parameter or a state");
  if (const std::string why = replacing_variable_map(doc, name); !why.empty())
    refuse("unknown_override", why);
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
  const auto ends_with = [&](const esm::FlatVariable& v) {
    return ends_with_segment(v.name, name);
  };
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

double default_saveat(double t0, double t1) {
  if (!(t1 > t0)) return 0;
  double dt = (t1 - t0) / 100;
  if (!std::isfinite(dt)) return 0;  // a span beyond the double range: only T0 and T1
  while (dt > 0 && t0 + 100 * dt < t1)
    dt = std::nextafter(dt, std::numeric_limits<double>::infinity());
  return dt;
}

std::vector<double> preset_event_times(const esm::System& sys, double t0, double t1) {
  std::vector<double> out;
  for (const nlohmann::json& e : sys.events) {
    if (!e.is_object()) continue;
    const auto trigger = e.find("trigger");
    if (trigger == e.end() || !trigger->is_object() ||
        trigger->value("type", nlohmann::json()) != "preset_times")
      continue;
    const auto times = trigger->find("times");
    if (times == trigger->end() || !times->is_array()) continue;
    for (const nlohmann::json& t : *times)
      if (t.is_number() && t.get<double>() > t0 && t.get<double>() < t1 &&
          out.size() < kMaxPresetRows)
        out.push_back(t.get<double>());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

esm::System flatten_for_run(const esm::ResolvedDocument& doc, const RunChoices& choices,
                            SimulateOptions& options, std::string* note) {
  if (note != nullptr) note->clear();
  esm::FlattenOptions fo;
  fo.component = choices.component;
  // Arrays become per-region programs (whose size does not grow with the grid) when the
  // method needs no Jacobian; an implicit method gets one equation per cell, which the
  // symbolic Jacobian is built from.
  const method::MethodId requested = options.integrator.method;
  const bool explicit_method =
      requested != method::MethodId::Auto && !method::method_info(requested).needs_jacobian;
  const bool rosenbrock_or_auto =
      requested == method::MethodId::Auto || method::is_rosenbrock(requested);
  fo.grid = !choices.cells && (explicit_method || rosenbrock_or_auto);
  if (!choices.inputs.is_null() && !choices.inputs.is_object())
    throw Error("invalid_inputs", choices.inputs_file, "",
                "an inputs file holds one JSON object: variable name -> number or nested array");
  if (choices.inputs.is_object()) fo.inputs = choices.inputs;
  fo.inputs_file = choices.inputs_file;
  esm::System probe = esm::flatten(doc, fo);
  // A stiff or automatic method on a gridded model: the pointwise part (lifted chemistry)
  // runs on lane pools with one controller per cell, the rest with an explicit method.
  // Without a separable pointwise part, implicit methods get one equation per cell.
  std::string no_split;
  if (fo.grid && !explicit_method) {
    const bool has_events = !probe.events.empty();
    if (has_events) no_split = "the model has events, which split runs do not apply yet";
    if (!probe.grid.empty() && !has_events && plan::split_pointwise(probe, no_split)) {
      SimulateOptions::CellSplit split;
      split.cells.method =
          requested == method::MethodId::Auto ? method::MethodId::Rodas3 : requested;
      split.cells.rtol = options.integrator.rtol;
      split.cells.atol = {options.integrator.atol};
      split.cells.threads = static_cast<int>(options.threads);
      split.cells.lanes = choices.lanes;
      split.step = choices.split_step;
      options.cell_split = split;
      options.integrator.method = choices.transport_method.value_or(method::MethodId::SSPRK43);
    } else {
      if (!probe.grid.empty() && note != nullptr) *note = no_split;
      fo.grid = false;
      if (!probe.arrays.empty()) probe = esm::flatten(doc, fo);
    }
  }
  for (const Override& o : choices.overrides) {
    if (esm::names_array(probe, o.name)) {  // every cell of an array
      fo.inputs[o.name] = o.value;
      continue;
    }
    check_override_name(probe, doc.doc, o, choices.typed_at);
    (names_state(probe, o.name) ? fo.initial_conditions
                                : fo.parameter_overrides)[flat_target(probe, o.name)] = o.value;
  }
  return choices.overrides.empty() ? probe : esm::flatten(doc, fo);
}

}  // namespace esi::exec
