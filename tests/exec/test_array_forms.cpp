// Arrays written in the other styles the format allows (spec §4.3): variables declared without
// a shape whose extent follows from the equations (implicit dimensions), arrays defined piece by
// piece (boundary cells by scalar equations, the interior by an aggregate whose left-hand index
// is offset), algebraic array equations (an aggregate on the left without D), observed arrays
// defined in pieces, and contractions whose indices take their ranges from the operands'
// shapes. Oracles: the same arithmetic written out by hand (compared with ==), and the
// per-region form run against the cell form, bit for bit.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/kernel/oracle.hpp"
#include "support/flat_doc.hpp"

namespace {

using Flat = esi::testing::FlatDoc;
using esi::testing::array_doc;
using esi::testing::flatten_refusal;

std::string cell(const std::string& a, std::vector<std::int64_t> c) {
  return esi::esm::cell_name(a, c);
}

const char* const kNoSets = "{}";

std::string d_cell(const std::string& var, const std::string& index) {
  return R"({"op": "D", "args": [{"op": "index", "args": [")" + var + "\", " + index +
         R"(]}], "wrt": "t"})";
}
std::string at(const std::string& var, const std::string& index) {
  return R"({"op": "index", "args": [")" + var + "\", " + index + "]}";
}

/// The findings of esi validate (schema, structure, units) on `text`.
std::vector<esi::Diagnostic> findings(const std::string& text) {
  esi::testing::TempDir dir;
  return esi::esm::validate_file(dir.write("m.esm", text).string()).errors;
}

/// Runs `text` in the cell form and in the per-region form with one explicit method; the
/// trajectories must be the same bits, state by state (by name: the orders may differ).
void expect_forms_agree(const std::string& text) {
  esi::testing::TempDir dir;
  const auto doc = esi::esm::load_resolved(dir.write("m.esm", text));
  esi::esm::FlattenOptions grid;
  grid.grid = true;
  const esi::esm::System cells = esi::esm::flatten(doc), regions = esi::esm::flatten(doc, grid);
  esi::exec::SimulateOptions o;
  o.t0 = 0;
  o.t1 = 1;
  o.saveat = 0.25;
  o.integrator.method = esi::method::MethodId::Tsit5;
  o.document = &doc;
  const auto a = esi::exec::simulate(cells, o), b = esi::exec::simulate(regions, o);
  ASSERT_EQ(a.code, esi::method::ReturnCode::Success) << a.message;
  ASSERT_EQ(b.code, esi::method::ReturnCode::Success) << b.message;
  ASSERT_EQ(a.times, b.times);
  ASSERT_EQ(a.state_count, b.state_count);
  std::map<std::string, std::size_t> in_b;
  for (std::size_t j = 0; j < b.state_count; ++j) in_b[b.names[j]] = j;
  for (std::size_t k = 0; k < a.times.size(); ++k)
    for (std::size_t j = 0; j < a.state_count; ++j)
      ASSERT_EQ(a.values[k * a.names.size() + j],
                b.values[k * b.names.size() + in_b.at(a.names[j])])
          << a.names[j] << " at t = " << a.times[k];
}

// ---- implicit dimensions ----

// u has no shape: equations on u[1], u[2], u[3] make it an array of three cells, each decaying
// at its own rate (du_k = -k u_k). `cells` says which cell each equation's left-hand side names;
// `index_of_d` writes the first one as index(D(u), 1) instead of D(index(u, 1)).
std::string implicit_cells(std::vector<int> cells = {1, 2, 3}, bool index_of_d = false) {
  std::string eqs = "[";
  for (std::size_t e = 0; e < cells.size(); ++e) {
    const std::string ks = std::to_string(cells[e]), rate = std::to_string(e + 1);
    const std::string lhs =
        e == 0 && index_of_d
            ? R"({"op": "index", "args": [{"op": "D", "args": ["u"], "wrt": "t"}, )" + ks + "]}"
            : d_cell("u", ks);
    eqs += std::string(e > 0 ? "," : "") + R"({"lhs": )" + lhs +
           R"(, "rhs": {"op": "*", "args": [-)" + rate + ", " + at("u", ks) + "]}}";
  }
  return array_doc(kNoSets, R"({"u": {"type": "unknown", "units": "1", "default": 1.0}})",
                   eqs + "]");
}

