// The NetCDF forcing reader: see include/esi/io/netcdf_forcing.hpp for the checks, the layout
// and the unit and epoch rules.
#include "esi/core/text.hpp"
#include "esi/io/netcdf_forcing.hpp"

#include <netcdf.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>

#include "esi/core/error.hpp"
#include "esi/esm/units.hpp"

namespace esi::io {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's algorithm).
long long days_from_civil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

/// Reads an integer of 1..width digits at text[pos], advancing pos.
bool read_int(std::string_view text, std::size_t& pos, int max_digits, long long& out) {
  const std::size_t start = pos;
  while (pos < text.size() && pos - start < static_cast<std::size_t>(max_digits) &&
         std::isdigit(static_cast<unsigned char>(text[pos])))
    ++pos;
  if (pos == start) return false;
  std::from_chars(text.data() + start, text.data() + pos, out);
  return true;
}

/// "YYYY-MM-DD[( |T)hh[:mm[:ss[.fff]]]][Z| UTC| +00:00]" as seconds since the Unix epoch.
std::optional<double> parse_cf_date(std::string_view text) {
  std::size_t pos = 0;
  long long year = 0, month = 0, day = 0, hour = 0, minute = 0;
  double second = 0;
  bool negative = pos < text.size() && text[pos] == '-';
  if (negative) ++pos;
  if (!read_int(text, pos, 6, year) || pos >= text.size() || text[pos++] != '-') return std::nullopt;
  if (!read_int(text, pos, 2, month) || pos >= text.size() || text[pos++] != '-') return std::nullopt;
  if (!read_int(text, pos, 2, day)) return std::nullopt;
  if (negative) year = -year;
  if (month < 1 || month > 12 || day < 1 || day > 31) return std::nullopt;
  if (pos < text.size() && (text[pos] == 'T' || text[pos] == ' ')) {
    std::size_t p = pos + 1;
    while (p < text.size() && text[p] == ' ') ++p;
    if (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) {
      pos = p;
      if (!read_int(text, pos, 2, hour)) return std::nullopt;
      if (pos < text.size() && text[pos] == ':') {
        ++pos;
        if (!read_int(text, pos, 2, minute)) return std::nullopt;
        if (pos < text.size() && text[pos] == ':') {
          ++pos;
          const std::size_t start = pos;
          while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) ++pos;
          if (std::from_chars(text.data() + start, text.data() + pos, second).ec != std::errc()) return std::nullopt;
        }
      }
    }
  }
  const std::string rest = trim(text.substr(pos));
  if (!(rest.empty() || rest == "Z" || rest == "UTC" || rest == "+00:00" || rest == "+0000" || rest == "00:00" ||
        rest == "+0" || rest == "0"))
    return std::nullopt;
  if (hour > 24 || minute > 59 || second >= 61) return std::nullopt;
  return static_cast<double>(days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day))) * 86400.0 +
         static_cast<double>(hour * 3600 + minute * 60) + second;
}

/// UDUNITS exponents written without '^' ("kg m-3", "m2 s-1") in the esm grammar.
std::string caret_exponents(const std::string& units) {
  std::string out;
  for (std::size_t i = 0; i < units.size(); ++i) {
    const char c = units[i];
    const bool after_letter = !out.empty() && std::isalpha(static_cast<unsigned char>(out.back()));
    if (after_letter && (std::isdigit(static_cast<unsigned char>(c)) ||
                         (c == '-' && i + 1 < units.size() && std::isdigit(static_cast<unsigned char>(units[i + 1])))))
      out += '^';
    out += c;
  }
  return out;
}

std::optional<esm::Unit> parse_units(const std::string& text, std::string* error) {
  if (auto u = esm::parse_unit(text, error)) return u;
  std::string ignored;
  return esm::parse_unit(caret_exponents(text), &ignored);
}

std::string text_attribute(int ncid, int varid, const char* name) {
  nc_type type = NC_NAT;
  std::size_t length = 0;
  if (nc_inq_att(ncid, varid, name, &type, &length) != NC_NOERR) return {};
  if (type == NC_CHAR) {
    std::string s(length, '\0');
    if (nc_get_att_text(ncid, varid, name, s.data()) != NC_NOERR) return {};
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
  if (type == NC_STRING && length == 1) {
    char* value = nullptr;
    if (nc_get_att_string(ncid, varid, name, &value) != NC_NOERR) return {};
    std::string s = value != nullptr ? value : "";
    nc_free_string(1, &value);
    return s;
  }
  return {};
}

bool has_attribute(int ncid, int varid, const char* name) {
  return nc_inq_attid(ncid, varid, name, nullptr) == NC_NOERR;
}

std::vector<double> number_attribute(int ncid, int varid, const char* name) {
  nc_type type = NC_NAT;
  std::size_t length = 0;
  if (nc_inq_att(ncid, varid, name, &type, &length) != NC_NOERR || type == NC_CHAR || type == NC_STRING) return {};
  std::vector<double> v(length);
  if (nc_get_att_double(ncid, varid, name, v.data()) != NC_NOERR) return {};
  return v;
}

std::string number(double x) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, x).ptr;
  return std::string(buf, end);
}

}  // namespace

