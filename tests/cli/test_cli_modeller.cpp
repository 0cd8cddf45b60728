// The modeller's tools of the `esi` binary: `inspect` (readable reactions, natural name order,
// group filters, --grep), `simulate --params FILE`, and the CSV's sidecar JSON with units and
// run metadata, and the default output grid.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli_dir_test.hpp"
#include "support/run_esi.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Result = esi::testing::CliResult;

class Modeller : public esi::testing::CliDirTest {};

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

// ---- simulate --params ---------------------------------------------------------------------------

/// dx/dt = -k x with an observed half = x / 2; units declared so the sidecar has some to report.
const char* kDecay = R"({
  "esm": "1.0.0",
  "metadata": {"name": "Decay"},
  "models": {
    "Box": {
      "variables": {
        "x": {"type": "unknown", "units": "mol/mol", "default": 1.0},
        "k": {"type": "parameter", "units": "1/s", "default": 0.1},
        "half": {"type": "unknown", "units": "mol/mol"}
      },
      "equations": [
        {"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
         "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}},
        {"lhs": "half", "rhs": {"op": "/", "args": ["x", 2]}}
      ]
    }
  }
})";

/// The CSV rows of a run to standard output, header first.
std::vector<std::string> rows_of(const Result& r) { return lines_of(r.out); }

