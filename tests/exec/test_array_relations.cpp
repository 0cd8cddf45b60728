// Relational aggregate features when arrays become cells: value-equality `join` (spec §4.3.1,
// schema `join`: inner equi-join, many-to-many defined, unmatched combinations contribute the
// additive identity) and the index-returning reductions `argmin` / `argmax` (§4.2: the smallest
// arg wins ties). Every expected value is worked out by hand in the comment beside it.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/kernel/oracle.hpp"
#include "esi/expr/parse.hpp"
#include <iostream>
#include "support/flat_doc.hpp"

namespace {

using Flat = esi::testing::FlatDoc;
using esi::testing::array_doc;
using esi::testing::flatten_refusal;

const std::string kTwoCategories =
    R"({"a": {"kind": "categorical", "members": ["x", "x", "y"]},
        "b": {"kind": "categorical", "members": ["x", "z", "x"]}})";

std::string scalar_join(const std::string& on) {
  return array_doc(kTwoCategories, R"({"s": {"type": "unknown", "default": 0.0}, "y": {"type": "unknown"}})",
                  R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
                      {"lhs": "y", "rhs": {"op": "aggregate", "args": [], "output_idx": [],
                        "ranges": {"i": {"from": "a"}, "j": {"from": "b"}},
                        "join": [{"on": )" + on + R"(}],
                        "expr": {"op": "+", "args": [{"op": "*", "args": [10, "i"]}, "j"]}}}])");
}

TEST(ArrayJoin, CategoricalKeysMatchByMemberManyToMany) {
  // Members a = [x, x, y], b = [x, z, x]: matched (i, j) = (1,1), (1,3), (2,1), (2,3), m*n = 2*2
  // terms; body 10 i + j sums to 11 + 13 + 21 + 23 = 68 (the full 3x3 product would be 198).
  Flat f(scalar_join(R"([["i", "j"]])"));
  EXPECT_EQ(f.observed({{"M.s", 0.0}}).at("M.y"), 68.0);
}

TEST(ArrayJoin, AKeyNamingAnIndexSetIsTheIndexDrawingFromItSoTheJoinIsPositional) {
  // [i, a] compares i with itself: every combination is admitted, 3 * (10+20+30) / ... worked
  // out: sum_i sum_j (10 i + j) = 3*60 + 3*6 = 198.
  Flat f(scalar_join(R"([["i", "a"]])"));
  EXPECT_EQ(f.observed({{"M.s", 0.0}}).at("M.y"), 198.0);
}

const std::string kPointsAndGenerators =
    R"({"points": {"kind": "interval", "size": 4}, "generators": {"kind": "interval", "size": 3}})";

// States x (points), gx (generators), rho (points); observeds assign = argmin_g (x_i - gx_g)^2,
// far = argmax of the same, den[g] = sum over points assigned to g of rho (a join on the run-time
// key column `assign`).
const std::string kNearest = array_doc(kPointsAndGenerators,
    R"({"x": {"type": "unknown", "shape": ["points"], "default": 0.0},
        "gx": {"type": "unknown", "shape": ["generators"], "default": 0.0},
        "rho": {"type": "unknown", "shape": ["points"], "default": 0.0},
        "assign": {"type": "unknown", "shape": ["points"]},
        "far": {"type": "unknown", "shape": ["points"]},
        "den": {"type": "unknown", "shape": ["generators"]}})",
    R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 0.0},
        {"lhs": {"op": "D", "args": ["gx"], "wrt": "t"}, "rhs": 0.0},
        {"lhs": {"op": "D", "args": ["rho"], "wrt": "t"}, "rhs": 0.0},
        {"lhs": {"op": "index", "args": ["assign", "i"]},
         "rhs": {"op": "aggregate", "output_idx": ["i"], "ranges": {"i": {"from": "points"}}, "args": [],
           "expr": {"op": "argmin", "args": [], "arg": "g", "ranges": {"g": {"from": "generators"}},
             "expr": {"op": "*", "args": [
               {"op": "-", "args": [{"op": "index", "args": ["x", "i"]}, {"op": "index", "args": ["gx", "g"]}]},
               {"op": "-", "args": [{"op": "index", "args": ["x", "i"]}, {"op": "index", "args": ["gx", "g"]}]}]}}}},
        {"lhs": {"op": "index", "args": ["far", "i"]},
         "rhs": {"op": "aggregate", "output_idx": ["i"], "ranges": {"i": {"from": "points"}}, "args": [],
           "expr": {"op": "argmax", "args": [], "arg": "g", "ranges": {"g": {"from": "generators"}},
             "expr": {"op": "*", "args": [
               {"op": "-", "args": [{"op": "index", "args": ["x", "i"]}, {"op": "index", "args": ["gx", "g"]}]},
               {"op": "-", "args": [{"op": "index", "args": ["x", "i"]}, {"op": "index", "args": ["gx", "g"]}]}]}}}},
        {"lhs": {"op": "index", "args": ["den", "g"]},
         "rhs": {"op": "aggregate", "output_idx": ["g"], "args": [],
           "ranges": {"g": {"from": "generators"}, "p": {"from": "points"}},
           "join": [{"on": [["assign", "g"]]}],
           "expr": {"op": "index", "args": ["rho", "p"]}}}])");

