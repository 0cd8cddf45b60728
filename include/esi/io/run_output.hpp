// The output file of one `esi run`: CSV (.csv) or CF NetCDF-4 (.nc), chosen by the extension,
// written under PATH.partial and renamed to PATH at the end, so a run leaves a complete file
// or none.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "esi/esm/system.hpp"
#include "esi/io/netcdf_output.hpp"

namespace esi::io {

/// Created when the run hands over its columns (after every check, so a refused run never
/// creates a file) and renamed by finish(). Destroyed without finish() (an error during the
/// run), it removes the partial file.
class RunOutput {
 public:
  /// Throws `unsupported_output` unless `path` ends in .nc or .csv. `netcdf` (used for .nc):
  /// the document and provenance of the NetCDF file. `system` must outlive the output.
  RunOutput(const std::string& path, const esm::System& system, NetcdfOutputOptions netcdf);
  ~RunOutput();
  RunOutput(const RunOutput&) = delete;
  RunOutput& operator=(const RunOutput&) = delete;

  void columns(const std::vector<std::string>& names);
  void row(double t, std::span<const double> values);
  /// Closes the file and renames it into place (also after a failed or interrupted solve:
  /// the records reached are valid). A NetCDF file records `return_code` (esi_return_code)
  /// and, for a failed run, `failure` (esi_failure) among its global attributes.
  void finish(const std::string& return_code, const std::optional<std::string>& failure);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace esi::io
