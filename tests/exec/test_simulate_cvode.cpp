// simulate() with CVODE_BDF: output times, a continuous event located by the driver's root
// finder on CVODE's dense output, and a scheduled parameter update (a restart). Skipped in a
// build without SUNDIALS.
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "esi/esm/flatten.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/method/integrator.hpp"
#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::exec::SimulateOptions;
using esi::exec::Trajectory;
using esi::method::MethodId;

#define SKIP_WITHOUT_SUNDIALS()                                     \
  if (!esi::method::method_available(MethodId::CVODE_BDF))          \
  GTEST_SKIP() << "built without SUNDIALS: CVODE_BDF not offered"

std::string model_doc(const std::string& variables, const std::string& equations,
                      const std::string& extra = "") {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "models": {"M": {"variables": )" + variables +
         R"(, "equations": )" + equations + (extra.empty() ? "" : ", " + extra) + "}}}";
}

struct LoadedModel {
  esi::testing::TempDir dir;
  esi::esm::ResolvedDocument doc;
  esi::esm::System system;
  explicit LoadedModel(const std::string& text) {
    doc = esi::esm::load_resolved(dir.write("m.esm", text));
    system = esi::esm::flatten(doc);
  }
  Trajectory simulate(SimulateOptions o) {
    o.document = &doc;
    return esi::exec::simulate(system, o);
  }
};

double value(const Trajectory& tr, double t, const std::string& name) {
  const int j = tr.column(name);
  EXPECT_GE(j, 0) << name;
  for (std::size_t k = 0; k < tr.times.size(); ++k)
    if (tr.times[k] == t) return tr.at(k, static_cast<std::size_t>(j));
  ADD_FAILURE() << "no output at t = " << t;
  return NAN;
}

SimulateOptions cvode_options(double t1) {
  SimulateOptions o;
  o.t1 = t1;
  o.integrator.method = MethodId::CVODE_BDF;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-14;
  return o;
}

TEST(SimulateCvode, OutputTimesMatchTheExactSolution) {
  SKIP_WITHOUT_SUNDIALS();
  LoadedModel run(model_doc(
      R"({"x": {"type": "unknown", "default": 2.0}, "k": {"type": "parameter", "default": 0.3}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}])"));
  SimulateOptions o = cvode_options(10);
  o.saveat = 0.5;
  const Trajectory tr = run.simulate(o);
  ASSERT_TRUE(tr.ok()) << tr.message;
  EXPECT_EQ(tr.method, MethodId::CVODE_BDF);
  ASSERT_EQ(tr.times.size(), 21u);
  for (std::size_t k = 0; k < tr.times.size(); ++k) {
    EXPECT_DOUBLE_EQ(tr.times[k], 0.5 * static_cast<double>(k));
    const double exact = 2.0 * std::exp(-0.3 * tr.times[k]);
    EXPECT_NEAR(tr.at(k, 0), exact, 1e-7 * exact) << "t = " << tr.times[k];
  }
  EXPECT_GT(tr.stats.accepted, 0);
  EXPECT_GT(tr.stats.jacobian_evaluations, 0);
}

TEST(SimulateCvode, ContinuousEventFiresAtTheAnalyticCrossings) {
  SKIP_WITHOUT_SUNDIALS();
  // x = exp(-t) crosses 0.5 at ln 2; the event records the time in `hit` and resets x to 1, so
  // it fires again at 2 ln 2 (each time CVODE restarts from the jump).
  LoadedModel run(model_doc(
      R"({"x": {"type": "unknown", "default": 1.0}, "hit": {"type": "unknown", "default": -1.0}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "-", "args": ["x"]}},
          {"lhs": {"op": "D", "args": ["hit"], "wrt": "t"}, "rhs": 0}])",
      R"("continuous_events": [{"name": "half", "conditions": [{"op": "-", "args": ["x", 0.5]}],
           "affects": [{"lhs": "hit", "rhs": "t"}, {"lhs": "x", "rhs": 1.0}]}])"));
  SimulateOptions o = cvode_options(2);
  o.sample_times = {1.0};
  const Trajectory tr = run.simulate(o);
  ASSERT_TRUE(tr.ok()) << tr.message;
  EXPECT_EQ(tr.events_fired, 2);
  const double ln2 = std::log(2.0);
  EXPECT_NEAR(value(tr, 1, "M.hit"), ln2, 1e-9);
  EXPECT_NEAR(value(tr, 2, "M.hit"), 2 * ln2, 1e-8);  // after a restart from order 1
  EXPECT_NEAR(value(tr, 2, "M.x"), std::exp(-(2 - 2 * ln2)), 1e-8);
  // The same driver with Rodas5P finds the same crossings.
  o.integrator.method = MethodId::Rodas5P;
  const Trajectory rodas = run.simulate(o);
  ASSERT_TRUE(rodas.ok()) << rodas.message;
  EXPECT_EQ(rodas.events_fired, 2);
  EXPECT_NEAR(value(rodas, 2, "M.hit"), value(tr, 2, "M.hit"), 1e-8);
}

