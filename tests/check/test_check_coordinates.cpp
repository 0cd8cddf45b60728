// Spatial coordinates in coordinate expressions (spec §11.4 initial conditions, §6.6.5 test
// references): a name the component does not declare (x, y, z, lon, lat, lev, an axis name,
// a `coordinates` registry key) reads the coordinate of each cell: the registry's values when it
// has one per cell of the axis, else the cell's node on the unit interval, (i - 1) / (N - 1),
// as the format's own ignition-front fixture pins it. Oracles: the closed-form field at those
// nodes computed here, and u' = -u with u(x, 0) = sin(pi x), whose solution is e^-t sin(pi x).
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "esi/check/check.hpp"
#include "esi/esm/flatten.hpp"
#include "support/temp_dir.hpp"

namespace {

using nlohmann::json;

const double kPi = 3.141592653589793;

json sin_pi(const std::string& coordinate) {
  return {{"op", "sin"}, {"args", {{{"op", "*"}, {"args", {kPi, coordinate}}}}}};
}

/// u over `axis` (size n, an index set when `declared`, else an axis only the ranges size),
/// u' = -u, ic(u) = `ic`; `tests` as given.
json decaying_field(const json& ic, const json& tests, bool declared = true,
                    const std::string& axis = "x", int n = 5) {
  const json range = declared ? json{{"from", axis}} : json::array({1, n});
  const json index_u = {{"op", "index"}, {"args", {"u", "i"}}};
  json d = {{"esm", "1.0.0"},
            {"metadata", {{"name", "field"}}},
            {"models",
             {{"M",
               {{"variables", {{"u", {{"type", "unknown"}, {"units", "1"}, {"shape", {axis}}}}}},
                {"equations",
                 {{{"lhs", {{"op", "ic"}, {"args", {"u"}}}}, {"rhs", ic}},
                  {{"lhs",
                    {{"op", "aggregate"},
                     {"output_idx", {"i"}},
                     {"args", json::array()},
                     {"ranges", {{"i", range}}},
                     {"expr", {{"op", "D"}, {"args", {index_u}}, {"wrt", "t"}}}}},
                   {"rhs",
                    {{"op", "aggregate"},
                     {"output_idx", {"i"}},
                     {"args", json::array()},
                     {"ranges", {{"i", range}}},
                     {"expr", {{"op", "-"}, {"args", {index_u}}}}}}}}},
                {"tests", tests}}}}}};
  if (declared) d["index_sets"] = {{axis, {{"kind", "interval"}, {"size", n}}}};
  return d;
}

esi::check::FileResult check(const json& doc) {
  esi::testing::TempDir dir;
  return esi::check::check_file(dir.write("field.esm", doc.dump()).string());
}

json at_time(const std::string& cell, double t, double expected) {
  return {{"variable", cell}, {"time", t}, {"expected", expected}, {"tolerance", {{"rel", 1e-12}}}};
}

TEST(CheckCoordinates, AnInitialFieldReadsEachNodesCoordinate) {
  // The ignition front of the format's fixture: psi(x) = (1 + tanh((x - 0.3) / 0.15)) / 2 on an
  // axis only the ranges size (i in 1..5), held constant.
  const json psi = json::parse(R"({"op": "*", "args": [0.5, {"op": "+", "args": [1,
      {"op": "tanh", "args": [{"op": "/", "args": [{"op": "-", "args": ["x", 0.3]}, 0.15]}]}]}]})");
  json tests = json::array();
  json assertions = json::array();
  for (int i = 1; i <= 5; ++i) {
    const double x = (i - 1) / 4.0;
    assertions.push_back(
        at_time("u[" + std::to_string(i) + "]", 0.0, 0.5 * (1 + std::tanh((x - 0.3) / 0.15))));
  }
  tests.push_back(
      {{"id", "front"}, {"time_span", {{"start", 0.0}, {"end", 1.0}}}, {"assertions", assertions}});
  json doc = decaying_field(psi, tests, /*declared=*/false, "i");
  // held constant: u' = 0
  doc["models"]["M"]["equations"][1]["rhs"]["expr"] = 0;
  const auto r = check(doc);
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_EQ(r.tests.size(), 1u);
  ASSERT_FALSE(r.tests[0].error) << r.tests[0].error->message;
  ASSERT_EQ(r.tests[0].assertions.size(), 5u);
  for (const auto& a : r.tests[0].assertions)
    EXPECT_TRUE(a.pass) << a.variable << ": " << a.actual << " vs " << a.expected;
}