TEST(ArrayForms, AVariableWithoutAShapeTakesItsExtentFromTheCellsItsEquationsDefine) {
  EXPECT_TRUE(findings(implicit_cells()).empty());  // one array equation for one unknown
  for (const bool index_of_d : {false, true}) {
    Flat f(implicit_cells({1, 2, 3}, index_of_d));
    ASSERT_EQ(f.sys.states.size(), 3u);
    ASSERT_EQ(f.sys.arrays.size(), 1u);
    EXPECT_EQ(f.sys.arrays[0].extents, std::vector<std::int64_t>{3});
    const std::vector<double> u = {0.5, -2.25, 4.0};
    std::map<std::string, double> by_name;
    for (int k = 1; k <= 3; ++k) by_name[cell("M.u", {k})] = u[k - 1];
    const auto du = f.rhs(by_name);
    for (int k = 1; k <= 3; ++k) EXPECT_EQ(du.at(cell("M.u", {k})), -k * u[k - 1]);
  }
  expect_forms_agree(implicit_cells());
}

TEST(ArrayForms, AnImplicitArrayCellDefinedTwiceOrLeftOutIsALocatedError) {
  EXPECT_EQ(flatten_refusal(implicit_cells({1, 2, 2})),
            std::make_pair(std::string("array_cell_defined_twice"),
                           std::string("/models/M/equations/2")));
  EXPECT_EQ(flatten_refusal(implicit_cells({1, 3})).first,
            "array_region_uncovered");  // u[2] has no equation
}

// ---- arrays defined piecewise ----

// u over x (5 cells): the two boundary cells decay, the interior diffuses:
// du_1 = -u_1, du_5 = -u_5, du_{i+1} = u_i - 2 u_{i+1} + u_{i+2} for i in 1..3.
std::string piecewise(const std::string& shape) {
  const std::string i1 = R"({"op": "+", "args": ["i", 1]})",
                    i2 = R"({"op": "+", "args": ["i", 2]})";
  return array_doc(
      R"({"x": {"kind": "interval", "size": 5}})",
      R"({"u": {"type": "unknown", "units": "1", "default": 1.0)" + shape + "}}",
      "[{\"lhs\": " + d_cell("u", "1") + ", \"rhs\": {\"op\": \"-\", \"args\": [" + at("u", "1") +
          "]}}, {\"lhs\": " + d_cell("u", "5") + ", \"rhs\": {\"op\": \"-\", \"args\": [" +
          at("u", "5") +
          R"(]}}, {"lhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [1, 3]}, "expr": )" +
          d_cell("u", i1) +
          R"(}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [1, 3]}, "expr": {"op": "+", "args": [)" +
          at("u", "\"i\"") + R"(, {"op": "*", "args": [-2, )" + at("u", i1) + "]}, " + at("u", i2) +
          "]}}}]");
}

