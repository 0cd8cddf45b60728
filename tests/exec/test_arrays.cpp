// Arrays on grids: shaped variables become one scalar per cell, and the array operations
// (makearray, aggregate, index, broadcast, name-aligned arithmetic) mean what spec §4.3 says.
// Oracles: hand-written loops of the same arithmetic in the same order (so results are compared
// with ==), the spec's own prefix-scan example, exact solutions of constant-rate ODEs, and the
// free-stream gate of the reseact transport document (q = mq/m stays exactly 1).
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/kernel/oracle.hpp"
#include "support/flat_doc.hpp"

namespace {

using nlohmann::json;

using Flat = esi::testing::FlatDoc;
using esi::testing::array_doc;

std::string code_of(const std::string& text, const esi::esm::FlattenOptions& fo = {}) {
  try {
    Flat f(text, fo);
  } catch (const esi::Error& e) {
    return e.code();
  }
  return "ok";
}

std::string cell(const std::string& a, std::vector<std::int64_t> c) { return esi::esm::cell_name(a, c); }

// ---- makearray stencils ----

const std::string kDiffusion = array_doc(
    R"({"x": {"kind": "interval", "size": 6}})",
    R"({"u": {"type": "unknown", "shape": ["x"], "default": 0.0},
        "K": {"type": "parameter", "default": 0.7}, "dx": {"type": "parameter", "default": 0.5}})",
    R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": {"op": "makearray", "args": [],
        "regions": [[[2, 5]], [[1, 1]], [[6, 6]]],
        "values": [
          {"op": "aggregate", "output_idx": ["i"], "args": ["u"], "ranges": {"i": [2, 5]},
           "expr": {"op": "/", "args": [{"op": "*", "args": ["K", {"op": "+", "args": [
              {"op": "index", "args": ["u", {"op": "+", "args": ["i", 1]}]},
              {"op": "*", "args": [-2, {"op": "index", "args": ["u", "i"]}]},
              {"op": "index", "args": ["u", {"op": "-", "args": ["i", 1]}]}]}]},
              {"op": "*", "args": ["dx", "dx"]}]}},
          {"op": "/", "args": [{"op": "*", "args": ["K", {"op": "-", "args": [
              {"op": "index", "args": ["u", 2]}, {"op": "index", "args": ["u", 1]}]}]}, {"op": "*", "args": ["dx", "dx"]}]},
          {"op": "/", "args": [{"op": "*", "args": ["K", {"op": "-", "args": [
              {"op": "index", "args": ["u", 5]}, {"op": "index", "args": ["u", 6]}]}]}, {"op": "*", "args": ["dx", "dx"]}]}
        ]}}])");

TEST(Arrays, MakearrayStencilEqualsAHandWrittenLoopBitForBit) {
  Flat f(kDiffusion);
  ASSERT_EQ(f.sys.states.size(), 6u);
  EXPECT_EQ(f.sys.states[0].name, "M.u[1]");
  EXPECT_EQ(f.sys.states[0].array, "M.u");
  std::vector<double> u = {0.3, -1.25, 2.5, 0.125, 7.0, -3.5};
  std::map<std::string, double> by_name;
  for (int i = 0; i < 6; ++i) by_name[cell("M.u", {i + 1})] = u[i];
  const auto du = f.rhs(by_name);
  const double K = 0.7, dx = 0.5;
  for (int i = 0; i < 6; ++i) {
    double expected;
    if (i == 0) expected = K * (u[1] - u[0]) / (dx * dx);
    else if (i == 5) expected = K * (u[4] - u[5]) / (dx * dx);
    else expected = K * ((u[i + 1] + -2.0 * u[i]) + u[i - 1]) / (dx * dx);
    EXPECT_EQ(du.at(cell("M.u", {i + 1})), expected) << "cell " << i + 1;
  }
}

TEST(Arrays, RegionsThatLeaveACellUncoveredAreRefused) {
  std::string text = kDiffusion;
  text.replace(text.find("[[6, 6]]"), 8, "[[5, 5]]");
  EXPECT_EQ(code_of(text), "array_region_uncovered");
}

// The halo data of transport_3d: qbc ([a, b]) = aggregate over output ["g", "g"], g from b.
std::string repeated_output_index(int a, int b, const std::string& body) {
  return array_doc(
      R"({"a": {"kind": "interval", "size": )" + std::to_string(a) + R"(}, "b": {"kind": "interval", "size": )" +
          std::to_string(b) + "}}",
      R"({"s": {"type": "unknown", "default": 0.0}, "q": {"type": "unknown", "shape": ["a", "b"]}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": "q", "rhs": {"op": "aggregate", "output_idx": ["g", "g"], "args": [],
                               "ranges": {"g": {"from": "b"}}, "expr": )" + body + "}}]");
}

