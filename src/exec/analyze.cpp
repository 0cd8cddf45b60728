// Inline analyses (spec §6.7): reading one, running its sweep, turning its plots into data.
#include "esi/exec/analyze.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/flatten.hpp"
#include "exec/inject_imports.hpp"
#include "exec/local_names.hpp"
#include "exec/model.hpp"
#include "exec/parallel.hpp"
#include "exec/run_support.hpp"

namespace esi::exec {
namespace {

using nlohmann::json;

/// Runs an analysis may ask for: a sweep is a Cartesian product and grows fast.
constexpr double kMaxRuns = 100000;
/// Output rows per run: 101 evenly spaced times (what `esi simulate` writes by default).
constexpr int kOutputIntervals = 100;

[[noreturn]] void invalid(const AnalysisRef& ref, const std::string& pointer, const std::string& message) {
  throw Error("invalid_analysis", ref.file, pointer, message);
}

double finite_number(const AnalysisRef& ref, const json& node, const std::string& pointer, const char* what) {
  if (!node.is_number() || !std::isfinite(node.get<double>()))
    invalid(ref, pointer, std::string(what) + " must be a finite number");
  return node.get<double>();
}

std::vector<double> range_values(const AnalysisRef& ref, const json& range, const std::string& ptr) {
  if (!range.is_object()) invalid(ref, ptr, "a range is an object {start, stop, count, scale}");
  for (const char* f : {"start", "stop", "count"})
    if (!range.contains(f)) invalid(ref, ptr, std::string("a range needs '") + f + "'");
  const double start = finite_number(ref, range["start"], pointer_join(ptr, "start"), "start");
  const double stop = finite_number(ref, range["stop"], pointer_join(ptr, "stop"), "stop");
  const json& c = range["count"];
  if (!c.is_number_integer() || c.get<std::int64_t>() < 2 || c.get<std::int64_t>() > kMaxRuns)
    invalid(ref, pointer_join(ptr, "count"), "count must be a whole number from 2 to 100000");
  const auto count = static_cast<std::size_t>(c.get<std::int64_t>());
  const std::string scale = range.value("scale", std::string("linear"));
  if (scale != "linear" && scale != "log")
    invalid(ref, pointer_join(ptr, "scale"), "scale must be 'linear' or 'log'");
  if (scale == "log" && !(start > 0 && stop > 0))
    invalid(ref, pointer_join(ptr, start > 0 ? "stop" : "start"),
            "a log-scale range needs a strictly positive start and stop (§6.7.3)");
  std::vector<double> out(count);
  const double n = static_cast<double>(count - 1);
  for (std::size_t k = 0; k < count; ++k) {
    const double f = static_cast<double>(k) / n;
    out[k] = scale == "log" ? std::exp(std::log(start) + f * (std::log(stop) - std::log(start)))
                            : start + f * (stop - start);
  }
  out.front() = start;  // the authored ends exactly, whatever the rounding in between
  out.back() = stop;
  return out;
}

/// The §6.7.4 time reductions over one run's column (trapezoids for integral and mean).
double reduce(const Trajectory& traj, int col, const json& value) {
  const std::size_t rows = traj.times.size();
  if (rows == 0 || col < 0) return std::numeric_limits<double>::quiet_NaN();
  const auto c = static_cast<std::size_t>(col);
  if (value.contains("at_time") && value["at_time"].is_number()) {  // at_time wins (§6.7.4)
    const double at = value["at_time"].get<double>();
    std::size_t best = 0;
    for (std::size_t k = 1; k < rows; ++k)
      if (std::abs(traj.times[k] - at) < std::abs(traj.times[best] - at)) best = k;
    return traj.at(best, c);
  }
  const std::string how = value.value("reduce", std::string("final"));
  if (how == "final") return traj.at(rows - 1, c);
  double acc = how == "max" ? -INFINITY : how == "min" ? INFINITY : 0.0;
  for (std::size_t k = 0; k < rows; ++k) {
    const double v = traj.at(k, c);
    if (how == "max") acc = std::max(acc, v);
    else if (how == "min") acc = std::min(acc, v);
    else if (k > 0) acc += 0.5 * (v + traj.at(k - 1, c)) * (traj.times[k] - traj.times[k - 1]);
  }
  if (how == "mean") {
    const double span = traj.times.back() - traj.times.front();
    return span > 0 ? acc / span : traj.at(0, c);
  }
  return acc;
}

/// What a plotted name reads: the time, a column of the run, a swept value or a parameter.
struct Source {
  enum Kind { Time, Column, Swept, Constant } kind = Time;
  std::string name;   ///< as authored
  std::string flat;   ///< flat name ("" for t)
  int dim = -1;       ///< Swept: the sweep dimension
  double value = 0;   ///< Constant
  std::string units;
};

std::string units_of(const AnalysisResult& r, const std::string& flat) {
  for (const auto& [n, u] : r.units)
    if (n == flat) return u;
  return "";
}

Source resolve_source(const AnalysisResult& r, const std::string& name, const std::string& pointer) {
  Source s;
  s.name = name;
  const AnalysisRef& ref = r.plan.ref;
  if (name == "t") return s;
  for (std::size_t d = 0; d < r.plan.sweep.size(); ++d)
    if (r.plan.sweep[d].parameter == name) {
      s.kind = Source::Swept;
      s.dim = static_cast<int>(d);
    }
  try {
    s.flat = detail::resolve_local(r.system, r.scope, name, ref.file, pointer);
  } catch (const Error& e) {
    if (s.kind == Source::Swept) return s;
    throw Error("invalid_plot", ref.file, pointer,
                "'" + name + "' is not a variable, parameter or swept parameter of component '" + r.scope +
                    "' (" + e.diagnostic().message + ")");
  }
  s.units = units_of(r, s.flat);
  if (s.kind == Source::Swept) return s;
  if (!r.runs.empty() && r.runs.front().trajectory.column(s.flat) >= 0) {
    s.kind = Source::Column;
    return s;
  }
  if (const int p = r.system.parameter_index(s.flat); p >= 0) {
    s.kind = Source::Constant;
    s.value = r.system.parameters[p].default_value.value_or(std::numeric_limits<double>::quiet_NaN());
    return s;
  }
  throw Error("invalid_plot", ref.file, pointer,
              "'" + name + "' is neither an output column nor a parameter of the run");
}

/// One value of a source per output row of a run.
std::vector<double> series_of(const Source& s, const AnalysisRun& run) {
  const Trajectory& t = run.trajectory;
  std::vector<double> out(t.times.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    switch (s.kind) {
      case Source::Time: out[k] = t.times[k]; break;
      case Source::Column: out[k] = t.at(k, static_cast<std::size_t>(t.column(s.flat))); break;
      case Source::Swept: out[k] = run.point[static_cast<std::size_t>(s.dim)]; break;
      case Source::Constant: out[k] = s.value; break;
    }
  }
  return out;
}

/// One value of a source per run: a trajectory's final value, or the run's scalar.
double scalar_of(const Source& s, const AnalysisRun& run) {
  const Trajectory& t = run.trajectory;
  switch (s.kind) {
    case Source::Time: return t.times.empty() ? NAN : t.times.back();
    case Source::Column: return reduce(t, t.column(s.flat), json::object());
    case Source::Swept: return run.point[static_cast<std::size_t>(s.dim)];
    case Source::Constant: return s.value;
  }
  return NAN;
}

std::string number_text(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

std::string axis_label(const json& axis, const Source& s) {
  if (axis.is_object() && axis.contains("label") && axis["label"].is_string()) return axis["label"];
  return s.units.empty() ? s.name : s.name + " [" + s.units + "]";
}

/// "k=0.1, T=300" for the swept values of a run, leaving out dimension `skip`.
std::string point_label(const AnalysisPlan& plan, const std::vector<double>& point, int skip = -1) {
  std::string out;
  for (std::size_t d = 0; d < point.size(); ++d)
    if (static_cast<int>(d) != skip)
      out += (out.empty() ? "" : ", ") + plan.sweep[d].parameter + "=" + number_text(point[d]);
  return out;
}

/// "log" when swept dimension `dim` is a generated log-scale range (§6.7.3), else "linear":
/// the axis a swept parameter is plotted on follows how its values were spaced.
std::string sweep_scale(const AnalysisPlan& plan, int dim) {
  const json& d = plan.ref.spec["parameter_sweep"]["dimensions"][static_cast<std::size_t>(dim)];
  return d.contains("range") ? d["range"].value("scale", std::string("linear")) : std::string("linear");
}

json line_plot(const AnalysisResult& r, const json& plot, const std::string& ptr) {
  const AnalysisPlan& plan = r.plan;
  const Source x = resolve_source(r, plot["x"].value("variable", std::string()), pointer_join(pointer_join(ptr, "x"), "variable"));
  // Series: explicit `series` wins over the inline `y` array (§6.7.4).
  std::vector<std::pair<std::string, Source>> series;
  const json& y = plot["y"];
  if (plot.contains("series") && plot["series"].is_array() && !plot["series"].empty()) {
    for (std::size_t i = 0; i < plot["series"].size(); ++i) {
      const json& s = plot["series"][i];
      const std::string sp = pointer_join(pointer_join(pointer_join(ptr, "series"), i), "variable");
      const std::string var = s.value("variable", std::string());
      series.emplace_back(s.value("name", var), resolve_source(r, var, sp));
    }
  } else if (y.is_array()) {
    for (std::size_t i = 0; i < y.size(); ++i) {
      const std::string var = y[i].value("variable", std::string());
      series.emplace_back(y[i].value("label", var),
                          resolve_source(r, var, pointer_join(pointer_join(pointer_join(ptr, "y"), i), "variable")));
    }
  } else {
    const std::string var = y.value("variable", std::string());
    series.emplace_back(y.value("label", var), resolve_source(r, var, pointer_join(pointer_join(ptr, "y"), "variable")));
  }
  const json& first_y = y.is_array() ? y[0] : y;
  json out = {{"xlabel", axis_label(plot["x"], x)},
              {"ylabel", series.size() == 1 || !y.is_array() ? axis_label(first_y, series[0].second)
                                                             : axis_label(json::object(), series[0].second)},
              {"lines", json::array()}};
  if (series.size() > 1 && !first_y.contains("label")) out["ylabel"] = series[0].second.units;
  const bool per_run = x.kind == Source::Time || x.kind == Source::Column;
  if (per_run) {  // a trajectory per run and series
    for (const AnalysisRun& run : r.runs)
      for (const auto& [name, src] : series) {
        std::string label = name;
        if (r.runs.size() > 1) label = series.size() > 1 ? name + " (" + point_label(plan, run.point) + ")"
                                                         : point_label(plan, run.point);
        out["lines"].push_back({{"label", label}, {"x", series_of(x, run)}, {"y", series_of(src, run)}});
      }
    return out;
  }
  // Against a swept parameter (or a constant): one point per run, each series' final value;
  // runs that differ in the other swept dimensions make separate lines.
  if (x.kind == Source::Swept) out["xscale"] = sweep_scale(plan, x.dim);
  std::map<std::string, std::vector<const AnalysisRun*>> groups;
  std::vector<std::string> order;
  for (const AnalysisRun& run : r.runs) {
    const std::string key = point_label(plan, run.point, x.dim);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&run);
  }
  for (const auto& [name, src] : series)
    for (const std::string& key : order) {
      std::vector<double> xs, ys;
      for (const AnalysisRun* run : groups[key]) {
        xs.push_back(scalar_of(x, *run));
        ys.push_back(scalar_of(src, *run));
      }
      std::string label = name;
      if (!key.empty()) label = series.size() > 1 ? name + " (" + key + ")" : key;
      out["lines"].push_back({{"label", label}, {"x", xs}, {"y", ys}});
    }
  return out;
}

json heatmap_plot(const AnalysisResult& r, const json& plot, const std::string& ptr) {
  const AnalysisPlan& plan = r.plan;
  const Source x = resolve_source(r, plot["x"].value("variable", std::string()), pointer_join(pointer_join(ptr, "x"), "variable"));
  const json& yaxis = plot["y"].is_array() ? plot["y"][0] : plot["y"];
  const Source y = resolve_source(r, yaxis.value("variable", std::string()), pointer_join(pointer_join(ptr, "y"), "variable"));
  if (x.kind != Source::Swept || y.kind != Source::Swept || x.dim == y.dim)
    throw Error("invalid_plot", plan.ref.file, ptr,
                "a heatmap's x and y must name two different swept parameters of the analysis' parameter_sweep");
  if (!plot.contains("value") || !plot["value"].is_object())
    throw Error("invalid_plot", plan.ref.file, ptr, "a heatmap needs a 'value' {variable, reduce or at_time}");
  const json& value = plot["value"];
  const Source v = resolve_source(r, value.value("variable", std::string()), pointer_join(pointer_join(ptr, "value"), "variable"));
  const auto& xs = plan.sweep[static_cast<std::size_t>(x.dim)].values;
  const auto& ys = plan.sweep[static_cast<std::size_t>(y.dim)].values;
  json z = json::array();
  for (std::size_t iy = 0; iy < ys.size(); ++iy) z.push_back(std::vector<double>(xs.size(), NAN));
  std::vector<std::vector<bool>> filled(ys.size(), std::vector<bool>(xs.size(), false));
  // Other swept dimensions: the first run holding each (x, y) cell, i.e. their first values.
  for (const AnalysisRun& run : r.runs) {
    const auto ix = static_cast<std::size_t>(std::find(xs.begin(), xs.end(), run.point[x.dim]) - xs.begin());
    const auto iy = static_cast<std::size_t>(std::find(ys.begin(), ys.end(), run.point[y.dim]) - ys.begin());
    if (ix >= xs.size() || iy >= ys.size() || filled[iy][ix]) continue;
    filled[iy][ix] = true;
    double cell = v.kind == Source::Column ? reduce(run.trajectory, run.trajectory.column(v.flat), value)
                                           : scalar_of(v, run);
    z[iy][ix] = cell;
  }
  std::string how = value.contains("at_time") ? "at t = " + number_text(value.value("at_time", 0.0))
                                              : value.value("reduce", std::string("final"));
  json out = {{"xlabel", axis_label(plot["x"], x)}, {"ylabel", axis_label(yaxis, y)},
              {"zlabel", axis_label(json::object(), v) + " (" + how + ")"},
              {"x", xs}, {"y", ys}, {"z", z}};
  out["xscale"] = sweep_scale(plan, x.dim);
  out["yscale"] = sweep_scale(plan, y.dim);
  return out;
}

/// The array a name authored in component `scope` names (scoped, flat, or a unique trailing
/// segment, as resolve_local reads names), or nullptr.
const esm::System::Array* find_array(const esm::System& sys, const std::string& scope, const std::string& key) {
  const esm::System::Array* suffix = nullptr;
  int suffixes = 0;
  for (const auto& a : sys.arrays) {
    if (a.name == scope + "." + key || a.name == key) return &a;
    if (key.find('.') == std::string::npos && a.name.size() > key.size() + 1 &&
        a.name.compare(a.name.size() - key.size() - 1, key.size() + 1, "." + key) == 0)
      suffix = &a, ++suffixes;
  }
  return suffixes == 1 ? suffix : nullptr;
}

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
        missing += (missing.empty() ? "" : "; ") + (run.point.empty() ? std::string("the run") : point_label(plan, run.point));
        continue;
      }
      out["lines"].push_back({{"label", r.runs.size() > 1 ? point_label(plan, run.point) : name + at_text},
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
                  (r.runs.size() > 1 ? " (" + point_label(plan, shown->point) + ")" : "");
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

void visit(const esm::ResolvedDocument& doc, const json& section, const std::string& prefix,
           const std::string& pointer, const std::string& only, std::vector<AnalysisRef>& out) {
  if (!section.is_object()) return;
  for (auto it = section.begin(); it != section.end(); ++it) {
    const json& node = it.value();
    if (!node.is_object()) continue;
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    const std::string ptr = pointer_join(pointer, it.key());
    const bool wanted = only.empty() || path == only || path.rfind(only + ".", 0) == 0;
    if (auto a = node.find("analyses"); wanted && a != node.end() && a->is_array()) {
      std::string file = doc.file;
      for (const auto& [p, f] : doc.component_files)
        if (ptr.compare(0, p.size(), p) == 0) file = f;
      for (std::size_t i = 0; i < a->size(); ++i) {
        const json& spec = (*a)[i];
        std::string id = spec.is_object() && spec.contains("id") && spec["id"].is_string()
                             ? spec["id"].get<std::string>()
                             : std::to_string(i);
        out.push_back({path, id, file, pointer_join(pointer_join(ptr, "analyses"), i), spec});
      }
    }
    if (auto s = node.find("subsystems"); s != node.end())
      visit(doc, *s, path, pointer_join(ptr, "subsystems"), only, out);
  }
}

}  // namespace

std::vector<AnalysisRef> find_analyses(const esm::ResolvedDocument& doc, const std::string& component) {
  std::vector<AnalysisRef> out;
  for (const char* section : {"models", "reaction_systems"})
    if (auto s = doc.doc.find(section); s != doc.doc.end())
      visit(doc, *s, "", pointer_join("", section), component, out);
  return out;
}

AnalysisPlan plan_analysis(const AnalysisRef& ref) {
  AnalysisPlan plan;
  plan.ref = ref;
  const json& a = ref.spec;
  const std::string& ptr = ref.pointer;
  if (!a.is_object()) invalid(ref, ptr, "an analysis must be an object");
  if (!a.contains("id") || !a["id"].is_string() || a["id"].get<std::string>().empty())
    invalid(ref, pointer_join(ptr, "id"), "an analysis needs a non-empty string 'id'");
  if (!a.contains("time_span") || !a["time_span"].is_object())
    invalid(ref, pointer_join(ptr, "time_span"), "an analysis needs a time_span {start, end}");
  const json& span = a["time_span"];
  const std::string sp = pointer_join(ptr, "time_span");
  for (const char* f : {"start", "end"})
    if (!span.contains(f)) invalid(ref, pointer_join(sp, f), std::string("time_span needs '") + f + "'");
  plan.t0 = finite_number(ref, span["start"], pointer_join(sp, "start"), "time_span.start");
  plan.t1 = finite_number(ref, span["end"], pointer_join(sp, "end"), "time_span.end");
  if (plan.t1 < plan.t0) invalid(ref, pointer_join(sp, "end"), "time_span.end lies before time_span.start");
  if (a.contains("expression_template_imports") && !a["expression_template_imports"].is_array())
    invalid(ref, pointer_join(ptr, "expression_template_imports"),
            "expression_template_imports must be an array of template imports (§9.7.2)");
  for (const char* block : {"parameters", "initial_state"}) {
    if (!a.contains(block)) continue;
    const json* values = &a[block];
    std::string bp = pointer_join(ptr, block);
    bool expressions = false;
    if (values->is_object() && values->contains("type") && (*values)["type"].is_string()) {
      expressions = (*values)["type"] == "expression";
      bp = pointer_join(bp, "values");
      values = &(*values)["values"];
    }
    if (!values->is_object()) invalid(ref, bp, std::string(block) + " must map names to numbers");
    for (auto it = values->begin(); it != values->end(); ++it) {
      // An initial_state of type 'expression' gives a field by an expression over its grid
      // (an aggregate over the variable's index sets, read before the run).
      if (expressions && block == std::string("initial_state") && (it->is_object() || it->is_string())) continue;
      finite_number(ref, it.value(), pointer_join(bp, it.key()), ("'" + it.key() + "'").c_str());
    }
  }
  if (a.contains("parameter_sweep")) {
    const json& sweep = a["parameter_sweep"];
    const std::string swp = pointer_join(ptr, "parameter_sweep");
    if (!sweep.is_object()) invalid(ref, swp, "parameter_sweep must be an object {type, dimensions}");
    if (sweep.value("type", std::string()) != "cartesian")
      invalid(ref, pointer_join(swp, "type"), "parameter_sweep.type must be 'cartesian' (§6.7.3)");
    if (!sweep.contains("dimensions") || !sweep["dimensions"].is_array() || sweep["dimensions"].empty())
      invalid(ref, pointer_join(swp, "dimensions"), "parameter_sweep needs at least one dimension");
    double runs = 1;
    for (std::size_t d = 0; d < sweep["dimensions"].size(); ++d) {
      const json& dim = sweep["dimensions"][d];
      const std::string dp = pointer_join(pointer_join(swp, "dimensions"), d);
      if (!dim.is_object() || !dim.contains("parameter") || !dim["parameter"].is_string())
        invalid(ref, pointer_join(dp, "parameter"), "a sweep dimension needs a 'parameter' name");
      if (dim.contains("values") == dim.contains("range"))
        invalid(ref, dp, "a sweep dimension gives exactly one of 'values' or 'range' (§6.7.3)");
      SweepDimension sd;
      sd.parameter = dim["parameter"];
      for (const SweepDimension& other : plan.sweep)
        if (other.parameter == sd.parameter)
          invalid(ref, pointer_join(dp, "parameter"), "'" + sd.parameter + "' is swept twice");
      if (dim.contains("values")) {
        const json& v = dim["values"];
        if (!v.is_array() || v.empty()) invalid(ref, pointer_join(dp, "values"), "values must be a non-empty array");
        for (std::size_t k = 0; k < v.size(); ++k)
          sd.values.push_back(finite_number(ref, v[k], pointer_join(pointer_join(dp, "values"), k), "a swept value"));
      } else {
        sd.values = range_values(ref, dim["range"], pointer_join(dp, "range"));
      }
      runs *= static_cast<double>(sd.values.size());
      if (runs > kMaxRuns)
        invalid(ref, swp, "the sweep would make more than 100000 runs");
      plan.sweep.push_back(std::move(sd));
    }
  }
  // Cartesian product, last dimension fastest.
  plan.points.emplace_back();
  for (const SweepDimension& d : plan.sweep) {
    std::vector<std::vector<double>> next;
    for (const auto& p : plan.points)
      for (double v : d.values) {
        next.push_back(p);
        next.back().push_back(v);
      }
    plan.points = std::move(next);
  }
  if (a.contains("plots") && !a["plots"].is_array()) invalid(ref, pointer_join(ptr, "plots"), "plots must be an array");
  for (std::size_t i = 0; a.contains("plots") && i < a["plots"].size(); ++i) {
    const json& p = a["plots"][i];
    const std::string pp = pointer_join(pointer_join(ptr, "plots"), i);
    if (!p.is_object() || !p.contains("id") || !p["id"].is_string())
      invalid(ref, pp, "a plot needs a string 'id'");
    static const std::vector<std::string> kTypes{"line", "scatter", "heatmap", "field_slice", "field_snapshot"};
    const std::string type = p.value("type", std::string());
    if (std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end())
      invalid(ref, pointer_join(pp, "type"), "plot type must be line, scatter, heatmap, field_slice or field_snapshot");
    if (!p.contains("x") || !p["x"].is_object() || !p["x"].contains("variable"))
      invalid(ref, pointer_join(pp, "x"), "a plot needs an x axis {variable, label?}");
    const json& y = p.contains("y") ? p["y"] : json();
    const bool y_ok = (y.is_object() && y.contains("variable")) ||
                      (y.is_array() && !y.empty() &&
                       std::all_of(y.begin(), y.end(), [](const json& e) { return e.is_object() && e.contains("variable"); }));
    if (!y_ok) invalid(ref, pointer_join(pp, "y"), "a plot needs a y axis {variable, label?} (or an array of them)");
    if (type == "field_slice" || type == "field_snapshot") {
      if (!p.contains("at_time") || !p["at_time"].is_number() || !std::isfinite(p["at_time"].get<double>()))
        invalid(ref, p.contains("at_time") ? pointer_join(pp, "at_time") : pp,
                "a field plot needs a numeric at_time: the time its field is drawn at (§6.7.4)");
      const double at = p["at_time"];
      if (at < plan.t0 || at > plan.t1)
        invalid(ref, pointer_join(pp, "at_time"), "at_time lies outside the analysis' time_span");
    }
  }
  return plan;
}

namespace {
/// The flat names a key of parameters / initial_state / a sweep sets: every cell of an array
/// variable (a number sets the whole field, as `--inputs` does), else the one resolved name.
std::vector<std::string> targets_of(const esm::System& sys, const std::string& scope, const std::string& key,
                                    const std::string& file, const std::string& pointer) {
  const auto cells_of = [&](const esm::System::Array& a) {
    std::vector<std::string> cells;
    esm::for_each_variable(
        [&](const esm::FlatVariable& v) {
          if (v.array == a.name) cells.push_back(v.name);
        },
        sys.states, sys.parameters, sys.observed);
    return cells;
  };
  for (const auto& a : sys.arrays)  // an exact name first, as resolve_local prefers it
    if (a.name == scope + "." + key || a.name == key)
      if (auto cells = cells_of(a); !cells.empty()) return cells;
  try {
    return {detail::resolve_local(sys, scope, key, file, pointer)};
  } catch (const Error&) {
    if (const esm::System::Array* a = find_array(sys, scope, key))
      if (auto cells = cells_of(*a); !cells.empty()) return cells;
    throw;
  }
}

bool defined_by_equation(const esm::System& sys, const std::string& flat) {
  if (sys.observed_index(flat) >= 0) return true;
  for (const auto& a : sys.algebraic)
    if (a.name == flat) return true;
  return false;
}
}  // namespace

struct AnalysisCache::Impl {
  const esm::ResolvedDocument* document = nullptr;
  /// By component and a fingerprint of the flattened system (a guard: flattening the same
  /// component of the same document gives the same pool and names every time).
  std::map<std::pair<std::string, std::string>, std::shared_ptr<detail::SharedJacobian>> jacobians;
};
AnalysisCache::AnalysisCache() : impl_(std::make_unique<Impl>()) {}
AnalysisCache::~AnalysisCache() = default;
std::size_t AnalysisCache::compiled_jacobians() const {
  std::size_t n = 0;
  for (const auto& [key, shared] : impl_->jacobians) {
    const std::lock_guard<std::mutex> lock(shared->mutex);
    n += shared->compiled && shared->program ? 1 : 0;
  }
  return n;
}

namespace {
std::string equations_fingerprint(const esm::System& sys) {
  std::string f = std::to_string(sys.pool.size());
  esm::for_each_variable([&](const esm::FlatVariable& v) { f += "|" + v.name; }, sys.states,
                         sys.parameters, sys.observed, sys.algebraic);
  for (expr::NodeId id : sys.state_rhs) f += "," + std::to_string(id);
  for (expr::NodeId id : sys.observed_rhs) f += "," + std::to_string(id);
  return f;
}
}  // namespace

AnalysisResult run_analysis(const esm::ResolvedDocument& doc, const AnalysisPlan& plan, const AnalyzeOptions& options) {
  AnalysisResult result;
  result.plan = plan;
  result.scope = plan.ref.component;
  const AnalysisRef& ref = plan.ref;
  // §6.7.2: an analysis may run its component under a discretization of its own, as a test
  // may (§6.6.6): the document built again with the analysis' imports added, for this run.
  std::optional<esm::ResolvedDocument> injected;
  if (ref.spec.contains("expression_template_imports"))
    injected = detail::inject_template_imports(doc, ref.component, ref.spec["expression_template_imports"], ref.file,
                                               pointer_join(ref.pointer, "expression_template_imports"), "analysis");
  const esm::ResolvedDocument& run_doc = injected ? *injected : doc;
  for (const char* registry : {"index_sets", "coordinates"})
    if (run_doc.doc.contains(registry)) result.registries[registry] = run_doc.doc[registry];
  esm::FlattenOptions fo;
  fo.component = ref.component;
  esm::System base = esm::flatten(run_doc, fo);
  // An initial_state of type 'expression' gives whole fields: each is flattened with the
  // component as an extra array over the field's cells (as `esi check` flattens an inline
  // reference), whose cell expressions become the cells' initial values.
  std::vector<std::string> initial_fields;  // flat array names, their __initial_ arrays follow
  if (const json& is = ref.spec.value("initial_state", json::object());
      is.is_object() && is.value("type", std::string()) == "expression" && is.contains("values")) {
    esm::FlattenOptions with_fields = fo;
    const std::string vp = pointer_join(pointer_join(ref.pointer, "initial_state"), "values");
    for (auto it = is["values"].begin(); it != is["values"].end(); ++it) {
      if (it->is_number()) continue;
      const std::string kp = pointer_join(vp, it.key());
      const esm::System::Array* field = find_array(base, ref.component, it.key());
      if (!field)
        throw Error("unsupported_analysis_feature", ref.file, kp,
                    "'" + it.key() + "' is not a shaped variable of '" + ref.component +
                        "'; an initial_state expression is read as a field over a variable's index sets");
      const std::string local = "__initial_" + std::to_string(initial_fields.size());
      with_fields.extra_arrays.push_back({ref.component, local, field->axes, field->extents, *it, ref.file, kp});
      initial_fields.push_back(field->name);
    }
    if (!initial_fields.empty()) base = esm::flatten(run_doc, with_fields);
  }
  if (!initial_fields.empty()) {
    std::unordered_set<std::string> unknowns;
    for (const auto& v : base.states) unknowns.insert(v.name);
    for (const auto& v : base.observed)
      if (v.array.find(".__initial_") == std::string::npos) unknowns.insert(v.name);
    std::unordered_map<std::string, expr::NodeId> initial_of;  // state cell -> its initial value
    std::vector<esm::FlatVariable> observed;
    std::vector<expr::NodeId> observed_rhs;
    for (std::size_t i = 0; i < base.observed.size(); ++i) {
      const esm::FlatVariable& v = base.observed[i];
      const std::size_t at = v.array.find(".__initial_");
      if (at == std::string::npos) {
        observed.push_back(v);
        observed_rhs.push_back(base.observed_rhs[i]);
        continue;
      }
      if (const auto name = detail::read_before_run(base, base.observed_rhs[i], unknowns))
        throw Error("invalid_analysis", v.file, v.pointer,
                    "the initial field reads '" + *name + "', which is not known before the run (it may read "
                    "parameters and the field's index symbols only)");
      const std::size_t k = std::stoul(v.array.substr(at + std::string(".__initial_").size()));
      initial_of[esm::cell_name(initial_fields[k], v.cell)] = base.observed_rhs[i];
    }
    for (std::size_t s = 0; s < base.states.size(); ++s)
      if (auto it = initial_of.find(base.states[s].name); it != initial_of.end())
        base.states.mutable_entry(s).initial = it->second;
    // The helper arrays were only the carriers of the initial values: not outputs of the run.
    base.observed = std::move(observed);
    base.observed_rhs = std::move(observed_rhs);
    base.arrays.erase(std::remove_if(base.arrays.begin(), base.arrays.end(),
                                     [](const esm::System::Array& a) {
                                       return a.name.find(".__initial_") != std::string::npos;
                                     }),
                      base.arrays.end());
  }
  // The analysis' own overrides, then the flat targets of each swept parameter.
  auto set_value = [&](esm::System& sys, const std::string& flat, double v, const std::string& ptr, bool sweep) {
    if (const int p = sys.parameter_index(flat); p >= 0) {
      sys.parameters[p].default_value = v;
      sys.parameters[p].initial = expr::kNoNode;
    } else if (const int s = sys.state_index(flat); s >= 0) {
      auto& state = sys.states.mutable_entry(static_cast<std::size_t>(s));
      state.default_value = v;
      state.initial = expr::kNoNode;
    } else if (!sweep && defined_by_equation(sys, flat)) {
      // An unknown its equation defines (an observed, or an algebraic unknown substituted into
      // one) follows from the states: its initial_state value is at most a guess, as in
      // `esi check`'s initial_conditions.
    } else {
      throw Error(sweep ? "invalid_analysis" : "unknown_override", ref.file, ptr,
                  "'" + flat + "' is neither a parameter nor a state of the system, so it cannot be " +
                      (sweep ? "swept" : "set"));
    }
  };
  for (const char* block : {"parameters", "initial_state"}) {
    if (!ref.spec.contains(block)) continue;
    const json* values = &ref.spec[block];
    std::string bp = pointer_join(ref.pointer, block);
    if (values->contains("type")) {
      bp = pointer_join(bp, "values");
      values = &(*values)["values"];
    }
    for (auto it = values->begin(); it != values->end(); ++it) {
      if (!it->is_number()) continue;  // an initial field, applied above
      const std::string kp = pointer_join(bp, it.key());
      for (const std::string& flat : targets_of(base, ref.component, it.key(), ref.file, kp))
        set_value(base, flat, it.value().get<double>(), kp, false);
    }
  }
  std::vector<std::vector<std::string>> swept;
  for (std::size_t d = 0; d < plan.sweep.size(); ++d) {
    const std::string dp = pointer_join(
        pointer_join(pointer_join(pointer_join(ref.pointer, "parameter_sweep"), "dimensions"), d), "parameter");
    swept.push_back(targets_of(base, ref.component, plan.sweep[d].parameter, ref.file, dp));
    esm::System probe = base;
    for (const std::string& flat : swept.back()) set_value(probe, flat, plan.sweep[d].values.front(), dp, true);
  }
  SimulateOptions so;
  so.t0 = plan.t0;
  so.t1 = plan.t1;
  for (int k = 0; k <= kOutputIntervals; ++k)
    so.sample_times.push_back(k == kOutputIntervals ? plan.t1 : plan.t0 + (plan.t1 - plan.t0) * k / kOutputIntervals);
  for (const json& p : ref.spec.value("plots", json::array())) {
    if (p.contains("at_time") && p["at_time"].is_number()) so.sample_times.push_back(p["at_time"]);
    if (p.contains("value") && p["value"].is_object() && p["value"].contains("at_time") &&
        p["value"]["at_time"].is_number()) {
      const double at = p["value"]["at_time"];
      if (at >= plan.t0 && at <= plan.t1) so.sample_times.push_back(at);
    }
  }
  so.integrator.method = options.method;
  so.integrator.rtol = options.rtol;
  so.integrator.atol = options.atol;
  so.document = &run_doc;
  result.runs.resize(plan.points.size());
  // The equations are compiled once per worker, not once per point: a point only changes
  // parameter defaults and initial values, which the model takes at run time.
  const unsigned workers = std::max(1u, options.jobs);
  const bool implicit_possible =
      so.integrator.method == method::MethodId::Auto || method::method_info(so.integrator.method).needs_jacobian;
  std::vector<std::unique_ptr<detail::Model>> models(workers);
  // Every worker's model has the same equations: the symbolic Jacobian (most of a build) is
  // made once, and only when a run's method needs it; once per document for analyses of a
  // component flattened plainly, whose systems differ only in values.
  std::shared_ptr<detail::SharedJacobian> shared_jacobian;
  if (options.cache && !injected && initial_fields.empty()) {
    AnalysisCache::Impl& cache = options.cache->impl();
    if (cache.document != &doc) {
      cache.jacobians.clear();
      cache.document = &doc;
    }
    auto& slot = cache.jacobians[{ref.component, equations_fingerprint(base)}];
    if (!slot) slot = std::make_shared<detail::SharedJacobian>();
    shared_jacobian = slot;
  } else {
    shared_jacobian = std::make_shared<detail::SharedJacobian>();
  }
  detail::parallel_for(plan.points.size(), workers, [&](std::size_t i, unsigned worker) {
    std::unique_ptr<detail::Model>& m = models[worker];
    result.runs[i].point = plan.points[i];
    try {
      if (!m) {  // built with this point's values: a swept parameter may have no default
        esm::System sys = base;
        for (std::size_t d = 0; d < swept.size(); ++d)
          for (const std::string& flat : swept[d]) set_value(sys, flat, plan.points[i][d], "", true);
        m = detail::build_model(sys, so.document, implicit_possible, so.require_observed_values, so.native, 1,
                               shared_jacobian);
      } else {
        for (std::size_t d = 0; d < swept.size(); ++d)
          for (const std::string& flat : swept[d]) set_value(m->system, flat, plan.points[i][d], "", true);
        m->reset_parameters(so.require_observed_values);
      }
      result.runs[i].trajectory = detail::simulate_model(*m, so);
    } catch (...) {
      m.reset();  // a half-prepared model is not reused
      throw;
    }
  });
  esm::for_each_variable(
      [&](const esm::FlatVariable& v) { result.units.emplace_back(v.name, v.units); }, base.states,
      base.observed, base.algebraic, base.parameters);
  result.system = std::move(base);
  return result;
}

json plot_data(const AnalysisResult& r) {
  json out = json::array();
  const json plots = r.plan.ref.spec.value("plots", json::array());
  for (std::size_t i = 0; i < plots.size(); ++i) {
    const json& p = plots[i];
    const std::string ptr = pointer_join(pointer_join(r.plan.ref.pointer, "plots"), i);
    const std::string type = p.value("type", std::string());
    json data;
    if (type == "line" || type == "scatter") {
      data = line_plot(r, p, ptr);
    } else if (type == "heatmap") {
      data = heatmap_plot(r, p, ptr);
    } else {
      data = field_plot(r, p, ptr);
    }
    data["id"] = p.value("id", std::string());
    data["type"] = type;
    data["description"] = p.value("description", std::string());
    data["title"] = r.plan.ref.id + ": " + p.value("id", std::string());
    if (data.contains("at_time")) data["title"] = data["title"].get<std::string>() + " (t = " + number_text(p["at_time"].get<double>()) + ")";
    out.push_back(std::move(data));
  }
  return out;
}

}  // namespace esi::exec