TEST(ArrayForms, BoundaryCellsByScalarEquationsAndTheInteriorByAnOffsetAggregate) {
  for (const std::string& shape : {std::string(R"(, "shape": ["x"])"), std::string()}) {
    const std::string text = piecewise(shape);
    EXPECT_TRUE(findings(text).empty()) << (shape.empty() ? "implicit" : "declared");
    Flat f(text);
    ASSERT_EQ(f.sys.states.size(), 5u);
    const std::vector<double> u = {0.25, 1.5, -0.75, 2.0, 0.125};
    std::map<std::string, double> by_name;
    for (int k = 1; k <= 5; ++k) by_name[cell("M.u", {k})] = u[k - 1];
    const auto du = f.rhs(by_name);
    EXPECT_EQ(du.at(cell("M.u", {1})), -u[0]);
    EXPECT_EQ(du.at(cell("M.u", {5})), -u[4]);
    for (int i = 1; i <= 3; ++i)  // the + node's operands in the document's order
      EXPECT_EQ(du.at(cell("M.u", {i + 1})), (u[i - 1] + -2.0 * u[i]) + u[i + 1])
          << "cell " << i + 1;
    expect_forms_agree(text);
  }
  // The interior aggregate over 1..4 reaches u[5], which its own equation defines too.
  std::string overlap = piecewise(R"(, "shape": ["x"])");
  for (std::size_t at_ = overlap.find("[1, 3]"); at_ != std::string::npos;
       at_ = overlap.find("[1, 3]"))
    overlap.replace(at_, 6, "[1, 4]");
  const auto [code, pointer] = flatten_refusal(overlap);
  EXPECT_EQ(code, "array_cell_defined_twice");
  EXPECT_EQ(pointer, "/models/M/equations/2");
}

// ---- algebraic array equations and observed arrays in pieces ----

TEST(ArrayForms, AnAggregateOnTheLeftWithoutDDefinesEachCellAlgebraically) {
  // w[i] = 2 u[i] cell by cell; du[i] = -w[i].
  const std::string text = array_doc(
      R"({"x": {"kind": "interval", "size": 3}})",
      R"({"u": {"type": "unknown", "units": "1", "default": 1.0, "shape": ["x"]}, "w": {"type": "unknown", "units": "1", "shape": ["x"]}})",
      R"([{"lhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}}, "expr": )" +
          d_cell("u", "\"i\"") +
          R"(}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}}, "expr": {"op": "-", "args": [)" +
          at("w", "\"i\"") + R"(]}}},
          {"lhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}}, "expr": )" +
          at("w", "\"i\"") +
          R"(}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}}, "expr": {"op": "*", "args": [2, )" +
          at("u", "\"i\"") + "]}}}]");
  EXPECT_TRUE(findings(text).empty());
  Flat f(text);
  const std::vector<double> u = {0.5, -1.0, 3.0};
  std::map<std::string, double> by_name;
  for (int k = 1; k <= 3; ++k) by_name[cell("M.u", {k})] = u[k - 1];
  const auto du = f.rhs(by_name);
  for (int k = 1; k <= 3; ++k) EXPECT_EQ(du.at(cell("M.u", {k})), -(2 * u[k - 1]));
  const auto env = f.observed(by_name);
  for (int k = 1; k <= 3; ++k) EXPECT_EQ(env.at(cell("M.w", {k})), 2 * u[k - 1]);
  expect_forms_agree(text);
}

TEST(ArrayForms, AnObservedArrayDefinedInPiecesCoversEachCellOnce) {
  // w (no shape) = [3 u1, 2 u2, 2 u3]: w[1] by a scalar equation, w[2..3] by an aggregate.
  const auto doc = [](const std::string& range) {
    return array_doc(
        R"({"x": {"kind": "interval", "size": 3}})",
        R"({"u": {"type": "unknown", "units": "1", "default": 1.0, "shape": ["x"]}, "w": {"type": "unknown", "units": "1"}})",
        R"([{"lhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}}, "expr": )" +
            d_cell("u", "\"i\"") +
            R"(}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}}, "expr": {"op": "-", "args": [)" +
            at("w", "\"i\"") + R"(]}}},
            {"lhs": )" +
            at("w", "1") + R"(, "rhs": {"op": "*", "args": [3, )" + at("u", "1") + R"(]}},
            {"lhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": )" +
            range + R"(}, "expr": )" + at("w", "\"i\"") +
            R"(}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": )" +
            range + R"(}, "expr": {"op": "*", "args": [2, )" + at("u", "\"i\"") + "]}}}]");
  };
  const std::string text = doc("[2, 3]");
  EXPECT_TRUE(findings(text).empty());
  Flat f(text);
  const std::vector<double> u = {0.5, -1.0, 3.0};
  std::map<std::string, double> by_name;
  for (int k = 1; k <= 3; ++k) by_name[cell("M.u", {k})] = u[k - 1];
  const auto env = f.observed(by_name);
  EXPECT_EQ(env.at(cell("M.w", {1})), 3 * u[0]);
  EXPECT_EQ(env.at(cell("M.w", {2})), 2 * u[1]);
  EXPECT_EQ(env.at(cell("M.w", {3})), 2 * u[2]);
  expect_forms_agree(text);
  EXPECT_EQ(flatten_refusal(doc("[1, 3]")), std::make_pair(std::string("array_cell_defined_twice"),
                                                   std::string("/models/M/equations/2")));
}