TEST(ArrayArgmin, NearestGeneratorWithTheSmallestIdWinningTiesAndAJoinOnTheResult) {
  Flat f(kNearest);
  // gx = [0, 2, 4]. Squared distances: x=1 -> (1, 1, 9): a tie, argmin 1, argmax 3;
  // x=2.9 -> (8.41, 0.81, 1.21): 2, 1; x=5 -> (25, 9, 1): 3, 1; x=-1 -> (1, 9, 25): 1, 3.
  const auto env = f.observed({{"M.x[1]", 1.0}, {"M.x[2]", 2.9}, {"M.x[3]", 5.0}, {"M.x[4]", -1.0},
                               {"M.gx[1]", 0.0}, {"M.gx[2]", 2.0}, {"M.gx[3]", 4.0},
                               {"M.rho[1]", 1.0}, {"M.rho[2]", 10.0}, {"M.rho[3]", 100.0}, {"M.rho[4]", 1000.0}});
  EXPECT_EQ(env.at("M.assign[1]"), 1.0);
  EXPECT_EQ(env.at("M.assign[2]"), 2.0);
  EXPECT_EQ(env.at("M.assign[3]"), 3.0);
  EXPECT_EQ(env.at("M.assign[4]"), 1.0);
  EXPECT_EQ(env.at("M.far[1]"), 3.0);
  EXPECT_EQ(env.at("M.far[2]"), 1.0);
  EXPECT_EQ(env.at("M.far[3]"), 1.0);
  EXPECT_EQ(env.at("M.far[4]"), 3.0);
  // den[g] = sum of rho over points assigned to g: g=1 <- points 1, 4 (1 + 1000); g=2 <- point 2
  // (10); g=3 <- point 3 (100).
  EXPECT_EQ(env.at("M.den[1]"), 1001.0);
  EXPECT_EQ(env.at("M.den[2]"), 10.0);
  EXPECT_EQ(env.at("M.den[3]"), 100.0);
}

TEST(ArrayArgmin, ABodyKnownWhenTheModelIsBuiltGivesTheIndexAsANumber) {
  // argmin_g (g - 2.5)^2 over g = 1..4: values 2.25, 0.25, 0.25, 2.25 -> tie between 2 and 3 -> 2;
  // argmax -> tie between 1 and 4 -> 1.
  const std::string text = array_doc(R"({"g4": {"kind": "interval", "size": 4}})",
      R"({"s": {"type": "unknown", "default": 0.0}, "lo": {"type": "unknown"}, "hi": {"type": "unknown"}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": "lo", "rhs": {"op": "argmin", "args": [], "arg": "g", "ranges": {"g": {"from": "g4"}},
            "expr": {"op": "*", "args": [{"op": "-", "args": ["g", 2.5]}, {"op": "-", "args": ["g", 2.5]}]}}},
          {"lhs": "hi", "rhs": {"op": "argmax", "args": [], "arg": "g", "ranges": {"g": [1, 4]},
            "expr": {"op": "*", "args": [{"op": "-", "args": ["g", 2.5]}, {"op": "-", "args": ["g", 2.5]}]}}}])");
  Flat f(text);
  const auto env = f.observed({{"M.s", 0.0}});
  EXPECT_EQ(env.at("M.lo"), 2.0);
  EXPECT_EQ(env.at("M.hi"), 1.0);
}

// ---- the bool_and_or semiring ----