std::optional<CfTimeUnits> parse_cf_time_units(std::string_view units, std::string* error) {
  const std::string text = trim(units);
  const std::size_t since = lower(text).find(" since ");
  const auto fail = [&](const std::string& why) -> std::optional<CfTimeUnits> {
    if (error != nullptr) *error = why;
    return std::nullopt;
  };
  if (since == std::string::npos) return fail("'" + text + "' is not a CF time unit (\"UNIT since DATE\")");
  const std::string unit = lower(trim(std::string_view(text).substr(0, since)));
  CfTimeUnits out;
  if (unit == "s" || unit == "sec" || unit == "secs" || unit == "second" || unit == "seconds") out.seconds_per_unit = 1;
  else if (unit == "min" || unit == "mins" || unit == "minute" || unit == "minutes") out.seconds_per_unit = 60;
  else if (unit == "h" || unit == "hr" || unit == "hrs" || unit == "hour" || unit == "hours") out.seconds_per_unit = 3600;
  else if (unit == "d" || unit == "day" || unit == "days") out.seconds_per_unit = 86400;
  else return fail("time unit '" + unit + "' in '" + text + "' is not seconds, minutes, hours or days");
  const auto origin = parse_cf_date(trim(std::string_view(text).substr(since + 7)));
  if (!origin) return fail("the reference date in '" + text + "' is not YYYY-MM-DD[ hh:mm:ss] (UTC)");
  out.origin_unix_seconds = *origin;
  return out;
}

NetcdfForcing::NetcdfForcing(std::string path, ForcingOrigin origin, double model_epoch_unix)
    : path_(std::move(path)), origin_(std::move(origin)), model_epoch_unix_(model_epoch_unix) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec))
    refuse("forcing_file_missing", "the forcing file " + path_ + " does not exist" +
                                       (std::filesystem::exists(path_, ec) ? " as a regular file" : ""));
  const int status = nc_open(path_.c_str(), NC_NOWRITE, &ncid_);
  if (status != NC_NOERR) {
    ncid_ = -1;
    refuse("forcing_file_unreadable", "the forcing file " + path_ + " cannot be read as NetCDF: " + nc_strerror(status));
  }
}

NetcdfForcing::NetcdfForcing(NetcdfForcing&& other) noexcept
    : path_(std::move(other.path_)), origin_(std::move(other.origin_)), model_epoch_unix_(other.model_epoch_unix_),
      ncid_(other.ncid_) {
  other.ncid_ = -1;
}

NetcdfForcing& NetcdfForcing::operator=(NetcdfForcing&& other) noexcept {
  if (this != &other) {
    if (ncid_ >= 0) nc_close(ncid_);
    path_ = std::move(other.path_);
    origin_ = std::move(other.origin_);
    model_epoch_unix_ = other.model_epoch_unix_;
    ncid_ = other.ncid_;
    other.ncid_ = -1;
  }
  return *this;
}

NetcdfForcing::~NetcdfForcing() {
  if (ncid_ >= 0) nc_close(ncid_);
}

void NetcdfForcing::refuse(const std::string& code, const std::string& message) const {
  if (!origin_.file.empty() || !origin_.pointer.empty()) throw Error(code, origin_.file, origin_.pointer, message);
  throw Error(code, path_, "", message);
}

std::vector<std::string> NetcdfForcing::variables() const {
  int count = 0;
  std::vector<std::string> out;
  if (nc_inq_nvars(ncid_, &count) != NC_NOERR) return out;
  for (int v = 0; v < count; ++v) {
    char name[NC_MAX_NAME + 1] = {};
    if (nc_inq_varname(ncid_, v, name) == NC_NOERR) out.emplace_back(name);
  }
  return out;
}

ForcingField NetcdfForcing::bind(const std::string& variable, const esm::System::Array& array) const {
  return bind_to(variable, array.name, array.extents, array.units, array.axes);
}

ForcingField NetcdfForcing::bind_scalar(const std::string& variable, const std::string& target,
                                        const std::string& units) const {
  return bind_to(variable, target, {}, units);
}