// ---- contractions ----

TEST(ArrayForms, AContractedIndexWithoutARangeTakesItFromTheOperandsShape) {
  // du_i = -(sum_j A[i,j] u[j]): j has no range, A and u give it x's. A is not symmetric, so
  // reading A[j,i] would be wrong; the sum is a left fold in ascending j.
  const std::string text =
      array_doc(R"({"x": {"kind": "interval", "size": 3}})",
                R"({"u": {"type": "unknown", "units": "1", "default": 1.0, "shape": ["x"]},
          "A": {"type": "parameter", "units": "1", "shape": ["x", "x"]}})",
                R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"},
           "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "expr": {"op": "*", "args": [-1, )" +
                    at("A", "\"i\", \"j\"") + ", " + at("u", "\"j\"") + "]}}}]");
  EXPECT_TRUE(findings(text).empty());
  esi::esm::FlattenOptions fo;
  fo.inputs = nlohmann::json{{"M.A", {{0.5, -1.25, 2.0}, {3.0, 0.25, -0.5}, {1.5, 4.0, -2.0}}}};
  Flat f(text, fo);
  std::map<std::string, double> A;  // the matrix as flattened, by cell name
  for (const auto& v : f.sys.parameters) A[v.name] = v.default_value.value_or(NAN);
  ASSERT_EQ(A.size(), 9u);
  ASSERT_NE(A.at(cell("M.A", {1, 2})), A.at(cell("M.A", {2, 1})));
  const std::vector<double> u = {0.3, -2.0, 1.25};
  std::map<std::string, double> by_name;
  for (int k = 1; k <= 3; ++k) by_name[cell("M.u", {k})] = u[k - 1];
  const auto du = f.rhs(by_name);
  for (int i = 1; i <= 3; ++i) {
    double sum = -1 * A.at(cell("M.A", {i, 1})) * u[0];
    for (int j = 2; j <= 3; ++j) sum += -1 * A.at(cell("M.A", {i, j})) * u[j - 1];
    EXPECT_EQ(du.at(cell("M.u", {i})), sum) << "row " << i;
  }
  // v shorter than A's rows: the operands disagree on j's extent.
  std::string short_v = text;
  short_v.replace(short_v.find(R"("x": {"kind": "interval", "size": 3})"), 0,
                  R"("y": {"kind": "interval", "size": 2}, )");
  short_v.replace(short_v.find(at("u", "\"j\"")), at("u", "\"j\"").size(), at("v", "\"j\""));
  short_v.replace(short_v.find(R"("A": {)"), 0,
                  R"("v": {"type": "parameter", "units": "1", "default": 1.0, "shape": ["y"]}, )");
  EXPECT_EQ(flatten_refusal(short_v), std::make_pair(std::string("array_shape_mismatch"),
                                             std::string("/models/M/equations/0")));
}

// ---- reshape, transpose, concat (§4.3.5) ----

