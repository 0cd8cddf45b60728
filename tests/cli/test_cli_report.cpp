// The run report of `esi simulate`: the one-line summary on stderr, --stats JSON, --quiet, and
// the warning for a state that goes negative beyond the absolute tolerance.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::testing::CliResult;
using esi::testing::TempDir;

std::string model(const std::string& rhs, double x0) {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "models": {"M": {
    "variables": {"x": {"type": "unknown", "units": "1", "default": )" +
         std::to_string(x0) + R"(}, "k": {"type": "parameter", "units": "1/s", "default": 0.5}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": )" + rhs + "}]}}}";
}
const std::string kDecayRhs = R"({"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]})";

CliResult run(const TempDir& dir, const std::vector<std::string>& args) {
  return esi::testing::run_esi(ESI_BINARY, args, dir.path() / "stderr.txt");
}

TEST(CliReport, StatsJsonCountsTheWorkTheSolverDid) {
  TempDir dir;
  const auto file = dir.write("m.esm", model(kDecayRhs, 1.0)).string();
  const std::string stats = (dir.path() / "stats.json").string();
  const CliResult r = run(dir, {"simulate", file, "--tspan", "0", "4", "--saveat", "1", "--method",
                                "Rodas5P", "--output", (dir.path() / "o.csv").string(), "--stats", stats});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(esi::testing::read_all(stats));
  EXPECT_EQ(j["method"], "Rodas5P");
  EXPECT_EQ(j["method_chosen_automatically"], false);
  EXPECT_EQ(j["return_code"], "Success");
  EXPECT_EQ(j["output_rows"], 5);  // t = 0, 1, 2, 3, 4
  const long steps = j["steps_accepted"], rhs = j["rhs_evaluations"];
  EXPECT_GT(steps, 0);
  EXPECT_GE(rhs, steps);  // a Rosenbrock step evaluates the RHS at least once
  EXPECT_EQ(j["jacobian_evaluations"].get<long>(), steps + j["steps_rejected"].get<long>());
  // The same numbers on one stderr line.
  EXPECT_NE(r.err.find("esi simulate: Rodas5P, " + std::to_string(steps) + " steps"), std::string::npos)
      << r.err;
}

TEST(CliReport, QuietDropsTheSummaryNotTheWarnings) {
  ESI_SKIP_WITHOUT_ESM_SCHEMA();  // esi warns on stderr that the schema is missing
  TempDir dir;
  const auto decay = dir.write("decay.esm", model(kDecayRhs, 1.0)).string();
  const auto out = (dir.path() / "o.csv").string();
  CliResult r = run(dir, {"simulate", decay, "--tspan", "0", "1", "--output", out, "--quiet"});
  ASSERT_EQ(r.status, 0);
  EXPECT_TRUE(r.err.empty()) << r.err;
  r = run(dir, {"simulate", decay, "--tspan", "0", "1", "--output", out});
  EXPECT_NE(r.err.find("(chosen by the stiffness test)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << "a decay stays positive: " << r.err;

  // dx/dt = -2 from x = 1 crosses zero at t = 0.5: warned even under --quiet, naming the state
  // (and, since -2 does not stop at x = 0, blaming the equations, not the tolerances).
  const auto falling = dir.write("falling.esm", model("-2", 1.0)).string();
  r = run(dir, {"simulate", falling, "--tspan", "0", "1", "--saveat", "0.25", "--output", out, "-q"});
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(r.err.find("warning: M.x went negative (-"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" at t = 1), driven there by the equations"), std::string::npos) << r.err;
}

TEST(CliReport, StatsNeedsAWritablePath) {
  TempDir dir;
  const auto file = dir.write("m.esm", model(kDecayRhs, 1.0)).string();
  const auto out = (dir.path() / "o.csv").string();
  EXPECT_EQ(run(dir, {"simulate", file, "--tspan", "0", "1", "--output", out, "--stats"}).status, 2);
  const CliResult r = run(dir, {"simulate", file, "--tspan", "0", "1", "--output", out, "--stats",
                                (dir.path() / "no_such_folder" / "s.json").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("output_not_writable"), std::string::npos) << r.err;
}

}  // namespace
