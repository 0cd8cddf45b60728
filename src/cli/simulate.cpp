// `esi simulate FILE [--component NAME] --tspan T0 T1 [--saveat DT] [--method M] [--rtol R]
// [--atol A] [--set name=value ...] [--params FILE] --output OUT.csv`: one run written as CSV,
// with OUT.csv.json beside it (each column's units and kind, the run's metadata).
//
// The CSV header is `t` then one column per state and observed (flattened names, quoted per
// RFC 4180 when they hold a comma, quote or line break); one row per output time (t0, each
// saveat multiple, T1; without --saveat every hundredth of the span), numbers in their
// shortest round-trip form (std::to_chars). Rows are written as the run reaches them; the
// output file is opened before the solve and every write is checked. OUT.csv.json, written
// after the run (also after a failed solve; not for --output -), gives each column's units
// and kind and the run's metadata, so the header stays plain names for existing readers.
// `--set` overrides a parameter, or the initial value of a state, by flat or unique local
// name (an unknown name gets near-match suggestions); `--params FILE` gives many at once
// (cli/params.hpp), applied in command-line order with the --set options. A failed solve, or
// a state, observed or derivative that is not finite, writes the rows it reached, says why
// and exits 1.
//
// `--output X.nc` writes CF NetCDF-4 with io::NetcdfOutput instead (one variable per scalar and
// per array, a CF time axis, coordinates, provenance and the run's outcome as global
// attributes; no sidecar), under X.nc.partial renamed to X.nc at the end (deterministic models
// only: a stochastic model's --output must be CSV).
//
// Stochastic models (a Wiener parameter, or a `distribution` parameter drawn at setup) run
// through exec::simulate_ensemble: `--seed S` keys every random number, `--ensemble N` runs N
// members (`--threads T`) and writes per output time `X.mean` and `X.var` (unbiased) of every
// column, or, with `--members`, every member's rows (a leading `member` column).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/interrupt.hpp"
#include "cli/simulate.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/prepare.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/exec/stochastic.hpp"
#include "esi/io/csv.hpp"
#include "esi/io/netcdf_output.hpp"

