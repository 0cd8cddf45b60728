// `esi analyze --netcdf`: each sweep run's data also as CF NetCDF-4 beside its CSV, holding the
// same times and values (the CSV's shortest round-trip text parses back to the same doubles)
// and the analysis and swept values as global attributes; without --netcdf no .nc is written.
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/io_support.hpp"
#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace esi::testing;

/// dx/dt = -k x and an observed y = 3 x, swept over k = 0.5, 2.
const char* kDocument = R"({
  "esm": "0.1.0",
  "metadata": {"name": "DecayNc"},
  "models": {
    "Box": {
      "variables": {
        "x": {"type": "unknown", "units": "mol/mol", "default": 2.0},
        "y": {"type": "unknown", "units": "mol/mol"},
        "k": {"type": "parameter", "units": "1/s", "default": 0.1}
      },
      "equations": [
        {"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
         "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}},
        {"lhs": "y", "rhs": {"op": "*", "args": [3, "x"]}}
      ],
      "analyses": [{
        "id": "decay_sweep",
        "time_span": {"start": 0, "end": 2},
        "parameter_sweep": {"type": "cartesian",
          "dimensions": [{"parameter": "k", "values": [0.5, 2.0]}]},
        "plots": []
      }]
    }
  }
})";

std::vector<std::vector<double>> csv_columns(const std::string& text, std::vector<std::string>& header) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  header.clear();
  for (std::istringstream h(line); std::getline(h, line, ',');) header.push_back(line);
  std::vector<std::vector<double>> columns(header.size());
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream row(line);
    std::string field;
    for (std::size_t j = 0; std::getline(row, field, ','); ++j) columns.at(j).push_back(std::stod(field));
  }
  return columns;
}

TEST(CliAnalyzeNetcdf, EachRunsNetcdfHoldsItsCsvValues) {
  TempDir dir;
  const auto model = dir.write("decay.esm", kDocument);
  const fs::path out = dir.path() / "out";
  const auto r = run_esi(ESI_BINARY, {"analyze", model.string(), "--out", out.string(), "--netcdf", "-q"},
                         dir.path() / "err.txt");
  ASSERT_EQ(r.status, 0) << r.err;
  const char* points[] = {"k=0.5", "k=2"};
  for (int i = 0; i < 2; ++i) {
    const fs::path csv = out / "decay_sweep" / ("run_000" + std::to_string(i + 1) + ".csv");
    const fs::path nc_path = fs::path(csv).replace_extension(".nc");
    ASSERT_TRUE(fs::exists(nc_path)) << nc_path;
    EXPECT_FALSE(fs::exists(nc_path.string() + ".partial"));
    std::vector<std::string> header;
    const auto columns = csv_columns(read_all(csv), header);
    ASSERT_EQ(header, (std::vector<std::string>{"t", "Box.x", "Box.y"}));
    ASSERT_EQ(columns[0].size(), 101u);
    int nc = -1;
    ASSERT_EQ(nc_open(nc_path.c_str(), NC_NOWRITE, &nc), NC_NOERR);
    EXPECT_EQ(nc_dimlen(nc, "time"), 101);
    EXPECT_EQ(nc_all(nc, nc_var(nc, "time"), 101), columns[0]);
    EXPECT_EQ(nc_all(nc, nc_var(nc, "Box_x"), 101), columns[1]) << "run " << i + 1;
    EXPECT_EQ(nc_all(nc, nc_var(nc, "Box_y"), 101), columns[2]) << "run " << i + 1;
    EXPECT_EQ(nc_text(nc, nc_var(nc, "Box_x"), "units"), "mol/mol");
    EXPECT_EQ(nc_text(nc, NC_GLOBAL, "esi_analysis"), "decay_sweep");
    EXPECT_EQ(nc_text(nc, NC_GLOBAL, "esi_sweep_point"), points[i]);
    EXPECT_EQ(nc_text(nc, NC_GLOBAL, "esi_status"), "ok");
    EXPECT_EQ(nc_text(nc, NC_GLOBAL, "title"), "DecayNc");
    nc_close(nc);
  }
  // k = 2 decays faster: the file is that run's, not the first one's again.
  int nc = -1;
  ASSERT_EQ(nc_open((out / "decay_sweep" / "run_0002.nc").c_str(), NC_NOWRITE, &nc), NC_NOERR);
  EXPECT_NEAR(nc_all(nc, nc_var(nc, "Box_x"), 101).back(), 2.0 * std::exp(-4.0), 1e-6);
  nc_close(nc);
}

TEST(CliAnalyzeNetcdf, WithoutTheOptionNoNetcdfIsWritten) {
  TempDir dir;
  const auto model = dir.write("decay.esm", kDocument);
  const fs::path out = dir.path() / "out";
  const auto r = run_esi(ESI_BINARY, {"analyze", model.string(), "--out", out.string(), "-q"}, dir.path() / "err.txt");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "decay_sweep" / "run_0001.csv"));
  EXPECT_FALSE(fs::exists(out / "decay_sweep" / "run_0001.nc"));
}

}  // namespace
