// The NetCDF forcing reader: files written here with NetCDF-C, read back into an array's cell
// order (first index fastest) with units converted; every refusal code with what its message
// must name; the CF time axis in model seconds. (Which record holds when is exec's:
// tests/exec/test_schedule_forcing.cpp.)
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/io/netcdf_forcing.hpp"
#include "io/io_support.hpp"
#include "support/temp_dir.hpp"
#include "support/error_of.hpp"

namespace {

namespace fs = std::filesystem;
using esi::io::NetcdfForcing;

/// A forcing file: time (unlimited, 3 records), y = 2, x = 3; variables
///   p(time, y, x) [hPa]: value 100 * record + 10 * y + x (1-based y, x);
///   temp(time) [degC]: 20, 21, 22;  rho(y, x) [kg m-3] static;  nounits(time, y, x);
///   packed(time, y, x) short with scale_factor 0.5, add_offset 1, [Pa];
///   holes(time, y, x) [Pa] with _FillValue -999 at record 2, y 1, x 2.
struct ForcingFile {
  esi::testing::TempDir dir;
  fs::path path = dir.path() / "forcing.nc";
  explicit ForcingFile(const std::string& time_units = "hours since 1970-01-01 01:00:00",
                       std::vector<double> times = {0, 1, 2}, const std::string& calendar = "standard") {
    int nc = -1, t = -1, y = -1, x = -1;
    EXPECT_EQ(nc_create(path.c_str(), NC_NETCDF4 | NC_CLOBBER, &nc), NC_NOERR);
    nc_def_dim(nc, "time", NC_UNLIMITED, &t);
    nc_def_dim(nc, "y", 2, &y);
    nc_def_dim(nc, "x", 3, &x);
    const int txy[3] = {t, y, x}, yx[2] = {y, x};
    int tv = -1, p = -1, temp = -1, rho = -1, nounits = -1, packed = -1, holes = -1;
    nc_def_var(nc, "time", NC_DOUBLE, 1, &t, &tv);
    put_text(nc, tv, "units", time_units);
    put_text(nc, tv, "calendar", calendar);
    nc_def_var(nc, "p", NC_DOUBLE, 3, txy, &p);
    put_text(nc, p, "units", "hPa");
    nc_def_var(nc, "temp", NC_DOUBLE, 1, &t, &temp);
    put_text(nc, temp, "units", "degC");
    nc_def_var(nc, "rho", NC_DOUBLE, 2, yx, &rho);
    put_text(nc, rho, "units", "kg m-3");
    nc_def_var(nc, "nounits", NC_DOUBLE, 3, txy, &nounits);
    nc_def_var(nc, "packed", NC_SHORT, 3, txy, &packed);
    put_text(nc, packed, "units", "Pa");
    const double scale = 0.5, offset = 1.0, fill = -999;
    nc_put_att_double(nc, packed, "scale_factor", NC_DOUBLE, 1, &scale);
    nc_put_att_double(nc, packed, "add_offset", NC_DOUBLE, 1, &offset);
    nc_def_var(nc, "holes", NC_DOUBLE, 3, txy, &holes);
    put_text(nc, holes, "units", "Pa");
    nc_def_var_fill(nc, holes, 0, &fill);
    nc_enddef(nc);
    const std::size_t start1 = 0, n_times = times.size();
    nc_put_vara_double(nc, tv, &start1, &n_times, times.data());
    std::vector<double> pv, hv, tempv = {20, 21, 22}, rhov;
    std::vector<short> packedv;
    for (std::size_t k = 0; k < times.size(); ++k)
      for (int j = 1; j <= 2; ++j)
        for (int i = 1; i <= 3; ++i) {
          pv.push_back(100.0 * static_cast<double>(k) + 10.0 * j + i);
          hv.push_back(k == 1 && j == 1 && i == 2 ? fill : 1.0);
          packedv.push_back(static_cast<short>(10 * j + i));
        }
    for (int j = 1; j <= 2; ++j)
      for (int i = 1; i <= 3; ++i) rhov.push_back(j + 0.1 * i);
    const std::size_t start[3] = {0, 0, 0}, count[3] = {times.size(), 2, 3};
    nc_put_vara_double(nc, p, start, count, pv.data());
    nc_put_vara_double(nc, nounits, start, count, pv.data());
    nc_put_vara_double(nc, holes, start, count, hv.data());
    nc_put_vara_short(nc, packed, start, count, packedv.data());
    const std::size_t temp_count = std::min<std::size_t>(3, times.size());
    nc_put_vara_double(nc, temp, &start1, &temp_count, tempv.data());
    nc_put_var_double(nc, rho, rhov.data());
    EXPECT_EQ(nc_close(nc), NC_NOERR);
  }
  static void put_text(int nc, int var, const char* name, const std::string& value) {
    nc_put_att_text(nc, var, name, value.size(), value.data());
  }
};

esi::esm::System::Array array(const std::string& units, std::vector<std::int64_t> extents = {3, 2}) {
  esi::esm::System::Array a;
  a.name = "M.p";
  a.axes = {"x", "y"};
  a.extents = std::move(extents);
  a.units = units;
  return a;
}

using esi::testing::error_of;

TEST(NetcdfForcing, ARecordReadsInCellOrderConvertedFromHpaToPa) {
  ForcingFile file;
  const NetcdfForcing forcing(file.path.string());
  const auto field = forcing.bind("p", array("Pa"));
  EXPECT_EQ(field.values, 6u);
  EXPECT_EQ(field.records(), 3u);
  EXPECT_EQ(field.factor, 100.0);
  std::vector<double> out(6);
  forcing.read(field, 2, out);
  // Cell (i, j) of M.p, first index fastest, is the file's [record][j-1][i-1], times 100.
  std::size_t c = 0;
  for (int j = 1; j <= 2; ++j)
    for (int i = 1; i <= 3; ++i) EXPECT_EQ(out[c++], (200.0 + 10.0 * j + i) * 100.0) << i << "," << j;
}

TEST(NetcdfForcing, DimensionsNamedInTheDocumentsAxisOrderAreReadTransposed) {
  ForcingFile file;  // p(time, y = 2, x = 3)
  const NetcdfForcing forcing(file.path.string());
  esi::esm::System::Array a = array("Pa", {2, 3});
  a.axes = {"y", "x"};  // declared [y, x], as a GEOS-FP array [lev, lat, lon] follows its file
  const auto field = forcing.bind("p", a);
  EXPECT_TRUE(field.declared_order);
  std::vector<double> out(6);
  forcing.read(field, 1, out);
  // Cell (j, i) of M.p, first index (j) fastest, is the file's [record][j-1][i-1].
  std::size_t c = 0;
  for (int i = 1; i <= 3; ++i)
    for (int j = 1; j <= 2; ++j) EXPECT_EQ(out[c++], (100.0 + 10.0 * j + i) * 100.0) << i << "," << j;
  // Prefixed index-set names name the same dimensions ("gf_y" for "y").
  a.axes = {"gf_y", "gf_x"};
  EXPECT_TRUE(forcing.bind("p", a).declared_order);
}

TEST(NetcdfForcing, ASquareFieldWithDimensionsNamedForNoAxisIsRefusedAsAmbiguous) {
  esi::testing::TempDir dir;
  const fs::path path = dir.path() / "square.nc";
  int nc = -1, d0 = -1, d1 = -1, v = -1;
  ASSERT_EQ(nc_create(path.c_str(), NC_NETCDF4 | NC_CLOBBER, &nc), NC_NOERR);
  nc_def_dim(nc, "d0", 3, &d0);
  nc_def_dim(nc, "d1", 3, &d1);
  const int dims[2] = {d0, d1};
  nc_def_var(nc, "q", NC_DOUBLE, 2, dims, &v);
  ForcingFile::put_text(nc, v, "units", "Pa");
  nc_enddef(nc);
  const std::vector<double> values(9, 1.0);
  nc_put_var_double(nc, v, values.data());
  ASSERT_EQ(nc_close(nc), NC_NOERR);
  const NetcdfForcing forcing(path.string());
  const esi::Error e = error_of([&] { forcing.bind("q", array("Pa", {3, 3})); });
  EXPECT_EQ(e.code(), "forcing_dimension_order_ambiguous");
  EXPECT_NE(e.diagnostic().message.find("name the file's dimensions after the index sets"), std::string::npos);
}

TEST(NetcdfForcing, TheTimeAxisBecomesModelSecondsFromItsCfUnits) {
  ForcingFile file;  // hours since 1970-01-01 01:00:00: 0, 1, 2 h after 01:00
  const NetcdfForcing forcing(file.path.string());
  EXPECT_EQ(forcing.bind("p", array("Pa")).times, (std::vector<double>{3600, 7200, 10800}));
  // A model epoch of 01:00 UTC counts from there.
  const NetcdfForcing shifted(file.path.string(), {}, 3600);
  EXPECT_EQ(shifted.bind("p", array("Pa")).times, (std::vector<double>{0, 3600, 7200}));

  const auto days = esi::io::parse_cf_time_units("days since 2024-07-15T00:00:00Z");
  ASSERT_TRUE(days);
  EXPECT_EQ(days->seconds_per_unit, 86400);
  EXPECT_EQ(days->origin_unix_seconds, 1721001600);
  const auto minutes = esi::io::parse_cf_time_units("minutes since 1969-12-31 23:59:30");
  ASSERT_TRUE(minutes);
  EXPECT_EQ(minutes->seconds_per_unit, 60);
  EXPECT_EQ(minutes->origin_unix_seconds, -30);
  std::string why;
  EXPECT_FALSE(esi::io::parse_cf_time_units("fortnights since 2000-01-01", &why));
  EXPECT_NE(why.find("fortnights"), std::string::npos);
  EXPECT_FALSE(esi::io::parse_cf_time_units("seconds", &why));
}

TEST(NetcdfForcing, ScalarsTemperatureOffsetsStaticFieldsUdunitsSpellingsAndPacking) {
  ForcingFile file;
  const NetcdfForcing forcing(file.path.string());
  const auto temp = forcing.bind_scalar("temp", "M.T", "K");
  double kelvin = 0;
  forcing.read(temp, 1, std::span<double>(&kelvin, 1));
  EXPECT_EQ(kelvin, 21 + 273.15);

  const auto rho = forcing.bind("rho", array("kg/m^3"));  // "kg m-3" in the file
  EXPECT_TRUE(rho.times.empty());
  EXPECT_EQ(rho.records(), 1u);
  std::vector<double> out(6);
  forcing.read(rho, 0, out);
  EXPECT_EQ(out[0], 1.1);  // (x 1, y 1)
  EXPECT_EQ(out[5], 2.3);  // (x 3, y 2)

  const auto packed = forcing.bind("packed", array("Pa"));
  forcing.read(packed, 0, out);
  EXPECT_EQ(out[0], 11 * 0.5 + 1);
  EXPECT_EQ(out[4], 22 * 0.5 + 1);  // (x 2, y 2)

  // A document without units takes the values as they are.
  const auto bare = forcing.bind("nounits", array(""));
  forcing.read(bare, 1, out);
  EXPECT_EQ(out[0], 111);
}

TEST(NetcdfForcing, AMissingFileIsForcingFileMissingNamingThePath) {
  esi::testing::TempDir dir;
  const std::string path = (dir.path() / "absent.nc").string();
  const esi::Error e = error_of([&] { NetcdfForcing f(path); });
  EXPECT_EQ(e.code(), "forcing_file_missing");
  EXPECT_EQ(e.diagnostic().file, path);
  EXPECT_NE(e.diagnostic().message.find(path), std::string::npos);
  // With the run configuration's location, the error points there and still names the file.
  const esi::Error located = error_of([&] { NetcdfForcing f(path, {"run.json", "/forcing/0/file"}); });
  EXPECT_EQ(located.code(), "forcing_file_missing");
  EXPECT_EQ(located.diagnostic().file, "run.json");
  EXPECT_EQ(located.diagnostic().pointer, "/forcing/0/file");
  EXPECT_NE(located.diagnostic().message.find(path), std::string::npos);
}

TEST(NetcdfForcing, AFileThatIsNotNetcdfIsUnreadable) {
  esi::testing::TempDir dir;
  const auto path = dir.write("text.nc", "not a NetCDF file\n");
  const esi::Error e = error_of([&] { NetcdfForcing f(path.string()); });
  EXPECT_EQ(e.code(), "forcing_file_unreadable");
  EXPECT_NE(e.diagnostic().message.find(path.string()), std::string::npos);
}

TEST(NetcdfForcing, AMissingVariableListsWhatTheFileHas) {
  ForcingFile file;
  const NetcdfForcing forcing(file.path.string());
  const esi::Error e = error_of([&] { forcing.bind("O3", array("Pa")); });
  EXPECT_EQ(e.code(), "forcing_variable_missing");
  const std::string& m = e.diagnostic().message;
  EXPECT_NE(m.find("'O3'"), std::string::npos) << m;
  EXPECT_NE(m.find(file.path.string()), std::string::npos) << m;
  EXPECT_NE(m.find("M.p"), std::string::npos) << m;
  EXPECT_NE(m.find("p, temp, rho"), std::string::npos) << m;
}

TEST(NetcdfForcing, DimensionsThatAreNotTheArraysExtentsAreAShapeMismatch) {
  ForcingFile file;
  const NetcdfForcing forcing(file.path.string());
  // An array [x = 2, y = 3] needs (time, 3, 2); the file has (time, 2, 3).
  const esi::Error e = error_of([&] { forcing.bind("p", array("Pa", {2, 3})); });
  EXPECT_EQ(e.code(), "forcing_shape_mismatch");
  const std::string& m = e.diagnostic().message;
  EXPECT_NE(m.find("(time = 3, y = 2, x = 3)"), std::string::npos) << m;
  EXPECT_NE(m.find("(time, 3, 2)"), std::string::npos) << m;
  EXPECT_EQ(error_of([&] { forcing.bind("p", array("Pa", {3, 2, 1})); }).code(), "forcing_shape_mismatch");
  EXPECT_EQ(error_of([&] { forcing.bind_scalar("p", "M.s", "Pa"); }).code(), "forcing_shape_mismatch");
}

TEST(NetcdfForcing, UnitsOfAnotherDimensionOrNoUnitsAtAllAreAUnitsMismatch) {
  ForcingFile file;
  const NetcdfForcing forcing(file.path.string());
  const esi::Error e = error_of([&] { forcing.bind("p", array("m/s")); });
  EXPECT_EQ(e.code(), "forcing_units_mismatch");
  const std::string& m = e.diagnostic().message;
  EXPECT_NE(m.find("'hPa'"), std::string::npos) << m;
  EXPECT_NE(m.find("'m/s'"), std::string::npos) << m;
  EXPECT_NE(m.find("different dimensions"), std::string::npos) << m;
  const esi::Error none = error_of([&] { forcing.bind("nounits", array("Pa")); });
  EXPECT_EQ(none.code(), "forcing_units_mismatch");
  EXPECT_NE(none.diagnostic().message.find("no `units` attribute"), std::string::npos);
  EXPECT_EQ(error_of([&] { forcing.bind("p", array("furlongs")); }).code(), "forcing_units_mismatch");
}

TEST(NetcdfForcing, TimeAxesThatAreNotIncreasingOrUseAnotherCalendarAreRefused) {
  {
    ForcingFile file("hours since 1970-01-01", {0, 2, 1});
    const NetcdfForcing forcing(file.path.string());
    const esi::Error e = error_of([&] { forcing.bind("p", array("Pa")); });
    EXPECT_EQ(e.code(), "forcing_time_axis_invalid");
    EXPECT_NE(e.diagnostic().message.find("strictly increasing"), std::string::npos);
  }
  {
    ForcingFile file("hours since 1970-01-01", {0, 1, 2}, "noleap");
    const NetcdfForcing forcing(file.path.string());
    const esi::Error e = error_of([&] { forcing.bind("p", array("Pa")); });
    EXPECT_EQ(e.code(), "forcing_time_axis_invalid");
    EXPECT_NE(e.diagnostic().message.find("noleap"), std::string::npos);
  }
  {
    ForcingFile file("hours after lunch", {0, 1, 2});
    const NetcdfForcing forcing(file.path.string());
    EXPECT_EQ(error_of([&] { forcing.bind("p", array("Pa")); }).code(), "forcing_time_axis_invalid");
  }
}

TEST(NetcdfForcing, AFillValueInARecordIsAMissingValueAtItsPosition) {
  ForcingFile file;
  const NetcdfForcing forcing(file.path.string());
  const auto holes = forcing.bind("holes", array("Pa"));
  std::vector<double> out(6);
  forcing.read(holes, 0, out);  // record 1 is complete
  EXPECT_EQ(out[1], 1.0);
  const esi::Error e = error_of([&] { forcing.read(holes, 1, out); });
  EXPECT_EQ(e.code(), "forcing_missing_value");
  EXPECT_NE(e.diagnostic().message.find("record 2, value 2"), std::string::npos) << e.diagnostic().message;
}

}  // namespace