TEST(Arrays, ARepeatedOutputIndexIsReadAxisByAxisAndRefusedWhereTheBodyWouldBeAmbiguous) {
  // A constant body: each axis is checked against g's range on its own, so a 2 x 3 array
  // (2 <= 3) is all ones, and a 4 x 3 one asks for g = 4 outside b.
  Flat fill(repeated_output_index(2, 3, "1.0"));
  const auto env = fill.observed();
  for (int i = 1; i <= 2; ++i)
    for (int j = 1; j <= 3; ++j) EXPECT_EQ(env.at(cell("M.q", {i, j})), 1.0) << i << "," << j;
  EXPECT_EQ(code_of(repeated_output_index(4, 3, "1.0")), "array_region_uncovered");
  // A body that reads g: off the diagonal it would see one of two values.
  EXPECT_EQ(code_of(repeated_output_index(3, 3, R"({"op": "*", "args": [2, "g"]})")), "array_shape_mismatch");
}

TEST(Arrays, ASpatialDerivativeNoRuleLowersIsALocatedError) {
  const std::string text = array_doc(R"({"x": {"kind": "interval", "size": 3}})",
                                    R"({"u": {"type": "unknown", "shape": ["x"], "default": 1.0}})",
                                    R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"},
                                         "rhs": {"op": "D", "args": ["u"], "wrt": "x"}}])");
  try {
    Flat f(text);
    FAIL() << "flattened";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "unlowered_operator");
    EXPECT_NE(std::string(e.what()).find("of 'u'"), std::string::npos) << e.what();
    EXPECT_EQ(e.diagnostic().pointer, "/models/M/equations/0/rhs");
  }
}

// ---- name-aligned elementwise arithmetic (§4.3.4) ----

TEST(Arrays, OperandsAlignByIndexSetNameNotPosition) {
  // w is declared [lat, lon]: in a [lon, lat, lev] result it transposes; z replicates.
  const std::string text = array_doc(
      R"({"lon": {"kind": "interval", "size": 3}, "lat": {"kind": "interval", "size": 2},
          "lev": {"kind": "interval", "size": 2}})",
      R"({"dp": {"type": "unknown", "shape": ["lon", "lat", "lev"], "default": 0.0},
          "w": {"type": "parameter", "shape": ["lat", "lon"], "default": 0.0},
          "z": {"type": "parameter", "shape": ["lev"], "default": 0.0}})",
      R"([{"lhs": {"op": "D", "args": ["dp"], "wrt": "t"}, "rhs": {"op": "*", "args": ["w", "z"]}}])");
  esi::esm::FlattenOptions fo;
  const json w = json::parse("[[1.5, 2.25, -3.0], [4.0, 0.1, 6.5]]");
  const json z = json::parse("[10.0, -0.3]");
  fo.inputs = {{"M.w", w}, {"z", z}};
  Flat f(text, fo);
  std::map<std::string, double> u;
  for (const auto& v : f.sys.states) u[v.name] = 0.0;
  const auto du = f.rhs(u);
  for (int i = 1; i <= 3; ++i)
    for (int j = 1; j <= 2; ++j)
      for (int k = 1; k <= 2; ++k)
        EXPECT_EQ(du.at(cell("M.dp", {i, j, k})), w[j - 1][i - 1].get<double>() * z[k - 1].get<double>())
            << i << "," << j << "," << k;
}

TEST(Arrays, AnOperandOverAnAxisTheResultLacksIsAShapeMismatch) {
  const std::string text = array_doc(
      R"({"lon": {"kind": "interval", "size": 3}, "lat": {"kind": "interval", "size": 2}})",
      R"({"a": {"type": "unknown", "shape": ["lon"], "default": 0.0},
          "b": {"type": "parameter", "shape": ["lat"], "default": 1.0}})",
      R"([{"lhs": {"op": "D", "args": ["a"], "wrt": "t"}, "rhs": {"op": "*", "args": ["a", "b"]}}])");
  EXPECT_EQ(code_of(text), "array_shape_mismatch");
}

// ---- aggregate: contractions and scans (§4.3.1) ----

