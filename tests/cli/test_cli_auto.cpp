// `esi simulate`'s defaults on library models not written for the examples (issue "A modeller's
// tools, part 2", items 1 and 2):
// - the automatic method on a model that turns stiff late: the landis biomass model aged 70
//   years over 200 took 953,346 Tsit5 steps and failed with MaxSteps when the method was
//   chosen once at t0; it now switches to Rodas5P on its own and says when and why;
// - the default absolute tolerance: 1e-8 exceeded every value of a scavenged gas at 1e-12 and
//   the run ended 51 % off the exact exp(-Lambda t); each state's atol is now capped at 1e-6 of
//   its scale, and a state that stays below its atol is named.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using esi::testing::read_all;

esi::testing::CliResult run(const esi::testing::TempDir& dir, const std::vector<std::string>& args) {
  return esi::testing::run_esi(ESI_BINARY, args, dir.path() / "stderr.txt");
}

std::vector<double> last_row(const std::string& csv) {
  const std::string text = read_all(csv);
  std::size_t end = text.find_last_not_of('\n');
  const std::size_t begin = text.rfind('\n', end) + 1;
  std::vector<double> values;
  std::size_t at = begin;
  while (at <= end) {
    const std::size_t comma = std::min(text.find(',', at), end + 1);
    values.push_back(std::stod(text.substr(at, comma - at)));
    at = comma + 1;
  }
  return values;
}

TEST(AutoMethod, TheLandisBiomassRunSwitchesToTheStiffMethodAndFinishes) {
  if (esi::testing::corpus_dir().empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const fs::path landis = esi::testing::corpus_dir() / "EarthSciModels/components/vegetation/landis_biomass.esm";
  esi::testing::TempDir dir;
  auto simulate = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"simulate", landis.string(), "--set", "LANDISBiomass.max_age=2209032000",
                                     "--tspan", "0", "6.31152e9", "--output", (dir.path() / (name + ".csv")).string(),
                                     "--stats", (dir.path() / (name + ".json")).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(dir, args);
  };
  const auto automatic = simulate("auto", {});
  ASSERT_EQ(automatic.status, 0) << automatic.err;
  const auto fixed = simulate("rodas5p", {"--method", "Rodas5P"});
  ASSERT_EQ(fixed.status, 0) << fixed.err;
  const auto a = nlohmann::json::parse(read_all(dir.path() / "auto.json"));
  const auto r = nlohmann::json::parse(read_all(dir.path() / "rodas5p.json"));
  EXPECT_EQ(a["method"], "Tsit5");
  EXPECT_TRUE(a["method_chosen_automatically"].get<bool>());
  ASSERT_FALSE(a["method_switches"].empty()) << a.dump();
  const auto& first = a["method_switches"][0];
  EXPECT_EQ(first["from"], "Tsit5");
  EXPECT_EQ(first["to"], "Rodas5P");
  EXPECT_GT(first["stiffness"].get<double>(), 0.7);
  EXPECT_GT(first["successive_tests"].get<int>(), 10);
  EXPECT_LE(double(a["steps_accepted"].get<long>()), 1.5 * double(r["steps_accepted"].get<long>()));
  EXPECT_FALSE(r.contains("method_switches"));  // a method given is kept
  // The summary says when and why.
  EXPECT_NE(automatic.err.find("Tsit5 (auto: first choice; it switched)"), std::string::npos) << automatic.err;
  EXPECT_NE(automatic.err.find("switched Tsit5 -> Rodas5P at t = "), std::string::npos) << automatic.err;
  EXPECT_NE(automatic.err.find("above 0.7"), std::string::npos) << automatic.err;
  // The two runs agree on the biomass they end with (the first columns after time).
  const std::vector<double> ua = last_row((dir.path() / "auto.csv").string());
  const std::vector<double> ur = last_row((dir.path() / "rodas5p.csv").string());
  ASSERT_EQ(ua.size(), ur.size());
  for (std::size_t i = 0; i < ua.size(); ++i)
    EXPECT_NEAR(ua[i], ur[i], 1e-3 * std::max(1.0, std::abs(ur[i]))) << "column " << i;
}

