// Inline analyses (spec §6.7): reading one, running its sweep, turning its plots into data.
#include "esi/exec/analyze.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/flatten.hpp"
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
  if (a.contains("expression_template_imports"))
    throw Error("unsupported_analysis_feature", ref.file, pointer_join(ptr, "expression_template_imports"),
                "analyses that inject a discretization (expression_template_imports) are not run yet; "
                "'esi check' runs tests that do");
  for (const char* block : {"parameters", "initial_state"}) {
    if (!a.contains(block)) continue;
    const json* values = &a[block];
    std::string bp = pointer_join(ptr, block);
    if (values->is_object() && values->contains("type") && (*values)["type"].is_string()) {
      if ((*values)["type"] == "expression")
        throw Error("unsupported_analysis_feature", ref.file, pointer_join(bp, "type"),
                    "initial_state of type 'expression' (field initial conditions) is not supported yet");
      bp = pointer_join(bp, "values");
      values = &(*values)["values"];
    }
    if (!values->is_object()) invalid(ref, bp, std::string(block) + " must map names to numbers");
    for (auto it = values->begin(); it != values->end(); ++it)
      finite_number(ref, it.value(), pointer_join(bp, it.key()), ("'" + it.key() + "'").c_str());
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
    if ((type == "field_slice" || type == "field_snapshot") && p.contains("at_time") && p["at_time"].is_number()) {
      const double at = p["at_time"];
      if (at < plan.t0 || at > plan.t1)
        invalid(ref, pointer_join(pp, "at_time"), "at_time lies outside the analysis' time_span");
    }
  }
  return plan;
}

namespace {
bool defined_by_equation(const esm::System& sys, const std::string& flat) {
  if (sys.observed_index(flat) >= 0) return true;
  for (const auto& a : sys.algebraic)
    if (a.name == flat) return true;
  return false;
}
}  // namespace

AnalysisResult run_analysis(const esm::ResolvedDocument& doc, const AnalysisPlan& plan, const AnalyzeOptions& options) {
  AnalysisResult result;
  result.plan = plan;
  result.scope = plan.ref.component;
  const AnalysisRef& ref = plan.ref;
  esm::FlattenOptions fo;
  fo.component = ref.component;
  esm::System base = esm::flatten(doc, fo);
  // The analysis' own overrides, then one flat target per swept parameter.
  auto set_value = [&](esm::System& sys, const std::string& flat, double v, const std::string& ptr, bool sweep) {
    if (const int p = sys.parameter_index(flat); p >= 0) {
      sys.parameters[p].default_value = v;
      sys.parameters[p].initial = expr::kNoNode;
    } else if (const int s = sys.state_index(flat); s >= 0) {
      sys.states[s].default_value = v;
      sys.states[s].initial = expr::kNoNode;
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
      const std::string kp = pointer_join(bp, it.key());
      set_value(base, detail::resolve_local(base, ref.component, it.key(), ref.file, kp), it.value().get<double>(), kp,
                false);
    }
  }
  std::vector<std::string> swept;
  for (std::size_t d = 0; d < plan.sweep.size(); ++d) {
    const std::string dp = pointer_join(
        pointer_join(pointer_join(pointer_join(ref.pointer, "parameter_sweep"), "dimensions"), d), "parameter");
    swept.push_back(detail::resolve_local(base, ref.component, plan.sweep[d].parameter, ref.file, dp));
    esm::System probe = base;
    set_value(probe, swept.back(), plan.sweep[d].values.front(), dp, true);
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
  so.document = &doc;
  result.runs.resize(plan.points.size());
  // The equations are compiled once per worker, not once per point: a point only changes
  // parameter defaults and initial values, which the model takes at run time.
  const unsigned workers = std::max(1u, options.jobs);
  const bool implicit_possible =
      so.integrator.method == method::MethodId::Auto || method::method_info(so.integrator.method).needs_jacobian;
  std::vector<std::unique_ptr<detail::Model>> models(workers);
  detail::parallel_for(plan.points.size(), workers, [&](std::size_t i, unsigned worker) {
    std::unique_ptr<detail::Model>& m = models[worker];
    result.runs[i].point = plan.points[i];
    try {
      if (!m) {  // built with this point's values: a swept parameter may have no default
        esm::System sys = base;
        for (std::size_t d = 0; d < swept.size(); ++d) set_value(sys, swept[d], plan.points[i][d], "", true);
        m = detail::build_model(sys, so.document, implicit_possible, so.require_observed_values, so.native);
      } else {
        for (std::size_t d = 0; d < swept.size(); ++d) set_value(m->system, swept[d], plan.points[i][d], "", true);
        m->reset_parameters(so.require_observed_values);
      }
      result.runs[i].trajectory = detail::simulate_model(*m, so);
    } catch (...) {
      m.reset();  // a half-prepared model is not reused
      throw;
    }
  });
  for (const auto* list : {&base.states, &base.observed, &base.algebraic, &base.parameters})
    for (const auto& v : *list) result.units.emplace_back(v.name, v.units);
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
      data = {{"skipped", "field plots (" + type + ") are not supported yet"}};
    }
    data["id"] = p.value("id", std::string());
    data["type"] = type;
    data["description"] = p.value("description", std::string());
    data["title"] = r.plan.ref.id + ": " + p.value("id", std::string());
    out.push_back(std::move(data));
  }
  return out;
}

}  // namespace esi::exec