namespace {

/// A file dimension named for an index set: the same name, or one is the other with a prefix
/// ("lev" and "gf_lev").
bool names_axis(const std::string& dim, const std::string& axis) {
  auto suffix = [](const std::string& a, const std::string& b) {
    return a.size() > b.size() + 1 && a.compare(a.size() - b.size(), b.size(), b) == 0 && a[a.size() - b.size() - 1] == '_';
  };
  return dim == axis || suffix(axis, dim) || suffix(dim, axis);
}

}  // namespace

void NetcdfForcing::bind_times(ForcingField& f, int time_coordinate, const std::string& time_dim,
                               std::size_t records, const std::string& where) const {
  if (time_coordinate < 0)
    refuse("forcing_time_axis_invalid", where + ": its time dimension '" + time_dim +
                                            "' has no coordinate variable giving the record times");
  const std::string time_units = text_attribute(ncid_, time_coordinate, "units");
  std::string why;
  const auto cf = parse_cf_time_units(time_units, &why);
  if (!cf) refuse("forcing_time_axis_invalid", where + ": time coordinate '" + time_dim + "': " + why);
  const std::string calendar = lower(text_attribute(ncid_, time_coordinate, "calendar"));
  if (!(calendar.empty() || calendar == "standard" || calendar == "gregorian" || calendar == "proleptic_gregorian"))
    refuse("forcing_time_axis_invalid", where + ": calendar '" + calendar +
                                            "' is not supported (standard, gregorian or proleptic_gregorian)");
  std::vector<double> raw(records);
  if (!raw.empty()) {
    const std::size_t start = 0, count = raw.size();
    if (const int s = nc_get_vara_double(ncid_, time_coordinate, &start, &count, raw.data()); s != NC_NOERR)
      refuse("forcing_file_unreadable", where + ": reading its times failed: " + nc_strerror(s));
  }
  if (raw.empty()) refuse("forcing_time_axis_invalid", where + " has no records");
  for (double v : raw) f.times.push_back(v * cf->seconds_per_unit + (cf->origin_unix_seconds - model_epoch_unix_));
  for (std::size_t k = 1; k < f.times.size(); ++k)
    if (!(f.times[k] > f.times[k - 1]) || !std::isfinite(f.times[k]))
      refuse("forcing_time_axis_invalid", where + ": record times are not strictly increasing (record " +
                                              std::to_string(k + 1) + " at " + number(f.times[k]) + " s after " +
                                              number(f.times[k - 1]) + " s)");
}

void NetcdfForcing::bind_units(ForcingField& f, const std::string& units, const std::string& target,
                               const std::string& where) const {
  f.file_units = trim(text_attribute(ncid_, f.varid, "units"));
  f.target_units = trim(units);
  if (!f.target_units.empty()) {
    const bool file_has_units = has_attribute(ncid_, f.varid, "units");
    if (!file_has_units)
      refuse("forcing_units_mismatch", where + " has no `units` attribute; " + target + " is declared in '" +
                                           f.target_units + "' (add the attribute to the file)");
    std::string why_file, why_target;
    const auto from = parse_units(f.file_units, &why_file);
    const auto to = parse_units(f.target_units, &why_target);
    if (!from)
      refuse("forcing_units_mismatch", where + ": its units '" + f.file_units + "' are not a unit esi knows (" +
                                           why_file + "); " + target + " is declared in '" + f.target_units + "'");
    if (!to)
      refuse("forcing_units_mismatch", target + " is declared in '" + f.target_units + "', which is not a unit (" +
                                           why_target + ")");
    if (!(from->dim == to->dim))
      refuse("forcing_units_mismatch", where + " is in '" + f.file_units + "' (" + esm::to_string(from->dim) +
                                           "), but " + target + " is declared in '" + f.target_units + "' (" +
                                           esm::to_string(to->dim) + "): different dimensions");
    // value_target = (value_file * s_f + o_f - o_t) / s_t
    f.factor = from->scale / to->scale;
    f.shift = (from->offset - to->offset) / to->scale;
  }
}