TEST(Arrays, ContractionIsALeftFoldInAscendingIndexOrder) {
  const std::string text = array_doc(
      R"({"r": {"kind": "interval", "size": 2}, "c": {"kind": "interval", "size": 3}})",
      R"({"x": {"type": "unknown", "shape": ["c"], "default": 0.0},
          "A": {"type": "parameter", "shape": ["r", "c"], "default": 0.0},
          "y": {"type": "unknown", "shape": ["r"]}, "biggest": {"type": "unknown"}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": "y", "rhs": {"op": "aggregate", "output_idx": ["i"], "args": ["A", "x"],
            "expr": {"op": "*", "args": [{"op": "index", "args": ["A", "i", "j"]}, {"op": "index", "args": ["x", "j"]}]}}},
          {"lhs": "biggest", "rhs": {"op": "aggregate", "output_idx": [], "reduce": "max", "args": ["A"],
            "expr": {"op": "index", "args": ["A", "i", "j"]}}}])");
  esi::esm::FlattenOptions fo;
  const json A = json::parse("[[0.1, 0.2, 0.3], [1e16, 1.0, -1e16]]");
  fo.inputs = {{"A", A}};
  Flat f(text, fo);
  const std::vector<double> x = {3.0, 1.0, 1.0};
  const auto env = f.observed({{"M.x[1]", x[0]}, {"M.x[2]", x[1]}, {"M.x[3]", x[2]}});
  for (int i = 0; i < 2; ++i) {
    const double fold = (A[i][0].get<double>() * x[0] + A[i][1].get<double>() * x[1]) + A[i][2].get<double>() * x[2];
    EXPECT_EQ(env.at(cell("M.y", {i + 1})), fold);
  }
  // Row 2 shows the order matters: left to right gives 3e16 + 1 - 1e16 = 2e16, not 2e16 + 1.
  EXPECT_EQ(env.at("M.y[2]"), 2e16);
  EXPECT_EQ(env.at("M.biggest"), 1e16);
}

TEST(Arrays, PrefixScansFollowTheSpecsAscendingFoldIncludingReverseScans) {
  const std::string scan = R"({"op": "aggregate", "output_idx": ["i"], "reduce": "+", "args": ["u"],
      "ranges": {"i": {"from": "x"}, "j": {"from": "x"}}, "filter": {"op": "OP", "args": ["j", "i"]},
      "expr": {"op": "index", "args": ["u", "j"]}})";
  auto with = [&](const std::string& op) {
    std::string s = scan;
    s.replace(s.find("OP"), 2, op);
    return s;
  };
  const std::string text = array_doc(
      R"({"x": {"kind": "interval", "size": 4}})",
      R"({"u": {"type": "unknown", "shape": ["x"], "default": 0.0},
          "le": {"type": "unknown", "shape": ["x"]}, "lt": {"type": "unknown", "shape": ["x"]},
          "ge": {"type": "unknown", "shape": ["x"]}, "gt": {"type": "unknown", "shape": ["x"]}})",
      R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": "le", "rhs": )" + with("<=") + R"(}, {"lhs": "lt", "rhs": )" + with("<") +
          R"(}, {"lhs": "ge", "rhs": )" + with(">=") + R"(}, {"lhs": "gt", "rhs": )" + with(">") + "}]");
  Flat f(text);
  const std::vector<double> u = {1e16, 1.0, -1e16, 1.0};  // the spec's own example (§4.3.1)
  const auto env = f.observed({{"M.u[1]", u[0]}, {"M.u[2]", u[1]}, {"M.u[3]", u[2]}, {"M.u[4]", u[3]}});
  const std::vector<double> inclusive = {1e16, 1e16, 0.0, 1.0};  // as the spec states it
  for (int i = 0; i < 4; ++i) EXPECT_EQ(env.at(cell("M.le", {i + 1})), inclusive[i]) << i;
  auto fold = [&](int lo, int hi) {  // ascending left fold over [lo, hi], 0 when empty
    double s = 0.0;
    bool any = false;
    for (int j = lo; j <= hi; ++j) s = any ? s + u[j] : u[j], any = true;
    return s;
  };
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(env.at(cell("M.lt", {i + 1})), fold(0, i - 1)) << i;
    EXPECT_EQ(env.at(cell("M.ge", {i + 1})), fold(i, 3)) << i;
    EXPECT_EQ(env.at(cell("M.gt", {i + 1})), fold(i + 1, 3)) << i;
  }
  // A right-to-left accumulator would give 1e16 + (1 + (-1e16 + 1)) = 0 for ge[1]; the fold
  // from the low end gives ((1e16 + 1) - 1e16) + 1 = 1.
  EXPECT_EQ(env.at("M.ge[1]"), 1.0);
}

// ---- gathers (§4.3.3) ----

