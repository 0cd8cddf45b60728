// Running an analysis (spec §6.7.2): its component flattened alone (with its own
// discretization and initial fields), its overrides applied, one run per sweep point on a few
// workers, and the Jacobian that analyses of one document share.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "check/analysis_support.hpp"
#include "check/inject_imports.hpp"
#include "esi/check/analyze.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/local_names.hpp"
#include "esi/exec/bind.hpp"
#include "esi/exec/parallel.hpp"

namespace esi::check {

using detail::find_array;
using nlohmann::json;

const esm::System::Array* detail::find_array(const esm::System& sys, const std::string& scope, const std::string& key) {
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

namespace {

/// Output rows per run: 101 evenly spaced times (what `esi simulate` writes by default).
constexpr int kOutputIntervals = 100;

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
    return {esm::resolve_local(sys, scope, key, file, pointer)};
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

std::string equations_fingerprint(const esm::System& sys) {
  std::string f = std::to_string(sys.pool.size());
  esm::for_each_variable([&](const esm::FlatVariable& v) { f += "|" + v.name; }, sys.states,
                         sys.parameters, sys.observed, sys.algebraic);
  for (expr::NodeId id : sys.state_rhs) f += "," + std::to_string(id);
  for (expr::NodeId id : sys.observed_rhs) f += "," + std::to_string(id);
  return f;
}

/// An initial_state of type 'expression' gives whole fields: each is flattened with the
/// component as an extra array over the field's cells (as `esi check` flattens an inline
/// reference), whose cell expressions become the cells' initial values. Returns the fields'
/// flat array names (their __initial_ arrays follow in that order); `base` is flattened again
/// when there are any.
std::vector<std::string> flatten_initial_fields(const esm::ResolvedDocument& run_doc, const AnalysisRef& ref,
                                                const esm::FlattenOptions& fo, esm::System& base) {
  std::vector<std::string> initial_fields;
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
  return initial_fields;
}

/// The cells' initial values, read from the helper arrays flatten_initial_fields added.
void take_initial_values(esm::System& base, const std::vector<std::string>& initial_fields) {
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

/// Sets parameter or state `flat` to `v` (an override, or a sweep point's value).
void set_value(esm::System& sys, const std::string& flat, double v, const AnalysisRef& ref, const std::string& ptr,
               bool sweep) {
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
}

/// The analysis' own `parameters` and `initial_state` numbers.
void apply_overrides(esm::System& base, const AnalysisRef& ref) {
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
        set_value(base, flat, it.value().get<double>(), ref, kp, false);
    }
  }
}

/// The flat targets of each swept parameter, each checked against the dimension's first value.
std::vector<std::vector<std::string>> swept_targets(const esm::System& base, const AnalysisPlan& plan) {
  const AnalysisRef& ref = plan.ref;
  std::vector<std::vector<std::string>> swept;
  for (std::size_t d = 0; d < plan.sweep.size(); ++d) {
    const std::string dp = pointer_join(
        pointer_join(pointer_join(pointer_join(ref.pointer, "parameter_sweep"), "dimensions"), d), "parameter");
    swept.push_back(targets_of(base, ref.component, plan.sweep[d].parameter, ref.file, dp));
    esm::System probe = base;
    for (const std::string& flat : swept.back()) set_value(probe, flat, plan.sweep[d].values.front(), ref, dp, true);
  }
  return swept;
}

/// 101 evenly spaced output times plus every plot's at_time, at the requested tolerances.
exec::SimulateOptions run_options(const AnalysisPlan& plan, const AnalyzeOptions& options,
                                  const esm::ResolvedDocument& run_doc) {
  const AnalysisRef& ref = plan.ref;
  exec::SimulateOptions so;
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
  return so;
}

}  // namespace

struct AnalysisCache::Impl {
  const esm::ResolvedDocument* document = nullptr;
  /// By component and a fingerprint of the flattened system (a guard: flattening the same
  /// component of the same document gives the same pool and names every time).
  std::map<std::pair<std::string, std::string>, exec::JacobianShare> jacobians;
};
AnalysisCache::AnalysisCache() : impl_(std::make_unique<Impl>()) {}
AnalysisCache::~AnalysisCache() = default;
std::size_t AnalysisCache::compiled_jacobians() const {
  std::size_t n = 0;
  for (const auto& [key, shared] : impl_->jacobians) n += shared.compiled() ? 1 : 0;
  return n;
}

namespace {

/// Every worker's model has the same equations: the symbolic Jacobian (most of a build) is
/// made once, and only when a run's method needs it; once per document for analyses of a
/// component flattened plainly (`plain`), whose systems differ only in values.
exec::JacobianShare jacobian_for(const esm::ResolvedDocument& doc, const AnalysisRef& ref, const esm::System& base,
                                 bool plain, const AnalyzeOptions& options) {
  if (!options.cache || !plain) return exec::JacobianShare();
  AnalysisCache::Impl& cache = options.cache->impl();
  if (cache.document != &doc) {
    cache.jacobians.clear();
    cache.document = &doc;
  }
  return cache.jacobians[{ref.component, equations_fingerprint(base)}];
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
  std::vector<std::string> initial_fields = flatten_initial_fields(run_doc, ref, fo, base);
  if (!initial_fields.empty()) take_initial_values(base, initial_fields);
  apply_overrides(base, ref);
  const std::vector<std::vector<std::string>> swept = swept_targets(base, plan);
  const exec::SimulateOptions so = run_options(plan, options, run_doc);
  result.runs.resize(plan.points.size());
  // The equations are compiled once per worker, not once per point: a point only changes
  // parameter defaults and initial values, which the model takes at run time.
  const unsigned workers = std::max(1u, options.jobs);
  std::vector<std::optional<exec::BoundModel>> models(workers);
  const exec::JacobianShare jacobian = jacobian_for(doc, ref, base, !injected && initial_fields.empty(), options);
  exec::parallel_for(plan.points.size(), workers, [&](std::size_t i, unsigned worker) {
    std::optional<exec::BoundModel>& m = models[worker];
    result.runs[i].point = plan.points[i];
    try {
      if (!m) {  // built with this point's values: a swept parameter may have no default
        esm::System sys = base;
        for (std::size_t d = 0; d < swept.size(); ++d)
          for (const std::string& flat : swept[d]) set_value(sys, flat, plan.points[i][d], ref, "", true);
        m.emplace(sys, so, jacobian);
      } else {
        for (std::size_t d = 0; d < swept.size(); ++d)
          for (const std::string& flat : swept[d]) set_value(m->system(), flat, plan.points[i][d], ref, "", true);
        m->rebind();
      }
      result.runs[i].trajectory = m->simulate(so);
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

}  // namespace esi::check
