// Forcing fields read from NetCDF files (NetCDF-3 or -4, through NetCDF-C).
//
// A forcing entry maps one variable of a file onto one array (or scalar) of a flattened
// System. `NetcdfForcing::bind` checks it before any run, each refusal a located esi::Error:
//   forcing_file_missing      the file does not exist (or is not a regular file)
//   forcing_file_unreadable   it exists but NetCDF-C cannot open it (its message is quoted)
//   forcing_variable_missing  no such variable; the message lists the variables the file has
//   forcing_shape_mismatch    the variable's spatial dimensions are not the array's extents
//   forcing_units_mismatch    the file's `units` cannot be converted to the declared units
//   forcing_time_axis_invalid the time coordinate is missing, not "UNIT since DATE", uses a
//                             calendar other than standard / gregorian / proleptic_gregorian,
//                             or is not strictly increasing
//   forcing_missing_value     (read) a record holds _FillValue, missing_value, NaN or infinity
// Errors carry `origin` (the run configuration's file and the JSON pointer of the forcing
// entry) when one is given, else the NetCDF file's path; the message always names the NetCDF
// file and the variable.
//
// Layout: the variable's dimensions are (time, d_n, ..., d_1) or, for a field without a time
// axis, (d_n, ..., d_1), where d_1..d_n are the array's axes in the document's order, reversed
// (the last NetCDF dimension varies fastest, as the array's first index does; this is what
// NetcdfOutput writes), or (time, d_1, ..., d_n), the axes in the document's order (a GEOS-FP
// file (time, lev, lat, lon) for an array declared [lev, lat, lon]; read() transposes).
// Dimension names that name the index sets ("lev" or "gf_lev" for the set gf_lev) decide the
// order; without them the extents do, and a file that fits both orders is refused
// (`forcing_dimension_order_ambiguous`) rather than read possibly transposed. The time dimension is the variable's first dimension when it is
// the file's unlimited dimension or has a coordinate variable whose `units` read "UNIT since
// DATE" (CF §4.4: UNIT seconds, minutes, hours or days; DATE "YYYY-MM-DD[ T]hh:mm:ss[.f][Z]",
// time of day optional); its values become model seconds: value * UNIT + (DATE - model epoch),
// the model epoch being the Unix epoch unless the caller says otherwise (spec §9.2 counts model
// time in UTC seconds since 1970-01-01).
//
// Units (decided here): both strings are parsed with the esm units module (a CF/UDUNITS
// spelling such as "kg m-3" or "m2 s-1" is accepted as "kg m^-3"). Equal dimensions convert by
// the scale (hPa in the file, Pa declared: values times 100) and, for a lone temperature, the
// offset (degC to K); different dimensions, an unparseable string, or a file without a `units`
// attribute where the document declares units are `forcing_units_mismatch`. A document that
// declares no units takes the values as they are. CF packing (scale_factor, add_offset) is
// applied before the conversion.
//
// Which record holds when (epochs, brackets, reading ahead) is the run's business:
// exec/forcing.hpp.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "esi/esm/system.hpp"

namespace esi::io {

/// Where the forcing entry was configured (run-configuration file and JSON pointer), for errors.
struct ForcingOrigin {
  std::string file, pointer;
};

/// A CF time unit "UNIT since DATE": seconds per unit and the origin in seconds since the Unix
/// epoch (proleptic Gregorian, no leap seconds). nullopt with `error` set when unreadable.
struct CfTimeUnits {
  double seconds_per_unit = 1;
  double origin_unix_seconds = 0;
};
std::optional<CfTimeUnits> parse_cf_time_units(std::string_view units, std::string* error = nullptr);

/// One variable bound to one target, checked; read it with NetcdfForcing::read.
struct ForcingField {
  std::string variable;     ///< the NetCDF variable
  std::string target;       ///< the array's (or scalar's) flat name
  std::size_t values = 1;   ///< values per record (the array's cell count)
  std::vector<double> times;  ///< model seconds per record; empty for a field without time
  std::string file_units, target_units;
  double factor = 1, shift = 0;  ///< target value = file value * factor + shift (after packing)
  // NetCDF details for read().
  int varid = -1;
  std::vector<std::size_t> count;  ///< per-record count (leading 1 when timed)
  double scale_factor = 1, add_offset = 0;
  std::vector<double> missing;     ///< _FillValue / missing_value, raw
  /// The file's spatial dimensions follow the array's axes in the document's order (not
  /// reversed): read() transposes. `extents` are the array's then.
  bool declared_order = false;
  std::vector<std::int64_t> extents;
  std::size_t records() const { return times.empty() ? 1 : times.size(); }
};

class NetcdfForcing {
 public:
  /// Opens the file (forcing_file_missing / forcing_file_unreadable). `model_epoch_unix`: the
  /// model's t = 0 in seconds since the Unix epoch (0: t is Unix time, spec §9.2).
  explicit NetcdfForcing(std::string path, ForcingOrigin origin = {}, double model_epoch_unix = 0);
  NetcdfForcing(const NetcdfForcing&) = delete;
  NetcdfForcing& operator=(const NetcdfForcing&) = delete;
  NetcdfForcing(NetcdfForcing&& other) noexcept;
  NetcdfForcing& operator=(NetcdfForcing&& other) noexcept;
  ~NetcdfForcing();

  const std::string& path() const { return path_; }
  /// Every variable of the file, in file order.
  std::vector<std::string> variables() const;

  /// Binds `variable` to array `array` of a System, checking name, shape, units and time axis.
  ForcingField bind(const std::string& variable, const esm::System::Array& array) const;
  /// Binds `variable` (dims () or (time)) to a scalar with declared units `units`.
  ForcingField bind_scalar(const std::string& variable, const std::string& target, const std::string& units) const;

  /// Record `record` of `field` into `out` (field.values numbers, the array's cell order: first
  /// index fastest), in the target's units. forcing_missing_value when a value is missing.
  void read(const ForcingField& field, std::size_t record, std::span<double> out) const;

 private:
  ForcingField bind_to(const std::string& variable, const std::string& target,
                       const std::vector<std::int64_t>& extents, const std::string& units,
                       const std::vector<std::string>& axes = {}) const;
  /// The record times of a field whose first dimension is time, in model seconds
  /// (forcing_time_axis_invalid, forcing_file_unreadable).
  void bind_times(ForcingField& f, int time_coordinate, const std::string& time_dim, std::size_t records,
                  const std::string& where) const;
  /// The conversion from the file's units (after packing) to the declared `units`
  /// (forcing_units_mismatch).
  void bind_units(ForcingField& f, const std::string& units, const std::string& target,
                  const std::string& where) const;
  [[noreturn]] void refuse(const std::string& code, const std::string& message) const;

  std::string path_;
  ForcingOrigin origin_;
  double model_epoch_unix_ = 0;
  int ncid_ = -1;
};

/// A forcing entry opened for a run: the bound field and a reader of its record k that keeps
/// the file open for as long as a copy of `read` lives.
struct OpenForcing {
  ForcingField field;
  std::function<void(std::size_t record, std::span<double> out)> read;
};

/// Opens `path` (located at `origin` in errors) and binds `variable` to `target` of `system`:
/// a parameter array without its `bracket` axis (the file holds one record per time; a
/// bracketed target holds two of them side by side), else a scalar parameter in its declared
/// units; `forcing_target_unknown` when the target is neither. The file is opened first, so a
/// missing file is reported before an unknown target.
OpenForcing open_forcing(const std::string& path, const ForcingOrigin& origin, const std::string& variable,
                         const esm::System& system, const std::string& target, const std::string& bracket);

}  // namespace esi::io
