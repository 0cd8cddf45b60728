// drive::plan_run and drive::run (run.hpp): esi run's work between arguments and printing.
#include "esi/drive/run.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "esi/core/error.hpp"
#include "esi/core/text.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/exec/forcing.hpp"
#include "esi/io/netcdf_forcing.hpp"
#include "esi/io/netcdf_output.hpp"
#include "esi/io/run_output.hpp"

namespace esi::drive {
namespace {

namespace fs = std::filesystem;

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) || fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

/// NetCDF forcing entries read by io, handed to exec's assembly of the forcing set.
exec::ForcingRecords open_netcdf_forcing(const exec::RunConfig& config,
                                         const exec::ForcingSpec& spec, const esm::System& system) {
  io::OpenForcing opened = io::open_forcing(spec.file, {config.file, spec.pointer}, spec.variable,
                                            system, spec.target, spec.bracket);
  return {std::move(opened.field.times), opened.field.values, std::move(opened.read)};
}

/// The NetCDF output's global attributes known before the run (the outcome is added at the end).
io::NetcdfOutputOptions netcdf_provenance(const nlohmann::json& document,
                                          const exec::RunConfig& config,
                                          const std::string& model_file,
                                          const std::string& command_line) {
  io::NetcdfOutputOptions o;
  o.document = &document;
  const nlohmann::json metadata = document.value("metadata", nlohmann::json::object());
  if (metadata.is_object() && metadata.contains("name") && metadata["name"].is_string())
    o.provenance["title"] = metadata["name"].get<std::string>();
  o.provenance["history"] = command_line;
  o.provenance["esi_command_line"] = command_line;
  o.provenance["esi_model_file"] = model_file;
  o.provenance["esi_run_config_file"] = config.file;
  o.provenance["esi_run_config"] =
      config.source.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  o.provenance["esi_tspan"] = number_text(config.start) + " " + number_text(config.stop);
  return o;
}

}  // namespace

std::string restart_name(double t) {
  char buf[64];
  if (t >= 0 && t < 1e15 && t == std::floor(t))
    std::snprintf(buf, sizeof buf, "restart-%015.0f.esr", t);
  else
    std::snprintf(buf, sizeof buf, "restart-%s.esr", number_text(t).c_str());
  return buf;
}

RunPlan plan_run(RunRequest request) {
  RunPlan plan;
  plan.config =
      request.config_document.is_null()
          ? exec::read_run_config(request.config)
          : exec::parse_run_config(request.config_document, request.config, request.config_folder);
  const exec::RunConfig& config = plan.config;
  if (request.model.empty()) request.model = config.model;
  if (!request.model.empty() && !config.model.empty() && !same_file(config.model, request.model))
    throw Error("run_config_model_mismatch", request.config, "/model",
                "the configuration is for '" + config.model + "', but the command names '" +
                    request.model + "'");
  if (request.threads > 0) plan.config.threads = request.threads;
  if (request.output.empty()) request.output = config.output_file;
  plan.request = std::move(request);
  return plan;
}

RunOutcome run(const RunPlan& plan, const esm::ResolvedDocument& doc,
               const RunCallbacks& callbacks) {
  const RunRequest& r = plan.request;
  const exec::RunConfig& config = plan.config;
  esm::FlattenOptions fo;
  fo.component = config.component;
  // Per-region programs, whose size does not grow with the grid; a schedule that runs the
  // whole right-hand side with an implicit method gets one equation per cell instead, which
  // the symbolic Jacobian is built from (a monolithic reference run of a gridded model).
  fo.grid = !exec::whole_implicit(config);
  fo.inputs = config.inputs;
  fo.inputs_file = config.inputs_file.empty() ? r.config : config.inputs_file;
  const esm::System system = [&] {
    try {
      return esm::flatten(doc, fo);
    } catch (const Error& e) {  // a finding without a file is the model's
      const Diagnostic& d = e.diagnostic();
      if (!d.file.empty()) throw;
      throw Error(d.code, r.model, d.pointer, d.message);
    }
  }();
  // NetCDF forcing is bound (file, variable, shape, units) here; operators, leaves and forcing
  // targets when the run binds them, before the output file is created.
  std::vector<exec::ForcingProvider> forcing =
      exec::forcing_providers(config, system, open_netcdf_forcing);
  RunOutcome outcome;
  std::optional<exec::RestartState> resume;
  if (!r.restart.empty()) {
    resume = exec::read_restart(r.restart);
    outcome.resumed = true;
    outcome.resumed_t = resume->t;
    outcome.resumed_macro_steps = resume->macro_steps;
  }
  if (!r.restart_dir.empty()) {
    std::error_code ec;
    fs::create_directories(r.restart_dir, ec);
    if (ec)
      throw Error("restart_write_failed", r.restart_dir, "",
                  "cannot create the restart folder: " + ec.message());
  }

  // The output is created (under a temporary name) once the run has checked everything.
  io::RunOutput output(r.output, system,
                       netcdf_provenance(doc.doc, config, r.model, r.command_line));
  exec::ScheduleOptions so;
  so.document = &doc;
  so.native = r.native;
  so.forcing = std::move(forcing);
  so.resume = resume ? &*resume : nullptr;
  so.restart_every = r.restart_every;
  so.on_restart = [&](const exec::RestartState& state) {
    const std::string path = r.restart_dir.empty()
                                 ? r.output + ".restart.esr"
                                 : (fs::path(r.restart_dir) / restart_name(state.t)).string();
    exec::write_restart(path, state);
    outcome.last_restart = path;
  };
  so.on_columns = [&](const std::vector<std::string>& names) { output.columns(names); };
  so.on_row = [&](double t, std::span<const double> row) {
    const auto before = std::chrono::steady_clock::now();
    output.row(t, row);
    outcome.writing_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
    ++outcome.records;
    if (callbacks.on_record) callbacks.on_record(t, outcome.records);
  };
  so.on_step = callbacks.on_step;
  so.stop = callbacks.stop;
  outcome.result = exec::run_schedule(system, config, so);
  const exec::Trajectory& traj = outcome.result.trajectory;
  // Renamed into place also after a failed solve (the records reached).
  output.finish(std::string(method::return_code_name(traj.code)),
                traj.ok() ? std::nullopt : std::optional<std::string>(traj.message));
  return outcome;
}

}  // namespace esi::drive
