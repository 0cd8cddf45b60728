// The schedule's entry points (schedule.hpp): checking a configuration against a system,
// running it, and simulate's cell split run as a two-leaf schedule. The interpreter itself is
// schedule/runner.hpp; operator binding schedule/binding.hpp; forcing epochs
// forcing/epochs.hpp; restart files schedule/restart.cpp.
#include "esi/exec/schedule.hpp"

#include <optional>
#include <string>
#include <utility>

#include "esi/core/error.hpp"
#include "esi/plan/pointwise_split.hpp"
#include "exec/forcing/epochs.hpp"
#include "exec/run_support.hpp"
#include "exec/schedule/binding.hpp"
#include "exec/schedule/runner.hpp"

namespace esi::exec {

void check_schedule(const esm::System& system, const RunConfig& config,
                    const std::vector<ForcingProvider>& forcing) {
  const detail::Binding b = detail::bind(system, config);
  (void)b;
  for (const ForcingProvider& f : forcing) (void)detail::locate_forcing(system, config, f);
}

namespace detail {

Trajectory run_cell_split(const esm::System& system, const SimulateOptions& options) {
  std::string why;
  std::optional<plan::PointwiseSplit> split = plan::split_pointwise(system, why);
  if (!split)
    throw Error("no_pointwise_part", "", "",
                "lane pools run the pointwise part of a gridded system's tendencies, and this "
                "system has none that can be separated: " +
                    why);
  // Lie splitting, the grid part (if any) then the cells, as a two-leaf schedule bound
  // without the planner (the split is pointwise_split's own).
  const bool has_rest = split->has_rest;
  RunConfig config;
  config.start = options.t0;
  config.stop = options.t1;
  config.output_every = options.saveat;
  config.macro_dt = options.cell_split->step;
  config.threads = options.cell_split->cells.threads;  // the grid part's too
  config.schedule.kind = ScheduleNode::Kind::Sequence;
  config.schedule.pointer = "/schedule";
  Binding bound;
  bound.summary = "the pointwise terms on lane pools, Lie-split from the rest";
  if (has_rest) {
    ScheduleNode grid;
    grid.leaf.op = "the grid part";
    grid.leaf.method = options.integrator.method;
    grid.leaf.integrator = options.integrator;
    grid.pointer = "/schedule/sequence/0";
    config.schedule.children.push_back(grid);
    bound.target[grid.leaf.op] = Target::Rest;
  }
  ScheduleNode cells;
  cells.leaf.op = "the cells";
  cells.leaf.method = options.cell_split->cells.method;
  cells.leaf.lanes = options.cell_split->cells;
  cells.pointer = "/schedule/sequence/" + std::to_string(config.schedule.children.size());
  config.schedule.children.push_back(cells);
  bound.target[cells.leaf.op] = Target::Cells;
  ScheduleOptions so;
  so.document = options.document;
  so.native = options.native;
  so.on_columns = options.on_columns;
  so.on_row = options.on_row;
  so.stop = options.stop;
  so.sample_times = options.sample_times;
  if (options.on_step)
    so.on_step = [&](double t, const std::vector<LeafReport>&) { options.on_step(t); };
  ScheduleResult out;
  Runner runner(system, config, so, out, &bound, std::move(split));
  runner.run();
  return std::move(out.trajectory);
}

}  // namespace detail

ScheduleResult run_schedule(const esm::System& system, const RunConfig& config,
                            const ScheduleOptions& options) {
  ScheduleResult out;
  detail::Runner runner(system, config, options, out);
  runner.run();
  return out;
}

}  // namespace esi::exec