ForcingField NetcdfForcing::bind_to(const std::string& variable, const std::string& target,
                                    const std::vector<std::int64_t>& extents, const std::string& units,
                                    const std::vector<std::string>& axes) const {
  ForcingField f;
  f.variable = variable;
  f.target = target;
  const std::string where = "variable '" + variable + "' of " + path_;
  if (nc_inq_varid(ncid_, variable.c_str(), &f.varid) != NC_NOERR) {
    std::string list;
    const std::vector<std::string> have = variables();
    for (std::size_t k = 0; k < have.size() && k < 20; ++k) list += (k ? ", " : "") + have[k];
    if (have.size() > 20) list += " and " + std::to_string(have.size() - 20) + " more";
    refuse("forcing_variable_missing", "the forcing file " + path_ + " has no variable '" + variable + "' (for " +
                                           target + "); it has: " + (list.empty() ? "no variables" : list));
  }
  int ndims = 0;
  nc_inq_varndims(ncid_, f.varid, &ndims);
  std::vector<int> dimids(static_cast<std::size_t>(ndims));
  nc_inq_vardimid(ncid_, f.varid, dimids.data());
  std::vector<std::size_t> lengths;
  std::vector<std::string> dim_names;
  for (int id : dimids) {
    char name[NC_MAX_NAME + 1] = {};
    std::size_t n = 0;
    nc_inq_dim(ncid_, id, name, &n);
    lengths.push_back(n);
    dim_names.emplace_back(name);
  }
  // The time dimension: the first one, when it is unlimited or its coordinate reads "UNIT since DATE".
  bool timed = false;
  int time_coordinate = -1;
  if (ndims > 0) {
    int unlimited[NC_MAX_DIMS];
    int n_unlimited = 0;
    nc_inq_unlimdims(ncid_, &n_unlimited, unlimited);
    const bool is_unlimited = std::find(unlimited, unlimited + n_unlimited, dimids[0]) != unlimited + n_unlimited;
    int coord = -1;
    const bool has_coordinate = nc_inq_varid(ncid_, dim_names[0].c_str(), &coord) == NC_NOERR;
    const bool since = has_coordinate && lower(text_attribute(ncid_, coord, "units")).find(" since ") != std::string::npos;
    timed = is_unlimited || since;
    if (timed && has_coordinate) time_coordinate = coord;
    // A static field of one axis whose dimension happens to be unlimited would be read as time;
    // prefer the array's reading when the shapes say so.
    if (timed && !since && static_cast<std::size_t>(ndims) == extents.size()) timed = false;
  }
  std::string file_shape = "(";
  for (std::size_t d = 0; d < lengths.size(); ++d)
    file_shape += (d ? ", " : "") + dim_names[d] + " = " + std::to_string(lengths[d]);
  file_shape += ")";
  std::string wanted = timed ? "(time" : "(";
  for (std::size_t d = extents.size(); d-- > 0;) wanted += (wanted.size() > 1 ? ", " : "") + std::to_string(extents[d]);
  wanted += ")";
  const std::size_t spatial = static_cast<std::size_t>(ndims) - (timed ? 1 : 0);
  const std::size_t first = timed ? 1 : 0;
  // Two layouts are read: the array's axes reversed (what NetcdfOutput writes: the last
  // dimension is the first index) and the axes in the document's order (a GEOS-FP file
  // (time, lev, lat, lon) for an array declared [lev, lat, lon]). Dimension names that name the
  // index sets decide; otherwise the extents, and when both orders fit, the file is refused
  // rather than read possibly transposed.
  bool reversed_fits = spatial == extents.size(), declared_fits = reversed_fits;
  bool reversed_named = reversed_fits && axes.size() == extents.size(), declared_named = reversed_named;
  for (std::size_t d = 0; d < spatial && d < extents.size(); ++d) {
    const std::size_t r = extents.size() - 1 - d;
    reversed_fits = reversed_fits && static_cast<std::int64_t>(lengths[first + d]) == extents[r];
    declared_fits = declared_fits && static_cast<std::int64_t>(lengths[first + d]) == extents[d];
    reversed_named = reversed_named && names_axis(dim_names[first + d], axes[r]);
    declared_named = declared_named && names_axis(dim_names[first + d], axes[d]);
  }
  bool shape_ok = false;
  if (spatial <= 1 || (reversed_named && !declared_named)) {
    shape_ok = reversed_fits;
  } else if (declared_named) {
    shape_ok = declared_fits;
    f.declared_order = true;
  } else if (reversed_fits != declared_fits) {
    shape_ok = true;
    f.declared_order = declared_fits;
  } else if (reversed_fits) {
    std::string order;
    for (const std::string& a : axes) order += (order.empty() ? "" : ", ") + a;
    refuse("forcing_dimension_order_ambiguous",
           where + " has dimensions " + file_shape + ", which fit " + target + " (axes " + order +
               ") both in the document's order and reversed; name the file's dimensions after the index sets "
               "so esi knows which is which");
  }
  if (f.declared_order) f.extents.assign(extents.begin(), extents.end());
  if (!shape_ok)
    refuse("forcing_shape_mismatch",
           where + " has dimensions " + file_shape + "; " + target + " has " +
               (extents.empty() ? std::string("no axes (a scalar)") : std::to_string(extents.size()) + " axes") +
               ", so the variable needs dimensions " + wanted +
               " (the array's axes reversed: the last NetCDF dimension is the first index) or the axes in the "
               "document's order");
  f.count.assign(static_cast<std::size_t>(ndims), 1);
  f.values = 1;
  for (std::size_t d = timed ? 1 : 0; d < lengths.size(); ++d) f.count[d] = lengths[d], f.values *= lengths[d];

  if (timed) bind_times(f, time_coordinate, dim_names[0], lengths[0], where);
  bind_units(f, units, target, where);
  if (const auto s = number_attribute(ncid_, f.varid, "scale_factor"); s.size() == 1) f.scale_factor = s[0];
  if (const auto o = number_attribute(ncid_, f.varid, "add_offset"); o.size() == 1) f.add_offset = o[0];
  for (const char* attr : {"_FillValue", "missing_value"})
    for (double v : number_attribute(ncid_, f.varid, attr)) f.missing.push_back(v);
  return f;
}

