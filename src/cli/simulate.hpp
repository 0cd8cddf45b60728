// Private to cli: what the files of `esi simulate` share (simulate.cpp runs it): the parsed
// command line, --set name resolution, the run's report, sidecar and NetCDF provenance, and
// stochastic runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/params.hpp"
#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"
#include "esi/exec/gradient.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/exec/sweep.hpp"
#include "esi/io/netcdf_output.hpp"
#include "esi/method/integrator.hpp"
#include "esi/method/sde.hpp"

namespace esi::cli::sim {

struct SimulateArgs {
  std::string file, component, output, stats, inputs;
  std::string command_line;  ///< "esi simulate ..." as given (NetCDF provenance)
  bool quiet = false;
  bool cells = false;  ///< --cells: arrays as one equation per cell even for explicit methods
  bool default_saveat = false;  ///< no --saveat: (T1 - T0) / 100
  bool have_tspan = false, have_component = false, have_dt = false;
  exec::SimulateOptions options;
  /// --set and --params entries in command-line order (a later one for the same name wins).
  std::vector<Override> sets;
  std::vector<std::string> params_files;
  /// Where each --params file's overrides go among `sets` (read after all options are parsed).
  std::vector<std::size_t> params_positions;
  // --sweep: the one --params file is a table, one member per row (cli/params.hpp).
  bool sweep = false;
  bool sweep_lanes = false;  ///< --sweep-engine lanes: members as cells of lane pools
  exec::SweepTable table;
  // Stochastic models only.
  std::optional<method::SdeMethod> sde_method;
  std::uint64_t seed = 0;
  std::size_t ensemble = 0;  ///< 0: one path, written like a deterministic run
  unsigned threads = 1;
  bool members = false, have_seed = false;
  // Gridded models with a pointwise part (lane pools).
  int lanes = 16;
  double split_step = 0;
  std::optional<method::MethodId> transport_method;
  // Gradients (--gradient OUT.json): instead of a trajectory, dLoss/d(parameters, initial values).
  std::string gradient, loss, loss_file;
  std::vector<std::string> wrt, sensitivities;
  bool gradient_check = false;
  std::size_t checkpoint_every = 1;
  std::size_t checkpoint_memory = 0;  // bytes; 0: no budget
};

// simulate_args.cpp
/// Returns kExitOk with `s` filled, -1 after printing help, or the usage exit status.
int parse_args(Args args, SimulateArgs& s);

// simulate.cpp
/// What every run of the document shares (component, inputs, overrides, the lane-pool choices).
exec::RunChoices run_choices(const SimulateArgs& s);

// simulate_report.cpp
/// The run in numbers, for the summary line and --stats.
nlohmann::json run_report(const SimulateArgs& s, const exec::Trajectory& traj, double wall_seconds);
void print_summary(const nlohmann::json& r);
void write_stats(const std::string& path, const nlohmann::json& report);
/// "2026-12-01T19:04:05Z": when the run started, for the record.
std::string utc_now();
/// `--output X.nc`: the CF NetCDF-4 writer (io::NetcdfOutput) instead of CSV.
bool is_netcdf_output(const std::string& path);
/// The NetCDF file's global attributes known before the run (the outcome is added at close).
io::NetcdfOutputOptions netcdf_options(const SimulateArgs& s, const esm::ResolvedDocument& doc,
                                       const std::string& started_at);
/// What the sidecar says about the run whatever its kind: the document, span, grid, tolerances,
/// every override in command-line order, the inputs, the version and the start time.
nlohmann::json run_metadata(const SimulateArgs& s, const std::string& started_at);
/// Writes OUT.csv.json next to OUT.csv (never for --output -: there is no file to sit next to).
void write_sidecar(const SimulateArgs& s, nlohmann::json columns, nlohmann::json run);
/// The CSV's column order: `esi inspect`'s, states then observeds, each in natural order
/// (j_2 before j_10); order[k] is the trajectory column written k-th.
std::vector<std::size_t> inspect_column_order(const std::vector<std::string>& names, std::size_t state_count);
/// The sidecar of a deterministic run's CSV: its columns and the run with its outcome.
void write_run_sidecar(const SimulateArgs& s, const esm::System& system,
                       const std::vector<std::string>& column_names, const nlohmann::json& report,
                       const exec::Trajectory& traj, const std::string& started_at);

/// Kind ("state", "observed") and units of every output column, by name; a cell without
/// units of its own takes its array's.
struct ColumnCatalog {
  std::unordered_map<std::string, std::pair<const char*, std::string>> by_name;
  explicit ColumnCatalog(const esm::System& sys) {
    std::unordered_map<std::string, std::string> array_units;
    for (const auto& a : sys.arrays) array_units[a.name] = a.units;
    const auto add = [&](const auto& list, const char* kind) {
      for (const esm::FlatVariable& v : list)
        by_name.emplace(v.name, std::make_pair(kind, v.units.empty() && !v.array.empty() ? array_units[v.array] : v.units));
    };
    add(sys.states, "state");
    add(sys.observed, "observed");
  }
  /// One column's entry; `statistic` "mean" / "var" for an ensemble's columns (a variance is
  /// in the square of the units).
  nlohmann::json column(const std::string& name, const std::string& statistic = "") const {
    const auto it = by_name.find(name);
    const std::string kind = it == by_name.end() ? "unknown" : it->second.first;
    std::string units = it == by_name.end() ? "" : it->second.second;
    nlohmann::json c = {{"name", statistic.empty() ? name : name + "." + statistic}, {"kind", kind}};
    if (statistic == "var" && !units.empty() && units != "1") units = "(" + units + ")^2";
    c["units"] = units;
    if (!statistic.empty()) c["statistic"] = statistic, c["variable"] = name;
    return c;
  }
};

// simulate_gradient.cpp
/// `--gradient OUT.json`: the loss and its gradient by the discrete adjoint, written as JSON.
int run_gradient(SimulateArgs& s, const esm::System& system, const esm::ResolvedDocument& doc);

/// `--sensitivities p1,p2 --output OUT.csv`: the trajectory at step ends with d(x)/d(p) columns.
int run_sensitivities(SimulateArgs& s, const esm::System& system, const esm::ResolvedDocument& doc);

// simulate_sweep.cpp
/// `--params TABLE --sweep`: one run per table row, every member's rows in one CSV.
int run_sweep(SimulateArgs& s, const esm::ResolvedDocument& doc);

// simulate_stochastic.cpp
/// A model with random parameters: one path, an ensemble's statistics or every member (CSV).
int run_stochastic(SimulateArgs& s, const esm::System& system, const esm::ResolvedDocument& doc);

}  // namespace esi::cli::sim