TEST(Arrays, OutOfRangeGathersReadZeroForStatesAndAreErrorsForParameters) {
  const std::string vars = R"({"u": {"type": "unknown", "shape": ["x"], "default": 0.0},
      "p": {"type": "parameter", "shape": ["x"], "default": 2.0}, "g": {"type": "unknown", "shape": ["x"]}})";
  const std::string gather_u = R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": 0.0},
      {"lhs": "g", "rhs": {"op": "aggregate", "output_idx": ["i"], "args": ["u"], "ranges": {"i": {"from": "x"}},
       "expr": {"op": "index", "args": ["u", {"op": "+", "args": ["i", 1]}]}}}])";
  Flat f(array_doc(R"({"x": {"kind": "interval", "size": 3}})", vars, gather_u));
  const auto env = f.observed({{"M.u[1]", 5.0}, {"M.u[2]", 6.0}, {"M.u[3]", 7.0}});
  EXPECT_EQ(env.at("M.g[1]"), 6.0);
  EXPECT_EQ(env.at("M.g[2]"), 7.0);
  EXPECT_EQ(env.at("M.g[3]"), 0.0);
  std::string gather_p = gather_u;
  const std::string from = R"("index", "args": ["u")";
  gather_p.replace(gather_p.find(from), from.size(), R"("index", "args": ["p")");
  EXPECT_EQ(code_of(array_doc(R"({"x": {"kind": "interval", "size": 3}})", vars, gather_p)),
            "const_array_out_of_range");
}

// ---- inputs ----

TEST(Arrays, InputsSetEveryCellOrCellByCellAndCheckTheShape) {
  const std::string text = array_doc(R"({"x": {"kind": "interval", "size": 3}})",
                                    R"({"u": {"type": "unknown", "shape": ["x"], "default": 0.0},
                                        "p": {"type": "parameter", "shape": ["x"], "default": 2.0}})",
                                    R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": "p"}])");
  esi::esm::FlattenOptions broadcast;
  broadcast.parameter_overrides["p"] = 9.5;
  Flat f(text, broadcast);
  for (const auto& v : f.sys.parameters) EXPECT_EQ(v.default_value, 9.5) << v.name;
  esi::esm::FlattenOptions bad;
  bad.inputs = {{"M.p", json::parse("[1, 2]")}};
  EXPECT_EQ(code_of(text, bad), "input_shape_mismatch");
  esi::esm::FlattenOptions states;
  states.inputs = {{"u", json::parse("[1, 2, 3]")}};
  Flat g(text, states);
  EXPECT_EQ(g.sys.states[2].default_value, 3.0);
}

TEST(Arrays, InspectSummarizesArraysOnceAndListsOnlyScalars) {
  Flat f(kDiffusion);
  const json d = esi::esm::describe(f.sys);
  ASSERT_EQ(d["arrays"].size(), 1u);
  EXPECT_EQ(d["arrays"][0]["name"], "M.u");
  EXPECT_EQ(d["arrays"][0]["cells"], 6);
  EXPECT_EQ(d["arrays"][0]["kind"], "state");
  EXPECT_EQ(d["states"].size(), 0u);  // the six cells are not listed one by one
  EXPECT_EQ(d["counts"]["states"], 6);
  EXPECT_EQ(d["parameters"].size(), 2u);
}

// ---- pointwise lifting (§10.5) ----

TEST(Arrays, PointwiseLiftingRunsTheMechanismInEveryCellWithItsOwnRate) {
  // R: A -> B at rate k, a 0-D mechanism. G: a 3-cell grid that also drains A at m[i] * A and
  // feeds k from its own per-cell field kk[i] = 0.1 i.
  const std::string text = R"({"esm": "1.0.0", "metadata": {"name": "lift"},
    "index_sets": {"x": {"kind": "interval", "size": 3}},
    "reaction_systems": {"R": {"species": {"A": {"default": 1.0}, "B": {"default": 0.0}},
      "parameters": {"k": {"default": 0.5}},
      "reactions": [{"id": "r1", "substrates": [{"species": "A", "stoichiometry": 1}],
                     "products": [{"species": "B", "stoichiometry": 1}], "rate": "k"}]}},
    "models": {"G": {"variables": {
        "m": {"type": "unknown", "shape": ["x"], "default": 1.0},
        "kk": {"type": "unknown", "shape": ["x"]}},
      "equations": [
        {"lhs": {"op": "D", "args": ["m"], "wrt": "t"}, "rhs": 0.0},
        {"lhs": "kk", "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}},
                              "expr": {"op": "*", "args": [0.1, "i"]}}},
        {"lhs": {"op": "D", "args": ["R.A"], "wrt": "t"}, "rhs": {"op": "-", "args": [{"op": "*", "args": ["m", "R.A"]}]}}]}},
    "coupling": [
      {"type": "variable_map", "from": "G.kk", "to": "R.k", "transform": "param_to_var"},
      {"type": "operator_compose", "systems": ["R", "G"], "lifting": "pointwise"}]})";
  Flat f(text);
  std::map<std::string, double> u;
  const std::vector<double> A = {2.0, 3.0, 5.0}, m = {1.0, 0.5, 0.25};
  for (int c = 1; c <= 3; ++c) {
    u[cell("R.A", {c})] = A[c - 1];
    u[cell("R.B", {c})] = 0.0;
    u[cell("G.m", {c})] = m[c - 1];
  }
  ASSERT_EQ(f.sys.states.size(), 9u);
  const auto du = f.rhs(u);
  for (int c = 1; c <= 3; ++c) {
    const double rate = 0.1 * c * A[c - 1];
    EXPECT_NEAR(du.at(cell("R.A", {c})), -rate - m[c - 1] * A[c - 1], 1e-15) << c;
    EXPECT_NEAR(du.at(cell("R.B", {c})), rate, 1e-15) << c;
  }
}