void NetcdfForcing::read(const ForcingField& f, std::size_t record, std::span<double> out) const {
  ESI_ASSERT(out.size() == f.values && record < f.records());
  std::vector<std::size_t> start(f.count.size(), 0);
  if (!f.times.empty()) start[0] = record;
  const int status = f.count.empty() ? nc_get_var_double(ncid_, f.varid, out.data())
                                     : nc_get_vara_double(ncid_, f.varid, start.data(), f.count.data(), out.data());
  if (status != NC_NOERR)
    refuse("forcing_file_unreadable", "reading record " + std::to_string(record + 1) + " of variable '" + f.variable +
                                          "' of " + path_ + " failed: " + nc_strerror(status));
  if (f.declared_order) {  // the file's last dimension is the array's last axis: transpose
    std::vector<double> file(out.begin(), out.end());
    const std::size_t rank = f.extents.size();
    std::vector<std::int64_t> x(rank, 0);
    for (std::size_t c = 0; c < out.size(); ++c) {  // c: first index fastest
      std::size_t at = 0;
      for (std::size_t d = 0; d < rank; ++d) at = at * static_cast<std::size_t>(f.extents[d]) + static_cast<std::size_t>(x[d]);
      out[c] = file[at];
      for (std::size_t d = 0; d < rank; ++d) {
        if (++x[d] < f.extents[d]) break;
        x[d] = 0;
      }
    }
  }
  const bool packed = f.scale_factor != 1 || f.add_offset != 0;
  const bool converted = f.factor != 1 || f.shift != 0;
  for (std::size_t c = 0; c < out.size(); ++c) {
    double v = out[c];
    if (!std::isfinite(v) || std::find(f.missing.begin(), f.missing.end(), v) != f.missing.end())
      refuse("forcing_missing_value", "variable '" + f.variable + "' of " + path_ + " has a missing value (" +
                                          number(v) + ") at record " + std::to_string(record + 1) + ", value " +
                                          std::to_string(c + 1) + " (first index fastest) for " + f.target);
    if (packed) v = v * f.scale_factor + f.add_offset;
    if (converted) v = v * f.factor + f.shift;
    out[c] = v;
  }
}

OpenForcing open_forcing(const std::string& path, const ForcingOrigin& origin, const std::string& variable,
                         const esm::System& system, const std::string& target, const std::string& bracket) {
  auto file = std::make_shared<NetcdfForcing>(path, origin);
  OpenForcing out;
  const esm::System::Array* array = nullptr;
  for (const auto& a : system.arrays)
    if (a.name == target) array = &a;
  if (array != nullptr) {
    esm::System::Array one = *array;
    for (std::size_t d = 0; d < one.axes.size(); ++d)
      if (one.axes[d] == bracket) {
        one.axes.erase(one.axes.begin() + static_cast<std::ptrdiff_t>(d));
        one.extents.erase(one.extents.begin() + static_cast<std::ptrdiff_t>(d));
        break;
      }
    out.field = file->bind(variable, one);
  } else {
    const int k = system.parameter_index(target);
    if (k < 0)
      throw Error("forcing_target_unknown", origin.file, origin.pointer,
                  "'" + target + "' is not a parameter or parameter array of the model");
    out.field = file->bind_scalar(variable, target, system.parameters[static_cast<std::size_t>(k)].units);
  }
  out.read = [file, field = out.field](std::size_t record, std::span<double> values) {
    file->read(field, record, values);
  };
  return out;
}

}  // namespace esi::io
