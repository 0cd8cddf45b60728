// exec::sweep (sweep.hpp): the members of a table on BoundModels, one per worker thread, or as
// the cells of lane pools.
#include "esi/exec/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "esi/core/error.hpp"
#include "esi/exec/bind.hpp"
#include "esi/exec/lane_pool.hpp"
#include "esi/exec/parallel.hpp"
#include "esi/exec/stochastic.hpp"
#include "exec/model.hpp"
#include "exec/run_support.hpp"

namespace esi::exec {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Member m's values in `sys`, as a flattened override sets them (esm::flatten): a parameter's
/// default, a state's default with its initial expression dropped.
void set_member(esm::System& sys, const SweepTable& table, const SweepResult& r, std::size_t m) {
  const std::size_t columns = table.names.size();
  for (std::size_t k = 0; k < columns; ++k) {
    const double value = table.values[m * columns + k];
    if (r.swept_state[k]) {
      auto& v = sys.states.mutable_entry(static_cast<std::size_t>(sys.state_index(r.swept[k])));
      v.default_value = value;
      v.initial = expr::kNoNode;
    } else {
      sys.parameters[static_cast<std::size_t>(sys.parameter_index(r.swept[k]))].default_value =
          value;
    }
  }
}

void add_stats(method::IntegratorStats& total, const method::IntegratorStats& s) {
  total.accepted += s.accepted;
  total.rejected += s.rejected;
  total.rhs_evaluations += s.rhs_evaluations;
  total.jacobian_evaluations += s.jacobian_evaluations;
  total.factorizations += s.factorizations;
  total.linear_solves += s.linear_solves;
}

void sweep_scalar(const esm::System& system, const SweepTable& table,
                  const SimulateOptions& options, unsigned threads, SweepResult& r) {
  const std::size_t members = table.members();
  std::vector<Trajectory> runs(members);
  std::vector<std::optional<BoundModel>> models(std::max(1u, threads));
  const JacobianShare jacobian;
  parallel_for(members, std::max(1u, threads), [&](std::size_t m, unsigned worker) {
    std::optional<BoundModel>& model = models[worker];
    if (!model) model.emplace(system, options, jacobian);
    set_member(model->system(), table, r, m);
    model->rebind();
    runs[m] = model->simulate(options);
  });

  // The output times: the longest member's (every member is asked for the same ones).
  std::size_t longest = 0;
  for (std::size_t m = 0; m < members; ++m)
    if (runs[m].times.size() > runs[longest].times.size()) longest = m;
  r.names = runs[longest].names;
  r.state_count = runs[longest].state_count;
  r.times = runs[longest].times;
  const std::size_t rows = r.times.size(), width = r.names.size();
  r.values.assign(members * rows * width, kNaN);
  for (std::size_t m = 0; m < members; ++m) {
    Trajectory& t = runs[m];
    std::copy(t.values.begin(), t.values.end(),
              r.values.begin() + static_cast<std::ptrdiff_t>(m * rows * width));
    r.rows.push_back(t.times.size());
    r.codes.push_back(t.code);
    r.messages.push_back(t.message);
    r.methods.push_back(t.method);
    add_stats(r.stats, t.stats);
    t = Trajectory();  // free as we go: a sweep of 10^4 members holds one copy
  }
}

void sweep_lanes(const esm::System& system, const esm::ResolvedDocument& doc,
                 const SweepTable& table, const SimulateOptions& options, unsigned threads,
                 int lanes, SweepResult& r) {
  method::MethodId method = options.integrator.method;
  if (method == method::MethodId::Auto) method = method::MethodId::Rodas3;
  if (!method::is_rosenbrock(method))
    throw Error("sweep_unsupported_method", "", "",
                "lane pools run Rosenbrock methods (Rodas3, Rodas5P, ROS3P, ...), not " +
                    std::string(method::method_info(method).name) +
                    "; sweep on the scalar engine instead");
  if (!system.events.empty())
    throw Error("sweep_unsupported_model", doc.file, "",
                "the model has events, which lane pools do not apply");
  const std::size_t members = table.members(), columns = table.names.size();

  // Each member's initial state and parameter values, as simulate would start it.
  std::unique_ptr<detail::Model> model =
      detail::build_model(system, &doc, false, options.require_observed_values, false, 1, nullptr);
  const std::size_t n = model->system.states.size(), P = model->system.parameters.size();
  std::vector<double> u0(members * n), p(members * P);
  for (std::size_t m = 0; m < members; ++m) {
    set_member(model->system, table, r, m);
    model->reset_parameters(options.require_observed_values);
    const std::vector<double> u = model->initial_state();
    for (std::size_t s = 0; s < n; ++s) {
      if (std::isnan(u[s]))
        throw Error("missing_initial_value", model->system.states[s].file,
                    model->system.states[s].pointer,
                    model->system.states[s].name + " has no initial value");
    }
    std::copy(u.begin(), u.end(), u0.begin() + static_cast<std::ptrdiff_t>(m * n));
    std::copy(model->p.begin(), model->p.end(), p.begin() + static_cast<std::ptrdiff_t>(m * P));
  }

  CellModelOptions cmo;
  std::vector<std::size_t> swept_parameter;  // their System::parameters index
  for (std::size_t k = 0; k < columns; ++k)
    if (!r.swept_state[k]) {
      cmo.cell_parameters.push_back(r.swept[k]);
      swept_parameter.push_back(
          static_cast<std::size_t>(model->system.parameter_index(r.swept[k])));
    }
  cmo.native = options.native;
  cmo.native_lanes = lanes;
  const std::shared_ptr<const CellModel> cells = CellModel::build(system, cmo);

  LanePoolOptions lpo;
  lpo.method = method;
  lpo.rtol = options.integrator.rtol;
  lpo.atol = {options.integrator.atol};
  if (options.atol_from_scales) {
    lpo.atol.assign(n, options.integrator.atol);
    for (std::size_t m = 0; m < members; ++m) {
      const std::vector<double> each = atol_from_scales(
          system, std::span<const double>(u0.data() + m * n, n), options.integrator.atol);
      for (std::size_t s = 0; s < n; ++s) lpo.atol[s] = std::min(lpo.atol[s], each[s]);
    }
  }
  lpo.threads = static_cast<int>(std::max(1u, threads));
  lpo.lanes = lanes;
  lpo.max_steps = options.integrator.max_steps;

  std::vector<double> states(n * members), cell_parameters(swept_parameter.size() * members),
      step(members, 0.0);
  for (std::size_t m = 0; m < members; ++m) {
    for (std::size_t s = 0; s < n; ++s) states[s * members + m] = u0[m * n + s];
    for (std::size_t q = 0; q < swept_parameter.size(); ++q)
      cell_parameters[q * members + m] = p[m * P + swept_parameter[q]];
  }
  std::vector<method::ReturnCode> codes(members, method::ReturnCode::Success);
  CellData data;
  data.cells = members;
  data.states = states;
  data.cell_parameters = cell_parameters;
  data.parameters = std::span<const double>(p.data(), P);  // the shared ones: any member's
  data.step_size = step;
  data.codes = codes;

  // The states at every output time, then the observeds from them.
  for (std::size_t s = 0; s < n; ++s) r.names.push_back(model->system.states.name(s));
  for (const auto& v : model->system.observed) r.names.push_back(v.name);
  r.state_count = n;
  std::vector<double> at;  // member-major states per output time: at[(k * members + m) * n + s]
  std::vector<bool> alive(members, true);
  r.rows.assign(members, 0);
  r.codes.assign(members, method::ReturnCode::Success);
  r.messages.assign(members, "");
  r.methods.assign(members, method);
  const auto record = [&](double t) {
    r.times.push_back(t);
    at.resize(r.times.size() * members * n, kNaN);
    double* row = at.data() + (r.times.size() - 1) * members * n;
    for (std::size_t m = 0; m < members; ++m) {
      if (!alive[m]) continue;
      for (std::size_t s = 0; s < n; ++s) row[m * n + s] = states[s * members + m];
      ++r.rows[m];
    }
  };
  detail::OutputClock clock(options);
  double t = clock.peek();
  record(t);
  clock.pop();
  for (; !clock.done(); clock.pop()) {
    const double next = clock.peek();
    const LanePoolStats s = integrate_cells(*cells, data, t, next, lpo);
    add_stats(r.stats, {s.accepted, s.rejected, s.rhs_evaluations, s.jacobian_evaluations,
                        s.factorizations, s.linear_solves});
    for (std::size_t m = 0; m < members; ++m)
      if (alive[m] && codes[m] != method::ReturnCode::Success) {
        alive[m] = false;
        r.codes[m] = codes[m];
        r.messages[m] = std::string(method::return_code_name(codes[m])) +
                        " between t = " + detail::number_text(t) + " and " +
                        detail::number_text(next);
      }
    t = next;
    record(t);
  }

  const std::size_t rows = r.times.size(), width = r.names.size();
  r.values.assign(members * rows * width, kNaN);
  detail::Evaluator observed(model->system, model->system.observed_rhs);
  for (std::size_t m = 0; m < members; ++m) {
    if (observed.size() > 0) observed.prepare(std::span<const double>(p.data() + m * P, P));
    for (std::size_t k = 0; k < r.rows[m]; ++k) {
      const double* u = at.data() + (k * members + m) * n;
      double* out = r.values.data() + (m * rows + k) * width;
      std::copy(u, u + n, out);
      if (observed.size() == 0) continue;
      const std::span<const double> y =
          observed.evaluate(r.times[k], std::span<const double>(u, n));
      std::copy(y.begin(), y.end(), out + n);
    }
  }
}

}  // namespace

