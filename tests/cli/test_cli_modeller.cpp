// The modeller's tools of the `esi` binary: `inspect` (readable reactions, natural name order,
// group filters, --grep), `simulate --params FILE`, and the CSV's sidecar JSON with units and
// run metadata, and the default output grid.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_esi.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Result = esi::testing::CliResult;

class Modeller : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("esi_modeller_test_" + std::to_string(::getpid()) + "_" +
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
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  fs::path dir_;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

/// Position of the first line that contains `needle`, or -1.
long line_of(const std::vector<std::string>& lines, const std::string& needle) {
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find(needle) != std::string::npos) return static_cast<long>(i);
  return -1;
}

/// A small mechanism: NO + O3 -> NO2 at k1 * exp(-1500 / T), NO2 photolysis at j_1, a source of
/// O3 with coefficient 2 at j_2, and j_10 (read by nothing but the rate of R3), so the natural
/// order j_1, j_2, j_10 differs from byte order j_1, j_10, j_2.
const char* kChemistry = R"({
  "esm": "1.0.0",
  "metadata": {"name": "Mini"},
  "reaction_systems": {
    "Chem": {
      "species": {"NO": {"default": 1.0}, "O3": {"default": 2.0}, "NO2": {"default": 0.5}},
      "parameters": {"k1": {"default": 0.001}, "T": {"default": 298.0},
                     "j_1": {"default": 0.01}, "j_2": {"default": 0.02}, "j_10": {"default": 0.1}},
      "reactions": [
        {"id": "R1", "substrates": [{"species": "NO", "stoichiometry": 1}, {"species": "O3", "stoichiometry": 1}],
         "products": [{"species": "NO2", "stoichiometry": 1}],
         "rate": {"op": "*", "args": ["k1", {"op": "exp", "args": [{"op": "/", "args": [-1500, "T"]}]}]}},
        {"id": "R2", "substrates": [{"species": "NO2", "stoichiometry": 1}],
         "products": [{"species": "NO", "stoichiometry": 1}, {"species": "O3", "stoichiometry": 1}],
         "rate": "j_1"},
        {"id": "R3", "substrates": null, "products": [{"species": "O3", "stoichiometry": 2}],
         "rate": {"op": "*", "args": ["j_2", "j_10"]}}
      ]
    }
  }
})";

// ---- inspect ----------------------------------------------------------------------------------

TEST_F(Modeller, InspectWritesReactionsAsPeopleDo) {
  const Result r = run({"inspect", write("chem.esm", kChemistry)});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("reactions (3):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  Chem.R1  NO + O3 -> NO2 : k1 * exp(-1500 / T)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  Chem.R2  NO2 -> NO + O3 : j_1\n"), std::string::npos) << r.out;
  // A source reaction: an empty left side, and the coefficient before its species.
  EXPECT_NE(r.out.find("  Chem.R3  \u2205 -> 2 O3 : j_2 * j_10\n"), std::string::npos) << r.out;
  // The mass-action ODE of O3 in the equations group.
  EXPECT_NE(r.out.find("D(Chem.O3, t) = "), std::string::npos) << r.out;
}

TEST_F(Modeller, InspectSortsNamesNaturally) {
  const Result r = run({"inspect", write("chem.esm", kChemistry)});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto lines = lines_of(r.out);
  const long j1 = line_of(lines, "Chem.j_1 = "), j2 = line_of(lines, "Chem.j_2 = "),
             j10 = line_of(lines, "Chem.j_10 = ");
  ASSERT_GE(j1, 0);
  EXPECT_LT(j1, j2);
  EXPECT_LT(j2, j10) << r.out;
  // Groups come in the documented order.
  EXPECT_LT(line_of(lines, "states ("), line_of(lines, "parameters ("));
  EXPECT_LT(line_of(lines, "parameters ("), line_of(lines, "reactions ("));
  EXPECT_LT(line_of(lines, "reactions ("), line_of(lines, "equations ("));
}

TEST_F(Modeller, InspectGroupOptionsSelectTheirGroupsOnly) {
  const std::string file = write("chem.esm", kChemistry);
  Result r = run({"inspect", "--reactions", file});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Chem.R1"), std::string::npos) << r.out;
  for (const char* absent : {"states (", "parameters (", "equations (", "Chem.k1 = "})
    EXPECT_EQ(r.out.find(absent), std::string::npos) << absent << " in\n" << r.out;

  r = run({"inspect", "--species", file});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("states (3):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  Chem.NO2  ic = 0.5"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("reactions ("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("j_1"), std::string::npos) << r.out;

  r = run({"inspect", "--equations", "--species", file});  // several groups combine
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("states (3):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("equations (3):"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("reactions ("), std::string::npos) << r.out;
}

TEST_F(Modeller, InspectGrepMatchesNamesAndExpressions) {
  const std::string file = write("chem.esm", kChemistry);
  // A substring of a rate: only R3 reads j_10; of the parameters only j_10 has it in its name.
  Result r = run({"inspect", "--grep", "j_10", file});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Chem.R3"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Chem.R1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Chem.j_10 = 0.1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Chem.j_1 = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reactions (1 of 3 match):"), std::string::npos) << r.out;

  // A regular expression: parameters whose whole name is j_<digit>.
  r = run({"inspect", "--parameters", "--grep", "^Chem\\.j_[0-9]$", file});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Chem.j_1 = 0.01"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Chem.j_2 = 0.02"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Chem.j_10"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Chem.k1"), std::string::npos) << r.out;
}

TEST_F(Modeller, InspectBadRegexIsAUsageError) {
  const Result r = run({"inspect", "--grep", "j_[1", write("chem.esm", kChemistry)});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("--grep 'j_[1' is not a valid regular expression"), std::string::npos) << r.err;
}

TEST_F(Modeller, InspectJsonCarriesTheSameContent) {
  const std::string file = write("chem.esm", kChemistry);
  Result r = run({"inspect", "--json", file});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.dump() + "\n", r.out) << "canonical JSON on one line";
  ASSERT_EQ(j["reactions"].size(), 3u);
  EXPECT_EQ(j["reactions"][0]["text"], "NO + O3 -> NO2 : k1 * exp(-1500 / T)");
  EXPECT_EQ(j["reactions"][0]["rate"], "k1 * exp(-1500 / T)");
  EXPECT_EQ(j["reactions"][2]["products"][0]["stoichiometry"], 2.0);
  EXPECT_TRUE(j["reactions"][2]["substrates"].empty());
  std::vector<std::string> parameters;
  for (const auto& p : j["parameters"]) parameters.push_back(p["name"]);
  const std::vector<std::string> natural{"Chem.T", "Chem.j_1", "Chem.j_2", "Chem.j_10", "Chem.k1"};
  EXPECT_EQ(parameters, natural);
  EXPECT_EQ(j["equations"].size(), 3u);

  r = run({"inspect", "--json", "--reactions", "--grep", "R2", file});
  ASSERT_EQ(r.status, 0) << r.err;
  const json f = json::parse(r.out);
  EXPECT_FALSE(f.contains("parameters"));
  EXPECT_FALSE(f.contains("states"));
  ASSERT_EQ(f["reactions"].size(), 1u);
  EXPECT_EQ(f["reactions"][0]["id"], "R2");
}

}  // namespace
