// `esi simulate --output X.nc` from the command line: input refused before the run leaves no
// X.nc and no X.nc.partial; a stochastic model's NetCDF output is refused by name; the help
// text says what .nc does.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "io/io_support.hpp"
#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace esi::testing;

TEST(CliNetcdf, ARunRefusedBeforeItStartsLeavesNoFile) {
  TempDir dir;
  const auto model = dir.write("grid.esm", gridded_document());
  const fs::path out = dir.path() / "out.nc";
  const auto r = run_esi(ESI_BINARY, {"simulate", model.string(), "--tspan", "0", "10", "--set", "M.nope=1",
                                      "--output", out.string()},
                         dir.path() / "err.txt");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("unknown_override"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
}

TEST(CliNetcdf, AFinishedRunLeavesOnlyTheNetcdfFile) {
  TempDir dir;
  const auto model = dir.write("grid.esm", gridded_document());
  const fs::path out = dir.path() / "out.nc";
  const auto r = run_esi(ESI_BINARY, {"simulate", model.string(), "--tspan", "0", "10", "--saveat", "5",
                                      "--method", "Tsit5", "--quiet", "--output", out.string()},
                         dir.path() / "err.txt");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  EXPECT_FALSE(fs::exists(out.string() + ".json"));
  int nc = -1;
  ASSERT_EQ(nc_open(out.c_str(), NC_NOWRITE, &nc), NC_NOERR);
  EXPECT_EQ(nc_dimlen(nc, "time"), 3);
  EXPECT_EQ(nc_text(nc, NC_GLOBAL, "esi_return_code"), "Success");
  EXPECT_EQ(nc_text(nc, NC_GLOBAL, "esi_method"), "Tsit5");
  EXPECT_EQ(nc_text(nc, NC_GLOBAL, "esi_model_file"), model.string());
  EXPECT_NE(nc_text(nc, NC_GLOBAL, "esi_command_line").find("--saveat 5"), std::string::npos);
  EXPECT_EQ(nc_text(nc, NC_GLOBAL, "title"), "IoGrid");
  nc_close(nc);
}

TEST(CliNetcdf, StochasticModelsRefuseNetcdfOutputByName) {
  TempDir dir;
  const fs::path model = fs::path(ESI_SOURCE_DIR) / "tests/exec/stochastic/ou.esm";
  const fs::path out = dir.path() / "paths.nc";
  const auto r = run_esi(ESI_BINARY, {"simulate", model.string(), "--tspan", "0", "1", "--output", out.string()},
                         dir.path() / "err.txt");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("unsupported_output_format"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
}

TEST(CliNetcdf, TheHelpTextDescribesNetcdfOutput) {
  const auto r = run_esi(ESI_BINARY, {"simulate", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("F ending in .nc: CF NetCDF-4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(".partial"), std::string::npos);
}

}  // namespace
