// A run's forcing: providers of records for parameters and parameter arrays, assembled from a
// run configuration's entries (constants, expressions, NetCDF variables), and the epoch rule.
//
// A provider has record times t_k (model seconds, increasing) and reads record k into its
// target (a parameter array or a scalar parameter). Epochs are half-open: over a macro step
// starting at t, the target holds record k with t_k <= t < t_k+1 (a time exactly on t_k+1
// selects k + 1; the last record holds from its time on), or with `bracket` the pair (k, k+1)
// side by side along that index set, which the document blends itself. The schedule
// (schedule.hpp) ends macro steps on every record time, so no step crosses an epoch, reads the
// next record ahead while the leaves step, and refuses a run before the first record or, with
// a bracket, from the last one on (`forcing_out_of_range`).
//
// NetCDF files are read by io (io::open_forcing), which exec does not link: the caller (`esi
// run`) passes that reader to forcing_providers.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "esi/esm/system.hpp"
#include "esi/exec/run_config.hpp"

namespace esi::exec {

struct ForcingProvider {
  std::string target;             ///< a parameter array or scalar parameter of the system
  std::string bracket;            ///< "" or the index set of extent 2 holding records (k, k+1)
  std::vector<double> times;      ///< record times [s], increasing; one record = constant forever
  std::size_t record_values = 0;  ///< values one record holds (the target without the bracket axis)
  /// Reads record k: record_values numbers in the target's cell order (first index fastest,
  /// the bracket axis left out). Called from the run's thread, between macro steps.
  std::function<void(std::size_t record, std::span<double> out)> read;
  std::string pointer;  ///< where the configuration declared it (for errors)
};

/// A file forcing entry opened and bound to its target: what a file reader hands the assembly.
struct ForcingRecords {
  std::vector<double> times;  ///< record times [s]; empty: the file has no time axis (constant)
  std::size_t record_values = 0;
  std::function<void(std::size_t record, std::span<double> out)> read;
};

/// Opens `spec.file` and binds `spec.variable` to `spec.target` of `system` (the target without
/// its bracket axis), refusing at the entry's pointer; see io::open_forcing.
using ForcingFileReader = std::function<ForcingRecords(
    const RunConfig& config, const ForcingSpec& spec, const esm::System& system)>;

/// The provider of an `expression` forcing (ForcingSpec::Kind::Expression): records at
/// start + k * every covering the run (one more for a bracket), each the expression at every
/// cell of the target. Refused before the run, at the forcing's pointer:
/// `forcing_target_unknown`, `forcing_expression_invalid` (a name other than t and the
/// target's axes; t without `every`; a value that is not finite, with the cell and time).
ForcingProvider expression_forcing(const RunConfig& config, const ForcingSpec& spec,
                                   const esm::System& system);

/// Every forcing entry of `config`, in order, as a provider over `system`: a constant is one
/// record filling the target, an expression is expression_forcing's, a NetCDF variable is what
/// `netcdf` opens (checked now: file, variable, shape, units, time axis). Targets are checked
/// against the system when the schedule binds them (check_schedule, run_schedule).
std::vector<ForcingProvider> forcing_providers(const RunConfig& config, const esm::System& system,
                                               const ForcingFileReader& netcdf);

/// The record k with times[k] <= t < times[k+1] (the last record for t >= times.back()).
/// `times` strictly increasing and not empty; t < times[0] throws forcing_time_out_of_range.
std::size_t select_epoch(std::span<const double> times, double t);

/// The first record time strictly after t (when the forcing next changes), or nullopt.
std::optional<double> next_epoch_time(std::span<const double> times, double t);

}  // namespace esi::exec