TEST(ArraySemiring, BoolAndOrIsAnyOverTheContractedIndices) {
  // hit[i] = OR_j (u[i] > c[j]) with thresholds c = [5, 50]: u = [1, 10, 100] -> [0, 1, 1];
  // all[i] (a single term) = (u[i] > 5) -> [0, 1, 1] as truth values, and none = OR over an
  // empty range = false.
  const std::string text = array_doc(R"({"x": {"kind": "interval", "size": 3}, "th": {"kind": "interval", "size": 2}})",
      R"({"u": {"type": "unknown", "shape": ["x"], "default": 0.0},
          "hit": {"type": "unknown", "shape": ["x"]}, "one": {"type": "unknown", "shape": ["x"]},
          "none": {"type": "unknown"}})",
      R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": {"op": "index", "args": ["hit", "i"]},
           "rhs": {"op": "aggregate", "args": [], "semiring": "bool_and_or", "output_idx": ["i"],
             "ranges": {"i": {"from": "x"}, "j": {"from": "th"}},
             "expr": {"op": ">", "args": [{"op": "index", "args": ["u", "i"]},
                                          {"op": "index", "args": [{"op": "const", "args": [], "value": [5, 50]}, "j"]}]}}},
          {"lhs": {"op": "index", "args": ["one", "i"]},
           "rhs": {"op": "aggregate", "args": [], "semiring": "bool_and_or", "output_idx": ["i"],
             "ranges": {"i": {"from": "x"}}, "expr": {"op": "*", "args": [7, {"op": "index", "args": ["u", "i"]}]}}},
          {"lhs": "none", "rhs": {"op": "aggregate", "args": [], "semiring": "bool_and_or", "output_idx": [],
             "ranges": {"j": [2, 1]}, "expr": 1}}])");
  Flat f(text);
  const auto env = f.observed({{"M.u[1]", 1.0}, {"M.u[2]", 10.0}, {"M.u[3]", 100.0}});
  EXPECT_EQ(env.at("M.hit[1]"), 0.0);
  EXPECT_EQ(env.at("M.hit[2]"), 1.0);
  EXPECT_EQ(env.at("M.hit[3]"), 1.0);
  // A single term is its truth value: 7 * u is nonzero, so true (1), not 7 u.
  EXPECT_EQ(env.at("M.one[1]"), 1.0);
  EXPECT_EQ(env.at("M.one[3]"), 1.0);
  EXPECT_EQ(env.at("M.none"), 0.0);
}

// ---- gathers at run-time positions ----

// D(u[i]) = sum_k (u[nbr[i,k]] - u[i]) with `nbr` a connectivity table reloaded on a schedule
// (so not known when the model is built); `far` reads the parameter w through the same table.
const std::string kRuntimeStencil = array_doc(
    R"({"cells": {"kind": "interval", "size": 4}, "stencil": {"kind": "interval", "size": 2}})",
    R"({"u": {"type": "unknown", "shape": ["cells"], "default": 0.0},
        "w": {"type": "parameter", "shape": ["cells"], "default": 0.5},
        "pick": {"type": "unknown", "shape": ["cells"]},
        "nbr": {"type": "parameter", "shape": ["cells", "stencil"],
                "update": {"kind": "schedule", "interval": 3600.0, "handler": {"handler_id": "reload"}}}})",
    R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"},
         "rhs": {"op": "aggregate", "args": [], "output_idx": ["i"], "ranges": {"i": {"from": "cells"}, "k": {"from": "stencil"}},
           "expr": {"op": "-", "args": [{"op": "index", "args": ["u", {"op": "index", "args": ["nbr", "i", "k"]}]},
                                        {"op": "index", "args": ["u", "i"]}]}}},
        {"lhs": {"op": "index", "args": ["pick", "i"]},
         "rhs": {"op": "aggregate", "args": [], "output_idx": ["i"], "ranges": {"i": {"from": "cells"}},
           "expr": {"op": "index", "args": ["w", {"op": "index", "args": ["nbr", "i", 1]}]}}}])");