// u over x (2) and y (3); parameters p over x, q over y, a over z (6), B over (y, x), each with
// distinct values from shaped_inputs() (their defaults are for the runs of both forms);
// D(u) = `rhs`.
std::string shaped(const std::string& rhs, const std::string& u_shape = R"(["x", "y"])") {
  return array_doc(
      R"({"x": {"kind": "interval", "size": 2}, "y": {"kind": "interval", "size": 3}, "z": {"kind": "interval", "size": 6},
          "w": {"kind": "interval", "size": 5}})",
      R"({"u": {"type": "unknown", "units": "1", "default": 0.0, "shape": )" + u_shape + R"(},
          "p": {"type": "parameter", "units": "1", "default": 0.5, "shape": ["x"]},
          "q": {"type": "parameter", "units": "1", "default": 0.25, "shape": ["y"]},
          "a": {"type": "parameter", "units": "1", "default": 2.0, "shape": ["z"]},
          "B": {"type": "parameter", "units": "1", "default": 4.0, "shape": ["y", "x"]}})",
      R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": )" + rhs + "}]");
}

esi::esm::FlattenOptions shaped_inputs() {
  esi::esm::FlattenOptions fo;
  fo.inputs = nlohmann::json{{"M.p", {0.5, -1.5}},
                             {"M.q", {10.0, 20.0, 40.0}},
                             {"M.a", {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}},
                             {"M.B", {{0.25, 7.0}, {-3.0, 1.5}, {9.0, -0.125}}}};
  return fo;
}

/// du by cell name at u = 0 (the right-hand sides here do not read u), with shaped_inputs().
std::map<std::string, double> du_of(const std::string& text) {
  Flat f(text, shaped_inputs());
  std::map<std::string, double> u;
  for (const auto& v : f.sys.states) u[v.name] = 0.0;
  return f.rhs(u);
}

/// The parameter values as flattened, by cell name.
std::map<std::string, double> params_of(const std::string& text) {
  Flat f(text, shaped_inputs());
  std::map<std::string, double> out;
  for (const auto& v : f.sys.parameters) out[v.name] = v.default_value.value_or(NAN);
  return out;
}

TEST(ArrayForms, TransposeReadsTheOperandWithItsAxesPermuted) {
  for (const std::string& rhs :
       {std::string(R"({"op": "transpose", "args": ["B"]})"),
        std::string(R"({"op": "transpose", "args": ["B"], "perm": [1, 0]})")}) {
    const std::string text = shaped(rhs);
    EXPECT_TRUE(findings(text).empty());
    const auto du = du_of(text);
    const auto p = params_of(text);
    for (int i = 1; i <= 2; ++i)
      for (int j = 1; j <= 3; ++j)
        EXPECT_EQ(du.at(cell("M.u", {i, j})), p.at(cell("M.B", {j, i}))) << i << "," << j;
    expect_forms_agree(text);
  }
  // perm [0, 1] keeps B's (3, 2) shape, which u (2, 3) cannot take.
  EXPECT_EQ(flatten_refusal(shaped(R"({"op": "transpose", "args": ["B"], "perm": [0, 1]})")).first,
            "array_shape_mismatch");
  EXPECT_EQ(flatten_refusal(shaped(R"({"op": "transpose", "args": ["B"], "perm": [1, 1]})")).first,
            "invalid_transpose");
}

