// `esi run MODEL.esm --config RUN.json --output OUT`: a model run by its run configuration
// (exec/run_config.hpp, exec/schedule.hpp), with forcing (exec/forcing.hpp, NetCDF read by io),
// the output file (io/run_output.hpp), progress, restart files and Ctrl-C.

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/interrupt.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/forcing.hpp"
#include "esi/exec/run_config.hpp"
#include "esi/exec/schedule.hpp"
#include "esi/io/netcdf_forcing.hpp"
#include "esi/io/netcdf_output.hpp"
#include "esi/io/run_output.hpp"

namespace esi::cli {
namespace {

namespace fs = std::filesystem;

struct RunArgs {
  std::string model, config, output, restart, restart_dir;
  double restart_every = 0;
  int threads = 0;  // 0 = the configuration's
  bool native = false, quiet = false;
};

int parse_args(Args args, RunArgs& r) {
  auto value = [&](std::size_t& i) -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      print_run_help(stdout);
      return -1;
    }
    if (a == "--config" || a == "-c" || a == "--output" || a == "-o" || a == "--restart" || a == "--restart-dir" ||
        a == "--restart-every" || a == "--threads") {
      const std::string* v = value(i);
      if (v == nullptr || v->empty()) return usage_error("run", a + " needs a value");
      if (a == "--config" || a == "-c") r.config = *v;
      if (a == "--output" || a == "-o") r.output = *v;
      if (a == "--restart") r.restart = *v;
      if (a == "--restart-dir") r.restart_dir = *v;
      try {
        std::size_t used = 0;
        if (a == "--restart-every") {
          r.restart_every = std::stod(*v, &used);
          if (used != v->size() || !(r.restart_every > 0) || !std::isfinite(r.restart_every)) throw 0;
        }
        if (a == "--threads") {
          r.threads = std::stoi(*v, &used);
          if (used != v->size() || r.threads < 1 || r.threads > 1024) throw 0;
        }
      } catch (...) {
        return usage_error("run", a + " needs a positive number, got '" + *v + "'");
      }
      continue;
    }
    if (a == "--native") {
      r.native = true;
      continue;
    }
    if (a == "--quiet" || a == "-q") {
      r.quiet = true;
      continue;
    }
    if (!a.empty() && a[0] == '-') return usage_error("run", "unknown option '" + a + "'");
    if (!r.model.empty()) return usage_error("run", "one model file only (got '" + r.model + "' and '" + a + "')");
    r.model = a;
  }
  if (r.config.empty()) return usage_error("run", "--config RUN.json is required");
  if (r.restart_every > 0 && r.restart_dir.empty())
    return usage_error("run", "--restart-every needs --restart-dir DIR (where the restart files go)");
  return kExitOk;
}

/// "restart-000003600.esr": zero-padded whole seconds sort by name; other times spelled out.
std::string restart_name(double t) {
  char buf[64];
  if (t >= 0 && t < 1e15 && t == std::floor(t))
    std::snprintf(buf, sizeof buf, "restart-%015.0f.esr", t);
  else
    std::snprintf(buf, sizeof buf, "restart-%s.esr", format_number(t).c_str());
  return buf;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) || fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

/// NetCDF forcing entries read by io, handed to exec's assembly of the forcing set.
exec::ForcingRecords open_netcdf_forcing(const exec::RunConfig& config, const exec::ForcingSpec& spec,
                                         const esm::System& system) {
  io::OpenForcing opened =
      io::open_forcing(spec.file, {config.file, spec.pointer}, spec.variable, system, spec.target, spec.bracket);
  return {std::move(opened.field.times), opened.field.values, std::move(opened.read)};
}