TEST(SimulateCvode, ScheduledParameterUpdateRestartsWithTheNewRate) {
  SKIP_WITHOUT_SUNDIALS();
  // k doubles at t = 1 (preset schedule, §5.4): x = exp(-t) then exp(-1 - 2 (t - 1)).
  LoadedModel run(model_doc(
      R"({"x": {"type": "unknown", "default": 1.0},
          "k": {"type": "parameter", "default": 1.0, "shape": [],
                "update": {"kind": "schedule", "times": [1.0],
                           "expression": {"op": "*", "args": [2, {"op": "Pre", "args": ["k"]}]}}}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}])"));
  const Trajectory tr = run.simulate(cvode_options(2));
  ASSERT_TRUE(tr.ok()) << tr.message;
  EXPECT_NEAR(value(tr, 2, "M.x"), std::exp(-3.0), 1e-9);
}

// The command line: with SUNDIALS the run reports CVODE_BDF and its counts; without it
// --method CVODE_BDF is a usage error (exit 2) that says why.
TEST(SimulateCvode, CommandLineRunsItOrSaysItWasBuiltWithout) {
  esi::testing::TempDir dir;
  const auto file = dir.write("m.esm", model_doc(
      R"({"x": {"type": "unknown", "default": 1.0}, "k": {"type": "parameter", "default": 1.0}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}])"));
  const auto csv = dir.path() / "out.csv", stats = dir.path() / "stats.json";
  const auto result = esi::testing::run_esi(
      ESI_BINARY, {"simulate", file.string(), "--tspan", "0", "1", "--method", "CVODE_BDF", "--rtol",
                   "1e-10", "--atol", "1e-14", "--stats", stats.string(), "--quiet", "--output",
                   csv.string()},
      dir.path() / "err.txt");
  if (!esi::method::method_available(MethodId::CVODE_BDF)) {
    EXPECT_EQ(result.status, 2);
    EXPECT_NE(result.err.find("built without SUNDIALS"), std::string::npos) << result.err;
    return;
  }
  ASSERT_EQ(result.status, 0) << result.err;
  const nlohmann::json s = nlohmann::json::parse(esi::testing::read_all(stats));
  EXPECT_EQ(s["method"], "CVODE_BDF");
  EXPECT_GT(s["steps_accepted"].get<long>(), 0);
  EXPECT_GT(s["jacobian_evaluations"].get<long>(), 0);
  EXPECT_GT(s["lu_factorizations"].get<long>(), 0);
  const std::string text = esi::testing::read_all(csv);
  const std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  double t = 0, x = 0;
  ASSERT_EQ(std::sscanf(last.c_str(), "%lf,%lf", &t, &x), 2) << last;
  EXPECT_EQ(t, 1.0);
  EXPECT_NEAR(x, std::exp(-1.0), 1e-8);
}

}  // namespace
