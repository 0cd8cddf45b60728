// CF NetCDF-4 output of a run (`esi simulate --output X.nc`, later `esi run`).
//
// Layout. One NetCDF variable per output quantity, not per cell:
//   - a scalar state or observed becomes a variable of dims (time);
//   - an array (System::Array, cells "C.x[i,j,k]", 1-based, first index fastest) becomes ONE
//     variable of dims (time, k, j, i): the array's axes reversed, so that the first index
//     varies fastest in C order, exactly as the cells are stored. A reader indexing
//     `ds["C_x"][n, k-1, j-1, i-1]` gets cell C.x[i,j,k] at record n. Dimension names are the
//     index sets' names (sanitised as below).
// The time axis is the unlimited dimension `time`, a double coordinate with
// `standard_name = "time"`, `axis = "T"`, `calendar = "proleptic_gregorian"` and, by default,
// `units = "seconds since 1970-01-01 00:00:00"`: spec §9.2 fixes model time fed to the closed
// `datetime.*` functions as UTC seconds since the Unix epoch, proleptic Gregorian, no leap
// seconds. A run whose t counts from another origin passes its own `time_units`.
//
// Names. CF §2.3 wants variable and dimension names of letters, digits and underscores that
// start with a letter; flat names hold dots ("SuperFast.O3"), so every character outside
// [A-Za-z0-9_] becomes '_', a name starting with anything but a letter gets a "v_" prefix, and
// a name already taken gets "_2", "_3", ... Every data variable carries its original flat name
// in the attribute `esm_name`, plus `units` (as declared; omitted when the document declares
// none), `long_name` (the description, else the flat name) and `esm_kind` ("state" or
// "observed"). A cell an array variable has no column for is written as NaN (`_FillValue` NaN).
//
// Coordinates. Each index-set dimension gets a coordinate variable of the same name: from the
// document's `coordinates` registry (spec §2.1) when an entry applies to it (inline `values`, or
// `source` naming a parameter array over that one axis whose values the System holds; CF
// attributes standard_name / units / axis copied, the entry's name kept in `esm_coordinate`);
// categorical sets get their members (numbers, or strings as an NC_STRING variable); every
// other axis gets 1-based integer indices (`long_name = "<set> index (1-based)"`). An inline
// `values` entry applies to the axis named like it (its key equals the index set's name, or
// ends with "_<set>"), else to the only axis of its length; auxiliary coordinates (a `source`
// over a shared dimension or over two axes) are written as their own variables and named in
// the `coordinates` attribute of every data variable whose dimensions include theirs.
//
// Storage. NetCDF-4 (HDF5), one record per output time; array variables chunked as one record
// by the whole spatial slab, scalar series and the time axis in chunks of 256 records (one
// value per chunk would cost more in chunk headers than in data); deflate (level 1 by default)
// with the shuffle filter. `write` gathers each array's cells from the row into one
// contiguous buffer and makes one nc_put_vara per variable per record.
//
// Crash safety: the file is written under a temporary name beside the target, "OUT.nc.partial",
// and renamed to OUT.nc by close(). A run killed at any point (even SIGKILL) leaves no OUT.nc,
// or the previous OUT.nc untouched, plus at most a stale OUT.nc.partial (overwritten by the next
// run). An interrupted run (Ctrl-C: the driver stops, the caller goes on) calls close() as a
// finished one does: the file is valid and holds the records written so far. The destructor of
// a writer that was not closed (an exception unwinding) removes the partial file and leaves
// the target alone. Global attributes set before close() (set_attribute) are written at close,
// so the run's outcome (return code, wall time) can go into the file.
//
// Errors are esi::Error: `output_not_writable` (the partial file cannot be created, with
// NetCDF's message), `output_write_failed` (any later NetCDF call or the rename, with the
// path and NetCDF's message).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/system.hpp"