TEST(ArrayRuntimeGather, ANeighbourTableKnownOnlyWhileRunningSelectsEachCellsOwnValue) {
  esi::esm::FlattenOptions fo;
  fo.inputs = {{"M.nbr", nlohmann::json::parse("[[2, 4], [1, 3], [2, 4], [3, 1]]")}};
  Flat f(kRuntimeStencil, fo);
  // u = [1, 10, 100, 1000]: du1 = (10-1) + (1000-1) = 1008; du2 = (1-10) + (100-10) = 81;
  // du3 = (10-100) + (1000-100) = 810; du4 = (100-1000) + (1-1000) = -1899.
  const std::map<std::string, double> u{{"M.u[1]", 1.0}, {"M.u[2]", 10.0}, {"M.u[3]", 100.0}, {"M.u[4]", 1000.0}};
  const auto du = f.rhs(u);
  EXPECT_EQ(du.at("M.u[1]"), 1008.0);
  EXPECT_EQ(du.at("M.u[2]"), 81.0);
  EXPECT_EQ(du.at("M.u[3]"), 810.0);
  EXPECT_EQ(du.at("M.u[4]"), -1899.0);
  EXPECT_EQ(f.observed(u).at("M.pick[2]"), 0.5);
}

TEST(ArrayRuntimeGather, APositionOutsideTheArrayReadsZeroForStatesAndNaNForParameters) {
  esi::esm::FlattenOptions fo;
  fo.inputs = {{"M.nbr", nlohmann::json::parse("[[7, 2], [1, 3], [2, 4], [3, 1]]")}};
  Flat f(kRuntimeStencil, fo);
  const std::map<std::string, double> u{{"M.u[1]", 1.0}, {"M.u[2]", 10.0}, {"M.u[3]", 100.0}, {"M.u[4]", 1000.0}};
  // Cell 1 reads u[7], outside the 4 cells: 0 (spec §4.3.3), so du1 = (0-1) + (10-1) = 8.
  EXPECT_EQ(f.rhs(u).at("M.u[1]"), 8.0);
  // w[7] does not exist: a parameter has no out-of-range value, so the read is NaN (a run stops
  // there as non-finite) rather than a silent number.
  EXPECT_TRUE(std::isnan(f.observed(u).at("M.pick[1]")));
  EXPECT_EQ(f.observed(u).at("M.pick[2]"), 0.5);
}

// ---- polygon_intersection_area (planar) ----

std::string overlap_doc(const std::string& a, const std::string& b, const std::string& manifold = "planar") {
  return array_doc(R"({"verts": {"kind": "interval", "size": 4}, "coord": {"kind": "interval", "size": 2}})",
      R"({"s": {"type": "unknown", "default": 0.0}, "A": {"type": "unknown"},
          "ring": {"type": "unknown", "shape": ["verts", "coord"]}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": "A"},
          {"lhs": "ring", "rhs": {"op": "const", "args": [], "value": )" + a + R"(}},
          {"lhs": "A", "rhs": {"op": "polygon_intersection_area", "manifold": ")" + manifold +
          R"(", "args": ["ring", {"op": "const", "args": [], "value": )" + b + "}]}}]");
}

double overlap(const std::string& a, const std::string& b, const std::string& manifold = "planar") {
  Flat f(overlap_doc(a, b, manifold));
  return f.observed({{"M.s", 0.0}}).at("M.A");
}

TEST(PolygonIntersectionArea, PlanarOverlapsWorkedOutByHand) {
  // Squares [0,2]^2 and [1,3]^2 overlap in [1,2]^2: area 1.
  EXPECT_EQ(overlap("[[0,0],[2,0],[2,2],[0,2]]", "[[1,1],[3,1],[3,3],[1,3]]"), 1.0);
  // The square [1,3]^2 (clockwise here) against the triangle (0,0),(4,0),(0,4): the square
  // minus its corner above x + y = 4, the triangle (1,3),(3,1),(3,3) of area 2: 4 - 2 = 2.
  EXPECT_EQ(overlap("[[1,1],[1,3],[3,3],[3,1]]", "[[0,0],[4,0],[0,4]]"), 2.0);
  // Disjoint squares: 0.
  EXPECT_EQ(overlap("[[0,0],[1,0],[1,1],[0,1]]", "[[5,5],[6,5],[6,6],[5,6]]"), 0.0);
  // An explicitly closed, padded ring (spec §8.6.1: consecutive duplicates and the closing
  // vertex are dropped) means its distinct ring: the triangle (0,0),(2,0),(0,2) inside [0,2]^2
  // has area 2.
  EXPECT_EQ(overlap("[[0,0],[2,0],[0,2],[0,2]]", "[[0,0],[2,0],[2,2],[0,2],[0,2],[0,0]]"), 2.0);
}