/// The NetCDF output's global attributes known before the run (the outcome is added at the end).
io::NetcdfOutputOptions netcdf_provenance(const nlohmann::json& document, const exec::RunConfig& config,
                                          const std::string& model_file, const std::string& command_line) {
  io::NetcdfOutputOptions o;
  o.document = &document;
  const nlohmann::json metadata = document.value("metadata", nlohmann::json::object());
  if (metadata.is_object() && metadata.contains("name") && metadata["name"].is_string())
    o.provenance["title"] = metadata["name"].get<std::string>();
  o.provenance["history"] = command_line;
  o.provenance["esi_command_line"] = command_line;
  o.provenance["esi_model_file"] = model_file;
  o.provenance["esi_run_config_file"] = config.file;
  o.provenance["esi_run_config"] = config.source.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  o.provenance["esi_tspan"] = format_number(config.start) + " " + format_number(config.stop);
  return o;
}

std::string leaf_line(const exec::LeafReport& l, std::size_t cells) {
  char buf[256];
  if (cells > 0 && l.what.find("per cell") != std::string::npos)
    std::snprintf(buf, sizeof buf, "%s: %.1f steps per cell, %ld rejected in all", l.what.c_str(),
                  double(l.accepted + l.rejected) / double(cells), l.rejected);
  else
    std::snprintf(buf, sizeof buf, "%s: %ld steps, %ld rejected", l.what.c_str(), l.accepted, l.rejected);
  std::string line = buf;
  if (l.method_switches > 0)
    line += " (auto: switched " + std::to_string(l.method_switches) + (l.method_switches == 1 ? " time" : " times") +
            ", now " + l.method_now + ")";
  return line;
}

}  // namespace

void print_run_help(std::FILE* out) {
  std::fputs(
      "usage: esi run [MODEL.esm] --config RUN.json [--output OUT.nc|OUT.csv] [--threads N]\n"
      "               [--restart FILE] [--restart-every SECONDS --restart-dir DIR] [--native] [--quiet]\n"
      "\n"
      "Runs a model by its run configuration: which operators the tendencies split into (selected\n"
      "by locality and component), the schedule that steps them (leaf, sequence / lie, strang,\n"
      "subcycle, every, map: a named event applied there), the macro step, threads and lanes,\n"
      "output times and forcing. The format is schemas/run-config.schema.json; examples/*.run.json\n"
      "are examples. Everything the configuration names is checked before the run starts and\n"
      "before any output is opened.\n"
      "\n"
      "  MODEL.esm          the model (else the configuration's \"model\", relative to it)\n"
      "  --config, -c F     the run configuration (JSON)\n"
      "  --output, -o F     output file: .nc is CF NetCDF-4, .csv is one row per output time;\n"
      "                     else the configuration's output.file. Written under F.partial and\n"
      "                     renamed when the run ends, so a killed run leaves no half file\n"
      "  --threads N        threads for the pointwise operator's lane pools and for the grid's\n"
      "                     programs, in slabs (results do not depend on it)\n"
      "  --restart-every S  write a restart file every S seconds of model time into --restart-dir\n"
      "  --restart F        resume from restart file F: the rest of the run is bitwise the same as\n"
      "                     the uninterrupted run's; the output holds the records from F's time on\n"
      "  --native           compile the per-cell programs to native code (cached on disk)\n"
      "  --quiet            no progress or summary\n"
      "\n"
      "On a terminal a progress line shows model time, wall time, an estimate of the time left\n"
      "and each leaf's steps; otherwise one line per output record. Ctrl-C (or SIGTERM) stops after\n"
      "the macro step in progress, writes a restart file (into --restart-dir, else OUT.restart.esr)\n"
      "and a valid output file, and exits with 130.\n"
      "exit status: 0 done, 1 invalid input or a failed solve, 2 usage, 130 interrupted\n",
      out);
}