TEST(CheckCoordinates, AReferenceSolutionReadsTheSameCoordinates) {
  // u(x, t) = e^-t sin(pi x): the relative L2 and the uniform error against the closed form
  // are at the solver's tolerance; against e^-2t sin(pi x) they are e - 1 and e^-1 - e^-2.
  const auto reference = [](double rate) {
    return json{{"op", "*"}, {"args", {{{"op", "exp"}, {"args", {-rate}}}, sin_pi("x")}}};
  };
  const auto norms = [&](double rate) {
    return json::array({{{"id", "exact"},
                         {"time_span", {{"start", 0.0}, {"end", 1.0}}},
                         {"assertions",
                          {{{"variable", "u"},
                            {"time", 1.0},
                            {"expected", 0.0},
                            {"reduce", "L2_error"},
                            {"tolerance", {{"abs", 1e-6}}},
                            {"reference", reference(rate)}},
                           {{"variable", "u"},
                            {"time", 1.0},
                            {"expected", 0.0},
                            {"reduce", "Linf_error"},
                            {"tolerance", {{"abs", 1e-6}}},
                            {"reference", reference(rate)}}}}}});
  };
  const auto exact = check(decaying_field(sin_pi("x"), norms(1.0)));
  ASSERT_FALSE(exact.error);
  ASSERT_FALSE(exact.tests[0].error) << exact.tests[0].error->message;
  for (const auto& a : exact.tests[0].assertions) EXPECT_TRUE(a.pass) << a.actual;
  const auto off = check(decaying_field(sin_pi("x"), norms(2.0)));
  ASSERT_FALSE(off.tests[0].error) << off.tests[0].error->message;
  ASSERT_EQ(off.tests[0].assertions.size(), 2u);
  EXPECT_FALSE(off.tests[0].assertions[0].pass);
  EXPECT_NEAR(off.tests[0].assertions[0].actual, std::exp(1.0) - 1, 1e-6);
  EXPECT_NEAR(off.tests[0].assertions[1].actual, std::exp(-1.0) - std::exp(-2.0), 1e-6);
}

TEST(CheckCoordinates, TheCoordinatesRegistryGivesTheValuesWhenItHasOnePerCell) {
  json doc =
      decaying_field(sin_pi("x"), json::array({{{"id", "ic"},
                                                {"time_span", {{"start", 0.0}, {"end", 1.0}}},
                                                {"assertions",
                                                 {at_time("u[2]", 0.0, std::sin(kPi * 0.1)),
                                                  at_time("u[5]", 0.0, std::sin(kPi * 0.9))}}}}));
  doc["coordinates"] = {{"x", {{"values", {0.05, 0.1, 0.3, 0.6, 0.9}}}}};
  const auto r = check(doc);
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_FALSE(r.tests[0].error) << r.tests[0].error->message;
  for (const auto& a : r.tests[0].assertions) EXPECT_TRUE(a.pass) << a.variable << ": " << a.actual;
}

TEST(CheckCoordinates, ANameThatIsNoCoordinateIsStillAnUndefinedVariable) {
  const json ic = {{"op", "*"}, {"args", {2, "nowhere"}}};
  esi::testing::TempDir dir;
  const auto path = dir.write("field.esm", decaying_field(ic, json::array()).dump());
  try {
    (void)esi::esm::flatten(esi::esm::load_resolved(path));
    FAIL() << "flattened";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "undefined_variable") << e.what();
  }
}

TEST(CheckCoordinates, ADiscretizationAgnosticHeatEquationConvergesUnderTheInjectedStencil) {
  // tests/check/heat: u_t = alpha laplacian(u) with no discretization of its own; each test
  // injects a central difference at N nodes and takes the relative L2 error against the exact
  // solution exp(-alpha pi^2 t) sin(pi x). sin(pi x) is an eigenvector of the discrete operator
  // with eigenvalue -(4 / dx^2) sin^2(pi dx / 2), so the error of the (exactly integrated)
  // semi-discrete solution is |exp(alpha t (lambda_h + pi^2)) - 1|, second order in dx.
  const auto r = esi::check::check_file(
      (std::filesystem::path(ESI_SOURCE_DIR) / "tests/check/heat/heat.esm").string());
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_EQ(r.tests.size(), 2u);
  const double alpha = 0.01, t = 0.1;
  std::vector<double> errors;
  for (const auto& [test, n] : {std::pair{&r.tests[0], 21}, std::pair{&r.tests[1], 41}}) {
    ASSERT_FALSE(test->error) << test->error->message;
    ASSERT_EQ(test->assertions.size(), 1u);
    EXPECT_TRUE(test->assertions[0].pass) << test->id;
    const double dx = 1.0 / (n - 1);
    const double lambda_h = -4.0 / (dx * dx) * std::pow(std::sin(kPi * dx / 2), 2);
    const double predicted = std::abs(std::exp(alpha * t * (lambda_h + kPi * kPi)) - 1);
    EXPECT_NEAR(test->assertions[0].actual, predicted, 1e-3 * predicted) << test->id;
    errors.push_back(test->assertions[0].actual);
  }
  EXPECT_NEAR(errors[0] / errors[1], 4.0,
              0.05);  // second order: half the spacing, a quarter the error
}

}  // namespace
