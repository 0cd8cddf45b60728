// Reading analyses (spec §6.7.1, §6.7.3): finding them in a document, and checking one into a
// plan (time span, overrides, the sweep's points, the plots' fields).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "esi/check/analyze.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"

namespace esi::check {
namespace {

using nlohmann::json;

/// Runs an analysis may ask for: a sweep is a Cartesian product and grows fast.
constexpr double kMaxRuns = 100000;

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

/// `parameters` and `initial_state` map names to finite numbers (an initial field excepted).
void check_overrides(const AnalysisRef& ref) {
  const json& a = ref.spec;
  const std::string& ptr = ref.pointer;
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
}

/// The swept dimensions of `parameter_sweep`, if any, in authored order.
void read_sweep(const AnalysisRef& ref, AnalysisPlan& plan) {
  const json& a = ref.spec;
  const std::string& ptr = ref.pointer;
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
}

void cartesian_points(AnalysisPlan& plan) {
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
}

/// Each plot's id, type and axes, and a field plot's at_time inside the span.
void check_plots(const AnalysisRef& ref, const AnalysisPlan& plan) {
  const json& a = ref.spec;
  const std::string& ptr = ref.pointer;
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
  check_overrides(ref);
  read_sweep(ref, plan);
  cartesian_points(plan);
  check_plots(ref, plan);
  return plan;
}

}  // namespace esi::check