// ---- polygon_intersection_area (spherical: lon-lat in degrees, great-circle edges, sr) ----
//
// Expected areas by Girard's theorem (a spherical triangle's area is its angle sum less pi) or,
// where the angles are not obvious, by L'Huilier's theorem on the side lengths (each side the
// great-circle distance acos(p.q)), computed apart from the code under test:
//   tan(E/4) = sqrt(tan(s/2) tan((s-a)/2) tan((s-b)/2) tan((s-c)/2)),  s = (a+b+c)/2.

// Bounded by the equator and two meridians; the first operand is a 4-vertex array here, so the
// triangle repeats its last vertex (padding, dropped as §8.6.1 says).
const std::string kOctant = "[[0,0],[90,0],[0,90],[0,90]]";

TEST(PolygonIntersectionArea, SphericalOverlapsByGirardAndLHuilier) {
  // The octant against itself: three right angles, pi/2.
  EXPECT_NEAR(overlap(kOctant, kOctant, "spherical"), M_PI / 2, 1e-14);
  // The octant against the one turned 45 degrees east: the triangle between the meridians 45
  // and 90 and the equator, right angles at the equator and 45 degrees at the pole: pi/4.
  EXPECT_NEAR(overlap(kOctant, "[[45,0],[135,0],[45,90]]", "spherical"), M_PI / 4, 1e-14);
  // A quad from 30 to 60 east whose edges join (.,-30) and (.,30) by great circles, against the
  // octant: the equator cuts it at (30,0) and (60,0) (its side edges are meridians), leaving
  // (30,0), (60,0), (60,30), (30,30); L'Huilier on the two halves split along (30,0)-(60,30):
  // 0.26636308214247170. The quad is symmetric about the equator, so that is also half its
  // own area, which the clip is checked against too.
  const std::string quad = "[[30,-30],[60,-30],[60,30],[30,30]]";
  EXPECT_NEAR(overlap(kOctant, quad, "spherical"), 0.26636308214247170, 1e-14);
  EXPECT_NEAR(overlap(quad, quad, "spherical") / 2, 0.26636308214247170, 1e-14);
  // Across the antimeridian, where planar clipping sees nothing in common: a cell from 178 to
  // 172 degrees west inside one from 170 east to 170 west (written 190), so the overlap is the
  // small cell: L'Huilier 0.0073160123231152795.
  const std::string wide = "[[170,-10],[190,-10],[190,10],[170,10]]";
  const std::string small = "[[-178,-2],[-172,-2],[-172,2],[-178,2]]";
  EXPECT_NEAR(overlap(wide, small, "spherical"), 0.0073160123231152795, 1e-15);
  EXPECT_EQ(overlap(wide, small, "planar"), 0.0);
  // Disjoint cells: 0.
  EXPECT_EQ(overlap(kOctant, "[[100,10],[120,10],[120,20],[100,20]]", "spherical"), 0.0);
}

TEST(PolygonIntersectionArea, SphericalFanCellsSharingEdgesByGirard) {
  // A fan from E = (0,0), the pole of the meridian lon = 90 (every arc from E meets it at a
  // right angle): the triangle E, (90,a), (90,b) has angles b - a, 90, 90, so its area is
  // b - a in radians. The fine cells are 15 degrees, the coarse ones 30.
  auto cell = [](int a, int b, bool padded) {
    const std::string t = "[[0,0],[90," + std::to_string(a) + "],[90," + std::to_string(b) + "]";
    return t + (padded ? ",[90," + std::to_string(b) + "]]" : "]");
  };
  const double deg = M_PI / 180;
  // A fine cell inside a coarse one (two edges on the coarse one's): all of it, pi/12.
  EXPECT_NEAR(overlap(cell(15, 30, true), cell(0, 30, false), "spherical"), 15 * deg, 1e-14);
  EXPECT_NEAR(overlap(cell(0, 15, true), cell(0, 30, false), "spherical"), 15 * deg, 1e-14);
  // Neighbours sharing only the arc from E to (90,30): no area.
  EXPECT_NEAR(overlap(cell(30, 45, true), cell(0, 30, false), "spherical"), 0.0, 1e-14);
  // The coarse cell against itself, and the whole fan against a coarse cell.
  EXPECT_NEAR(overlap(cell(30, 60, true), cell(30, 60, false), "spherical"), 30 * deg, 1e-14);
  EXPECT_NEAR(overlap(cell(0, 60, true), cell(30, 60, false), "spherical"), 30 * deg, 1e-14);
}

