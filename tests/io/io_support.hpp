// Shared by the io tests: a small gridded document, and NetCDF-C reads that fail the test
// rather than returning garbage.
#pragma once

#include <netcdf.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace esi::testing {

/// u over [x, y] (3 x 2) decaying at a rate scaled by yc[y] and kx[x]; a scalar state s; an observed
/// array w = 2 u; a coordinates registry giving x inline values and y from the parameter yc.
inline std::string gridded_document() {
  return R"({"esm": "1.0.0", "metadata": {"name": "IoGrid"},
    "index_sets": {"x": {"kind": "interval", "size": 3}, "y": {"kind": "interval", "size": 2}},
    "coordinates": {
      "grid_x": {"values": [10.0, 20.0, 30.0], "standard_name": "projection_x_coordinate", "units": "km", "axis": "X"},
      "y_level": {"source": "yc", "units": "m", "axis": "Y"}},
    "models": {"M": {
      "variables": {
        "u": {"type": "unknown", "shape": ["x", "y"], "units": "mol/m^3", "default": 1.0,
              "description": "tracer concentration"},
        "yc": {"type": "parameter", "shape": ["y"], "units": "1", "default": 1.0},
        "kx": {"type": "parameter", "shape": ["x"], "units": "1", "default": 1.0},
        "k": {"type": "parameter", "units": "1/s", "default": 0.001},
        "s": {"type": "unknown", "units": "K", "default": 300.0},
        "w": {"type": "unknown", "shape": ["x", "y"], "units": "mol/m^3"}},
      "equations": [
        {"lhs": {"op": "D", "args": ["u"], "wrt": "t"},
         "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "u", "yc", "kx"]}},
        {"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": {"op": "*", "args": [0.01, "k"]}},
        {"lhs": "w", "rhs": {"op": "*", "args": [2.0, "u"]}}]}}})";
}

inline int nc_dimlen(int ncid, const char* name) {
  int id = -1;
  std::size_t n = 0;
  EXPECT_EQ(nc_inq_dimid(ncid, name, &id), NC_NOERR) << name;
  EXPECT_EQ(nc_inq_dimlen(ncid, id, &n), NC_NOERR) << name;
  return static_cast<int>(n);
}

inline std::string nc_text(int ncid, int varid, const char* name) {
  std::size_t n = 0;
  if (nc_inq_attlen(ncid, varid, name, &n) != NC_NOERR) return "<absent>";
  std::string s(n, '\0');
  EXPECT_EQ(nc_get_att_text(ncid, varid, name, s.data()), NC_NOERR);
  return s;
}

inline int nc_var(int ncid, const char* name) {
  int id = -1;
  EXPECT_EQ(nc_inq_varid(ncid, name, &id), NC_NOERR) << name;
  return id;
}

/// The variable's dimension names, in order.
inline std::vector<std::string> nc_dims(int ncid, int varid) {
  int n = 0;
  nc_inq_varndims(ncid, varid, &n);
  std::vector<int> ids(static_cast<std::size_t>(n));
  nc_inq_vardimid(ncid, varid, ids.data());
  std::vector<std::string> out;
  for (int id : ids) {
    char name[NC_MAX_NAME + 1] = {};
    nc_inq_dimname(ncid, id, name);
    out.emplace_back(name);
  }
  return out;
}

inline std::vector<double> nc_all(int ncid, int varid, std::size_t count) {
  std::vector<double> v(count);
  EXPECT_EQ(nc_get_var_double(ncid, varid, v.data()), NC_NOERR);
  return v;
}

}  // namespace esi::testing
