// exec::sweep (sweep.hpp): the members of a table run on BoundModels, one per worker thread.
#include "esi/exec/sweep.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "esi/core/error.hpp"
#include "esi/exec/bind.hpp"
#include "esi/exec/parallel.hpp"
#include "esi/exec/stochastic.hpp"

namespace esi::exec {

SweepResult sweep(const esm::ResolvedDocument& doc, const RunChoices& base, const SweepTable& table,
                  SimulateOptions options, unsigned threads) {
  const std::size_t columns = table.names.size(), members = table.members();
  if (columns == 0 || members == 0 || table.values.size() != members * columns)
    throw Error("invalid_sweep", table.file, "",
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
    Override o{name, 0.0, table.file.empty() ? "sweep column '" + name + "'" : "column '" + name + "'",
               table.file, ""};
    check_override_name(system, doc.doc, o, base.typed_at);
    r.swept.push_back(flat_target(system, name));
    r.swept_state.push_back(names_state(system, name));
    for (std::size_t j = 0; j < k; ++j)
      if (r.swept[j] == r.swept[k])
        throw Error("invalid_sweep", table.file, "",
                    "columns '" + table.names[j] + "' and '" + name + "' name the same variable " + r.swept[k]);
  }
  options.document = &doc;

  std::vector<Trajectory> runs(members);
  std::vector<std::optional<BoundModel>> models(std::max(1u, threads));
  const JacobianShare jacobian;
  parallel_for(members, std::max(1u, threads), [&](std::size_t m, unsigned worker) {
    std::optional<BoundModel>& model = models[worker];
    if (!model) model.emplace(system, options, jacobian);
    esm::System& sys = model->system();
    // As a flattened override sets them (esm::flatten): a parameter's default, a state's
    // default with its initial expression dropped.
    for (std::size_t k = 0; k < columns; ++k) {
      const double value = table.values[m * columns + k];
      if (r.swept_state[k]) {
        auto& v = sys.states.mutable_entry(static_cast<std::size_t>(sys.state_index(r.swept[k])));
        v.default_value = value;
        v.initial = expr::kNoNode;
      } else {
        sys.parameters[static_cast<std::size_t>(sys.parameter_index(r.swept[k]))].default_value = value;
      }
    }
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
  r.values.assign(members * rows * width, std::numeric_limits<double>::quiet_NaN());
  for (std::size_t m = 0; m < members; ++m) {
    Trajectory& t = runs[m];
    std::copy(t.values.begin(), t.values.end(), r.values.begin() + static_cast<std::ptrdiff_t>(m * rows * width));
    r.rows.push_back(t.times.size());
    r.codes.push_back(t.code);
    r.messages.push_back(t.message);
    r.methods.push_back(t.method);
    r.failed += t.ok() ? 0 : 1;
    r.stats.accepted += t.stats.accepted;
    r.stats.rejected += t.stats.rejected;
    r.stats.rhs_evaluations += t.stats.rhs_evaluations;
    r.stats.jacobian_evaluations += t.stats.jacobian_evaluations;
    r.stats.factorizations += t.stats.factorizations;
    r.stats.linear_solves += t.stats.linear_solves;
    t = Trajectory();  // free as we go: a sweep of 10^4 members holds one copy
  }
  return r;
}

}  // namespace esi::exec