TEST(DefaultTolerances, ATraceGasDecaysAsTheExactSolutionSays) {
  if (esi::testing::corpus_dir().empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const fs::path doc = esi::testing::corpus_dir() /
                       "EarthSciModels/components/atmospheric_deposition/sp06_ch20/below_cloud_gas_scavenging.esm";
  esi::testing::TempDir dir;
  const std::string out = (dir.path() / "o.csv").string(), stats = (dir.path() / "s.json").string();
  auto r = run(dir, {"simulate", doc.string(), "--set", "BelowCloudGasScavenging.C_g=1e-12", "--tspan", "0", "36000",
                     "--output", out, "--stats", stats});
  ASSERT_EQ(r.status, 0) << r.err;
  // Lambda is the document's own (an observed column): C_g(t) = 1e-12 exp(-Lambda t).
  const std::string header = read_all(out).substr(0, read_all(out).find('\n'));
  ASSERT_EQ(header, "t,BelowCloudGasScavenging.C_g,BelowCloudGasScavenging.F_bc,BelowCloudGasScavenging.\u039b_gas");
  const std::vector<double> last = last_row(out);
  const double lambda = last[3], exact = 1e-12 * std::exp(-lambda * 36000);
  EXPECT_GT(lambda, 0);
  EXPECT_NEAR(last[1] / exact, 1.0, 1e-3) << last[1] << " against " << exact;
  const auto s = nlohmann::json::parse(read_all(stats));
  EXPECT_TRUE(s["atol_from_scales"].get<bool>());
  EXPECT_EQ(s["atol_smallest"]["state"], "BelowCloudGasScavenging.C_g");
  EXPECT_NEAR(s["atol_smallest"]["atol"].get<double>(), 1e-18, 1e-30);
  EXPECT_TRUE(s["states_below_atol"].empty());
  EXPECT_NE(r.err.find("atol per state: 1e-08, at most 1e-6 of the largest initial value in each state's units "
                       "(smallest 1e-18 for BelowCloudGasScavenging.C_g)"),
            std::string::npos)
      << r.err;
  // An atol given holds for every state, as before: the 51 % error comes back, and no cap.
  r = run(dir, {"simulate", doc.string(), "--set", "BelowCloudGasScavenging.C_g=1e-12", "--tspan", "0", "36000",
                "--atol", "1e-8", "--output", out, "--stats", stats});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(std::abs(last_row(out)[1] / exact - 1.0), 0.1);
  EXPECT_FALSE(nlohmann::json::parse(read_all(stats)).contains("atol_from_scales"));
}

// A state that starts at 0 in units no other state has gets the plain atol; if it stays below
// it the whole run, its error was never controlled, and the run says so.
TEST(DefaultTolerances, AStateThatStaysBelowItsAtolIsNamed) {
  esi::testing::TempDir dir;
  const std::string doc = dir.write("m.esm", R"({"esm": "0.1.0", "metadata": {"name": "Trace"},
    "models": {"M": {"variables": {
      "x": {"type": "unknown", "units": "kg", "default": 0.0},
      "y": {"type": "unknown", "units": "mol", "default": 1.0},
      "k": {"type": "parameter", "units": "kg/s", "default": 1e-13}},
     "equations": [
      {"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "k"},
      {"lhs": {"op": "D", "args": ["y"], "wrt": "t"}, "rhs": {"op": "*", "args": [-1e-3, "y"]}}]}}})").string();
  const std::string out = (dir.path() / "o.csv").string(), stats = (dir.path() / "s.json").string();
  const auto r = run(dir, {"simulate", doc, "--tspan", "0", "100", "--output", out, "--stats", stats});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("warning: M.x stayed below its absolute tolerance (1e-08) the whole run, so its error was "
                       "not controlled; give --atol below its values"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("M.y stayed below"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_all(stats))["states_below_atol"], nlohmann::json({"M.x"}));
}

}  // namespace