// ---- whole runs and the test runner ----

TEST(Arrays, ConstantRateArraysIntegrateExactlyAndNameTheirCells) {
  const std::string text = array_doc(
      R"({"x": {"kind": "interval", "size": 4}})", R"({"u": {"type": "unknown", "shape": ["x"]}})",
      R"([{"lhs": {"op": "ic", "args": ["u"]}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [],
            "ranges": {"i": {"from": "x"}}, "expr": {"op": "*", "args": [10, "i"]}}},
          {"lhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}},
            "expr": {"op": "D", "args": [{"op": "index", "args": ["u", "i"]}], "wrt": "t"}},
           "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}}, "expr": "i"}}])");
  Flat f(text);
  esi::exec::SimulateOptions o;
  o.t0 = 0;
  o.t1 = 2;
  o.document = &f.doc;
  const auto tr = esi::exec::simulate(f.sys, o);
  ASSERT_TRUE(tr.ok()) << tr.message;
  for (int i = 1; i <= 4; ++i) {
    const int c = tr.column(cell("M.u", {i}));
    ASSERT_GE(c, 0);
    EXPECT_NEAR(tr.at(tr.times.size() - 1, c), 10.0 * i + 2.0 * i, 1e-9);
  }
}

// ---- the reseact transport prototype (issue 9, "what must be shown" 1) ----

TEST(Arrays, Transport3dKeepsTheFreeStreamGateExactlyForAnHour) {
  const auto corpus = esi::testing::corpus_dir();
  if (corpus.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto file = corpus / "reseact/prototypes/transport_3d/transport_3d.esm";
  // dA, dB: the first seven layers of the GEOS-FP hybrid table shipped beside reseact_3d.
  json table;
  std::ifstream(corpus / "reseact/prototypes/reseact_3d/hybrid_coefs.json") >> table;
  esi::esm::FlattenOptions fo;
  for (const char* k : {"dA", "dB"}) {
    json v = json::array();
    for (int i = 0; i < 7; ++i) v.push_back(table[k][i]);
    fo.inputs[std::string("Transport3D.") + k] = v;
  }
  const auto doc = esi::esm::load_resolved(file);
  const auto sys = esi::esm::flatten(doc, fo);
  ASSERT_EQ(sys.states.size(), 3u * 343u);
  esi::exec::SimulateOptions o;
  o.t0 = 0;
  o.t1 = 3600;
  o.saveat = 3600;
  o.document = &doc;
  o.integrator.method = esi::method::MethodId::SSPRK43;
  const auto tr = esi::exec::simulate(sys, o);
  ASSERT_TRUE(tr.ok()) << tr.message;
  const std::size_t last = tr.times.size() - 1;
  ASSERT_EQ(tr.times[last], 3600.0);
  double moved = 0;
  for (int i = 1; i <= 7; ++i)
    for (int j = 1; j <= 7; ++j)
      for (int k = 1; k <= 7; ++k) {
        const auto at = [&](const char* a) {
          return tr.at(last, static_cast<std::size_t>(tr.column(cell(std::string("Transport3D.") + a, {i, j, k}))));
        };
        EXPECT_EQ(at("mq"), at("m")) << i << "," << j << "," << k;  // q = mq/m == 1 exactly
        EXPECT_EQ(at("dev"), 0.0) << i << "," << j << "," << k;
        moved = std::max(moved, std::abs(at("m") - tr.at(0, static_cast<std::size_t>(
                                                            tr.column(cell("Transport3D.m", {i, j, k}))))));
      }
  EXPECT_GT(moved, 1.0);  // the air mass really moved: the gate is not held by a still field
}

}  // namespace
