// `esi analyze` field plots (spec §6.7.4) and analyses that inject their own discretization
// (§6.7.2): the plotted field is the run's state at exactly `at_time`, against the axis'
// coordinates; checked against closed forms and against `esi check` running the same model.
#include <stdlib.h>
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

class AnalyzeFields : public esi::testing::CliDirTest {
 protected:
  void SetUp() override {
    CliDirTest::SetUp();
    // A first-order one-sided difference of D(f, wrt: x) on N cells; the first cell reads a
    // zero wall value: D(f)[1] = f[1], D(f)[i] = f[i] - f[i-1].
    write("upwind.esm", R"j({"esm": "1.0.0", "metadata": {"name": "upwind"},
      "metaparameters": {"N": {"type": "integer", "default": 5}},
      "expression_templates": {"upwind_x": {"params": ["f"], "match": {"op": "D", "args": ["f"], "wrt": "x"},
        "body": {"op": "makearray", "args": [], "regions": [[[2, "N"]], [[1, 1]]],
                 "values": [{"op": "aggregate", "output_idx": ["i"], "args": ["f"], "ranges": {"i": [2, "N"]},
                             "expr": {"op": "-", "args": [{"op": "index", "args": ["f", "i"]},
                                                           {"op": "index", "args": ["f", {"op": "-", "args": ["i", 1]}]}]}},
                            {"op": "index", "args": ["f", 1]}]}}}})j");
  }
  json plots(const fs::path& out, const std::string& analysis) const {
    return json::parse(esi::testing::read_all(out / analysis / "plots.json"))["plots"];
  }
};

/// du_i/dt = -k u_i + D(g)_i with g_i = i^2, so under the one-sided difference D(g)_i = 2i - 1
/// for every cell: u_i(t) = (2i-1)/k + (u_i(0) - (2i-1)/k) exp(-k t). The component writes
/// D(g, wrt: x) and imports no rule: only the analyses' (and the test's) injection runs it.
/// `coordinates` gives the cell centres of x; `plots` and `extra` are spliced in.
std::string slope_document(const std::string& plots, const std::string& coordinates = R"j(
  "coordinates": {"grid_x": {"values": [0.5, 1.5, 2.5, 3.5, 4.5], "units": "m", "axis": "X"}},)j",
                           const std::string& extra_analyses = "") {
  return R"j({"esm": "1.0.0", "metadata": {"name": "slope"},
  "index_sets": {"x": {"kind": "interval", "size": 5}},)j" + coordinates + R"j(
  "models": {"Slope": {
    "variables": {
      "u": {"type": "unknown", "shape": ["x"], "units": "m", "default": 0.0},
      "g": {"type": "unknown", "shape": ["x"], "units": "m/s"},
      "k": {"type": "parameter", "units": "1/s", "default": 0.1}
    },
    "equations": [
      {"lhs": "g", "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}},
                           "expr": {"op": "*", "args": ["i", "i", 1.0]}}},
      {"lhs": {"op": "D", "args": ["u"], "wrt": "t"},
       "rhs": {"op": "+", "args": [{"op": "*", "args": [{"op": "-", "args": ["k"]}, "u"]},
                                   {"op": "D", "args": ["g"], "wrt": "x"}]}}
    ],
    "tests": [{"id": "same_run", "time_span": {"start": 0, "end": 1.234},
      "parameter_overrides": {"k": 0.5},
      "expression_template_imports": [{"ref": "./upwind.esm", "bindings": {"N": 5}}],
      "assertions": [{"variable": "u", "time": 1.234, "expected": 0, "coords": {"x": 2}, "tolerance": {"abs": 1e9}},
                     {"variable": "u", "time": 1.234, "expected": 0, "coords": {"x": 5}, "tolerance": {"abs": 1e9}}]}],
    "analyses": [{"id": "profile", "time_span": {"start": 0, "end": 2},
      "expression_template_imports": [{"ref": "./upwind.esm", "bindings": {"N": 5}}],
      "parameters": {"k": 0.5}, "initial_state": {"u": 1.0},
      "plots": )j" + plots + "}" + extra_analyses + R"j(]
  }}})j";
}

double slope_closed_form(int i, double u0, double k, double t) {
  const double s = (2.0 * i - 1.0) / k;
  return s + (u0 - s) * std::exp(-k * t);
}

