// Plot data (spec §6.7.4): line and scatter plots against time or a swept parameter, heatmaps
// over two swept parameters, and what every plot's data carries (id, type, title).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "check/analysis_support.hpp"
#include "esi/check/analyze.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/local_names.hpp"

namespace esi::check::detail {

using nlohmann::json;
using exec::Trajectory;

namespace {

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

std::string units_of(const AnalysisResult& r, const std::string& flat) {
  for (const auto& [n, u] : r.units)
    if (n == flat) return u;
  return "";
}

}  // namespace

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
    s.flat = esm::resolve_local(r.system, r.scope, name, ref.file, pointer);
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

namespace {

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

}  // namespace

std::string axis_label(const json& axis, const Source& s) {
  if (axis.is_object() && axis.contains("label") && axis["label"].is_string()) return axis["label"];
  return s.units.empty() ? s.name : s.name + " [" + s.units + "]";
}

TimeUnit natural_time_unit(double seconds) {
  static const TimeUnit units[] = {{"yr", 1 / (365.25 * 86400)}, {"d", 1.0 / 86400}, {"h", 1.0 / 3600}, {"min", 1.0 / 60}};
  for (const TimeUnit& u : units)
    if (std::abs(seconds) * u.per_second >= 2) return u;
  return {};
}

std::string point_label(const AnalysisResult& r, const std::vector<double>& point, int skip) {
  std::string out;
  for (std::size_t d = 0; d < point.size(); ++d) {
    if (static_cast<int>(d) == skip) continue;
    const std::string& name = r.plan.sweep[d].parameter;
    std::string value = number_text(point[d]);
    try {
      if (units_of(r, esm::resolve_local(r.system, r.scope, name, r.plan.ref.file, "")) == "s") {
        const TimeUnit u = natural_time_unit(point[d]);
        if (u.name != "s") {
          char buf[64];
          std::snprintf(buf, sizeof buf, "%.4g %s", point[d] * u.per_second, u.name.c_str());
          value = buf;
        }
      }
    } catch (const Error&) {
      // a swept name the system does not hold keeps its plain number
    }
    out += (out.empty() ? "" : ", ") + name + "=" + value;
  }
  return out;
}

namespace {

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
    // Time on the x axis in the unit that reads naturally (a 200-year run in yr, not 10^9 s),
    // unless the document names the axis itself.
    TimeUnit time_unit;
    if (x.kind == Source::Time && !(plot["x"].is_object() && plot["x"].contains("label"))) {
      double last = 0;
      for (const AnalysisRun& run : r.runs)
        for (double t : run.trajectory.times) last = std::max(last, std::abs(t));
      time_unit = natural_time_unit(last);
      out["xlabel"] = x.name + " [" + time_unit.name + "]";
    }
    for (const AnalysisRun& run : r.runs) {
      const Trajectory& traj = run.trajectory;
      // A run that stopped early ends where it stopped: its legend says so and the plot marks
      // the last point (plot::Series::ended_early), rather than a line that just ends.
      std::string stopped;
      if (!traj.ok()) {
        const double at = traj.times.empty() ? NAN : traj.times.back();
        const TimeUnit u = natural_time_unit(at);
        char buf[96];
        std::snprintf(buf, sizeof buf, "stopped at t = %.4g %s: %s", at * u.per_second, u.name.c_str(),
                      std::string(method::return_code_name(traj.code)).c_str());
        stopped = buf;
      }
      for (const auto& [name, src] : series) {
        std::string label = name;
        if (r.runs.size() > 1) label = series.size() > 1 ? name + " (" + point_label(r, run.point) + ")"
                                                         : point_label(r, run.point);
        std::vector<double> xs = series_of(x, run);
        if (time_unit.per_second != 1)
          for (double& v : xs) v *= time_unit.per_second;
        json line = {{"label", label}, {"x", xs}, {"y", series_of(src, run)}};
        if (!stopped.empty()) {
          line["label"] = label + " [" + stopped + "]";
          line["ended_early"] = traj.message.empty() ? stopped : traj.message;
        }
        out["lines"].push_back(std::move(line));
      }
    }
    return out;
  }
  // Against a swept parameter (or a constant): one point per run, each series' final value;
  // runs that differ in the other swept dimensions make separate lines.
  if (x.kind == Source::Swept) out["xscale"] = sweep_scale(plan, x.dim);
  std::map<std::string, std::vector<const AnalysisRun*>> groups;
  std::vector<std::string> order;
  for (const AnalysisRun& run : r.runs) {
    const std::string key = point_label(r, run.point, x.dim);
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

}  // namespace
}  // namespace esi::check::detail

namespace esi::check {

using nlohmann::json;

json plot_data(const AnalysisResult& r) {
  json out = json::array();
  const json plots = r.plan.ref.spec.value("plots", json::array());
  for (std::size_t i = 0; i < plots.size(); ++i) {
    const json& p = plots[i];
    const std::string ptr = pointer_join(pointer_join(r.plan.ref.pointer, "plots"), i);
    const std::string type = p.value("type", std::string());
    json data;
    if (type == "line" || type == "scatter") {
      data = detail::line_plot(r, p, ptr);
    } else if (type == "heatmap") {
      data = detail::heatmap_plot(r, p, ptr);
    } else {
      data = detail::field_plot(r, p, ptr);
    }
    data["id"] = p.value("id", std::string());
    data["type"] = type;
    data["description"] = p.value("description", std::string());
    data["title"] = r.plan.ref.id + ": " + p.value("id", std::string());
    if (data.contains("at_time")) data["title"] = data["title"].get<std::string>() + " (t = " + detail::number_text(p["at_time"].get<double>()) + ")";
    out.push_back(std::move(data));
  }
  return out;
}

}  // namespace esi::check
