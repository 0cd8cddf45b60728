// `esi run`'s output file and NetCDF forcing: the one place the run command meets file formats.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/system.hpp"
#include "esi/exec/run_config.hpp"
#include "esi/exec/schedule.hpp"

namespace esi::cli {

/// The output of one run: CSV (.csv) or CF NetCDF-4 (.nc), created under PATH.partial when the
/// run hands over its columns (after every check) and renamed to PATH by finish(). Destroyed without finish() (an error during the run), it
/// removes the partial file: a run leaves a complete file or none.
class RunOutput {
 public:
  /// `document` is the resolved model (its coordinates registry); `command_line` goes into the
  /// NetCDF provenance. `system` must outlive the output.
  RunOutput(const std::string& path, const esm::System& system, const nlohmann::json& document,
            const exec::RunConfig& config, const std::string& model_file, const std::string& command_line);
  ~RunOutput();
  RunOutput(const RunOutput&) = delete;
  RunOutput& operator=(const RunOutput&) = delete;

  void columns(const std::vector<std::string>& names);
  void row(double t, std::span<const double> values);
  /// Closes the file and renames it into place (also after a failed or interrupted solve:
  /// the records reached are valid).
  void finish(const exec::Trajectory& trajectory);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// A forcing provider reading `spec.variable` from the NetCDF file `spec.file`, checked now
/// (io::NetcdfForcing::bind: file, variable, shape against the target without its bracket
/// axis, units, time axis); errors are located at the configuration's forcing entry.
exec::ForcingProvider netcdf_forcing(const exec::RunConfig& config, const exec::ForcingSpec& spec,
                                     const esm::System& system);

}  // namespace esi::cli
