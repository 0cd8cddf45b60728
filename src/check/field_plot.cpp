// Field plots (spec §6.7.4): field_slice and field_snapshot, a field's cells at one time
// against the coordinates of its axes, read from the document's registries.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "check/analysis_support.hpp"
#include "esi/check/analyze.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"

namespace esi::check::detail {

using nlohmann::json;
using exec::Trajectory;

namespace {

/// Where the values along one axis of a field come from.
struct AxisCoordinates {
  std::vector<double> values;
  std::string source;  ///< "coordinates/<key>", "index_sets/<axis>/members" or "cell index: ..."
  std::string units;   ///< the registry entry's units, if any
};

/// The coordinate values along `axis` (extent n), by the rules the document gives: a
/// `coordinates` registry entry (§2.1) with inline `values` of length n named after the axis
/// (`axis` or `..._axis`), or whose `source` is a parameter array over this axis alone; else
/// the numeric members of a categorical index set; else the 1-based cell index, which the
/// axis label then says (an interval index set carries no coordinate values, and a grid's
/// spacing is ordinary data esi does not guess at).
AxisCoordinates axis_coordinates(const AnalysisResult& r, const std::string& axis, std::int64_t n) {
  const auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  AxisCoordinates out;
  const json registry = r.registries.value("coordinates", json::object());
  for (auto it = registry.begin(); registry.is_object() && it != registry.end(); ++it) {
    const json& entry = it.value();
    if (!entry.is_object()) continue;
    std::vector<double> values;
    if (entry.contains("values") && entry["values"].is_array()) {
      if (it.key() != axis && !ends_with(it.key(), "_" + axis)) continue;
      for (const json& v : entry["values"])
        if (v.is_number()) values.push_back(v.get<double>());
      if (values.size() != entry["values"].size()) continue;
    } else if (entry.contains("source") && entry["source"].is_string()) {
      const esm::System::Array* a = find_array(r.system, r.scope, entry["source"].get<std::string>());
      if (!a || !a->parameter || a->axes != std::vector<std::string>{axis}) continue;
      for (std::int64_t i = 1; i <= a->extents[0]; ++i) {
        const int p = r.system.parameter_index(esm::cell_name(a->name, {i}));
        if (p < 0 || !r.system.parameters[p].default_value) break;
        values.push_back(*r.system.parameters[p].default_value);
      }
    }
    if (static_cast<std::int64_t>(values.size()) != n) continue;
    out.values = std::move(values);
    out.source = "coordinates/" + it.key();
    out.units = entry.value("units", std::string());
    return out;
  }
  const json sets = r.registries.value("index_sets", json::object());
  if (sets.is_object() && sets.contains(axis) && sets[axis].is_object() &&
      sets[axis].value("kind", std::string()) == "categorical" && sets[axis].contains("members") &&
      sets[axis]["members"].is_array() && static_cast<std::int64_t>(sets[axis]["members"].size()) == n) {
    for (const json& m : sets[axis]["members"])
      if (m.is_number()) out.values.push_back(m.get<double>());
    if (static_cast<std::int64_t>(out.values.size()) == n) {
      out.source = "index_sets/" + axis + "/members";
      return out;
    }
    out.values.clear();
  }
  for (std::int64_t i = 1; i <= n; ++i) out.values.push_back(static_cast<double>(i));
  out.source = "cell index: the document gives no coordinate values along '" + axis + "'";
  return out;
}

/// An axis label for a field axis: the authored label or the axis name, and, when the values
/// are cell indices, that they are.
std::string field_axis_label(const json& axis, const std::string& name, const AxisCoordinates& c) {
  std::string label = axis.is_object() && axis.contains("label") && axis["label"].is_string()
                          ? axis["label"].get<std::string>()
                          : c.units.empty() ? name : name + " [" + c.units + "]";
  // The whole reason is in plots.json's "axes"; the label keeps it short enough to show.
  if (c.source.rfind("cell index", 0) == 0) label += " (cell index: no coordinates given)";
  return label;
}

}  // namespace

/// field_slice / field_snapshot (§6.7.4): the field's cells at the plot's at_time, against the
/// coordinates of the axes x (and y) name. One plotted axis (a field_slice, or a snapshot whose
/// y names the field itself) gives a profile per run; two give the first run's grid, with the
/// plot's `contours` levels. Other axes of the field are fixed by `pinned_coords`.
json field_plot(const AnalysisResult& r, const json& plot, const std::string& ptr) {
  const AnalysisPlan& plan = r.plan;
  const std::string& file = plan.ref.file;
  const std::string type = plot.value("type", std::string());
  const json& yaxis = plot["y"].is_array() ? plot["y"][0] : plot["y"];
  const bool from_value = type == "field_snapshot" && plot.contains("value") && plot["value"].is_object() &&
                          plot["value"].contains("variable");
  const std::string name = from_value ? plot["value"].value("variable", std::string())
                                      : yaxis.value("variable", std::string());
  const std::string name_ptr = from_value ? pointer_join(pointer_join(ptr, "value"), "variable")
                                          : pointer_join(pointer_join(ptr, "y"), "variable");
  const esm::System::Array* field = find_array(r.system, r.scope, name);
  if (!field) {
    const Source s = resolve_source(r, name, name_ptr);  // unknown names: the usual message
    throw Error("invalid_plot", file, name_ptr,
                "'" + name + "' is not a field: it has no index sets (no shape), so a " + type +
                    " cannot draw it over space; plot it with a line plot against t" +
                    (s.kind == Source::Swept ? " or against the swept parameter" : ""));
  }
  std::string axes_list;
  for (const auto& a : field->axes) axes_list += (axes_list.empty() ? "" : ", ") + a;
  const auto axis_index = [&](const std::string& axis) {
    const auto it = std::find(field->axes.begin(), field->axes.end(), axis);
    return it == field->axes.end() ? -1 : static_cast<int>(it - field->axes.begin());
  };
  const std::string xname = plot["x"].value("variable", std::string());
  const int xd = axis_index(xname);
  if (xd < 0)
    throw Error("invalid_plot", file, pointer_join(pointer_join(ptr, "x"), "variable"),
                "x must name a spatial dimension of '" + name + "', one of its index sets (" + axes_list +
                    "), §6.7.4; '" + xname + "' is not one");
  int yd = -1;
  if (type == "field_snapshot") {
    const std::string yname = yaxis.value("variable", std::string());
    yd = axis_index(yname);
    const esm::System::Array* y_field = yd < 0 ? find_array(r.system, r.scope, yname) : nullptr;
    if (yd == xd || (yd < 0 && y_field != field))
      throw Error("invalid_plot", file, pointer_join(pointer_join(ptr, "y"), "variable"),
                  "y of a field_snapshot must name another spatial dimension of '" + name + "' (" + axes_list +
                      ") or, for a profile along x, the field itself; '" + yname + "' is neither");
  }
  // Every other axis is fixed: by pinned_coords, or because it has one cell.
  std::vector<std::int64_t> cell(field->axes.size(), 1);
  std::vector<AxisCoordinates> coords;
  for (std::size_t d = 0; d < field->axes.size(); ++d) coords.push_back(axis_coordinates(r, field->axes[d], field->extents[d]));
  json pinned_out = json::object();
  for (std::size_t d = 0; d < field->axes.size(); ++d) {
    if (static_cast<int>(d) == xd || static_cast<int>(d) == yd) continue;
    const std::string& axis = field->axes[d];
    const json pins = plot.value("pinned_coords", json::object());
    if (!pins.is_object() || !pins.contains(axis) || !pins[axis].is_number()) {
      if (field->extents[d] == 1) continue;
      throw Error("invalid_plot", file, plot.contains("pinned_coords") ? pointer_join(ptr, "pinned_coords") : ptr,
                  "'" + name + "' also varies along '" + axis + "' (" + std::to_string(field->extents[d]) +
                      " cells): pinned_coords must give the coordinate it is drawn at (§6.7.4)");
    }
    // The nearest coordinate (ties to the lower cell), as §6.6.5 picks cells.
    const double want = pins[axis].get<double>();
    std::size_t best = 0;
    for (std::size_t k = 1; k < coords[d].values.size(); ++k)
      if (std::abs(coords[d].values[k] - want) < std::abs(coords[d].values[best] - want)) best = k;
    cell[d] = static_cast<std::int64_t>(best) + 1;
    pinned_out[axis] = {{"requested", want}, {"cell", cell[d]}, {"coordinate", coords[d].values[best]}};
  }
  const double at = plot["at_time"].get<double>();
  // The row of each run at exactly at_time (an output time of every run, §6.7.4).
  const auto row_at = [&](const Trajectory& t) -> std::ptrdiff_t {
    for (std::size_t k = 0; k < t.times.size(); ++k)
      if (t.times[k] == at) return static_cast<std::ptrdiff_t>(k);
    return -1;
  };
  // The columns of a run by name (every run has the same; a field reads many of them).
  std::unordered_map<std::string, std::size_t> column;
  for (const AnalysisRun& run : r.runs)
    if (!run.trajectory.names.empty()) {
      for (std::size_t j = 0; j < run.trajectory.names.size(); ++j) column.emplace(run.trajectory.names[j], j);
      break;
    }
  const auto cells_along = [&](const Trajectory& t, std::ptrdiff_t row, std::vector<std::int64_t> c, int along,
                               std::vector<double>& out) {
    if (t.names.size() != column.size()) return false;
    for (std::int64_t i = 1; i <= field->extents[static_cast<std::size_t>(along)]; ++i) {
      c[static_cast<std::size_t>(along)] = i;
      const auto it = column.find(esm::cell_name(field->name, c));
      if (it == column.end()) return false;
      out.push_back(t.at(static_cast<std::size_t>(row), it->second));
    }
    return true;
  };
  const Source units_source{Source::Column, name, field->name, -1, 0, field->units};
  json out = {{"at_time", at}, {"axes", json::array()}};
  for (int d : {xd, yd})
    if (d >= 0)
      out["axes"].push_back({{"name", field->axes[static_cast<std::size_t>(d)]},
                             {"coordinates", coords[static_cast<std::size_t>(d)].source},
                             {"values", coords[static_cast<std::size_t>(d)].values}});
  if (!pinned_out.empty()) out["pinned"] = pinned_out;
  const std::string at_text = " at t = " + number_text(at);
  if (yd < 0) {  // a profile along x, one line per run
    out["xlabel"] = field_axis_label(plot["x"], xname, coords[static_cast<std::size_t>(xd)]);
    out["ylabel"] = axis_label(yaxis, units_source);
    out["lines"] = json::array();
    std::string missing;
    for (const AnalysisRun& run : r.runs) {
      const std::ptrdiff_t row = row_at(run.trajectory);
      std::vector<double> ys;
      if (row < 0 || !cells_along(run.trajectory, row, cell, xd, ys)) {
        missing += (missing.empty() ? "" : "; ") + (run.point.empty() ? std::string("the run") : point_label(r, run.point));
        continue;
      }
      out["lines"].push_back({{"label", r.runs.size() > 1 ? point_label(r, run.point) : name + at_text},
                              {"x", coords[static_cast<std::size_t>(xd)].values}, {"y", ys}});
    }
    if (out["lines"].empty())
      return {{"skipped", "no run reached at_time " + number_text(at) + " (" + missing + " stopped early; runs.csv says why)"}};
    return out;
  }
  // A grid over x and y: the first run that reached at_time (a sweep draws one field).
  const AnalysisRun* shown = nullptr;
  std::ptrdiff_t row = -1;
  for (const AnalysisRun& run : r.runs)
    if ((row = row_at(run.trajectory)) >= 0) {
      shown = &run;
      break;
    }
  if (!shown) return {{"skipped", "no run reached at_time " + number_text(at) + " (runs.csv says why)"}};
  json z = json::array();
  for (std::int64_t j = 1; j <= field->extents[static_cast<std::size_t>(yd)]; ++j) {
    std::vector<std::int64_t> c = cell;
    c[static_cast<std::size_t>(yd)] = j;
    std::vector<double> values;
    if (!cells_along(shown->trajectory, row, c, xd, values))
      return {{"skipped", "the run has no output column for the cells of '" + field->name + "'"}};
    z.push_back(values);
  }
  out["xlabel"] = field_axis_label(plot["x"], xname, coords[static_cast<std::size_t>(xd)]);
  out["ylabel"] = field_axis_label(yaxis, yaxis.value("variable", std::string()), coords[static_cast<std::size_t>(yd)]);
  out["zlabel"] = axis_label(from_value ? plot["value"] : json::object(), units_source) + at_text +
                  (r.runs.size() > 1 ? " (" + point_label(r, shown->point) + ")" : "");
  out["x"] = coords[static_cast<std::size_t>(xd)].values;
  out["y"] = coords[static_cast<std::size_t>(yd)].values;
  out["z"] = std::move(z);
  json levels = json::array();
  if (plot.contains("contours") && plot["contours"].is_array())
    for (const json& v : plot["contours"])
      if (v.is_number()) levels.push_back(v);
  out["contours"] = levels;
  return out;
}

}  // namespace esi::check::detail
