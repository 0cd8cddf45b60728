// Forcing given as an expression in the run configuration (ForcingSpec::Kind::Expression):
// records of a parameter or parameter array computed from t and each cell's position, for
// experiments that need a smooth, known forcing without writing a NetCDF file.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/exec/forcing.hpp"
#include "esi/expr/parse.hpp"
#include "exec/model.hpp"
#include "exec/run_support.hpp"

namespace esi::exec {

namespace {

/// The expression compiled over a system whose states are the target's axes (one lane per
/// cell would need the lane API; records are read rarely, so one cell at a time is enough).
struct CompiledExpression {
  esm::System system;
  std::vector<std::string> axes;
  std::vector<std::int64_t> extents;
  std::unique_ptr<detail::Evaluator> eval;
  std::string file, pointer, target;

  void record(double t, std::span<double> out) {
    std::vector<double> position(axes.size(), 1.0);
    for (std::size_t n = 0; n < out.size(); ++n) {
      const double v = eval->evaluate(t, position)[0];
      if (!std::isfinite(v)) {
        std::string at;
        for (std::size_t d = 0; d < axes.size(); ++d)
          at += (d ? ", " : "") + axes[d] + " = " +
                std::to_string(static_cast<std::int64_t>(position[d]));
        throw Error("forcing_expression_invalid", file, pointer,
                    "the forcing expression of '" + target + "' is " +
                        (std::isnan(v) ? "NaN" : "infinite") + " at t = " + detail::number_text(t) +
                        (at.empty() ? "" : " and " + at));
      }
      out[n] = v;
      for (std::size_t d = 0;
           d < position.size() && ++position[d] > static_cast<double>(extents[d]); ++d)
        position[d] = 1.0;
    }
  }
};

}  // namespace

ForcingProvider expression_forcing(const RunConfig& config, const ForcingSpec& spec,
                                   const esm::System& system) {
  auto c = std::make_shared<CompiledExpression>();
  c->file = config.file;
  c->pointer = pointer_join(spec.pointer, "expression");
  c->target = spec.target;
  const esm::System::Array* array = nullptr;
  for (const auto& a : system.arrays)
    if (a.name == spec.target) array = &a;
  if (array) {
    for (std::size_t d = 0; d < array->axes.size(); ++d)
      if (array->axes[d] != spec.bracket) {  // records are bracketed along that axis, not computed
        c->axes.push_back(array->axes[d]);
        c->extents.push_back(array->extents[d]);
      }
  } else if (system.parameter_index(spec.target) < 0) {
    throw Error("forcing_target_unknown", config.file, spec.pointer,
                "'" + spec.target + "' is not a parameter or parameter array of the model");
  }
  const expr::NodeId root = expr::parse(c->system.pool, spec.expression, config.file, c->pointer);
  std::vector<std::string> names;
  detail::collect_symbols(c->system.pool, root, names);
  bool reads_time = false;
  for (const std::string& n : names) {
    if (n == "t") {
      reads_time = true;
      continue;
    }
    if (std::find(c->axes.begin(), c->axes.end(), n) == c->axes.end()) {
      std::string allowed = "t";
      for (const auto& a : c->axes) allowed += ", " + a;
      throw Error("forcing_expression_invalid", config.file, c->pointer,
                  "the forcing expression of '" + spec.target + "' reads '" + n +
                      "'; it may read only " + allowed +
                      " (the target's axes give each cell's position)");
    }
  }
  if (reads_time && !(spec.every > 0))
    throw Error(
        "forcing_expression_invalid", config.file, c->pointer,
        "the forcing expression of '" + spec.target +
            "' reads t, so it needs \"every\": the seconds between the records it is evaluated at");
  for (const std::string& a : c->axes) {
    esm::FlatVariable v;
    v.name = a;
    c->system.states.push_back(v);
    c->system.state_rhs.push_back(expr::kNoNode);
  }
  const expr::NodeId outputs[1] = {root};
  try {
    c->eval = std::make_unique<detail::Evaluator>(c->system, outputs);
  } catch (const Error& e) {  // e.g. an operator the kernel lacks: locate it in the configuration
    Diagnostic d = e.diagnostic();
    if (d.file.empty()) d.file = config.file;
    if (d.pointer.empty()) d.pointer = c->pointer;
    throw Error(d);
  }
  c->eval->prepare({});

  ForcingProvider p;
  p.target = spec.target;
  p.pointer = spec.pointer;
  p.bracket = spec.bracket;
  p.record_values = 1;
  for (std::int64_t e : c->extents) p.record_values *= static_cast<std::size_t>(e);
  if (spec.every > 0) {
    // Enough records that the last bracketing pair still holds the stop time.
    const auto last =
        static_cast<std::size_t>(std::floor((config.stop - config.start) / spec.every)) + 1;
    for (std::size_t k = 0; k <= last; ++k)
      p.times.push_back(config.start + spec.every * static_cast<double>(k));
  } else {
    p.times = {config.start};
  }
  // The first record now, so that a NaN or an infinity is refused before the run.
  std::vector<double> first(p.record_values);
  c->record(p.times[0], first);
  p.read = [c, times = p.times](std::size_t k, std::span<double> out) { c->record(times[k], out); };
  return p;
}

}  // namespace esi::exec