namespace esi::cli {
namespace sim {
namespace {

/// The lowest value each state reached over the output rows, and when: a state that goes
/// negative beyond the absolute tolerance usually means the tolerances are too loose for it,
/// unless the equations themselves drive it there (see rate_at_zero). For the first few such
/// states it keeps the states' values at that minimum.
struct NegativeWatch {
  static constexpr std::size_t kKeptStates = 5;
  std::size_t states = 0;
  double limit = 0;  ///< below -limit counts as negative (--atol)
  std::vector<double> min_value, min_time;
  std::map<std::size_t, std::vector<double>> at_min;
  void see(double t, std::span<const double> row) {
    if (min_value.empty()) {
      min_value.assign(states, 0.0);
      min_time.assign(states, t);
    }
    for (std::size_t j = 0; j < states && j < row.size(); ++j)
      if (row[j] < min_value[j]) {
        min_value[j] = row[j];
        min_time[j] = t;
        if (row[j] < -limit && row.size() >= states && (at_min.count(j) > 0 || at_min.size() < kKeptStates))
          at_min[j].assign(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(states));
      }
  }
};

/// d(state j)/dt at the states `u` with state j itself at 0 (exec::state_rate). Below zero, the
/// equations remove the quantity even when there is none left: no tolerance keeps it from
/// going negative.
double rate_at_zero(const esm::System& system, std::size_t j, double t, std::vector<double> u) {
  u[j] = 0.0;
  return exec::state_rate(system, j, t, u);
}

}  // namespace

exec::RunChoices run_choices(const SimulateArgs& s) {
  exec::RunChoices choices;
  choices.component = s.component;
  choices.cells = s.cells;
  if (!s.inputs.empty()) {
    choices.inputs = read_json_file(s.inputs);
    choices.inputs_file = s.inputs;
  }
  choices.overrides = s.sets;
  choices.typed_at = std::string(kCommandLine);
  choices.lanes = s.lanes;
  choices.split_step = s.split_step;
  choices.transport_method = s.transport_method;
  return choices;
}

namespace {

/// The system the run integrates (exec::flatten_for_run), with the --inputs file read and
/// the overrides applied; sets the split in `s.options` when there is one.
esm::System flatten_for_run(SimulateArgs& s, const esm::ResolvedDocument& doc) {
  s.options.threads = s.threads;
  std::string no_split;
  esm::System system = exec::flatten_for_run(doc, run_choices(s), s.options, &no_split);
  if (!no_split.empty() && !s.quiet)
    std::fprintf(stderr, "esi simulate: note: no lane pools (%s); arrays run as one equation per cell\n",
                 no_split.c_str());
  return system;
}

/// The summary, notes and warnings after a run, and its exit status.
int report_outcome(const SimulateArgs& s, const esm::System& system, const exec::Trajectory& traj,
                   const nlohmann::json& report, const NegativeWatch& negatives) {
  if (!s.quiet) print_summary(report);
  if (!s.quiet && !traj.grid_summary.empty())
    std::fprintf(stderr, "esi simulate: arrays ran as per-region programs: %s\n", traj.grid_summary.c_str());
  if (!s.quiet && !traj.cell_summary.empty()) {
    const exec::LanePoolStats& cs = traj.cell_stats;
    const double cells = static_cast<double>(std::max<std::size_t>(1, cs.cells));
    std::fprintf(stderr,
                 "esi simulate: lane pools: %s; %.1f steps per cell (most %ld), %ld rejected, "
                 "%.0f%% of lane slots used%s\n",
                 traj.cell_summary.c_str(), double(cs.accepted + cs.rejected) / cells, cs.max_cell_steps,
                 cs.rejected,
                 cs.lane_slots > 0 ? 100.0 * double(cs.accepted + cs.rejected) / double(cs.lane_slots) : 100.0,
                 s.options.cell_split && s.options.cell_split->step > 0
                     ? (", Lie-split every " + format_number(s.options.cell_split->step) + " s").c_str()
                     : ", split at every output time");
  }
  // One line per state up to a few, then a count: a gridded run has thousands of cells.
  std::size_t negative = 0;
  for (std::size_t j = 0; j < negatives.min_value.size(); ++j) {
    const double atol = j < traj.atol_each.size() ? traj.atol_each[j] : s.options.integrator.atol;
    if (!(negatives.min_value[j] < -atol) || ++negative > 5) continue;
    const auto kept = negatives.at_min.find(j);
    const double rate = kept == negatives.at_min.end()
                            ? std::numeric_limits<double>::quiet_NaN()
                            : rate_at_zero(system, j, negatives.min_time[j], kept->second);
    if (rate < 0) {
      const std::string& units = system.states[j].units;
      std::fprintf(stderr,
                   "esi simulate: warning: %s went negative (%s at t = %s), driven there by the "
                   "equations: at that time its rate with %s = 0 is still %s%s, a loss that does "
                   "not stop when nothing is left, so tighter tolerances will not help; check the "
                   "terms that remove it\n",
                   system.states[j].name.c_str(), format_number(negatives.min_value[j]).c_str(),
                   format_number(negatives.min_time[j]).c_str(), system.states[j].name.c_str(),
                   format_number(rate).c_str(), units.empty() ? "" : (" [" + units + "/s]").c_str());
      continue;
    }
    std::fprintf(stderr,
                 "esi simulate: warning: %s went negative (%s at t = %s), beyond --atol %s; "
                 "if it is a concentration, tighten --rtol / --atol\n",
                 system.states[j].name.c_str(), format_number(negatives.min_value[j]).c_str(),
                 format_number(negatives.min_time[j]).c_str(), format_number(atol).c_str());
  }
  for (std::size_t k = 0; k < traj.below_atol.size() && k < 5; ++k)
    std::fprintf(stderr,
                 "esi simulate: warning: %s stayed below its absolute tolerance (%s) the whole run, so "
                 "its error was not controlled; give --atol below its values\n",
                 traj.names[traj.below_atol[k]].c_str(), format_number(traj.atol_each[traj.below_atol[k]]).c_str());
  if (traj.below_atol.size() > 5)
    std::fprintf(stderr, "esi simulate: warning: %zu more states stayed below their absolute tolerance\n",
                 traj.below_atol.size() - 5);
  if (!traj.held_data.empty()) {
    std::string list;
    for (std::size_t k = 0; k < traj.held_data.size() && k < 6; ++k) list += (k ? ", " : "") + traj.held_data[k];
    if (traj.held_data.size() > 6) list += " and " + std::to_string(traj.held_data.size() - 6) + " more";
    std::fprintf(stderr,
                 "esi simulate: note: %zu parameter(s) the document reads from data sources (%s) were "
                 "held at their given values: esi simulate reads no data files (set them with "
                 "--set or --inputs, or read them from NetCDF as forcing in an esi run configuration)\n",
                 traj.held_data.size(), list.c_str());
  }
  if (negative > 5)
    std::fprintf(stderr, "esi simulate: warning: %zu more states went negative\n", negative - 5);
  if (s.options.native && traj.native_status.rfind("native", 0) != 0)
    std::fprintf(stderr, "esi simulate: warning: --native was requested, but the run used the interpreter: %s\n",
                 traj.native_status.empty() ? "the model has no states; nothing to compile"
                                            : traj.native_status.c_str());
  else if (const auto w = traj.native_status.find("; warning: "); s.options.native && w != std::string::npos)
    std::fprintf(stderr, "esi simulate: warning: %s\n", traj.native_status.c_str() + w + 11);
  if (!traj.ok()) {
    // The message starts with the return code's name and the time it stopped.
    const std::string last = traj.rows > 0 ? "last output at t = " + format_number(traj.last_time)
                                           : std::string("no output rows written");
    if (traj.code == method::ReturnCode::Interrupted) {
      std::fprintf(stderr, "esi simulate: interrupted (%s); the rows reached are in the output\n",
                   last.c_str());
      return kExitInterrupted;
    }
    std::fprintf(stderr, "%s: error[solve_failed]: the run stopped (%s): %s\n", s.file.c_str(),
                 last.c_str(), traj.message.c_str());
    // A relative tolerance near the double precision unit roundoff cannot be met: steps
    // shrink until max_steps or dt_min. Say so instead of leaving the modeller to guess.
    const auto& io = s.options.integrator;
    if ((traj.code == method::ReturnCode::MaxSteps || traj.code == method::ReturnCode::DtBelowMin) &&
        io.rtol < 1e-13)
      std::fprintf(stderr,
                   "esi simulate: hint: --rtol %s asks for more accuracy than double precision "
                   "gives (about 1e-16 relative); try --rtol 1e-12 or looser\n",
                   format_number(io.rtol).c_str());
    return kExitInvalid;
  }
  return kExitOk;
}

}  // namespace
}  // namespace sim

int run_simulate(Args args) {
  using namespace sim;  // the parts of esi simulate (simulate.hpp)
  SimulateArgs s;
  s.options.atol_from_scales = true;  // until --atol is given
  if (const int rc = parse_args(args, s); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  s.command_line = "esi simulate";
  for (const std::string& a : args) s.command_line += " " + a;
  try {
    const std::optional<esm::ResolvedDocument> loaded = load_or_report(s.file);
    if (!loaded) return kExitInvalid;
    const esm::ResolvedDocument& doc = *loaded;
    if (s.sweep) return run_sweep(s, doc);
    if (!s.gradient.empty() || !s.sensitivities.empty()) s.cells = true;  // derivatives need one equation per cell
    const esm::System system = flatten_for_run(s, doc);
    s.options.document = &doc;
    if (!s.gradient.empty()) return run_gradient(s, system, doc);
    if (!s.sensitivities.empty()) return run_sensitivities(s, system, doc);
    s.options.document = &doc;
    s.options.threads = s.threads;
    if (exec::is_stochastic(system)) return run_stochastic(s, system, doc);
    if (s.default_saveat) s.options.sample_times = exec::preset_event_times(system, s.options.t0, s.options.t1);
    if ((s.ensemble > 0 || s.members || s.sde_method) && !s.quiet)
      std::fprintf(stderr, "esi simulate: the model has no random parameters; --ensemble, --members and "
                           "SDE methods do not apply and are ignored\n");

    // Opened before the solve, so an unwritable path fails now rather than after a long run.
    // `--output X.nc`: CF NetCDF-4 written under X.nc.partial and renamed at the end.
    const std::string started_at = utc_now();
    std::optional<io::CsvWriter> csv;
    std::optional<io::NetcdfOutput> netcdf;
    if (is_netcdf_output(s.output)) netcdf.emplace(s.output, system, netcdf_options(s, doc, started_at));
    else csv.emplace(s.output);
    NegativeWatch negatives;
    negatives.states = system.states.size();
    negatives.limit = s.options.integrator.atol;
    std::vector<std::string> column_names;  // as the CSV has them
    std::vector<std::size_t> csv_order;      // CSV column k holds trajectory column csv_order[k]
    std::vector<double> csv_row;
    s.options.on_columns = [&](const std::vector<std::string>& names) {
      column_names = names;
      if (netcdf) return netcdf->define(names);
      csv_order = inspect_column_order(names, system.states.size());
      for (std::size_t k = 0; k < names.size(); ++k) column_names[k] = names[csv_order[k]];
      csv_row.resize(names.size());
      csv->header(column_names);
    };
    s.options.on_row = [&](double t, std::span<const double> row) {
      if (netcdf) {
        netcdf->write(t, row);
      } else {
        for (std::size_t k = 0; k < csv_order.size(); ++k) csv_row[k] = row[csv_order[k]];
        csv->row(t, csv_row);
      }
      negatives.see(t, row);
    };
    exec::Trajectory traj;
    const auto started = std::chrono::steady_clock::now();
    // A progress line on a terminal for runs longer than a second (model time, share of the
    // span, wall time, an estimate of what is left), redrawn at most 5 times a second.
    const bool terminal = !s.quiet && ::isatty(STDERR_FILENO) != 0;
    bool progress_shown = false;
    auto last_draw = std::chrono::steady_clock::now();
    if (terminal)
      s.options.on_step = [&, span = s.options.t1 - s.options.t0](double t) {
        const auto now = std::chrono::steady_clock::now();
        const double wall = std::chrono::duration<double>(now - started).count();
        if (wall < 1.0 || std::chrono::duration<double>(now - last_draw).count() < 0.2) return;
        last_draw = now;
        const double done = span > 0 ? (t - s.options.t0) / span : 1.0;
        const double left = done > 0 ? wall * (1.0 - done) / done : 0.0;
        std::fprintf(stderr, "\resi simulate: t = %s of %s (%.1f%%), %.1f s, about %.0f s left   ",
                     format_number(t).c_str(), format_number(s.options.t1).c_str(), 100.0 * done, wall, left);
        std::fflush(stderr);
        progress_shown = true;
      };
    try {
      InterruptScope interrupt;
      s.options.stop = &g_interrupted;
      traj = exec::simulate(system, s.options);
    } catch (const Error& e) {
      if (netcdf) netcdf->discard();  // no NetCDF file rather than one the run did not finish
      else if (e.diagnostic().code != "output_write_failed") csv->discard();
      throw;
    }
    if (progress_shown) std::fprintf(stderr, "\r\033[K");  // clear the progress line
    if (csv) csv->close();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const nlohmann::json report = run_report(s, traj, wall);
    if (netcdf) {  // the outcome goes into the file's global attributes; no sidecar
      netcdf->set_attribute("esi_method", report["method"].get<std::string>());
      netcdf->set_attribute("esi_return_code", report["return_code"].get<std::string>());
      if (!traj.ok()) netcdf->set_attribute("esi_failure", traj.message);
      netcdf->set_attribute("esi_run", report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      netcdf->close();
    } else if (s.output != "-") {
      write_run_sidecar(s, system, column_names, report, traj, started_at);
    }
    if (!s.stats.empty()) write_stats(s.stats, report);
    return report_outcome(s, system, traj, report, negatives);
  } catch (const Error& e) {
    Diagnostic d = e.diagnostic();
    if (d.file == kCommandLine) {  // a --set name: the command line is wrong, not the document
      std::fprintf(stderr, "esi simulate: error[%s]: %s\n", d.code.c_str(), d.message.c_str());
      return kExitInvalid;
    }
    if (d.file.empty()) d.file = s.file;
    if (d.code == "missing_initial_value")
      d.message += "; for this run alone, --set it (--set NAME=VALUE)";
    std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
    return kExitInvalid;
  }
}

}  // namespace esi::cli