TEST(ArrayForms, ReshapeIsColumnMajorAndAnonymousOperandsBroadcastPositionally) {
  const std::string text = shaped(R"({"op": "reshape", "args": ["a"], "shape": [2, 3]})");
  EXPECT_TRUE(findings(text).empty());
  const auto du = du_of(text);
  const auto p = params_of(text);
  for (int i = 1; i <= 2; ++i)
    for (int j = 1; j <= 3; ++j)  // Julia's reshape: the first index varies fastest
      EXPECT_EQ(du.at(cell("M.u", {i, j})), p.at(cell("M.a", {(i - 1) + (j - 1) * 2 + 1})))
          << i << "," << j;
  // The spec's own example: broadcast(+, a, reshape(b, [1, 3]))[i, j] = a[i] + b[j].
  const std::string outer = shaped(
      R"({"op": "broadcast", "fn": "+", "args": [{"op": "reshape", "args": ["p"], "shape": [2]}, {"op": "reshape", "args": ["q"], "shape": [1, 3]}]})");
  const auto dv = du_of(outer);
  const auto po = params_of(outer);
  for (int i = 1; i <= 2; ++i)
    for (int j = 1; j <= 3; ++j)
      EXPECT_EQ(dv.at(cell("M.u", {i, j})), po.at(cell("M.p", {i})) + po.at(cell("M.q", {j})))
          << i << "," << j;
  expect_forms_agree(outer);
  EXPECT_EQ(flatten_refusal(shaped(R"({"op": "reshape", "args": ["a"], "shape": [4, 2]})")).first,
            "array_shape_mismatch");
}

TEST(ArrayForms, ConcatJoinsItsOperandsAlongTheAxis) {
  const std::string text = shaped(R"({"op": "concat", "args": ["p", "q"], "axis": 0})", R"(["w"])");
  EXPECT_TRUE(findings(text).empty());
  const auto du = du_of(text);
  const auto p = params_of(text);
  EXPECT_EQ(du.at(cell("M.u", {1})), p.at(cell("M.p", {1})));
  EXPECT_EQ(du.at(cell("M.u", {2})), p.at(cell("M.p", {2})));
  for (int j = 1; j <= 3; ++j) EXPECT_EQ(du.at(cell("M.u", {j + 2})), p.at(cell("M.q", {j})));
  expect_forms_agree(text);
  // Off the concat axis the operands must agree: (2,) and (3, 2) do not.
  EXPECT_EQ(flatten_refusal(shaped(R"({"op": "concat", "args": ["p", "B"], "axis": 0})", R"(["w"])")).first,
            "array_shape_mismatch");
}

// ---- contractions, makearray blocks ----

TEST(ArrayForms, AnEinsumStencilSelectsItsWeightByTheContractedOffset) {
  // du[i] = sum_{k=-1..1} w(k) u[i + k], w(0) = -2, w(+-1) = 1, for the interior i in 2..4; the
  // boundary cells are held. The contraction is a left fold in ascending k.
  const std::string w = R"({"op": "ifelse", "args": [{"op": "==", "args": ["k", 0]}, -2, 1]})";
  const std::string text = array_doc(
      R"({"x": {"kind": "interval", "size": 5}})",
      R"({"u": {"type": "unknown", "units": "1", "default": 1.0, "shape": ["x"]}})",
      "[{\"lhs\": " + d_cell("u", "1") + ", \"rhs\": 0}, {\"lhs\": " + d_cell("u", "5") +
          R"(, "rhs": 0}, {"lhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [2, 4]}, "expr": )" +
          d_cell("u", "\"i\"") +
          R"(}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [2, 4], "k": [-1, 1]},
              "expr": {"op": "*", "args": [)" +
          w + ", " + at("u", R"({"op": "+", "args": ["i", "k"]})") + "]}}}]");
  EXPECT_TRUE(findings(text).empty());
  Flat f(text);
  const std::vector<double> u = {0.5, 2.0, -1.0, 4.0, 0.25};
  std::map<std::string, double> by_name;
  for (int k = 1; k <= 5; ++k) by_name[cell("M.u", {k})] = u[k - 1];
  const auto du = f.rhs(by_name);
  EXPECT_EQ(du.at(cell("M.u", {1})), 0.0);
  EXPECT_EQ(du.at(cell("M.u", {5})), 0.0);
  for (int i = 2; i <= 4; ++i)
    EXPECT_EQ(du.at(cell("M.u", {i})), (1 * u[i - 2] + -2 * u[i - 1]) + 1 * u[i]) << "cell " << i;
  expect_forms_agree(text);
}

