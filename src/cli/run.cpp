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
#include "esi/drive/run.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/run_config.hpp"
#include "esi/exec/schedule.hpp"

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
    drive::RunRequest request;
    request.model = r.model;
    request.config = r.config;
    request.output = r.output;
    request.threads = r.threads;
    request.native = r.native;
    request.restart = r.restart;
    request.restart_every = r.restart_every;
    request.restart_dir = r.restart_dir;
    request.command_line = "esi run";
    for (const std::string& a : args) request.command_line += " " + a;
    const drive::RunPlan plan = drive::plan_run(request);
    const exec::RunConfig& config = plan.config;
    const std::string& model = plan.request.model;
    const std::string& output = plan.request.output;
    if (model.empty())
      return usage_error("run", "no model: give MODEL.esm or set \"model\" in the run configuration");
    if (output.empty())
      return usage_error("run", "no output: give --output OUT.nc (or OUT.csv) or set output.file in the configuration");
    shown = model;
    const std::optional<esm::ResolvedDocument> doc = load_or_report(model);
    if (!doc) return kExitInvalid;
    shown = r.config;

    const bool terminal = !r.quiet && ::isatty(STDERR_FILENO) != 0;
    const auto started = std::chrono::steady_clock::now();
    auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    drive::RunCallbacks callbacks;
    if (!r.quiet && !terminal)
      callbacks.on_record = [&](double t, std::size_t records) {
        std::fprintf(stderr, "esi run: t = %s s, record %zu written, %.1f s wall\n", format_number(t).c_str(), records,
                     wall());
      };
    bool progress_shown = false;
    auto last_draw = started;
    if (terminal)
      callbacks.on_step = [&](double t, const std::vector<exec::LeafReport>& leaves) {
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
    drive::RunOutcome outcome;
    {
      InterruptScope interrupt;
      callbacks.stop = &g_interrupted;
      outcome = drive::run(plan, *doc, callbacks);
    }
    if (progress_shown) std::fprintf(stderr, "\r\033[K");
    const exec::ScheduleResult& result = outcome.result;
    const exec::Trajectory& traj = result.trajectory;
    const std::size_t cells = traj.cell_stats.cells;
    if (!r.quiet) {
      const double total = wall();
      // A resumed run's counters include the steps before its restart point: say so, and what
      // this run did itself.
      const std::string steps =
          outcome.resumed ? std::to_string(result.macro_steps - outcome.resumed_macro_steps) +
                                " macro steps from the restart at t = " + format_number(outcome.resumed_t) + " s (" +
                                std::to_string(result.macro_steps) + " since t0)"
                          : std::to_string(result.macro_steps) + " macro steps";
      std::fprintf(stderr, "esi run: %s -> %s: %zu records, %s, %.2f s (writing records %.3f s, %.1f%%)\n",
                   model.c_str(), output.c_str(), traj.rows, steps.c_str(), total, outcome.writing_seconds,
                   total > 0 ? 100 * outcome.writing_seconds / total : 0.0);
      std::fprintf(stderr, "esi run: operators: %s\n", result.operators.c_str());
      if (outcome.resumed) std::fprintf(stderr, "esi run: the leaves' steps below count from t0, the restarted run's included\n");
      for (const auto& l : result.leaves) {
        std::fprintf(stderr, "esi run:   %s\n", leaf_line(l, cells).c_str());
        if (!l.why.empty()) std::fprintf(stderr, "esi run:     (\"auto\": %s)\n", l.why.c_str());
      }
      if (!traj.cell_summary.empty()) std::fprintf(stderr, "esi run: cells: %s\n", traj.cell_summary.c_str());
      if (!outcome.last_restart.empty())
        std::fprintf(stderr, "esi run: last restart file: %s\n", outcome.last_restart.c_str());
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
                   format_number(traj.last_time).c_str(), outcome.last_restart.c_str());
      return kExitInterrupted;
    }
    if (!traj.ok()) {
      std::fprintf(stderr, "%s: error[solve_failed]: the run stopped: %s\n", model.c_str(), traj.message.c_str());
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

