// A run by a run configuration, from files to files: what `esi run` does between parsing its
// arguments and printing, shared with the Python module's esi.run so that both write the same
// file from the same run.
//
// plan_run reads the configuration and settles the model file and the output path (the
// command's or the configuration's); the caller loads the model (each reports a refused
// document its own way) and calls run: flatten as the schedule needs (per-region programs, or
// one equation per cell for a whole-system implicit leaf), bind the NetCDF forcing (io), read
// the restart file to resume from, create the output under PATH.partial once everything is
// checked, run the schedule (exec), write restart files at the restart points, and rename the
// output into place, also after a failed or interrupted solve (the records reached).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/load.hpp"
#include "esi/exec/run_config.hpp"
#include "esi/exec/schedule.hpp"

namespace esi::drive {

struct RunRequest {
  std::string model;   ///< the model file; "" = the configuration's `model`
  std::string config;  ///< the run configuration's file
  /// Or the configuration itself (when not null; `config` then only names it in messages),
  /// relative paths in it resolved against `config_folder`.
  nlohmann::json config_document;
  std::string config_folder = ".";
  std::string output;  ///< .nc or .csv; "" = the configuration's output.file
  int threads = 0;     ///< 0 = the configuration's
  bool native = false;
  std::string restart;       ///< a restart file to resume from ("" = from the start)
  double restart_every = 0;  ///< [s] of model time between restart files; 0 = none
  std::string restart_dir;   ///< where they go ("" = OUTPUT.restart.esr, overwritten)
  std::string command_line;  ///< provenance in the NetCDF file ("esi run ..." or the Python call)
};

struct RunPlan {
  RunRequest request;      ///< model and output settled ("" when neither names one)
  exec::RunConfig config;  ///< with request.threads applied
};

/// Reads the configuration. Throws esi::Error (the configuration's codes, and
/// `run_config_model_mismatch` when the request and the configuration name different models).
RunPlan plan_run(RunRequest request);

struct RunCallbacks {
  /// After every macro step: time reached and the leaves' statistics so far.
  std::function<void(double t, const std::vector<exec::LeafReport>& leaves)> on_step;
  /// After every record written: its time and how many have been written.
  std::function<void(double t, std::size_t records)> on_record;
  const std::atomic<bool>* stop = nullptr;  ///< set: the run stops after the macro step in progress
};

struct RunOutcome {
  exec::ScheduleResult result;
  std::size_t records = 0;
  double writing_seconds = 0;  ///< spent writing records
  std::string last_restart;    ///< the last restart file written ("" = none)
  bool resumed = false;        ///< from request.restart, at:
  double resumed_t = 0;
  std::uint64_t resumed_macro_steps = 0;
};

/// Runs `plan` on the loaded model (plan.request.model, loaded by the caller). Throws esi::Error
/// for bad input (binding, forcing, restart files, the output); a failed or interrupted solve
/// is in the outcome's trajectory code, with the output holding the records reached.
RunOutcome run(const RunPlan& plan, const esm::ResolvedDocument& doc,
               const RunCallbacks& callbacks = {});

/// "restart-000000000003600.esr": the file a restart point at t writes into restart_dir.
std::string restart_name(double t);

}  // namespace esi::drive