TEST(ArrayForms, ReductionsOtherThanSumFoldOverTheContractedIndex) {
  const std::string text =
      array_doc(R"({"x": {"kind": "interval", "size": 3}})",
                R"({"u": {"type": "unknown", "units": "1", "default": 1.0, "shape": ["x"]},
          "prod": {"type": "unknown", "units": "1"}, "low": {"type": "unknown", "units": "1"}, "high": {"type": "unknown", "units": "1"}})",
                R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": 0},
          {"lhs": "prod", "rhs": {"op": "aggregate", "output_idx": [], "args": [], "reduce": "*", "expr": )" +
                    at("u", "\"k\"") + R"(}},
          {"lhs": "low", "rhs": {"op": "aggregate", "output_idx": [], "args": [], "reduce": "min", "expr": )" +
                    at("u", "\"k\"") + R"(}},
          {"lhs": "high", "rhs": {"op": "aggregate", "output_idx": [], "args": [], "reduce": "max", "expr": )" +
                    at("u", "\"k\"") + "}}]");
  EXPECT_TRUE(findings(text).empty());
  Flat f(text);
  const std::vector<double> u = {1.5, -4.0, 0.75};
  std::map<std::string, double> by_name;
  for (int k = 1; k <= 3; ++k) by_name[cell("M.u", {k})] = u[k - 1];
  const auto env = f.observed(by_name);
  EXPECT_EQ(env.at("M.prod"), (u[0] * u[1]) * u[2]);
  EXPECT_EQ(env.at("M.low"), -4.0);
  EXPECT_EQ(env.at("M.high"), 1.5);
}

TEST(ArrayForms, TheSpecsMakearrayBlockAssemblyFillsEachRegion) {
  // Spec §4.3.2's 3 x 3 example: row 1 = x_row, row 2 = y + z as a [1, i] aggregate, then the
  // corners 1, z[1] and the contraction sum_i z[i]^2.
  const std::string mk = R"({"op": "makearray", "args": [],
      "regions": [[[1, 1], [1, 3]], [[2, 2], [1, 3]], [[3, 3], [1, 1]], [[3, 3], [2, 2]], [[3, 3], [3, 3]]],
      "values": ["x_row",
                 {"op": "aggregate", "output_idx": [1, "i"], "args": ["y", "z"],
                  "expr": {"op": "+", "args": [{"op": "index", "args": ["y", "i"]}, {"op": "index", "args": ["z", "i"]}]}},
                 1, {"op": "index", "args": ["z", 1]},
                 {"op": "aggregate", "output_idx": [], "args": ["z"],
                  "expr": {"op": "*", "args": [{"op": "index", "args": ["z", "i"]}, {"op": "index", "args": ["z", "i"]}]}}]})";
  const std::string text =
      array_doc(R"({"r": {"kind": "interval", "size": 3}, "c": {"kind": "interval", "size": 3}})",
                R"({"u": {"type": "unknown", "units": "1", "default": 0.0, "shape": ["r", "c"]},
          "x_row": {"type": "parameter", "units": "1", "default": 0.0, "shape": ["c"]},
          "y": {"type": "parameter", "units": "1", "default": 0.0, "shape": ["c"]},
          "z": {"type": "parameter", "units": "1", "default": 0.0, "shape": ["c"]}})",
                R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": )" + mk + "}]");
  EXPECT_TRUE(findings(text).empty());
  esi::esm::FlattenOptions fo;
  fo.inputs = nlohmann::json{
      {"M.x_row", {5.0, 6.0, 7.0}}, {"M.y", {0.5, 1.5, 2.5}}, {"M.z", {3.0, -1.0, 0.25}}};
  Flat f(text, fo);
  std::map<std::string, double> p, u;
  for (const auto& v : f.sys.parameters) p[v.name] = v.default_value.value_or(NAN);
  for (const auto& v : f.sys.states) u[v.name] = 0.0;
  const auto du = f.rhs(u);
  const auto P = [&](const char* a, int j) { return p.at(cell(a, {j})); };
  for (int j = 1; j <= 3; ++j) {
    EXPECT_EQ(du.at(cell("M.u", {1, j})), P("M.x_row", j));
    EXPECT_EQ(du.at(cell("M.u", {2, j})), P("M.y", j) + P("M.z", j));
  }
  EXPECT_EQ(du.at(cell("M.u", {3, 1})), 1.0);
  EXPECT_EQ(du.at(cell("M.u", {3, 2})), P("M.z", 1));
  EXPECT_EQ(du.at(cell("M.u", {3, 3})),
            (P("M.z", 1) * P("M.z", 1) + P("M.z", 2) * P("M.z", 2)) + P("M.z", 3) * P("M.z", 3));
  expect_forms_agree(text);
}

