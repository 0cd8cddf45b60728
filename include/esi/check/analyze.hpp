// Inline analyses (spec §6.7): illustrative runs of one component, optionally a Cartesian
// parameter sweep (one run per point), and the plots derived from them.
//
// Each analysis runs on its component flattened alone (like an inline test, §6.6), under its
// own `expression_template_imports` when it has them (the discretization injected for this
// run, as a test's are, §6.6.6), with its `parameters` and `initial_state` applied by the
// §6.6.2 override-key rules (a number for an array variable sets every cell; an initial_state
// of type 'expression' gives a field by an expression over its index sets), then each sweep
// point's values on top. A run samples 101 evenly spaced times over `time_span` (plus every
// plot's `at_time`), at rtol 1e-8 / atol 1e-10 with the automatic method unless the options say
// otherwise. Runs go to `jobs` threads; results are in sweep order (the last dimension varies
// fastest) whatever `jobs` is.
//
// Plots are turned into data here (`plot_data`): line / scatter against time or against a
// swept parameter (then each series' final value per run), heatmaps over two swept
// parameters with a reduced value per run, field plots (field_slice, field_snapshot) as the
// field's cells at the plot's `at_time` (an output time of every run) against its axes'
// coordinates: a profile for one axis, a grid for two.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"
#include "esi/exec/simulate.hpp"

namespace esi::check {

/// One authored analysis, found in the document.
struct AnalysisRef {
  std::string component;  ///< dotted component path
  std::string id;
  std::string file;       ///< file of the component's definition
  std::string pointer;    ///< JSON pointer of the analysis
  nlohmann::json spec;    ///< the analysis as authored
};

/// Every analysis of the document's models and reaction systems (depth first, document order),
/// only those of `component` (and its subsystems) when it is not empty. Never throws.
std::vector<AnalysisRef> find_analyses(const esm::ResolvedDocument& doc, const std::string& component = "");

struct SweepDimension {
  std::string parameter;  ///< as authored
  std::vector<double> values;
};

/// One analysis, read and checked: throws esi::Error (`invalid_analysis`) at the pointer of
/// the offending field.
struct AnalysisPlan {
  AnalysisRef ref;
  double t0 = 0, t1 = 0;
  std::vector<SweepDimension> sweep;          ///< empty: one run
  std::vector<std::vector<double>> points;    ///< one per run, a value per dimension
};
AnalysisPlan plan_analysis(const AnalysisRef& ref);

/// What the analyses of one document may share: the analytic Jacobian of a component
/// flattened plainly (no injected discretization, no initial fields), compiled once for all of
/// its analyses, whose systems differ only in parameter and initial values. Give every
/// run_analysis of one document the same cache, one call at a time.
class AnalysisCache {
 public:
  AnalysisCache();
  ~AnalysisCache();
  AnalysisCache(const AnalysisCache&) = delete;
  AnalysisCache& operator=(const AnalysisCache&) = delete;
  /// Jacobians compiled through this cache so far (each once, whatever shares it).
  std::size_t compiled_jacobians() const;
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct AnalyzeOptions {
  double rtol = 1e-8;
  double atol = 1e-10;
  method::MethodId method = method::MethodId::Auto;
  unsigned jobs = 1;
  AnalysisCache* cache = nullptr;  ///< none: each analysis compiles its own
};

struct AnalysisRun {
  std::vector<double> point;  ///< the swept values (empty without a sweep)
  exec::Trajectory trajectory;
};

struct AnalysisResult {
  AnalysisPlan plan;
  std::vector<AnalysisRun> runs;  ///< in `plan.points` order
  /// Units of every output column and parameter, by flat name (for labels).
  std::vector<std::pair<std::string, std::string>> units;
  std::string scope;  ///< the component (names are resolved under it)
  esm::System system; ///< the component flattened, with the analysis' overrides applied
  /// The `index_sets` and `coordinates` registries of the document the analysis ran on (with
  /// its injected discretization): where field plots read their axes' coordinate values.
  nlohmann::json registries = nlohmann::json::object();
};

/// Flattens the component once (under its injected discretization, if any), applies the
/// overrides and runs every point. Throws esi::Error for input the runs cannot use (unknown
/// override or sweep parameter: `unknown_override` / `ambiguous_override` at the key's pointer;
/// the loader's `template_import_*` for an injected import; `invalid_analysis` for an initial
/// field that reads unknowns, `unsupported_analysis_feature` for an initial_state expression of
/// a scalar); a failed solve is in the run's Trajectory.
AnalysisResult run_analysis(const esm::ResolvedDocument& doc, const AnalysisPlan& plan,
                            const AnalyzeOptions& options = {});

/// The data of every plot of an analysis, one JSON object per plot: {id, type, title,
/// description, xlabel, ylabel, lines: [{label, x: [...], y: [...]}]} for line / scatter,
/// {..., x: [...], y: [...], z: [[...]] (row per y), zlabel} for heatmaps, for field plots the
/// line form (one axis: a profile per run) or the heatmap form with `contours` (two axes), each
/// with `at_time` and `axes` [{name, coordinates}], or {id, type,
/// skipped: "why"} for a plot that is not drawn. Throws esi::Error (`invalid_plot`) at the
/// plot's pointer for a variable the runs do not have.
nlohmann::json plot_data(const AnalysisResult& result);

}  // namespace esi::check
