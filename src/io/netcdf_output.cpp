// The CF NetCDF-4 writer: see include/esi/io/netcdf_output.hpp for the layout and the
// crash-safety contract (a temporary name renamed at close).
#include "esi/io/netcdf_output.hpp"

#include <netcdf.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>

#include "esi/core/error.hpp"
#include "esi/io/output_layout.hpp"

#ifndef ESI_VERSION
#define ESI_VERSION "0.1.0"
#endif

namespace esi::io {
namespace {

constexpr std::size_t kSeriesChunk = 256;  ///< records per chunk of the time axis and scalars

/// The next code point of UTF-8 `s` at `i` (advancing i), or -1 for a malformed byte (skipped).
long next_code_point(const std::string& s, std::size_t& i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  int extra = b < 0x80 ? 0 : (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xe ? 2 : (b >> 3) == 0x1e ? 3 : -1;
  if (extra < 0 || i + static_cast<std::size_t>(extra) >= s.size() + (extra == 0 ? 1 : 0)) {
    ++i;
    return -1;
  }
  long cp = extra == 0 ? b : b & (0x3f >> extra);
  for (int k = 1; k <= extra; ++k) {
    if ((byte(i + static_cast<std::size_t>(k)) & 0xc0) != 0x80) {
      ++i;
      return -1;
    }
    cp = (cp << 6) | (byte(i + static_cast<std::size_t>(k)) & 0x3f);
  }
  i += static_cast<std::size_t>(extra) + 1;
  return cp;
}

/// An ASCII spelling of a code point outside ASCII.
std::string ascii_for(long cp) {
  static const char* const greek[] = {"Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta", "Eta",
                                      "Theta", "Iota", "Kappa", "Lambda", "Mu", "Nu", "Xi", "Omicron",
                                      "Pi", "Rho", "Sigma", "Sigma", "Tau", "Upsilon", "Phi", "Chi",
                                      "Psi", "Omega"};
  if (cp >= 0x391 && cp <= 0x3a9) return greek[cp - 0x391];  // 0x3a2 is unassigned: "Sigma"
  if (cp >= 0x3b1 && cp <= 0x3c9) {
    std::string name = greek[cp - 0x3b1];
    name[0] = static_cast<char>(name[0] - 'A' + 'a');
    return name;
  }
  if (cp == 0xb5) return "mu";  // the micro sign
  if (cp >= 0x2080 && cp <= 0x2089) return std::string(1, static_cast<char>('0' + (cp - 0x2080)));
  if (cp >= 0x2074 && cp <= 0x2079) return std::string(1, static_cast<char>('0' + (cp - 0x2070)));
  if (cp == 0x2070) return "0";
  if (cp == 0xb9) return "1";
  if (cp == 0xb2 || cp == 0xb3) return std::string(1, static_cast<char>('0' + (cp - 0xb0)));
  char hex[24];
  std::snprintf(hex, sizeof hex, "_u%04lx", static_cast<unsigned long>(cp) & 0x1fffffUL);
  return hex;
}

}  // namespace

std::string netcdf_name(const std::string& flat_name) {
  std::string out;
  for (std::size_t i = 0; i < flat_name.size();) {
    const long cp = next_code_point(flat_name, i);
    const bool ok = (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '_';
    if (ok) out += static_cast<char>(cp);
    else if (cp >= 0x80) out += ascii_for(cp);
    else out += '_';
  }
  if (out.empty() || !((out[0] >= 'a' && out[0] <= 'z') || (out[0] >= 'A' && out[0] <= 'Z'))) out = "v_" + out;
  return out;
}

std::string netcdf_long_name(const std::string& description, const std::string& flat_name) {
  constexpr std::size_t kMost = 80;
  std::string text;
  for (char c : description) text += (c == '\n' || c == '\t' || c == '\r') ? ' ' : c;
  const auto first = text.find_first_not_of(' ');
  if (first == std::string::npos) return flat_name;
  text.erase(0, first);
  // The first sentence: up to ". " (or the end).
  if (const auto end = text.find(". "); end != std::string::npos) text.erase(end);
  while (!text.empty() && (text.back() == ' ' || text.back() == '.')) text.pop_back();
  if (text.size() <= kMost) return text;
  std::size_t cut = text.rfind(' ', kMost - 3);
  if (cut == std::string::npos || cut < kMost / 2) cut = kMost - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;  // not inside a character
  return text.substr(0, cut) + "...";
}

NetcdfOutput::NetcdfOutput(std::string path, const esm::System& system, NetcdfOutputOptions options)
    : path_(std::move(path)), system_(system), options_(std::move(options)) {
  options_.deflate_level = std::clamp(options_.deflate_level, 0, 9);
  const std::string partial = partial_path();
  int ncid = -1;
  const int status = nc_create(partial.c_str(), NC_NETCDF4 | NC_CLOBBER, &ncid);
  if (status != NC_NOERR)
    throw Error("output_not_writable", path_, "",
                "cannot create the NetCDF output (as " + partial + "): " + nc_strerror(status));
  ncid_ = ncid;
  int old_mode = 0;
  check(nc_set_fill(ncid_, NC_NOFILL, &old_mode), "setting no-fill mode");  // every value is written
}

NetcdfOutput::~NetcdfOutput() { discard(); }

void NetcdfOutput::fail(const std::string& what, int status) const {
  throw Error("output_write_failed", path_, "",
              "writing the NetCDF output failed (" + what + "): " + nc_strerror(status));
}

void NetcdfOutput::check(int status, const std::string& what) const {
  if (status != NC_NOERR) fail(what, status);
}

void NetcdfOutput::define(const std::vector<std::string>& columns) {
  ESI_ASSERT(ncid_ >= 0 && time_varid_ < 0);
  columns_ = columns.size();
  const OutputLayout layout = output_layout(system_, columns, options_.document);

  int time_dim = -1;
  check(nc_def_dim(ncid_, layout.time.c_str(), NC_UNLIMITED, &time_dim), "defining the time dimension");
  check(nc_def_var(ncid_, layout.time.c_str(), NC_DOUBLE, 1, &time_dim, &time_varid_), "defining time");
  const auto text_attribute = [&](int varid, const std::string& name, const std::string& value) {
    check(nc_put_att_text(ncid_, varid, name.c_str(), value.size(), value.data()), "attribute " + name);
  };
  text_attribute(time_varid_, "standard_name", "time");
  text_attribute(time_varid_, "long_name", "model time t");
  text_attribute(time_varid_, "units", options_.time_units);
  text_attribute(time_varid_, "calendar", options_.calendar);
  text_attribute(time_varid_, "axis", "T");
  const std::size_t series_chunk = kSeriesChunk;
  check(nc_def_var_chunking(ncid_, time_varid_, NC_CHUNKED, &series_chunk), "chunking time");

  std::vector<int> dimids;
  for (const LayoutDimension& d : layout.dimensions) {
    int id = -1;
    check(nc_def_dim(ncid_, d.name.c_str(), static_cast<std::size_t>(d.extent), &id), "defining dimension " + d.axis);
    dimids.push_back(id);
  }
  // Coordinates: the registry's entries first, then categorical members, then 1-based indices.
  std::vector<int> coordinate_varids;
  for (const LayoutCoordinate& c : layout.coordinates) {
    const nc_type type = !c.strings.empty() ? NC_STRING : !c.indices.empty() ? NC_INT64 : NC_DOUBLE;
    std::vector<int> ids;
    for (std::size_t d : c.dims) ids.push_back(dimids[d]);
    int varid = -1;
    check(nc_def_var(ncid_, c.name.c_str(), type, static_cast<int>(ids.size()), ids.data(), &varid),
          "defining coordinate " + c.name);
    for (const auto& [name, value] : c.attributes) text_attribute(varid, name, value);
    coordinate_varids.push_back(varid);
  }

  // Data variables.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const LayoutVariable& lv : layout.variables) {
    Variable var;
    std::vector<int> ids{time_dim};
    var.count.push_back(1);
    std::vector<std::size_t> chunks{lv.is_array ? std::size_t{1} : series_chunk};
    for (std::size_t d : lv.dims) {
      ids.push_back(dimids[d]);
      var.count.push_back(static_cast<std::size_t>(layout.dimensions[d].extent));
      chunks.push_back(static_cast<std::size_t>(layout.dimensions[d].extent));
    }
    variable_names_[lv.flat] = lv.name;
    check(nc_def_var(ncid_, lv.name.c_str(), NC_DOUBLE, static_cast<int>(ids.size()), ids.data(), &var.varid),
          "defining " + lv.flat);
    check(nc_def_var_chunking(ncid_, var.varid, NC_CHUNKED, chunks.data()), "chunking " + lv.flat);
    if (options_.deflate_level > 0 || options_.shuffle)
      check(nc_def_var_deflate(ncid_, var.varid, options_.shuffle ? 1 : 0, options_.deflate_level > 0 ? 1 : 0,
                               options_.deflate_level),
            "compressing " + lv.flat);
    // _FillValue NaN where some value has no column: after esm_kind, before `coordinates`.
    bool fill_written = !lv.has_missing;
    const auto fill = [&] {
      if (!fill_written)
        check(nc_put_att_double(ncid_, var.varid, "_FillValue", NC_DOUBLE, 1, &nan), "fill value of " + lv.flat);
      fill_written = true;
    };
    for (const auto& [name, value] : lv.attributes) {
      if (name == "coordinates") fill();
      text_attribute(var.varid, name, value);
    }
    fill();
    var.gather = lv.gather;
    variables_.push_back(std::move(var));
  }

  // Global attributes: the caller's provenance, CF conventions and our version.
  std::map<std::string, std::string> globals = options_.provenance;
  globals.emplace("Conventions", "CF-1.8");
  std::string source = "EarthSciIntegrator (esi) ";
  source += ESI_VERSION;  // (operator+ on the literal trips a false -Warray-bounds in g++ 12)
  globals.emplace("source", source);
  globals.emplace("esi_version", ESI_VERSION);
  for (const auto& [name, value] : globals) text_attribute(NC_GLOBAL, name, value);
  check(nc_enddef(ncid_), "ending the definitions");

  for (std::size_t k = 0; k < layout.coordinates.size(); ++k) {
    const LayoutCoordinate& c = layout.coordinates[k];
    const int varid = coordinate_varids[k];
    if (!c.strings.empty()) {
      std::vector<const char*> texts;
      for (const std::string& s : c.strings) texts.push_back(s.c_str());
      check(nc_put_var_string(ncid_, varid, texts.data()), "writing a coordinate");
    } else if (!c.indices.empty()) {
      check(nc_put_var_longlong(ncid_, varid, c.indices.data()), "writing a coordinate");
    } else if (!c.numbers.empty()) {
      check(nc_put_var_double(ncid_, varid, c.numbers.data()), "writing a coordinate");
    }
  }
  std::size_t largest = 0;
  for (const Variable& v : variables_) largest = std::max(largest, v.gather.size());
  buffer_.resize(largest);
}

void NetcdfOutput::write(double t, std::span<const double> row) {
  ESI_ASSERT(ncid_ >= 0 && time_varid_ >= 0 && row.size() == columns_);
  const std::size_t start_time[1] = {records_}, one[1] = {1};
  check(nc_put_vara_double(ncid_, time_varid_, start_time, one, &t), "writing time");
  std::vector<std::size_t> start;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const Variable& v : variables_) {
    start.assign(v.count.size(), 0);
    start[0] = records_;
    double* out = buffer_.data();
    for (std::size_t c = 0; c < v.gather.size(); ++c) {
      const std::ptrdiff_t j = v.gather[c];
      out[c] = j >= 0 ? row[static_cast<std::size_t>(j)] : nan;
    }
    const int status = nc_put_vara_double(ncid_, v.varid, start.data(), v.count.data(), out);
    if (status != NC_NOERR) fail("writing record " + std::to_string(records_ + 1), status);
  }
  ++records_;
}

void NetcdfOutput::set_attribute(const std::string& name, const std::string& value) {
  pending_attributes_[name] = value;
}

void NetcdfOutput::close() {
  if (ncid_ < 0) return;
  try {
    if (!pending_attributes_.empty()) {
      check(nc_redef(ncid_), "reopening the definitions");
      for (const auto& [name, value] : pending_attributes_)
        check(nc_put_att_text(ncid_, NC_GLOBAL, name.c_str(), value.size(), value.data()), "attribute " + name);
      check(nc_enddef(ncid_), "ending the definitions");
    }
    const int ncid = ncid_;
    ncid_ = -1;
    check(nc_close(ncid), "closing");
  } catch (...) {
    discard();
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(partial_path(), path_, ec);
  if (ec) {
    discard();
    throw Error("output_write_failed", path_, "",
                "renaming the finished NetCDF output " + partial_path() + " to " + path_ + " failed: " + ec.message());
  }
}

void NetcdfOutput::discard() noexcept {
  if (ncid_ >= 0) nc_abort(ncid_);
  ncid_ = -1;
  std::error_code ec;
  std::filesystem::remove(partial_path(), ec);
}

}  // namespace esi::io
