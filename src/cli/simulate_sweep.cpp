// `esi simulate MODEL --params TABLE.csv --sweep` (simulate.hpp): one run per table row through
// exec::sweep, every member's rows in one CSV with a leading `member` column (0-based table
// row), columns in `esi inspect`'s order as a plain run writes them, and a sidecar naming the
// swept columns. A member whose solve fails keeps the rows it reached; the run then says which
// members failed and why, and exits 1.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/simulate.hpp"
#include "esi/core/error.hpp"
#include "esi/exec/sweep.hpp"
#include "esi/io/csv.hpp"

namespace esi::cli::sim {

int run_sweep(SimulateArgs& s, const esm::ResolvedDocument& doc) {
  if (is_netcdf_output(s.output))
    throw Error("unsupported_output_format", s.output, "",
                "--sweep writes CSV (a leading member column); use --output FILE.csv");
  exec::SimulateOptions o = s.options;
  // The system as every member flattens it: its columns' units for the sidecar, and its preset
  // event times, which join the output grid when there is no --saveat, as in a plain run.
  exec::SimulateOptions probe = s.options;
  const esm::System system = exec::flatten_for_run(doc, run_choices(s), probe);
  if (s.default_saveat) o.sample_times = exec::preset_event_times(system, o.t0, o.t1);
  const std::string started_at = utc_now();
  const auto started = std::chrono::steady_clock::now();
  io::CsvWriter csv(s.output);
  exec::SweepResult r;
  std::vector<std::string> column_names;
  try {
    r = exec::sweep(doc, run_choices(s), s.table, o, s.threads,
                    s.sweep_lanes ? exec::SweepEngine::Lanes : exec::SweepEngine::Scalar, s.lanes);
    const std::vector<std::size_t> order = inspect_column_order(r.names, r.state_count);
    std::vector<std::string> names{"t"};
    for (std::size_t j : order) names.push_back(r.names[j]), column_names.push_back(r.names[j]);
    csv.header(names, "member");
    const std::size_t rows = r.times.size(), width = r.names.size();
    std::vector<double> row(width + 1);
    for (std::size_t m = 0; m < s.table.members(); ++m)
      for (std::size_t k = 0; k < r.rows[m]; ++k) {
        row[0] = r.times[k];
        const double* values = r.values.data() + (m * rows + k) * width;
        for (std::size_t j = 0; j < order.size(); ++j) row[j + 1] = values[order[j]];
        csv.row(static_cast<double>(m), row);
      }
  } catch (const Error& e) {
    if (e.diagnostic().code != "output_write_failed") csv.discard();
    throw;
  }
  csv.close();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::size_t members = s.table.members();
  std::size_t first_failed = members;
  for (std::size_t m = 0; m < members && first_failed == members; ++m)
    if (r.codes[m] != method::ReturnCode::Success) first_failed = m;
  const nlohmann::json report = {
      {"file", s.file},
      {"component", s.component},
      {"kind", "sweep"},
      {"engine", s.sweep_lanes ? "lanes" : "scalar"},
      {"members", members},
      {"failed_members", r.failed},
      {"swept", r.swept},
      {"threads", s.threads},
      {"steps", r.stats.accepted},
      {"rejected_steps", r.stats.rejected},
      {"output_rows", r.times.size()},
      {"failure", first_failed == members
                      ? ""
                      : "member " + std::to_string(first_failed) + ": " + r.messages[first_failed]},
      {"wall_seconds", wall},
      {"version", ESI_VERSION}};
  if (s.output != "-") {
    const ColumnCatalog catalog(system);
    nlohmann::json columns = nlohmann::json::array();
    columns.push_back({{"name", "member"}, {"kind", "member"}, {"units", ""}});
    columns.push_back({{"name", "t"}, {"kind", "time"}, {"units", "s"}});
    for (const std::string& n : column_names) columns.push_back(catalog.column(n));
    nlohmann::json run = run_metadata(s, started_at);
    for (const char* key :
         {"kind", "engine", "members", "failed_members", "swept", "output_rows", "failure"})
      run[key] = report[key];
    run["table"] = s.table.file;
    run["wall_seconds"] = wall;
    write_sidecar(s, std::move(columns), std::move(run));
  }
  if (!s.stats.empty()) write_stats(s.stats, report);
  if (!s.quiet)
    std::fprintf(stderr,
                 "esi simulate: sweep of %zu member%s over %zu column%s%s, %ld steps in all, %u "
                 "thread%s, %.3g s\n",
                 members, members == 1 ? "" : "s", r.swept.size(), r.swept.size() == 1 ? "" : "s",
                 s.sweep_lanes ? " on lane pools" : "", r.stats.accepted, s.threads,
                 s.threads == 1 ? "" : "s", wall);
  if (first_failed != members) {
    std::fprintf(stderr,
                 "%s: error[solve_failed]: %zu of %zu members stopped early; the first, %s\n",
                 s.file.c_str(), r.failed, members, report["failure"].get<std::string>().c_str());
    return kExitInvalid;
  }
  return kExitOk;
}

}  // namespace esi::cli::sim