TEST(PolygonIntersectionAreaHostile, DegenerateRingsAndOtherManifoldsAreLocatedErrors) {
  auto [code, pointer] = flatten_refusal(overlap_doc("[[0,0],[1,1],[1,1],[0,0]]", "[[1,1],[3,1],[3,3],[1,3]]"));
  EXPECT_EQ(code, "invalid_polygon");
  EXPECT_EQ(pointer, "/models/M/equations/2");
  std::tie(code, pointer) =
      flatten_refusal(overlap_doc("[[0,0],[2,0],[2,2],[0,2]]", "[[1,1],[3,1],[3,3],[1,3]]", "geodesic"));
  EXPECT_EQ(code, "unsupported_array_feature");
  EXPECT_EQ(pointer, "/models/M/equations/2");
  // A band all the way round the equator has no inside that fits in a hemisphere.
  std::tie(code, pointer) = flatten_refusal(overlap_doc(
      kOctant, "[[0,-10],[120,-10],[240,-10],[240,10],[120,10],[0,10]]", "spherical"));
  EXPECT_EQ(code, "unsupported_array_feature");
  EXPECT_EQ(pointer, "/models/M/equations/2");
}

// ---- hostile input ----

TEST(ArrayJoinHostile, AKeyNamingAnIndexSetNoIndexDrawsFromIsALocatedError) {
  const std::string text = array_doc(
      R"({"a": {"kind": "categorical", "members": ["x"]}, "b": {"kind": "categorical", "members": ["x"]},
          "c": {"kind": "interval", "size": 2}})",
      R"({"s": {"type": "unknown", "default": 0.0}, "y": {"type": "unknown"}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": "y", "rhs": {"op": "aggregate", "args": [], "output_idx": [],
            "ranges": {"i": {"from": "a"}, "j": {"from": "b"}},
            "join": [{"on": [["i", "c"]]}], "expr": 1}}])");
  const auto [code, pointer] = flatten_refusal(text);
  EXPECT_EQ(code, "invalid_join");
  EXPECT_EQ(pointer, "/models/M/equations/1");
}

TEST(ArrayJoinHostile, AnArrayKeyOverAnIndexSetNoIndexDrawsFromIsALocatedError) {
  // den's join reads assign[p], but here p ranges over [1, 4] without naming `points`.
  std::string text = kNearest;
  const std::string from = R"("p": {"from": "points"})";
  text.replace(text.find(from), from.size(), R"("p": [1, 4])");
  const auto [code, pointer] = flatten_refusal(text);
  EXPECT_EQ(code, "invalid_join");
  EXPECT_EQ(pointer, "/models/M/equations/5");
}

TEST(ArrayJoinHostile, AKeyNamingNothingIsAnUndefinedVariable) {
  const auto [code, pointer] = flatten_refusal(scalar_join(R"([["i", "nowhere"]])"));
  EXPECT_EQ(code, "undefined_variable");
  EXPECT_EQ(pointer.rfind("/models/M/equations/1", 0), 0u) << pointer;
}

TEST(ArrayArgminHostile, AnEmptyCandidateSetAndAMissingArgAreLocatedErrors) {
  auto text = [](const std::string& argmin_fields) {
    return array_doc(R"({"g4": {"kind": "interval", "size": 4}})",
                    R"({"s": {"type": "unknown", "default": 0.0}, "lo": {"type": "unknown"}})",
                    R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
                        {"lhs": "lo", "rhs": {"op": "argmin", "args": [], )" + argmin_fields + R"(}}])");
  };
  auto [code, pointer] = flatten_refusal(text(R"("arg": "g", "ranges": {"g": [3, 2]}, "expr": "g")"));
  EXPECT_EQ(code, "argmin_empty_candidates");
  EXPECT_EQ(pointer, "/models/M/equations/1");
  std::tie(code, pointer) = flatten_refusal(text(R"("arg": "h", "ranges": {"g": [1, 4]}, "expr": "g")"));
  EXPECT_EQ(code, "invalid_aggregate");
  EXPECT_EQ(pointer, "/models/M/equations/1");
}

}  // namespace
