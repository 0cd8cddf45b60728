// `esi simulate MODEL --params TABLE --sweep` (issue "A Python module", sweeps from the command
// line): each member's rows are, as text, the rows a separate `esi simulate --set` run with that
// row's values writes; a bad table is refused at its line with no output.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using esi::testing::read_all;

esi::testing::CliResult run(const esi::testing::TempDir& dir, const std::vector<std::string>& args) {
  return esi::testing::run_esi(ESI_BINARY, args, dir.path() / "stderr.txt");
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

const std::string kOzone = std::string(ESI_SOURCE_DIR) + "/examples/ozone_box.esm";

TEST(CliSweep, EveryMemberWritesTheRowsOfItsOwnRun) {
  esi::testing::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> rows = {{"0.004", "5e11"}, {"0.0071", "1e12"}, {"0.01", "1.5e12"}};
  {
    std::ofstream table(dir.path() / "table.csv");
    table << "# members\njNO2,OzoneNOx.O3\n";
    for (const auto& [j, o3] : rows) table << j << "," << o3 << "\n";
  }
  const auto sweep = run(dir, {"simulate", kOzone, "--tspan", "0", "7200", "--saveat", "900", "--set", "k_OH_CO=2.5e-13",
                               "--params", (dir.path() / "table.csv").string(), "--sweep", "--threads", "2",
                               "--output", (dir.path() / "sweep.csv").string()});
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  EXPECT_NE(sweep.err.find("sweep of 3 members over 2 columns"), std::string::npos) << sweep.err;
  const std::vector<std::string> all = lines(read_all(dir.path() / "sweep.csv"));
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0].rfind("member,t,", 0), 0u) << all[0];
  for (std::size_t m = 0; m < rows.size(); ++m) {
    const fs::path one = dir.path() / ("one" + std::to_string(m) + ".csv");
    const auto single = run(dir, {"simulate", kOzone, "--tspan", "0", "7200", "--saveat", "900", "--set",
                                  "k_OH_CO=2.5e-13", "--set", "jNO2=" + rows[m].first, "--set",
                                  "OzoneNOx.O3=" + rows[m].second, "--output", one.string(), "--quiet"});
    ASSERT_EQ(single.status, 0) << single.err;
    const std::vector<std::string> expected = lines(read_all(one));
    ASSERT_EQ(all[0], "member," + expected[0]);  // the same columns, in the same order
    std::size_t found = 0;
    for (std::size_t k = 1; k < all.size(); ++k) {
      if (all[k].rfind(std::to_string(m) + ",", 0) != 0) continue;
      ++found;
      ASSERT_LT(found, expected.size());
      EXPECT_EQ(all[k], std::to_string(m) + "," + expected[found]) << "member " << m << ", row " << found;
    }
    EXPECT_EQ(found + 1, expected.size()) << "member " << m;
  }
  // The sidecar names the member column and the swept variables.
  const std::string sidecar = read_all(dir.path() / "sweep.csv.json");
  EXPECT_NE(sidecar.find("\"kind\": \"member\""), std::string::npos);
  EXPECT_NE(sidecar.find("OzoneNOx.jNO2"), std::string::npos);
}

TEST(CliSweep, ABadTableIsRefusedAtItsLineWithoutOutput) {
  esi::testing::TempDir dir;
  const struct {
    const char* text;
    const char* says;
  } cases[] = {{"jNO2,O3\n0.004\n", "line 2: 1 values for 2 columns"},
               {"jNO2,jNO2\n1,2\n", "'jNO2' names two columns"},
               {"jNO2\nfast\n", "'fast' is not a finite number"},
               {"nothing_here\n1\n", "unknown_override"}};
  for (const auto& c : cases) {
    {
      std::ofstream(dir.path() / "bad.csv") << c.text;
    }
    const fs::path out = dir.path() / "out.csv";
    const auto r = run(dir, {"simulate", kOzone, "--tspan", "0", "60", "--params", (dir.path() / "bad.csv").string(),
                             "--sweep", "--output", out.string()});
    EXPECT_EQ(r.status, 1) << c.text;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("bad.csv"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.text;
  }
  const auto twice = run(dir, {"simulate", kOzone, "--tspan", "0", "60", "--sweep", "--output",
                               (dir.path() / "o.csv").string()});
  EXPECT_EQ(twice.status, 2) << twice.err;
  EXPECT_NE(twice.err.find("one --params TABLE.csv"), std::string::npos) << twice.err;
}

}  // namespace
