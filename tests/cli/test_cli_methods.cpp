// Choosing how a run is integrated from the command line: `esi check --method` (every inline
// test with one method, e.g. SUNDIALS' CVODE) and `esi simulate` on a gridded model with a
// Rosenbrock method (its pointwise part on lane pools, the same bytes for any thread count).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "esi/method/integrator.hpp"
#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::testing::CliResult;
using esi::testing::TempDir;

CliResult run(const TempDir& dir, const std::vector<std::string>& args) {
  return esi::testing::run_esi(ESI_BINARY, args, dir.path() / "stderr.txt");
}

/// x' = -k x with an inline test expecting `expected` at t = 2 (exact: exp(-1) for k = 0.5).
std::string decay_with_test(double expected) {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "models": {"M": {
    "variables": {"x": {"type": "unknown", "units": "1", "default": 1.0},
                  "k": {"type": "parameter", "units": "1/s", "default": 0.5}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                   "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}],
    "tests": [{"id": "decay", "time_span": {"start": 0, "end": 2},
               "assertions": [{"variable": "x", "time": 2, "expected": )" +
         nlohmann::json(expected).dump() + R"(, "tolerance": {"rel": 1e-7}}]}]}}})";
}

TEST(CliMethods, CheckRunsEveryTestWithTheMethodGiven) {
  if (!esi::method::method_available(esi::method::MethodId::CVODE_BDF))
    GTEST_SKIP() << "built without SUNDIALS";
  TempDir dir;
  const auto good = dir.write("good.esm", decay_with_test(std::exp(-1.0))).string();
  const auto bad = dir.write("bad.esm", decay_with_test(std::exp(-1.0) * (1 + 1e-5))).string();
  CliResult r = run(dir, {"check", "--method", "CVODE_BDF", "--json", good});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double actual = j["files"][0]["tests"][0]["assertions"][0]["actual"];
  EXPECT_NEAR(actual, std::exp(-1.0), 1e-7);
  EXPECT_NE(actual, std::exp(-1.0));  // a numerical solution, not the expected value echoed
  r = run(dir, {"check", "--method", "CVODE_BDF", bad});
  EXPECT_EQ(r.status, 1) << "an assertion 1e-5 off must fail: " << r.out;
  EXPECT_NE(r.out.find("FAIL x at t=2"), std::string::npos) << r.out;
  // The line says what was achieved, what was allowed and what ran.
  EXPECT_NE(r.out.find("(relative 1e-05), allowed rel "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; ran CVODE_BDF, rtol 1e-10, atol 1e-14"), std::string::npos) << r.out;
  r = run(dir, {"check", "--method", "CVODE_BDF", "--json", bad});
  const auto failed = nlohmann::json::parse(r.out)["files"][0]["tests"][0];
  EXPECT_EQ(failed["solver"], "CVODE_BDF, rtol 1e-10, atol 1e-14");
  EXPECT_NEAR(failed["assertions"][0]["rel_error"].get<double>(), 1e-5, 1e-7);
  EXPECT_GT(failed["assertions"][0]["rel_tolerance"].get<double>(), 0.0);
  // Methods check cannot use, and names it does not know, are usage errors.
  EXPECT_EQ(run(dir, {"check", "--method", "Euler", good}).status, 2);
  EXPECT_EQ(run(dir, {"check", "--method", "Rodas9", good}).status, 2);
}

// u_i' = -k_i u_i + K (u_{i+1} - 2 u_i + u_{i-1}) on 5 cells: the decay is pointwise, the
// diffusion is not.
const std::string kGridDoc = R"({"esm": "1.0.0", "metadata": {"name": "g"},
  "index_sets": {"x": {"kind": "interval", "size": 5}},
  "models": {"G": {
    "variables": {"u": {"type": "unknown", "units": "1", "shape": ["x"], "default": 1.0},
                  "k": {"type": "parameter", "units": "1/s", "shape": ["x"], "default": 0.1},
                  "K": {"type": "parameter", "units": "1/s", "default": 0.01}},
    "equations": [{"lhs": {"op": "D", "args": ["u"], "wrt": "t"},
      "rhs": {"op": "+", "args": [
        {"op": "*", "args": [{"op": "-", "args": ["k"]}, "u"]},
        {"op": "makearray", "args": [], "regions": [[[2, 4]], [[1, 1]], [[5, 5]]],
         "values": [
           {"op": "aggregate", "output_idx": ["i"], "args": ["u"], "ranges": {"i": [2, 4]},
            "expr": {"op": "*", "args": ["K", {"op": "+", "args": [
              {"op": "index", "args": ["u", {"op": "+", "args": ["i", 1]}]},
              {"op": "*", "args": [-2, {"op": "index", "args": ["u", "i"]}]},
              {"op": "index", "args": ["u", {"op": "-", "args": ["i", 1]}]}]}]}},
           {"op": "*", "args": ["K", {"op": "-", "args": [{"op": "index", "args": ["u", 2]}, {"op": "index", "args": ["u", 1]}]}]},
           {"op": "*", "args": ["K", {"op": "-", "args": [{"op": "index", "args": ["u", 4]}, {"op": "index", "args": ["u", 5]}]}]}]}]}}]}}})";

TEST(CliMethods, GriddedRosenbrockRunsCellsOnLanePoolsWithTheSameBytesOnAnyThreadCount) {
  TempDir dir;
  const auto file = dir.write("g.esm", kGridDoc).string();
  const auto one = (dir.path() / "one.csv").string(), two = (dir.path() / "two.csv").string();
  const std::vector<std::string> base = {"simulate", file, "--set", "G.k=0.2", "--method", "Rodas3",
                                         "--tspan", "0", "100", "--saveat", "10", "--split-step", "5"};
  std::vector<std::string> a = base, b = base;
  a.insert(a.end(), {"--threads", "1", "--output", one});
  b.insert(b.end(), {"--threads", "2", "--lanes", "4", "--output", two});
  const CliResult ra = run(dir, a), rb = run(dir, b);
  ASSERT_EQ(ra.status, 0) << ra.err;
  ASSERT_EQ(rb.status, 0) << rb.err;
  EXPECT_NE(ra.err.find("lane pools: 5 cells x 1 states, Rodas3"), std::string::npos) << ra.err;
  EXPECT_NE(ra.err.find("Lie-split every 5 s"), std::string::npos) << ra.err;
  EXPECT_EQ(esi::testing::read_all(one), esi::testing::read_all(two));
  // --cells keeps one equation per cell: no lane pools.
  const auto cells = (dir.path() / "cells.csv").string();
  std::vector<std::string> c = base;
  c.insert(c.end(), {"--cells", "--output", cells});
  const CliResult rc = run(dir, c);
  ASSERT_EQ(rc.status, 0) << rc.err;
  EXPECT_EQ(rc.err.find("lane pools"), std::string::npos) << rc.err;
  // Bad values for the new options are usage errors.
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"--lanes", "3"}, {"--split-step", "0"}, {"--transport-method", "Rodas5P"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), bad.begin(), bad.end());
    args.insert(args.end(), {"--output", one});
    EXPECT_EQ(run(dir, args).status, 2) << bad[0];
  }
}

// A gridded model with events runs as one system (split runs do not apply events yet) and
// says why, rather than running without its events.
TEST(CliMethods, GriddedModelWithEventsRunsAsOneSystemAndSaysWhy) {
  TempDir dir;
  std::string doc = kGridDoc;
  doc.replace(doc.find(R"("K": {"type": "parameter", "units": "1/s", "default": 0.01}})"),
              std::string(R"("K": {"type": "parameter", "units": "1/s", "default": 0.01}})").size(),
              R"("K": {"type": "parameter", "units": "1/s", "default": 0.01},
                  "c": {"type": "unknown", "units": "1", "default": 0.0}})");
  doc.replace(doc.find(R"("equations": [)"), std::string(R"("equations": [)").size(),
              R"("discrete_events": [{"trigger": {"type": "periodic", "interval": 50.0},
                  "affects": [{"lhs": "c", "rhs": {"op": "+", "args": ["c", 1]}}]}],
                "equations": [{"lhs": {"op": "D", "args": ["c"], "wrt": "t"}, "rhs": 0},)");
  const auto file = dir.write("events.esm", doc).string();
  const auto out = (dir.path() / "o.csv").string();
  const CliResult r = run(dir, {"simulate", file, "--method", "Rodas3", "--tspan", "0", "100",
                                "--saveat", "10", "--output", out});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("no lane pools (the model has events"), std::string::npos) << r.err;
  // The event fired at 50 and 100: c is 2 in the last row.
  const std::string csv = esi::testing::read_all(out);
  const std::string last = csv.substr(csv.rfind('\n', csv.size() - 2) + 1);
  EXPECT_EQ(last.substr(0, 6), "100,2,") << last;
}

}  // namespace
