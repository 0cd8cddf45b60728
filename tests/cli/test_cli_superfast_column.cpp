// examples/superfast_column.esm (issue 10): SuperFast lifted pointwise onto a 25-layer column
// with per-layer temperature and pressure and day/night photolysis. Its inline tests pass, a
// one-hour run across sunset succeeds on lane pools (one controller per cell, 2 threads) and as
// one system of all cells (--cells), the two agreeing, and every layer of the column equals the
// plain SuperFast box model run by `esi simulate --component SuperFast` at that layer's T, P
// and photolysis (read from the column run's own output), by day (lane pools) and by night
// (--cells).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/run_esi.hpp"

namespace {

namespace fs = std::filesystem;
using Result = esi::testing::CliResult;

const std::vector<std::string> kSpecies = {"CH2O", "CH3O2", "CH3OOH", "CO", "H2O2", "HNO3",
                                           "HO2",  "ISOP",  "NO",     "NO2", "O3",  "OH"};
const std::vector<std::string> kPhotolysis = {"jNO2", "jH2COa", "jH2COb", "jH2O2", "jCH3OOH", "jO32OH"};

/// A CSV as rows of name -> value.
std::vector<std::map<std::string, double>> read_csv(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::vector<std::string> header;
  std::vector<std::map<std::string, double>> rows;
  if (std::getline(in, line)) {
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) header.push_back(cell);
  }
  while (std::getline(in, line)) {
    std::stringstream s(line);
    std::map<std::string, double> row;
    std::size_t i = 0;
    for (std::string cell; std::getline(s, cell, ',') && i < header.size(); ++i)
      row[header[i]] = std::stod(cell);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

class SuperFastColumn : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("esi_superfast_column_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Result run(const std::vector<std::string>& args) const {
    return esi::testing::run_esi(ESI_BINARY, args, dir_ / "stderr.txt");
  }
  static std::string example() { return std::string(ESI_SOURCE_DIR) + "/examples/superfast_column.esm"; }

  /// Runs the column for one hour with photolysis held at local hour `hour` (diurnal 0), then
  /// the box model at the T, P and j of `layers`, and compares every species at t = 3600 s.
  void expect_layers_equal_box(double hour, const std::vector<int>& layers, bool one_system) {
    const std::vector<std::string> tight = {"--method", "Rodas3", "--rtol", "1e-10", "--atol", "1e-16",
                                            "--tspan", "0", "3600", "--saveat", "3600", "--quiet"};
    std::vector<std::string> col = {"simulate", example(), "--set", "Column.hour_start=" + exact(hour),
                                    "--set", "Column.diurnal=0", "--output", (dir_ / "column.csv").string()};
    col.insert(col.end(), tight.begin(), tight.end());
    // one_system: every cell in one system with one step; else lane pools, one controller per cell.
    if (one_system) {
      col.push_back("--cells");
    } else {
      col.push_back("--threads");
      col.push_back("2");
    }
    const Result rc = run(col);
    ASSERT_EQ(rc.status, 0) << rc.err;
    const auto column = read_csv(dir_ / "column.csv");
    ASSERT_EQ(column.size(), 2u);
    const auto& end = column.back();
    // The layers' T, P and j as the document computes them, from a one-second run as one
    // system (lane-pool runs do not write the observed arrays Column.T[k], Column.P[k]).
    const Result rp = run({"simulate", example(), "--cells", "--set", "Column.hour_start=" + exact(hour), "--set",
                           "Column.diurnal=0", "--tspan", "0", "1", "--saveat", "1", "--quiet", "--output",
                           (dir_ / "profile.csv").string()});
    ASSERT_EQ(rp.status, 0) << rp.err;
    const auto profile = read_csv(dir_ / "profile.csv");
    ASSERT_FALSE(profile.empty());
    const auto& start = profile.front();
    for (int layer : layers) {
      const std::string cell = "[" + std::to_string(layer) + "]";
      std::vector<std::string> box = {"simulate", example(), "--component", "SuperFast",
                                      "--set", "SuperFast.T=" + exact(start.at("Column.T" + cell)),
                                      "--set", "SuperFast.P=" + exact(start.at("Column.P" + cell)),
                                      "--output", (dir_ / "box.csv").string()};
      for (const auto& j : kPhotolysis) {
        box.push_back("--set");
        box.push_back("SuperFast." + j + "=" + exact(start.at("Column." + j)));
      }
      box.insert(box.end(), tight.begin(), tight.end());
      const Result rb = run(box);
      ASSERT_EQ(rb.status, 0) << rb.err;
      const auto boxed = read_csv(dir_ / "box.csv");
      ASSERT_EQ(boxed.size(), 2u);
      for (const auto& s : kSpecies) {
        const double c = end.at("SuperFast." + s + cell), b = boxed.back().at("SuperFast." + s);
        EXPECT_NEAR(c, b, 1e-7 * std::abs(b) + 1e-14) << s << cell << " at local hour " << hour;
      }
    }
  }

  fs::path dir_;
};

TEST_F(SuperFastColumn, ValidatesAndItsInlineTestsPass) {
  const Result v = run({"validate", example()});
  EXPECT_EQ(v.status, 0) << v.out << v.err;
  const Result c = run({"check", example()});
  EXPECT_EQ(c.status, 0) << c.out << c.err;
  // The upstream SuperFast tests (49 assertions) and the column's profile and photolysis (18).
  EXPECT_NE(c.out.find("67 assertions, 67 passed, 0 failed, 0 errors"), std::string::npos) << c.out;
}

TEST_F(SuperFastColumn, OneHourAcrossSunsetRunsOnLanePoolsAndAsOneSystemAlike) {
  const Result r = run({"simulate", example(), "--method", "Rodas3", "--threads", "2", "--tspan", "0", "3600",
                        "--output", (dir_ / "out.csv").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("lane pools: 25 cells x 12 states"), std::string::npos) << r.err;
  const Result one = run({"simulate", example(), "--method", "Rodas3", "--cells", "--tspan", "0", "3600",
                          "--quiet", "--output", (dir_ / "one.csv").string()});
  ASSERT_EQ(one.status, 0) << one.err;
  const auto rows = read_csv(dir_ / "out.csv");
  const auto one_rows = read_csv(dir_ / "one.csv");
  ASSERT_EQ(one_rows.size(), rows.size());
  // Default tolerances (rtol 1e-6): the per-cell and whole-column controllers agree to 1e-4.
  for (const auto& [name, value] : rows.back())
    if (name.rfind("SuperFast.", 0) == 0 && std::abs(value) > 1e-6)
      EXPECT_NEAR(one_rows.back().at(name), value, 1e-4 * std::abs(value)) << name;
  ASSERT_EQ(rows.size(), 101u);
  for (const auto& row : rows)
    for (const auto& [name, value] : row) ASSERT_TRUE(std::isfinite(value)) << name << " at t " << row.at("t");
  // Sunset at 18 h (t = 1800 s): photolysis on at the start, off at the end.
  EXPECT_GT(rows.front().at("Column.jNO2"), 1e-3);
  EXPECT_EQ(rows.back().at("Column.jNO2"), 0.0);
  // Per-layer temperature and pressure matter: the top layer's OH differs from the surface's.
  const double oh1 = rows[50].at("SuperFast.OH[1]"), oh25 = rows[50].at("SuperFast.OH[25]");
  EXPECT_GT(std::abs(oh1 - oh25), 0.1 * std::abs(oh1));
}

TEST_F(SuperFastColumn, LayersEqualTheBoxModelAtTheirTemperaturePressureAndDaylight) {
  expect_layers_equal_box(14.0, {1, 13, 25}, /*one_system=*/false);
}

TEST_F(SuperFastColumn, LayersEqualTheBoxModelAtNight) {
  expect_layers_equal_box(0.0, {1, 25}, /*one_system=*/true);
}

}  // namespace