TEST(ArrayForms, TwoArraysCoupledAtAnInterfaceExchangeThroughTheirEdgeCells) {
  // a (3 cells) and b (3 cells) diffuse into each other through a[3] <-> b[1]: the interior
  // of each by an offset aggregate, the edge cells by scalar equations reading the other array.
  // The exchange conserves a + b: the tendencies sum to zero at any state.
  const std::string text = array_doc(
      R"({"x": {"kind": "interval", "size": 3}, "y": {"kind": "interval", "size": 3}})",
      R"({"a": {"type": "unknown", "units": "1", "default": 1.0, "shape": ["x"]},
          "b": {"type": "unknown", "units": "1", "default": 0.0, "shape": ["y"]}})",
      R"([{"lhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [1, 2]}, "expr": )" +
          d_cell("a", "\"i\"") +
          R"(}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [1, 2]},
              "expr": {"op": "-", "args": [)" +
          at("a", R"({"op": "+", "args": ["i", 1]})") + ", " + at("a", "\"i\"") +
          R"(]}}},
          {"lhs": )" +
          d_cell("a", "3") + R"(, "rhs": {"op": "-", "args": [)" + at("b", "1") + ", " +
          at("a", "3") + R"(]}},
          {"lhs": )" +
          d_cell("b", "1") + R"(, "rhs": {"op": "-", "args": [)" + at("a", "3") + ", " +
          at("b", "1") + R"(]}},
          {"lhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [2, 3]}, "expr": )" +
          d_cell("b", "\"i\"") +
          R"(}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [2, 3]},
              "expr": {"op": "-", "args": [)" +
          at("b", R"({"op": "-", "args": ["i", 1]})") + ", " + at("b", "\"i\"") + "]}}}]");
  EXPECT_TRUE(findings(text).empty());
  Flat f(text);
  const std::vector<double> a = {2.0, 0.5, 1.25}, b = {-0.75, 3.0, 0.125};
  std::map<std::string, double> by_name;
  for (int k = 1; k <= 3; ++k) {
    by_name[cell("M.a", {k})] = a[k - 1];
    by_name[cell("M.b", {k})] = b[k - 1];
  }
  const auto du = f.rhs(by_name);
  EXPECT_EQ(du.at(cell("M.a", {1})), a[1] - a[0]);
  EXPECT_EQ(du.at(cell("M.a", {2})), a[2] - a[1]);
  EXPECT_EQ(du.at(cell("M.a", {3})), b[0] - a[2]);
  EXPECT_EQ(du.at(cell("M.b", {1})), a[2] - b[0]);
  EXPECT_EQ(du.at(cell("M.b", {2})), b[0] - b[1]);
  EXPECT_EQ(du.at(cell("M.b", {3})), b[1] - b[2]);
  expect_forms_agree(text);
}

}  // namespace