namespace esi::io {

struct NetcdfOutputOptions {
  /// CF units of the time axis: model t (seconds) counted from this origin.
  std::string time_units = "seconds since 1970-01-01 00:00:00";
  std::string calendar = "proleptic_gregorian";
  /// Deflate level 0 (none) to 9; level 1 with shuffle costs little per record.
  int deflate_level = 1;
  bool shuffle = true;
  /// The resolved document (ResolvedDocument::doc) for its `index_sets` (categorical members)
  /// and `coordinates` registry; null: integer index coordinates only.
  const nlohmann::json* document = nullptr;
  /// Global attributes written as given (model file, command line, method, tolerances, ...).
  /// `Conventions` ("CF-1.8") and `source` ("esi <version>") are set unless given here.
  std::map<std::string, std::string> provenance;
};

/// The sanitised NetCDF name of a flat name (see "Names" above): "SuperFast.O3" -> "SuperFast_O3".
/// Names are UTF-8; a Greek letter becomes its Latin name ("Scav.Λ_gas" -> "Scav_Lambda_gas"),
/// a sub- or superscript digit the digit, any other character outside ASCII "_u" and its code
/// point in hex; the original stays in the variable's `esm_name`.
std::string netcdf_name(const std::string& flat_name);

/// CF's `long_name` for a variable: a short title, the description's first sentence when it
/// fits 80 characters (else cut at a word, "..."), the flat name when there is no description.
/// The writer keeps the whole description in a `description` attribute when it is longer.
std::string netcdf_long_name(const std::string& description, const std::string& flat_name);

class NetcdfOutput {
 public:
  /// Creates `path` + ".partial" (clobbering a stale one). `system` must outlive the writer.
  NetcdfOutput(std::string path, const esm::System& system, NetcdfOutputOptions options = {});
  NetcdfOutput(const NetcdfOutput&) = delete;
  NetcdfOutput& operator=(const NetcdfOutput&) = delete;
  ~NetcdfOutput();  ///< not closed: removes the partial file, leaves `path` untouched

  /// Defines dimensions, variables, coordinates and attributes for these output columns
  /// (exec::Trajectory::names order: states, then observeds). Once, before any write.
  void define(const std::vector<std::string>& columns);
  /// One record: `row[j]` is the value of columns[j] at time t.
  void write(double t, std::span<const double> row);
  /// A global attribute, written at close() (overrides a provenance entry of the same name).
  void set_attribute(const std::string& name, const std::string& value);
  /// Writes the pending attributes, closes the file and renames it to `path`. Idempotent; safe
  /// to call after an interrupted run (the file then holds the records written so far). Throws
  /// `output_write_failed` (the partial file is then removed).
  void close();
  /// Drops the partial file (a run refused before its first record); `path` is untouched.
  void discard() noexcept;

  const std::string& path() const { return path_; }
  std::string partial_path() const { return path_ + ".partial"; }
  std::size_t records() const { return records_; }
  bool closed() const { return ncid_ < 0; }

  /// The NetCDF variable name of each flat array or scalar name (after define()).
  const std::map<std::string, std::string>& variable_names() const { return variable_names_; }

 private:
  struct Variable {
    int varid = -1;
    std::vector<std::ptrdiff_t> gather;  ///< per value of the record, its row column (-1: NaN)
    std::vector<std::size_t> count;      ///< the record's count: {1, dims...}
  };
  [[noreturn]] void fail(const std::string& what, int status) const;
  void check(int status, const std::string& what) const;

  std::string path_;
  const esm::System& system_;
  NetcdfOutputOptions options_;
  int ncid_ = -1;
  int time_varid_ = -1;
  std::size_t records_ = 0;
  std::size_t columns_ = 0;
  std::vector<Variable> variables_;
  std::vector<double> buffer_;
  std::map<std::string, std::string> pending_attributes_;
  std::map<std::string, std::string> variable_names_;
};

}  // namespace esi::io