const char* kSnapshotAndSlice = R"j([
  {"id": "u_snapshot", "type": "field_snapshot", "at_time": 1.234,
   "x": {"variable": "x", "label": "distance (m)"}, "y": {"variable": "u", "label": "u (m)"}, "value": {"variable": "u"}},
  {"id": "u_slice", "type": "field_slice", "at_time": 2, "x": {"variable": "x"}, "y": {"variable": "u"}}])j";

TEST_F(AnalyzeFields, AnInjectedDiscretizationRunsAndTheProfileIsTheFieldAtExactlyAtTime) {
  const std::string doc = write("slope.esm", slope_document(kSnapshotAndSlice));
  const fs::path out = dir_ / "out";
  const Result r = run({"analyze", doc, "--out", out.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  // at_time 1.234 lies between the 101 even output times (0.02 apart): it is an output time.
  const std::string csv = esi::testing::read_all(out / "profile" / "data.csv");
  EXPECT_NE(csv.find("\n1.234,"), std::string::npos) << csv.substr(0, 400);
  const json p = plots(out, "profile");
  ASSERT_EQ(p.size(), 2u);
  const json& snap = p[0];
  ASSERT_FALSE(snap.contains("skipped")) << snap.dump();
  EXPECT_EQ(snap["at_time"], 1.234);
  EXPECT_EQ(snap["xlabel"], "distance (m)");
  EXPECT_EQ(snap["ylabel"], "u (m)");
  EXPECT_EQ(snap["title"], "profile: u_snapshot (t = 1.234)");
  ASSERT_EQ(snap["lines"].size(), 1u);
  // x: the cell centres of the coordinates registry's grid_x, not cell numbers.
  EXPECT_EQ(snap["lines"][0]["x"], json({0.5, 1.5, 2.5, 3.5, 4.5}));
  EXPECT_EQ(snap["axes"][0]["coordinates"], "coordinates/grid_x");
  ASSERT_EQ(snap["lines"][0]["y"].size(), 5u);
  for (int i = 1; i <= 5; ++i)  // initial_state u = 1 set every cell; k = 0.5 from parameters
    EXPECT_NEAR(snap["lines"][0]["y"][i - 1].get<double>(), slope_closed_form(i, 1.0, 0.5, 1.234), 1e-6)
        << "cell " << i;
  const json& slice = p[1];
  EXPECT_EQ(slice["xlabel"], "x [m]");  // no label: the axis name and the coordinate's units
  EXPECT_EQ(slice["ylabel"], "u [m]");
  for (int i = 1; i <= 5; ++i)
    EXPECT_NEAR(slice["lines"][0]["y"][i - 1].get<double>(), slope_closed_form(i, 1.0, 0.5, 2.0), 1e-6);
}

TEST_F(AnalyzeFields, TheProfileIsWhatEsiCheckComputesForTheSameRun) {
  // The component's test injects the same rule with k = 0.5 from u = 0; the second analysis
  // runs the same: its field at 1.234 must be the value `esi check` reads at coords 2 and 5.
  const std::string doc = write("slope.esm", slope_document(kSnapshotAndSlice, "", R"j(,
    {"id": "as_in_the_test", "time_span": {"start": 0, "end": 1.234},
     "expression_template_imports": [{"ref": "./upwind.esm", "bindings": {"N": 5}}],
     "parameters": {"k": 0.5},
     "plots": [{"id": "u_end", "type": "field_snapshot", "at_time": 1.234,
                "x": {"variable": "x"}, "y": {"variable": "u"}, "value": {"variable": "u"}}]})j"));
  const Result check = run({"check", doc, "--json"});
  ASSERT_EQ(check.status, 0) << check.out << check.err;
  const json assertions = json::parse(check.out)["files"][0]["tests"][0]["assertions"];
  ASSERT_EQ(assertions.size(), 2u) << check.out;
  const fs::path out = dir_ / "out";
  const Result r = run({"analyze", doc, "--out", out.string(), "--analysis", "as_in_the_test", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json p = plots(out, "as_in_the_test");
  const json& ys = p[0]["lines"][0]["y"];
  EXPECT_NEAR(ys[1].get<double>(), assertions[0]["actual"].get<double>(), 1e-7);
  EXPECT_NEAR(ys[4].get<double>(), assertions[1]["actual"].get<double>(), 1e-7);
  EXPECT_NEAR(ys[4].get<double>(), slope_closed_form(5, 0.0, 0.5, 1.234), 1e-6);
  // Without a coordinates registry the axis is the cell index, and the label says so.
  EXPECT_EQ(p[0]["lines"][0]["x"], json({1.0, 2.0, 3.0, 4.0, 5.0}));
  EXPECT_NE(p[0]["xlabel"].get<std::string>().find("cell index"), std::string::npos) << p[0]["xlabel"];
  EXPECT_NE(p[0]["axes"][0]["coordinates"].get<std::string>().find("no coordinate values along 'x'"),
            std::string::npos);
}

TEST_F(AnalyzeFields, AFieldSnapshotOfAScalarIsLocated) {
  const std::string doc = write("slope.esm", slope_document(R"j([
    {"id": "k_map", "type": "field_snapshot", "at_time": 1,
     "x": {"variable": "x"}, "y": {"variable": "k"}, "value": {"variable": "k"}}])j"));
  const Result r = run({"analyze", doc, "--out", (dir_ / "out").string(), "-q"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[invalid_plot]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/models/Slope/analyses/0/plots/0/value/variable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'k' is not a field"), std::string::npos) << r.err;
}

TEST_F(AnalyzeFields, AtTimeOutsideTheTimeSpanIsLocated) {
  const std::string doc = write("slope.esm", slope_document(R"j([
    {"id": "late", "type": "field_snapshot", "at_time": 5,
     "x": {"variable": "x"}, "y": {"variable": "u"}, "value": {"variable": "u"}}])j"));
  const Result r = run({"analyze", doc, "--out", (dir_ / "out").string(), "-q"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[invalid_analysis]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/models/Slope/analyses/0/plots/0/at_time"), std::string::npos) << r.err;
}

TEST_F(AnalyzeFields, AnXThatIsNotAnAxisOfTheFieldIsLocated) {
  const std::string doc = write("slope.esm", slope_document(R"j([
    {"id": "u_vs_t", "type": "field_slice", "at_time": 1, "x": {"variable": "t"}, "y": {"variable": "u"}}])j"));
  const Result r = run({"analyze", doc, "--out", (dir_ / "out").string(), "-q"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/models/Slope/analyses/0/plots/0/x/variable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("one of its index sets (x)"), std::string::npos) << r.err;
}

TEST_F(AnalyzeFields, AMissingRuleFileIsTheLoadersLocatedError) {
  std::string text = slope_document(kSnapshotAndSlice);
  const std::string from = R"j("ref": "./upwind.esm", "bindings": {"N": 5}}],
      "parameters")j";
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string(R"j("ref": "./upwind.esm")j").size(), R"j("ref": "./missing.esm")j");
  const Result r = run({"analyze", write("slope.esm", text), "--out", (dir_ / "out").string(), "-q"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[template_import_unresolved]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("missing.esm"), std::string::npos) << r.err;
  // Located where the analysis names the file, not in the component it was injected into.
  EXPECT_NE(r.err.find("/models/Slope/analyses/0/expression_template_imports/0/ref"), std::string::npos) << r.err;
}

TEST_F(AnalyzeFields, EsiCheckLocatesAMissingRuleFileAtTheTestsOwnImport) {
  // The injection is shared with `esi check`: a test's bad import is located in the test too.
  std::string text = slope_document(kSnapshotAndSlice);
  const std::string from = R"j("ref": "./upwind.esm", "bindings": {"N": 5}}],
      "assertions")j";
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string(R"j("ref": "./upwind.esm")j").size(), R"j("ref": "./gone.esm")j");
  const Result r = run({"check", write("slope.esm", text), "--json"});
  EXPECT_EQ(r.status, 1);
  const json test = json::parse(r.out)["files"][0]["tests"][0];
  EXPECT_EQ(test["error"]["code"], "template_import_unresolved") << r.out;
  EXPECT_EQ(test["error"]["pointer"], "/models/Slope/tests/0/expression_template_imports/0/ref") << r.out;
}

/// dpsi/dt = -k psi on a 4 x 3 grid from the field psi(i, j) = a (i + 10 j - 20), given as an
/// initial_state expression over the grid: psi(t) = a (i + 10 j - 20) exp(-k t).
std::string front_document(const std::string& initial_expression_extra = "") {
  return R"j({"esm": "1.0.0", "metadata": {"name": "front"},
  "index_sets": {"x": {"kind": "interval", "size": 4}, "y": {"kind": "interval", "size": 3}},
  "models": {"Front": {
    "variables": {
      "psi": {"type": "unknown", "shape": ["x", "y"], "units": "m", "default": 0.0},
      "k": {"type": "parameter", "units": "1/s", "default": 0.1},
      "a": {"type": "parameter", "units": "m", "default": 1.0}
    },
    "equations": [
      {"lhs": {"op": "D", "args": ["psi"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "psi"]}}
    ],
    "analyses": [{"id": "decay_field", "time_span": {"start": 0, "end": 1},
      "parameters": {"k": 0.7, "a": 2.0},
      "initial_state": {"type": "expression", "values": {
        "psi": {"op": "aggregate", "args": [], "output_idx": ["i", "j"],
                "ranges": {"i": {"from": "x"}, "j": {"from": "y"}},
                "expr": {"op": "*", "args": ["a", {"op": "-", "args": [{"op": "+", "args": ["i", {"op": "*", "args": [10, "j"]})j" +
         initial_expression_extra + R"j(]}, 20]}]}}}},
      "plots": [{"id": "psi_map", "type": "field_snapshot", "at_time": 0.5, "contours": [0.0],
        "x": {"variable": "x", "label": "x"}, "y": {"variable": "y", "label": "y"},
        "value": {"variable": "psi"}}]}]
  }}})j";
}

TEST_F(AnalyzeFields, ATwoAxisSnapshotHoldsTheGridFromAnExpressionInitialState) {
  const std::string doc = write("front.esm", front_document());
  const fs::path out = dir_ / "out";
  const Result r = run({"analyze", doc, "--out", out.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  // The initial field is the expression's, with the analysis' a = 2, and no helper columns.
  const std::string csv = esi::testing::read_all(out / "decay_field" / "data.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')).find("__initial"), std::string::npos);
  EXPECT_NE(csv.find("\n0,-18,-16,-14,-12,2,4,6,8,22,24,26,28\n"), std::string::npos) << csv.substr(0, 300);
  const json p = plots(out, "decay_field")[0];
  ASSERT_FALSE(p.contains("skipped")) << p.dump();
  EXPECT_EQ(p["x"], json({1.0, 2.0, 3.0, 4.0}));
  EXPECT_EQ(p["y"], json({1.0, 2.0, 3.0}));
  EXPECT_EQ(p["contours"], json({0.0}));
  EXPECT_EQ(p["zlabel"], "psi [m] at t = 0.5");  // a PlotValue has no label: name and units
  ASSERT_EQ(p["z"].size(), 3u);  // a row per y
  for (int j = 1; j <= 3; ++j) {
    ASSERT_EQ(p["z"][j - 1].size(), 4u);
    for (int i = 1; i <= 4; ++i)
      EXPECT_NEAR(p["z"][j - 1][i - 1].get<double>(), 2.0 * (i + 10 * j - 20) * std::exp(-0.7 * 0.5), 1e-7)
          << i << "," << j;
  }
}

TEST_F(AnalyzeFields, AnInitialFieldThatReadsTheUnknownsIsLocated) {
  const std::string doc = write("front.esm", front_document(R"j(, {"op": "index", "args": ["psi", "i", "j"]})j"));
  const Result r = run({"analyze", doc, "--out", (dir_ / "out").string(), "-q"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[invalid_analysis]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/models/Front/analyses/0/initial_state/values/psi"), std::string::npos) << r.err;
}

TEST_F(AnalyzeFields, FieldPlotsAreDrawn) {
  const fs::path out = dir_ / "out";
  const Result a = run({"analyze", write("slope.esm", slope_document(kSnapshotAndSlice)), "--out",
                        (out / "slope").string(), "-q"});
  ASSERT_EQ(a.status, 0) << a.err;
  const Result b = run({"analyze", write("front.esm", front_document()), "--out", (out / "front").string(), "-q"});
  ASSERT_EQ(b.status, 0) << b.err;
  for (const fs::path& p : {out / "slope" / "profile" / "u_snapshot.png", out / "slope" / "profile" / "u_slice.svg",
                            out / "front" / "decay_field" / "psi_map.png", out / "front" / "decay_field" / "psi_map.svg"}) {
    ASSERT_TRUE(fs::exists(p)) << p;
    EXPECT_GT(fs::file_size(p), 1000u) << p;
  }
  // The zero contour is drawn over the map: white lines (the only white strokes in the SVG).
  const std::string svg = esi::testing::read_all(out / "front" / "decay_field" / "psi_map.svg");
  EXPECT_NE(svg.find("stroke=\"#FFFFFF\""), std::string::npos);
  EXPECT_EQ(esi::testing::read_all(out / "slope" / "profile" / "u_slice.svg").find("stroke=\"#FFFFFF\""),
            std::string::npos);
}

}  // namespace