int run_run(Args args) {
  RunArgs r;
  if (const int rc = parse_args(args, r); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  std::string shown = r.config;
  try {
    exec::RunConfig config = exec::read_run_config(r.config);
    if (r.model.empty()) r.model = config.model;
    if (r.model.empty())
      return usage_error("run", "no model: give MODEL.esm or set \"model\" in the run configuration");
    if (!config.model.empty() && !same_file(config.model, r.model))
      throw Error("run_config_model_mismatch", r.config, "/model",
                  "the configuration is for '" + config.model + "', but the command names '" + r.model + "'");
    if (r.threads > 0) config.threads = r.threads;
    if (r.output.empty()) r.output = config.output_file;
    if (r.output.empty())
      return usage_error("run", "no output: give --output OUT.nc (or OUT.csv) or set output.file in the configuration");
    shown = r.model;
    const std::optional<esm::ResolvedDocument> doc = load_or_report(r.model);
    if (!doc) return kExitInvalid;
    esm::FlattenOptions fo;
    fo.component = config.component;
    // Per-region programs, whose size does not grow with the grid; a schedule that runs the
    // whole right-hand side with an implicit method gets one equation per cell instead, which
    // the symbolic Jacobian is built from (a monolithic reference run of a gridded model).
    fo.grid = !exec::whole_implicit(config);
    fo.inputs = config.inputs;
    fo.inputs_file = config.inputs_file.empty() ? r.config : config.inputs_file;
    const esm::System system = esm::flatten(*doc, fo);
    shown = r.config;
    // NetCDF forcing is bound (file, variable, shape, units) here; operators, leaves and forcing
    // targets when the run binds them, before the output file is created.
    std::vector<exec::ForcingProvider> forcing = exec::forcing_providers(config, system, open_netcdf_forcing);
    std::optional<exec::RestartState> resume;
    if (!r.restart.empty()) resume = exec::read_restart(r.restart);
    if (!r.restart_dir.empty()) {
      std::error_code ec;
      fs::create_directories(r.restart_dir, ec);
      if (ec) throw Error("restart_write_failed", r.restart_dir, "", "cannot create the restart folder: " + ec.message());
    }

    // The output is created (under a temporary name) once the run has checked everything.
    std::string command_line = "esi run";
    for (const std::string& a : args) command_line += " " + a;
    io::RunOutput output(r.output, system, netcdf_provenance(doc->doc, config, r.model, command_line));
    exec::ScheduleOptions so;
    so.document = &*doc;
    so.native = r.native;
    so.forcing = std::move(forcing);
    so.resume = resume ? &*resume : nullptr;
    so.restart_every = r.restart_every;
    std::string last_restart;
    so.on_restart = [&](const exec::RestartState& state) {
      const std::string path = r.restart_dir.empty() ? r.output + ".restart.esr"
                                                     : (fs::path(r.restart_dir) / restart_name(state.t)).string();
      exec::write_restart(path, state);
      last_restart = path;
    };
    const bool terminal = !r.quiet && ::isatty(STDERR_FILENO) != 0;
    const auto started = std::chrono::steady_clock::now();
    auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    std::size_t records = 0, cells = 0;
    so.on_columns = [&](const std::vector<std::string>& names) { output.columns(names); };
    double writing = 0;  // seconds spent writing records (the "under 5% of the run")
    so.on_row = [&](double t, std::span<const double> row) {
      const auto before = std::chrono::steady_clock::now();
      output.row(t, row);
      writing += std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
      ++records;
      if (!r.quiet && !terminal)
        std::fprintf(stderr, "esi run: t = %s s, record %zu written, %.1f s wall\n", format_number(t).c_str(),
                     records, wall());
    };
    bool progress_shown = false;
    auto last_draw = started;
    if (terminal)
      so.on_step = [&](double t, const std::vector<exec::LeafReport>& leaves) {
        const auto now = std::chrono::steady_clock::now();
        if (std::chrono::duration<double>(now - last_draw).count() < 0.2) return;
        last_draw = now;
        const double span = config.stop - config.start, done = span > 0 ? (t - config.start) / span : 1.0;
        const double w = wall(), left = done > 0 ? w * (1 - done) / done : 0;
        std::string steps;
        for (const auto& l : leaves)
          steps += " | " + l.what.substr(0, l.what.find(':')) + " " + std::to_string(l.accepted) + "/" +
                   std::to_string(l.rejected) + "r";
        std::fprintf(stderr, "\r\033[Kesi run: t = %s of %s s (%.1f%%), %.1f s, about %.0f s left%s",
                     format_number(t).c_str(), format_number(config.stop).c_str(), 100 * done, w, left,
                     steps.c_str());
        std::fflush(stderr);
        progress_shown = true;
      };
    exec::ScheduleResult result;
    {
      InterruptScope interrupt;
      so.stop = &g_interrupted;
      result = exec::run_schedule(system, config, so);
    }
    if (progress_shown) std::fprintf(stderr, "\r\033[K");
    const exec::Trajectory& traj = result.trajectory;
    cells = traj.cell_stats.cells;
    // Renamed into place also after a failed solve (the records reached).
    output.finish(std::string(method::return_code_name(traj.code)),
                  traj.ok() ? std::nullopt : std::optional<std::string>(traj.message));
    if (!r.quiet) {
      const double total = wall();
      // A resumed run's counters include the steps before its restart point: say so, and what
      // this run did itself.
      const std::uint64_t before = resume ? resume->macro_steps : 0;
      const std::string steps =
          resume ? std::to_string(result.macro_steps - before) + " macro steps from the restart at t = " +
                       format_number(resume->t) + " s (" + std::to_string(result.macro_steps) + " since t0)"
                 : std::to_string(result.macro_steps) + " macro steps";
      std::fprintf(stderr, "esi run: %s -> %s: %zu records, %s, %.2f s (writing records %.3f s, %.1f%%)\n",
                   r.model.c_str(), r.output.c_str(), traj.rows, steps.c_str(), total, writing,
                   total > 0 ? 100 * writing / total : 0.0);
      std::fprintf(stderr, "esi run: operators: %s\n", result.operators.c_str());
      if (resume) std::fprintf(stderr, "esi run: the leaves' steps below count from t0, the restarted run's included\n");
      for (const auto& l : result.leaves) {
        std::fprintf(stderr, "esi run:   %s\n", leaf_line(l, cells).c_str());
        if (!l.why.empty()) std::fprintf(stderr, "esi run:     (\"auto\": %s)\n", l.why.c_str());
      }
      if (!traj.cell_summary.empty()) std::fprintf(stderr, "esi run: cells: %s\n", traj.cell_summary.c_str());
      if (!last_restart.empty()) std::fprintf(stderr, "esi run: last restart file: %s\n", last_restart.c_str());
    }
    // Said even under --quiet, as esi simulate does: the run was slower than asked, or its
    // cache folder was not the one named.
    if (r.native && traj.native_status.rfind("native", 0) != 0)
      std::fprintf(stderr, "esi run: warning: --native was requested, but the run used the interpreter: %s\n",
                   traj.native_status.empty() ? "nothing to compile" : traj.native_status.c_str());
    else if (const auto w = traj.native_status.find("; warning: "); r.native && w != std::string::npos)
      std::fprintf(stderr, "esi run: warning: %s\n", traj.native_status.c_str() + w + 11);
    if (traj.code == method::ReturnCode::Interrupted) {
      std::fprintf(stderr, "esi run: interrupted at t = %s; resume with --restart %s\n",
                   format_number(traj.last_time).c_str(), last_restart.c_str());
      return kExitInterrupted;
    }
    if (!traj.ok()) {
      std::fprintf(stderr, "%s: error[solve_failed]: the run stopped: %s\n", r.model.c_str(), traj.message.c_str());
      return kExitInvalid;
    }
    return kExitOk;
  } catch (const Error& e) {
    Diagnostic d = e.diagnostic();
    if (d.file.empty()) d.file = shown;
    std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
    return kExitInvalid;
  }
}

}  // namespace esi::cli