SweepResult sweep(const esm::ResolvedDocument& doc, const RunChoices& base, const SweepTable& table,
                  SimulateOptions options, unsigned threads, SweepEngine engine, int lanes) {
  const std::size_t columns = table.names.size(), members = table.members();
  if (columns == 0 || members == 0 || table.values.size() != members * columns)
    throw Error(
        "invalid_sweep", table.file, "",
        "a sweep needs at least one column and one row of values, every row as long as the header");
  options.threads = 1;
  const esm::System system = flatten_for_run(doc, base, options);
  if (options.cell_split || !system.grid.empty())
    throw Error("sweep_unsupported_model", doc.file, "",
                "the model has arrays on a grid; sweeps run box models (one run per member)");
  if (is_stochastic(system))
    throw Error("sweep_unsupported_model", doc.file, "",
                "the model has random parameters; sweeps run deterministic models");
  SweepResult r;
  for (std::size_t k = 0; k < columns; ++k) {
    const std::string& name = table.names[k];
    Override o{name, 0.0,
               table.file.empty() ? "sweep column '" + name + "'" : "column '" + name + "'",
               table.file, ""};
    check_override_name(system, doc.doc, o, base.typed_at);
    r.swept.push_back(flat_target(system, name));
    r.swept_state.push_back(names_state(system, name));
    for (std::size_t j = 0; j < k; ++j)
      if (r.swept[j] == r.swept[k])
        throw Error("invalid_sweep", table.file, "",
                    "columns '" + table.names[j] + "' and '" + name + "' name the same variable " +
                        r.swept[k]);
  }
  options.document = &doc;
  if (engine == SweepEngine::Lanes)
    sweep_lanes(system, doc, table, options, threads, lanes, r);
  else
    sweep_scalar(system, table, options, threads, r);
  for (method::ReturnCode c : r.codes) r.failed += c == method::ReturnCode::Success ? 0 : 1;
  return r;
}

}  // namespace esi::exec