TEST_F(Modeller, ParamsJsonSetsParametersAndInitialValues) {
  const std::string model = write("decay.esm", kDecay);
  const std::string params = write("p.json", R"({"x": 4, "Box.k": 0.5})");
  const Result r = run({"simulate", model, "--tspan", "0", "2", "--saveat", "2", "--params", params, "-o", "-", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = rows_of(r);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_EQ(rows[1], "0,4,2");  // the initial value from the file
  // x(2) = 4 exp(-0.5 * 2): the rate from the file too.
  const double x2 = std::stod(rows[2].substr(2, rows[2].find(',', 2) - 2));
  EXPECT_NEAR(x2, 4 * std::exp(-1.0), 1e-5);
}

TEST_F(Modeller, ParamsCsvSetsValuesAndTheLaterOverrideWins) {
  const std::string model = write("decay.esm", kDecay);
  const std::string params = write("p.csv", "name,value\n# initial amount\n\"Box.x\", 3\nk,0.2\n");
  Result r = run({"simulate", model, "--tspan", "0", "1", "--saveat", "1", "--params", params, "-o", "-", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(rows_of(r).at(1), "0,3,1.5");
  // --set after --params wins, also when the two spell the name differently (x vs Box.x).
  r = run({"simulate", model, "--tspan", "0", "1", "--saveat", "1", "--params", params, "--set", "x=7", "-o", "-", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(rows_of(r).at(1), "0,7,3.5");
  // ... and --params after --set wins over it.
  r = run({"simulate", model, "--tspan", "0", "1", "--saveat", "1", "--set", "x=7", "--params", params, "-o", "-", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(rows_of(r).at(1), "0,3,1.5");
}

TEST_F(Modeller, ParamsUnknownNameGetsSuggestionsWithItsPlace) {
  const std::string model = write("decay.esm", kDecay);
  const std::string json_params = write("p.json", R"({"x": 2, "kk": 1})");
  Result r = run({"simulate", model, "--tspan", "0", "1", "--params", json_params, "-o", "-", "-q"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(json_params + ":/kk: error[unknown_override]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'Box.k'?"), std::string::npos) << r.err;

  const std::string csv_params = write("p.csv", "x,2\nBox.kk,1\n");
  r = run({"simulate", model, "--tspan", "0", "1", "--params", csv_params, "-o", "-", "-q"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[unknown_override]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(csv_params + ":/: error[unknown_override]: --params line 2 ('Box.kk')"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("did you mean 'Box.k'"), std::string::npos) << r.err;
}

TEST_F(Modeller, ParamsMalformedFilesAreClearErrors) {
  const std::string model = write("decay.esm", kDecay);
  const auto expect_refused = [&](const std::string& name, const std::string& text, const std::string& code,
                                  const std::string& where) {
    const std::string file = write(name, text);
    const Result r = run({"simulate", model, "--tspan", "0", "1", "--params", file, "-o", "-", "-q"});
    EXPECT_EQ(r.status, 1) << name;
    EXPECT_TRUE(r.out.empty()) << name << ": " << r.out;
    EXPECT_NE(r.err.find(file), std::string::npos) << name << ": " << r.err;
    EXPECT_NE(r.err.find("error[" + code + "]"), std::string::npos) << name << ": " << r.err;
    EXPECT_NE(r.err.find(where), std::string::npos) << name << ": " << r.err;
  };
  expect_refused("semicolon.csv", "x,1\nk;0.5\n", "invalid_params", "line 2: expected two fields");
  expect_refused("word.csv", "x,one\n", "invalid_params", "line 1: 'x': 'one' is not a finite number");
  expect_refused("twice.csv", "x,1\nx,2\n", "invalid_params", "line 2: 'x' is given twice");
  expect_refused("quote.csv", "\"x,1\n", "invalid_params", "line 1: unbalanced quotes");
  expect_refused("string.json", R"({"k": "0.5"})", "invalid_params", ":/k: ");
  expect_refused("array.json", R"([1, 2])", "invalid_params", "one object");
  expect_refused("broken.json", R"({"k": 0.5,)", "json_parse_error", "not valid JSON");

  const Result missing = run({"simulate", model, "--tspan", "0", "1", "--params", (dir_ / "none.csv").string(), "-o", "-"});
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("error[file_not_found]"), std::string::npos) << missing.err;
  const Result no_value = run({"simulate", model, "--tspan", "0", "1", "-o", "-", "--params"});
  EXPECT_EQ(no_value.status, 2) << no_value.err;
}

// ---- the sidecar and the default output grid --------------------------------------------------

// The CSV's columns come in `esi inspect`'s order: states, then observeds, each in natural
// order (j_2 before j_10), whatever order the document declares them in; each value stays
// under its own name (x_i(t) = i, from dx_i/dt = 0 and its default), and the sidecar lists
// the columns in the same order.
TEST_F(Modeller, CsvColumnsFollowInspectsOrder) {
  const std::string doc = write("order.esm", R"({"esm": "0.1.0", "metadata": {"name": "Order"},
    "models": {"M": {"variables": {
      "x_10": {"type": "unknown", "units": "1", "default": 10.0},
      "x_2": {"type": "unknown", "units": "1", "default": 2.0},
      "b": {"type": "unknown", "units": "1", "default": 1.0},
      "z_obs": {"type": "unknown", "units": "1"},
      "a_obs": {"type": "unknown", "units": "1"}},
     "equations": [
      {"lhs": "z_obs", "rhs": {"op": "+", "args": ["x_2", "x_10"]}},
      {"lhs": "a_obs", "rhs": {"op": "*", "args": [2, "b"]}},
      {"lhs": {"op": "D", "args": ["x_10"], "wrt": "t"}, "rhs": 0},
      {"lhs": {"op": "D", "args": ["x_2"], "wrt": "t"}, "rhs": 0},
      {"lhs": {"op": "D", "args": ["b"], "wrt": "t"}, "rhs": 0}]}}})");
  const fs::path out = dir_ / "o.csv";
  const Result r = run({"simulate", doc, "--tspan", "0", "1", "--output", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(esi::testing::read_all(out));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "t,M.b,M.x_2,M.x_10,M.a_obs,M.z_obs");
  EXPECT_EQ(lines.back(), "1,1,2,10,2,12");
  const json sidecar = json::parse(esi::testing::read_all(out.string() + ".json"));
  std::vector<std::string> names;
  for (const json& c : sidecar["columns"]) names.push_back(c["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"t", "M.b", "M.x_2", "M.x_10", "M.a_obs", "M.z_obs"}));
}

TEST_F(Modeller, SidecarNamesEveryColumnsUnitsAndTheRun) {
  const std::string model = write("decay.esm", kDecay);
  const std::string params = write("p.json", R"({"k": 0.2})");
  const std::string out = (dir_ / "out.csv").string();
  const Result r = run({"simulate", model, "--tspan", "0", "5", "--params", params, "--set", "x=2", "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto csv = lines_of(esi::testing::read_all(out));
  // Without --saveat: 101 rows, every twentieth of a second here, T1 exactly last.
  ASSERT_EQ(csv.size(), 102u);
  EXPECT_EQ(csv[0], "t,Box.x,Box.half");  // the header stays plain names
  EXPECT_EQ(csv[2].substr(0, 5), "0.05,");
  EXPECT_EQ(csv[101].substr(0, 2), "5,");

  ASSERT_TRUE(fs::exists(out + ".json"));
  const json side = json::parse(esi::testing::read_all(out + ".json"));
  ASSERT_EQ(side["columns"].size(), 3u);
  // One entry per CSV column, in order, with the units the document declares.
  const std::vector<std::string> header{"t", "Box.x", "Box.half"};
  const std::vector<std::string> units{"s", "mol/mol", "mol/mol"};
  const std::vector<std::string> kinds{"time", "state", "observed"};
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(side["columns"][j]["name"], header[j]);
    EXPECT_EQ(side["columns"][j]["units"], units[j]) << header[j];
    EXPECT_EQ(side["columns"][j]["kind"], kinds[j]) << header[j];
  }
  const json& run_info = side["run"];
  EXPECT_EQ(run_info["document"], model);
  EXPECT_EQ(run_info["saveat"], 0.05);
  EXPECT_EQ(run_info["saveat_default"], true);
  EXPECT_EQ(run_info["output_rows"], 101);
  EXPECT_EQ(run_info["rtol"], 1e-6);
  EXPECT_EQ(run_info["method"], "Tsit5");
  EXPECT_NE(run_info["method_choice"].get<std::string>().find("stiffness test"), std::string::npos);
  ASSERT_EQ(run_info["overrides"].size(), 2u);
  EXPECT_EQ(run_info["overrides"][0]["name"], "k");
  EXPECT_EQ(run_info["overrides"][0]["value"], 0.2);
  EXPECT_EQ(run_info["overrides"][0]["file"], params);
  EXPECT_EQ(run_info["overrides"][1]["from"], "--set x");
  EXPECT_EQ(run_info["params_files"], json::array({params}));
  EXPECT_FALSE(run_info["esi_version"].get<std::string>().empty());
  const std::string started = run_info["started_at"];
  EXPECT_EQ(started.size(), 20u) << started;  // 2026-12-01T19:04:05Z
  EXPECT_EQ(started.back(), 'Z') << started;
}

TEST_F(Modeller, AGivenSaveatKeepsItsGridAndStandardOutputHasNoSidecar) {
  const std::string model = write("decay.esm", kDecay);
  const std::string out = (dir_ / "out.csv").string();
  Result r = run({"simulate", model, "--tspan", "0", "1", "--saveat", "0.5", "-o", out, "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines_of(esi::testing::read_all(out)).size(), 4u);  // header, 0, 0.5, 1
  EXPECT_EQ(json::parse(esi::testing::read_all(out + ".json"))["run"]["saveat_default"], false);

  const auto before = std::distance(fs::directory_iterator(dir_), fs::directory_iterator());
  r = run({"simulate", model, "--tspan", "0", "1", "-o", "-", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), 102u);
  // The sidecar may not take the --stats file's place (nor the other way round).
  const Result clash = run({"simulate", model, "--tspan", "0", "1", "-o", out, "--stats", out + ".json"});
  EXPECT_EQ(clash.status, 2);
  EXPECT_NE(clash.err.find("is the sidecar of --output"), std::string::npos) << clash.err;
  // Nothing new besides the captured stderr file: no "-.json" anywhere we can see.
  EXPECT_FALSE(fs::exists("-.json"));
  EXPECT_FALSE(fs::exists(dir_ / "-.json"));
  EXPECT_LE(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), before + 1);
}

TEST_F(Modeller, DefaultGridAddsARowAtEachPresetEventTime) {
  // x stays 1 until a dose at t = 0.333 adds 1: a time between two grid rows (0.33, 0.34).
  const std::string model = write("dose.esm", R"({"esm": "1.0.0", "metadata": {"name": "Dose"},
    "models": {"Box": {
      "variables": {"x": {"type": "unknown", "units": "1", "default": 1.0}},
      "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 0}],
      "discrete_events": [{"name": "dose", "trigger": {"type": "preset_times", "times": [0.333, 5]},
        "affects": [{"lhs": "x", "rhs": {"op": "+", "args": [{"op": "Pre", "args": ["x"]}, 1]}}]}]}}})");
  const std::string out = (dir_ / "out.csv").string();
  const Result r = run({"simulate", model, "--tspan", "0", "1", "-o", out, "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto csv = lines_of(esi::testing::read_all(out));
  ASSERT_EQ(csv.size(), 103u);  // header, 101 grid rows, the event at 0.333 (5 is past T1)
  EXPECT_EQ(csv[34], "0.33,1");
  EXPECT_EQ(csv[35], "0.333,2");  // the value after the event, at the event's own time
  EXPECT_EQ(csv[36], "0.34,2");
  EXPECT_EQ(json::parse(esi::testing::read_all(out + ".json"))["run"]["event_times_added"], 1);
}

}  // namespace
