// Derived index sets (spec §2.1 `index_sets` kind "derived", RFC semiring-faq §5.5/§5.7): a set
// materialized when the model is built from the node its `from_faq` names — a `distinct`
// aggregate whose `key` (usually a `skolem` term) mints one member per distinct key, in the
// sorted order of the keys, or an `intersect_polygon` ring (spec §8.6.1) — and `rank`, the
// dense 0-based id of a member. Every expected value is worked out by hand beside it.
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/kernel/oracle.hpp"
#include "support/flat_doc.hpp"

namespace {

using Flat = esi::testing::FlatDoc;
using esi::testing::array_doc;
using esi::testing::flatten_refusal;

// ---- edges of a 2x2 quad mesh ----
//
// Vertices 1..9 on a 3x3 lattice (7 8 9 / 4 5 6 / 1 2 3); faces f1 = (1,2,5,4),
// f2 = (2,3,6,5), f3 = (4,5,8,7), f4 = (5,6,9,8). Their local edges as (lo, hi):
//   f1: (1,2) (2,5) (4,5) (1,4)     f2: (2,3) (3,6) (5,6) (2,5)
//   f3: (4,5) (5,8) (7,8) (4,7)     f4: (5,6) (6,9) (8,9) (5,8)
// 16 face-edges, 4 shared by two faces, so 12 edges; in sorted key order:
//   1 (1,2)  2 (1,4)  3 (2,3)  4 (2,5)  5 (3,6)  6 (4,5)
//   7 (4,7)  8 (5,6)  9 (5,8) 10 (6,9) 11 (7,8) 12 (8,9)
const std::string kLo = "[[1,2,4,1],[2,3,5,2],[4,5,7,4],[5,6,8,5]]";
const std::string kHi = "[[2,5,5,4],[3,6,6,5],[5,8,8,7],[6,9,9,8]]";

std::string edge_producer(const std::string& id, const std::string& semiring, const std::string& body) {
  return R"({"op": "aggregate", "id": ")" + id + R"(", "args": [], "semiring": ")" + semiring +
         R"(", "distinct": true, "output_idx": ["e"],
            "ranges": {"f": {"from": "faces"}, "le": {"from": "local_edges"}},
            "key": {"op": "skolem", "label": "edge", "args": [
              {"op": "index", "args": ["lo", "f", "le"]}, {"op": "index", "args": ["hi", "f", "le"]}]},
            "expr": )" + body + "}";
}

std::string quad_mesh(const std::string& lo_declaration = R"({"type": "unknown", "shape": ["faces", "local_edges"]})",
                      const std::string& lo_equation = R"({"lhs": "lo", "rhs": {"op": "const", "args": [], "value": )" + kLo + "}},") {
  return array_doc(
      R"({"faces": {"kind": "interval", "size": 4}, "local_edges": {"kind": "interval", "size": 4},
          "edges": {"kind": "derived", "from_faq": "edge_set"},
          "edge_use": {"kind": "derived", "from_faq": "edge_count"},
          "edge_face": {"kind": "derived", "from_faq": "edge_last_face"}})",
      R"({"s": {"type": "unknown", "default": 0.0},
          "lo": )" + lo_declaration + R"(,
          "hi": {"type": "unknown", "shape": ["faces", "local_edges"]},
          "exists": {"type": "unknown", "shape": ["edges"]},
          "uses": {"type": "unknown", "shape": ["edge_use"]},
          "last_face": {"type": "unknown", "shape": ["edge_face"]},
          "dense_id": {"type": "unknown", "shape": ["edges"]},
          "id_sum": {"type": "unknown"}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
          )" + lo_equation + R"(
          {"lhs": "hi", "rhs": {"op": "const", "args": [], "value": )" + kHi + R"(}},
          {"lhs": {"op": "index", "args": ["exists", "e"]}, "rhs": )" +
          edge_producer("edge_set", "bool_and_or", R"({"op": "true", "args": []})") + R"(},
          {"lhs": {"op": "index", "args": ["uses", "e"]}, "rhs": )" + edge_producer("edge_count", "sum_product", "1") + R"(},
          {"lhs": {"op": "index", "args": ["last_face", "e"]}, "rhs": )" + edge_producer("edge_last_face", "max_product", R"("f")") + R"(},
          {"lhs": {"op": "index", "args": ["dense_id", "e"]},
           "rhs": {"op": "aggregate", "args": [], "output_idx": ["e"], "ranges": {"e": {"from": "edges"}},
                   "expr": {"op": "rank", "args": ["edges"]}}},
          {"lhs": "id_sum", "rhs": {"op": "aggregate", "args": [], "output_idx": [], "ranges": {"e": {"from": "edges"}},
                   "expr": {"op": "index", "args": ["dense_id", "e"]}}}])");
}

TEST(DerivedIndexSet, TheEdgesOfAQuadMeshAreItsDistinctSortedEndpointPairs) {
  Flat f(quad_mesh());
  EXPECT_EQ(f.sys.index_sets.at("edges"), 12);
  EXPECT_EQ(f.sys.index_sets.at("edge_use"), 12);
  const auto env = f.observed();
  for (int e = 1; e <= 12; ++e) EXPECT_EQ(env.at("M.exists[" + std::to_string(e) + "]"), 1.0) << e;
  // Faces per edge: the shared (2,5), (4,5), (5,6), (5,8) are edges 4, 6, 8, 9.
  const std::vector<double> uses{1, 1, 1, 2, 1, 2, 1, 2, 2, 1, 1, 1};
  // The highest face using each edge: (1,2) f1, (1,4) f1, (2,3) f2, (2,5) f1,f2, (3,6) f2,
  // (4,5) f1,f3, (4,7) f3, (5,6) f2,f4, (5,8) f3,f4, (6,9) f4, (7,8) f3, (8,9) f4.
  const std::vector<double> last{1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 3, 4};
  for (int e = 1; e <= 12; ++e) {
    const std::string i = "[" + std::to_string(e) + "]";
    EXPECT_EQ(env.at("M.uses" + i), uses[e - 1]) << e;
    EXPECT_EQ(env.at("M.last_face" + i), last[e - 1]) << e;
    // rank: the dense 0-based id, the member's position in the sorted order minus one.
    EXPECT_EQ(env.at("M.dense_id" + i), e - 1.0) << e;
  }
  EXPECT_EQ(env.at("M.id_sum"), 66.0);  // 0 + 1 + ... + 11
}

// ---- a bin-skolem candidate join ----
//
// Source points x = [0.5, 1.5, 2.5], targets y = [0.2, 2.7], bins of width 1 keyed
// skolem("bin", floor(x), 0): source bins 0, 1, 2; target bins 0, 2. Pairs with equal bins:
// (1,1) and (3,2), so 2 candidates, keyed skolem("pair", i, j) in that order.
const std::string kBins = array_doc(
    R"({"src": {"kind": "interval", "size": 3}, "tgt": {"kind": "interval", "size": 2},
        "pairs": {"kind": "derived", "from_faq": "candidates"}})",
    R"({"s": {"type": "unknown", "default": 0.0}, "w": {"type": "parameter", "default": 1.0},
        "x": {"type": "unknown", "shape": ["src"]}, "y": {"type": "unknown", "shape": ["tgt"]},
        "src_bin": {"type": "unknown", "shape": ["src"]}, "tgt_bin": {"type": "unknown", "shape": ["tgt"]},
        "pair_exists": {"type": "unknown", "shape": ["pairs"]}, "pair_id": {"type": "unknown", "shape": ["pairs"]},
        "gathered": {"type": "unknown", "shape": ["tgt"]}})",
    R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
        {"lhs": "x", "rhs": {"op": "const", "args": [], "value": [0.5, 1.5, 2.5]}},
        {"lhs": "y", "rhs": {"op": "const", "args": [], "value": [0.2, 2.7]}},
        {"lhs": {"op": "index", "args": ["src_bin", "i"]},
         "rhs": {"op": "aggregate", "args": [], "output_idx": ["i"], "ranges": {"i": {"from": "src"}},
                 "expr": {"op": "skolem", "label": "bin", "args": [
                   {"op": "floor", "args": [{"op": "/", "args": [{"op": "index", "args": ["x", "i"]}, "w"]}]}, 0]}}},
        {"lhs": {"op": "index", "args": ["tgt_bin", "j"]},
         "rhs": {"op": "aggregate", "args": [], "output_idx": ["j"], "ranges": {"j": {"from": "tgt"}},
                 "expr": {"op": "skolem", "label": "bin", "args": [
                   {"op": "floor", "args": [{"op": "/", "args": [{"op": "index", "args": ["y", "j"]}, "w"]}]}, 0]}}},
        {"lhs": {"op": "index", "args": ["pair_exists", "p"]},
         "rhs": {"op": "aggregate", "id": "candidates", "args": [], "semiring": "bool_and_or", "distinct": true,
                 "output_idx": ["p"], "ranges": {"i": {"from": "src"}, "j": {"from": "tgt"}},
                 "join": [{"on": [["src_bin", "tgt_bin"]]}],
                 "key": {"op": "skolem", "label": "pair", "args": ["i", "j"]},
                 "expr": {"op": "true", "args": []}}},
        {"lhs": {"op": "index", "args": ["pair_id", "p"]},
         "rhs": {"op": "aggregate", "args": [], "output_idx": ["p"], "ranges": {"p": {"from": "pairs"}},
                 "expr": {"op": "rank", "args": ["pairs"]}}},
        {"lhs": {"op": "index", "args": ["gathered", "j"]},
         "rhs": {"op": "aggregate", "args": [], "output_idx": ["j"], "ranges": {"i": {"from": "src"}, "j": {"from": "tgt"}},
                 "join": [{"on": [["src_bin", "tgt_bin"]]}],
                 "expr": {"op": "index", "args": ["x", "i"]}}}])");

TEST(DerivedIndexSet, ABinSkolemJoinGivesTheCandidatePairs) {
  Flat f(kBins);
  EXPECT_EQ(f.sys.index_sets.at("pairs"), 2);
  const auto env = f.observed();
  EXPECT_EQ(env.at("M.pair_exists[1]"), 1.0);
  EXPECT_EQ(env.at("M.pair_exists[2]"), 1.0);
  EXPECT_EQ(env.at("M.pair_id[1]"), 0.0);
  EXPECT_EQ(env.at("M.pair_id[2]"), 1.0);
  // Equal skolem keys are equal values: bins (0,0) and (2,0) are shared, (1,0) is not.
  EXPECT_EQ(env.at("M.src_bin[1]"), env.at("M.tgt_bin[1]"));
  EXPECT_EQ(env.at("M.src_bin[3]"), env.at("M.tgt_bin[2]"));
  EXPECT_NE(env.at("M.src_bin[2]"), env.at("M.tgt_bin[1]"));
  EXPECT_NE(env.at("M.src_bin[2]"), env.at("M.tgt_bin[2]"));
  // The same join on the skolem arrays in an ordinary aggregate: target 1 gathers x[1] = 0.5,
  // target 2 gathers x[3] = 2.5.
  EXPECT_EQ(env.at("M.gathered[1]"), 0.5);
  EXPECT_EQ(env.at("M.gathered[2]"), 2.5);
}

// ---- the intersect_polygon ring ----

std::string ring_doc(const std::string& a, const std::string& b, const std::string& manifold = "planar") {
  return array_doc(
      R"({"va": {"kind": "interval", "size": 4}, "vb": {"kind": "interval", "size": )" +
          std::to_string(std::count(b.begin(), b.end(), '[') - 1) + R"(},
          "coord": {"kind": "interval", "size": 2}, "ring": {"kind": "derived", "from_faq": "clip"}})",
      R"({"s": {"type": "unknown", "default": 0.0},
          "a": {"type": "unknown", "shape": ["va", "coord"]}, "b": {"type": "unknown", "shape": ["vb", "coord"]},
          "clip": {"type": "unknown", "shape": ["ring", "coord"]}, "area": {"type": "unknown"}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": "a", "rhs": {"op": "const", "args": [], "value": )" + a + R"(}},
          {"lhs": "b", "rhs": {"op": "const", "args": [], "value": )" + b + R"(}},
          {"lhs": "clip", "rhs": {"op": "intersect_polygon", "id": "clip", "manifold": ")" + manifold + R"(", "args": ["a", "b"]}},
          {"lhs": "area", "rhs": {"op": "aggregate", "args": [], "output_idx": [], "ranges": {"v": {"from": "ring"}},
            "expr": {"op": "*", "args": [0.5, {"op": "-", "args": [
              {"op": "*", "args": [{"op": "index", "args": ["clip", "v", 1]},
                                   {"op": "index", "args": ["clip", {"op": "+", "args": ["v", 1]}, 2]}]},
              {"op": "*", "args": [{"op": "index", "args": ["clip", {"op": "+", "args": ["v", 1]}, 1]},
                                   {"op": "index", "args": ["clip", "v", 2]}]}]}]}}}])");
}

TEST(DerivedIndexSet, TheIntersectionRingIsClosedCounterClockwiseFromItsLowestVertex) {
  // [0,2]^2 and [1,3]^2 (the second given clockwise) overlap in [1,2]^2: the ring (1,1),
  // (2,1), (2,2), (1,2), closed by (1,1) again, so 5 members; the shoelace over them (the
  // last term reads clip[6], outside the ring: 0) is the area 1.
  Flat f(ring_doc("[[0,0],[2,0],[2,2],[0,2]]", "[[1,1],[1,3],[3,3],[3,1]]"));
  EXPECT_EQ(f.sys.index_sets.at("ring"), 5);
  const auto env = f.observed();
  const std::vector<std::pair<double, double>> ring{{1, 1}, {2, 1}, {2, 2}, {1, 2}, {1, 1}};
  for (int v = 1; v <= 5; ++v) {
    EXPECT_EQ(env.at("M.clip[" + std::to_string(v) + ",1]"), ring[v - 1].first) << v;
    EXPECT_EQ(env.at("M.clip[" + std::to_string(v) + ",2]"), ring[v - 1].second) << v;
  }
  EXPECT_EQ(env.at("M.area"), 1.0);
}

TEST(DerivedIndexSet, ATriangularOverlapAndNoOverlap) {
  // [1,3]^2 against the triangle (0,0), (4,0), (0,4): the part below x + y = 4 is the triangle
  // (1,1), (3,1), (1,3), area 2; 3 vertices + the closing one.
  Flat tri(ring_doc("[[1,1],[3,1],[3,3],[1,3]]", "[[0,0],[4,0],[0,4]]"));
  EXPECT_EQ(tri.sys.index_sets.at("ring"), 4);
  EXPECT_EQ(tri.observed().at("M.area"), 2.0);
  // Disjoint squares: an empty ring, and the sum over it is 0.
  Flat none(ring_doc("[[0,0],[1,0],[1,1],[0,1]]", "[[5,5],[6,5],[6,6],[5,6]]"));
  EXPECT_EQ(none.sys.index_sets.at("ring"), 0);
  EXPECT_EQ(none.observed().at("M.area"), 0.0);
}

TEST(DerivedIndexSet, TheSphericalIntersectionRingKeepsTheVerticesItWasGiven) {
  // The octant (0,0), (90,0), (0,90) (padded to 4 vertices) against the octant turned 45
  // degrees east: the triangle (45,0), (90,0), (0,90), counter-clockwise seen from outside
  // (the equator eastward, then up to the pole), from its lowest-leftmost vertex, closed: 4
  // members. The pole and (90,0) are vertices of the operands and come back exactly; (45,0)
  // is where the equator crosses the meridian 45, computed.
  Flat f(ring_doc("[[0,0],[90,0],[0,90],[0,90]]", "[[45,0],[135,0],[45,90]]", "spherical"));
  ASSERT_EQ(f.sys.index_sets.at("ring"), 4);
  const auto env = f.observed();
  EXPECT_NEAR(env.at("M.clip[1,1]"), 45.0, 1e-12);
  EXPECT_NEAR(env.at("M.clip[1,2]"), 0.0, 1e-12);
  EXPECT_EQ(env.at("M.clip[2,1]"), 90.0);
  EXPECT_EQ(env.at("M.clip[2,2]"), 0.0);
  EXPECT_EQ(env.at("M.clip[3,1]"), 0.0);
  EXPECT_EQ(env.at("M.clip[3,2]"), 90.0);
  EXPECT_EQ(env.at("M.clip[4,1]"), env.at("M.clip[1,1]"));
  EXPECT_EQ(env.at("M.clip[4,2]"), env.at("M.clip[1,2]"));
  // Across the antimeridian: the cell 178..172 degrees west inside the one from 170 east to
  // 190 is the overlap, its longitudes on the first operand's branch (182..188, not -178..-172).
  Flat am(ring_doc("[[170,-10],[190,-10],[190,10],[170,10]]", "[[-178,-2],[-172,-2],[-172,2],[-178,2]]", "spherical"));
  ASSERT_EQ(am.sys.index_sets.at("ring"), 5);
  const auto at = am.observed();
  const std::vector<std::pair<double, double>> ring{{182, -2}, {188, -2}, {188, 2}, {182, 2}, {182, -2}};
  for (int v = 1; v <= 5; ++v) {
    EXPECT_NEAR(at.at("M.clip[" + std::to_string(v) + ",1]"), ring[v - 1].first, 1e-9) << v;
    EXPECT_NEAR(at.at("M.clip[" + std::to_string(v) + ",2]"), ring[v - 1].second, 1e-9) << v;
  }
}

// ---- the producer's output declared without a shape, an index set among the args ----

TEST(DerivedIndexSet, AnUnshapedProducerOutputIsAnArrayOverItsSet) {
  // Records at x = [-90.5, -92.2, -92.9, -90.1] fall in cells floor(x + 94) + 1 = 4, 2, 2, 4:
  // two distinct cells, sorted (2, 4). `cell` is declared without a shape (it becomes an
  // array over `cells`, all true), `count` sums it over the set (2), and `number` gives each
  // member its cell number, the max over the records that minted it of that same number. The
  // producer lists the index set `records` among its args (the domain, not a variable).
  const std::string text = array_doc(
      R"({"records": {"kind": "interval", "size": 4}, "cells": {"kind": "derived", "from_faq": "cell_set"}})",
      R"({"s": {"type": "unknown", "default": 0.0}, "x": {"type": "unknown", "shape": ["records"]},
          "cell": {"type": "unknown"}, "number": {"type": "unknown", "shape": ["cells"]}, "count": {"type": "unknown"}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": "x", "rhs": {"op": "const", "args": [], "value": [-90.5, -92.2, -92.9, -90.1]}},
          {"lhs": {"op": "index", "args": ["cell", "m"]},
           "rhs": {"op": "aggregate", "id": "cell_set", "args": ["records"], "semiring": "bool_and_or", "distinct": true,
                   "output_idx": ["m"], "ranges": {"r": {"from": "records"}},
                   "key": {"op": "skolem", "label": "cell", "args": [{"op": "+", "args": [
                     {"op": "floor", "args": [{"op": "+", "args": [{"op": "index", "args": ["x", "r"]}, 94]}]}, 1]}]},
                   "expr": {"op": "true", "args": []}}},
          {"lhs": {"op": "index", "args": ["number", "m"]},
           "rhs": {"op": "aggregate", "id": "cell_numbers", "args": [], "semiring": "max_product", "distinct": true,
                   "output_idx": ["m"], "ranges": {"r": {"from": "records"}},
                   "key": {"op": "skolem", "label": "cell", "args": [{"op": "+", "args": [
                     {"op": "floor", "args": [{"op": "+", "args": [{"op": "index", "args": ["x", "r"]}, 94]}]}, 1]}]},
                   "expr": {"op": "+", "args": [{"op": "floor", "args": [{"op": "+", "args": [{"op": "index", "args": ["x", "r"]}, 94]}]}, 1]}}},
          {"lhs": "count", "rhs": {"op": "aggregate", "args": [], "output_idx": [], "ranges": {"c": {"from": "cells"}},
                   "expr": {"op": "index", "args": ["cell", "c"]}}}])");
  // `number` is over `cells` but names the producer `cell_numbers`, which no set names.
  EXPECT_EQ(flatten_refusal(text).first, "unsupported_array_feature");
  std::string named = text;
  const std::string sets = R"("cells": {"kind": "derived", "from_faq": "cell_set"})";
  named.replace(named.find(sets), sets.size(),
                sets + R"(, "numbered": {"kind": "derived", "from_faq": "cell_numbers"})");
  const std::string shape = R"("number": {"type": "unknown", "shape": ["cells"]})";
  named.replace(named.find(shape), shape.size(), R"("number": {"type": "unknown", "shape": ["numbered"]})");
  Flat f(named);
  EXPECT_EQ(f.sys.index_sets.at("cells"), 2);
  const auto env = f.observed();
  EXPECT_EQ(env.at("M.cell[1]"), 1.0);
  EXPECT_EQ(env.at("M.cell[2]"), 1.0);
  EXPECT_EQ(env.at("M.number[1]"), 2.0);
  EXPECT_EQ(env.at("M.number[2]"), 4.0);
  EXPECT_EQ(env.at("M.count"), 2.0);
}

// ---- ragged index sets (schema IndexSet kind "ragged": offsets = size per parent, values =
// the k-th member; a range {"from": S, "of": [i]} iterates the members of S at i) ----
//
// Two cells with 3 and 4 edges: edges_on_cell = [[1,2,3,0],[2,4,5,6]] (the 0 is padding past
// cell 1's count and must never be read: dc[0] does not exist). dc = 1..6, dv = 10..60 over the
// 6 edges. area_eff[i] = 1/4 sum over the edges e of cell i of dc[e] dv[e]:
//   cell 1: (1*10 + 2*20 + 3*30) / 4 = 140 / 4 = 35
//   cell 2: (2*20 + 4*40 + 5*50 + 6*60) / 4 = 810 / 4 = 202.5
// and the number of edges of each cell, a sum of 1 over them: 3 and 4.
std::string ragged_mesh(const std::string& counts = "[3, 4]", const std::string& range_of = R"(, "of": ["i"])",
                        const std::string& offsets = "n_edges_on_cell") {
  return array_doc(
      R"({"cells": {"kind": "interval", "size": 2}, "local_edges": {"kind": "interval", "size": 4},
          "edges": {"kind": "interval", "size": 6},
          "edges_of_cell": {"kind": "ragged", "of": ["cells"], "offsets": ")" + offsets + R"(", "values": "edges_on_cell"}})",
      R"({"s": {"type": "unknown", "default": 0.0},
          "n_edges_on_cell": {"type": "unknown", "shape": ["cells"]},
          "edges_on_cell": {"type": "unknown", "shape": ["cells", "local_edges"]},
          "dc": {"type": "parameter", "shape": ["edges"]}, "dv": {"type": "parameter", "shape": ["edges"]},
          "area_eff": {"type": "unknown", "shape": ["cells"]}, "n": {"type": "unknown", "shape": ["cells"]}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": "n_edges_on_cell", "rhs": {"op": "const", "args": [], "value": )" + counts + R"(}},
          {"lhs": "edges_on_cell", "rhs": {"op": "const", "args": [], "value": [[1,2,3,0],[2,4,5,6]]}},
          {"lhs": {"op": "index", "args": ["area_eff", "i"]},
           "rhs": {"op": "aggregate", "args": [], "output_idx": ["i"],
                   "ranges": {"i": {"from": "cells"}, "e": {"from": "edges_of_cell")" + range_of + R"(}},
                   "expr": {"op": "*", "args": [0.25, {"op": "index", "args": ["dc", "e"]}, {"op": "index", "args": ["dv", "e"]}]}}},
          {"lhs": {"op": "index", "args": ["n", "i"]},
           "rhs": {"op": "aggregate", "args": [], "output_idx": ["i"],
                   "ranges": {"i": {"from": "cells"}, "e": {"from": "edges_of_cell")" + range_of + R"(}},
                   "expr": 1}}])");
}

esi::esm::FlattenOptions edge_lengths() {
  esi::esm::FlattenOptions fo;
  fo.inputs = nlohmann::json::parse(R"({"M.dc": [1, 2, 3, 4, 5, 6], "M.dv": [10, 20, 30, 40, 50, 60]})");
  return fo;
}

TEST(RaggedIndexSet, ASumOverTheEdgesOfEachCellReadsOnlyItsOwnMembers) {
  Flat f(ragged_mesh(), edge_lengths());
  const auto env = f.observed();
  EXPECT_EQ(env.at("M.area_eff[1]"), 35.0);
  EXPECT_EQ(env.at("M.area_eff[2]"), 202.5);
  EXPECT_EQ(env.at("M.n[1]"), 3.0);
  EXPECT_EQ(env.at("M.n[2]"), 4.0);
  // A cell with no edges sums over nothing: 0.
  Flat none(ragged_mesh("[0, 4]"), edge_lengths());
  EXPECT_EQ(none.observed().at("M.area_eff[1]"), 0.0);
  EXPECT_EQ(none.observed().at("M.area_eff[2]"), 202.5);
}

TEST(RaggedIndexSet, TheEdgesOfTwoTrianglesFromTheirVertexLists) {
  // Faces {1,2,3} and {2,3,4} (the canonical 2-triangle mesh), vertices as a ragged set per
  // face; the vertex pairs a < b of each face mint skolem(edge, a, b): (1,2) (1,3) (2,3) from
  // the first, (2,3) (2,4) (3,4) from the second, so 5 distinct edges, sorted; `code` reads
  // each as 10 a + b: 12, 13, 23, 24, 34.
  const std::string producer = R"({"op": "aggregate", "id": "ID", "args": [], "semiring": "SEMIRING", "distinct": true,
      "output_idx": ["m"],
      "ranges": {"f": {"from": "faces"}, "a": {"from": "face_vertices", "of": ["f"]}, "b": {"from": "face_vertices", "of": ["f"]}},
      "filter": {"op": "<", "args": ["a", "b"]},
      "key": {"op": "skolem", "label": "edge", "args": ["a", "b"]},
      "expr": BODY})";
  auto make = [&](const std::string& id, const std::string& semiring, const std::string& body) {
    std::string t = producer;
    t.replace(t.find("ID"), 2, id);
    t.replace(t.find("SEMIRING"), 8, semiring);
    t.replace(t.find("BODY"), 4, body);
    return t;
  };
  const std::string text = array_doc(
      R"({"faces": {"kind": "interval", "size": 2}, "corners": {"kind": "interval", "size": 3},
          "face_vertices": {"kind": "ragged", "of": ["faces"], "offsets": "n_verts", "values": "verts"},
          "edges": {"kind": "derived", "from_faq": "edge_set"}, "coded": {"kind": "derived", "from_faq": "edge_code"}})",
      R"({"s": {"type": "unknown", "default": 0.0},
          "n_verts": {"type": "parameter", "shape": ["faces"], "default": 3},
          "verts": {"type": "unknown", "shape": ["faces", "corners"]},
          "exists": {"type": "unknown", "shape": ["edges"]}, "code": {"type": "unknown", "shape": ["coded"]}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": "verts", "rhs": {"op": "const", "args": [], "value": [[1,2,3],[2,3,4]]}},
          {"lhs": {"op": "index", "args": ["exists", "m"]}, "rhs": )" + make("edge_set", "bool_and_or", R"({"op": "true", "args": []})") + R"(},
          {"lhs": {"op": "index", "args": ["code", "m"]}, "rhs": )" +
          make("edge_code", "max_product", R"({"op": "+", "args": [{"op": "*", "args": [10, "a"]}, "b"]})") + "}]");
  Flat f(text);
  EXPECT_EQ(f.sys.index_sets.at("edges"), 5);
  const auto env = f.observed();
  const std::vector<double> codes{12, 13, 23, 24, 34};
  for (int m = 1; m <= 5; ++m) {
    EXPECT_EQ(env.at("M.exists[" + std::to_string(m) + "]"), 1.0) << m;
    EXPECT_EQ(env.at("M.code[" + std::to_string(m) + "]"), codes[m - 1]) << m;
  }
}

TEST(RaggedIndexSetHostile, MissingOrBadFactorsAreLocatedErrors) {
  auto [code, pointer] = flatten_refusal(ragged_mesh("[3, 4]", ""), edge_lengths());  // no "of"
  EXPECT_EQ(code, "invalid_range");
  EXPECT_EQ(pointer, "/models/M/equations/3");
  std::tie(code, pointer) = flatten_refusal(ragged_mesh("[3, 4]", R"(, "of": ["i"])", "nowhere"), edge_lengths());
  EXPECT_EQ(code, "undefined_variable");
  EXPECT_EQ(pointer, "/index_sets/edges_of_cell/offsets");
  // 5 edges for cell 2, but edges_on_cell stores 4 per cell.
  std::tie(code, pointer) = flatten_refusal(ragged_mesh("[3, 5]"), edge_lengths());
  EXPECT_EQ(code, "invalid_ragged_set");
  EXPECT_EQ(pointer, "/models/M/equations/3");
  std::tie(code, pointer) = flatten_refusal(ragged_mesh("[3, 2.5]"), edge_lengths());
  EXPECT_EQ(code, "invalid_ragged_set");
}

// ---- lifting "mean" ----

TEST(LiftingMean, AZeroDTargetReadsTheSpatialMeanOfItsArraySource) {
  // G.x = [1, 2, 3, 6] over 4 cells, bound to the 0-D S.p with lifting "mean": p = 12 / 4 = 3,
  // so S.y = 2 p = 6.
  const std::string text = R"({"esm": "1.0.0", "metadata": {"name": "t"},
    "index_sets": {"cells": {"kind": "interval", "size": 4}},
    "models": {
      "G": {"variables": {"s": {"type": "unknown", "default": 0.0}, "x": {"type": "unknown", "shape": ["cells"]}},
            "equations": [{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
                          {"lhs": "x", "rhs": {"op": "const", "args": [], "value": [1, 2, 3, 6]}}]},
      "S": {"variables": {"p": {"type": "parameter", "default": 0.0}, "y": {"type": "unknown"}},
            "equations": [{"lhs": "y", "rhs": {"op": "*", "args": [2, "p"]}}]}},
    "coupling": [{"type": "variable_map", "from": "G.x", "to": "S.p", "transform": "param_to_var", "lifting": "mean"}]})";
  Flat f(text);
  EXPECT_EQ(f.observed().at("S.y"), 6.0);
}

// ---- the coupled wildfire document: a conservative regrid and unknowns held at their ic ----

TEST(ConservativeRegrid, TheWildfireOceanReadsTheAtmosphereFluxRegriddedByArea) {
  // Atmosphere cells [0,1], [1,2], [2,3], [3,4] (x [0,1]) carry 50, 150, 250, 350; ocean cells
  // [0,2], [2,3.5], [3.5,4]. Area-weighted means: (50 + 150) / 2 = 100, (250 + 0.5 * 350) / 1.5
  // = 283.33.., and 350 (half of atmosphere cell 4); D(SST) = flux / 4.18e6. wind_u, wind_v and
  // u_ocean have only their ic (0): held there, D = 0.
  const auto corpus = esi::testing::corpus_dir();
  if (corpus.empty()) GTEST_SKIP() << "corpus not found (set ESI_CORPUS)";
  std::ifstream in(corpus / "EarthSciAST-tests/valid/wildfire_atmosphere_ocean.esm");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Flat f(text);
  std::map<std::string, double> u;
  for (const auto& v : f.sys.states) u[v.name] = 1.0;
  const auto du = f.rhs(u);
  const std::vector<double> flux{100.0, 850.0 / 3.0, 350.0};
  for (int o = 1; o <= 3; ++o) {
    EXPECT_NEAR(du.at("OceanDynamics.SST[" + std::to_string(o) + "]"), flux[o - 1] / 4.18e6, 1e-15) << o;
    EXPECT_EQ(du.at("OceanDynamics.u_ocean[" + std::to_string(o) + "]"), 0.0) << o;
  }
  EXPECT_EQ(du.at("AtmosphericDynamics.wind_u"), 0.0);
  EXPECT_EQ(du.at("AtmosphericDynamics.wind_v"), 0.0);
  // The tendencies are constant, so SST(3600) = 290 + 3600 D(SST): the values the document's
  // own test expects. That test runs OceanDynamics alone (spec §6.6: tests do not reach across
  // couplings), where flux_atmos keeps its default 0 and SST stays 290: `esi check` reports
  // it as failed, a defect of the document, not of the regrid.
  const std::vector<double> expected{290.0861244019, 290.2440191388, 290.3014354067};
  for (int o = 1; o <= 3; ++o)
    EXPECT_NEAR(290.0 + 3600.0 * du.at("OceanDynamics.SST[" + std::to_string(o) + "]"), expected[o - 1], 1e-9) << o;
}

// ---- skolem bin keys pruning an argmin, the coordinates given as inputs ----
//
// Points px = [0.5, 0.95, 1.5, 2.7] and generators gx = [0.2, 1.0, 2.0] (all on y = 0), bins of
// width 1 keyed skolem("bin", floor(x), floor(y)): point bins 0, 0, 1, 2; generator bins 0, 1,
// 2. The nearest generator over all of them is [1, 2, 2, 3] (point 3 at 1.5 is 0.25 from
// generators 2 and 3: the smaller id wins); restricted to the point's bin it is [1, 1, 2, 3]
// (point 2 at 0.95 shares a bin only with generator 1).
const std::string kNearestBinned = array_doc(
    R"({"points": {"kind": "interval", "size": 4}, "generators": {"kind": "interval", "size": 3}})",
    R"({"s": {"type": "unknown", "default": 0.0},
        "px": {"type": "parameter", "shape": ["points"]}, "py": {"type": "parameter", "shape": ["points"]},
        "gx": {"type": "parameter", "shape": ["generators"]}, "gy": {"type": "parameter", "shape": ["generators"]},
        "point_bin": {"type": "unknown", "shape": ["points"]}, "gen_bin": {"type": "unknown", "shape": ["generators"]},
        "nearest": {"type": "unknown", "shape": ["points"]}, "nearest_binned": {"type": "unknown", "shape": ["points"]}})",
    R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
        {"lhs": {"op": "index", "args": ["point_bin", "i"]},
         "rhs": {"op": "aggregate", "args": [], "output_idx": ["i"], "ranges": {"i": {"from": "points"}},
                 "expr": {"op": "skolem", "label": "bin", "args": [
                   {"op": "floor", "args": [{"op": "index", "args": ["px", "i"]}]},
                   {"op": "floor", "args": [{"op": "index", "args": ["py", "i"]}]}]}}},
        {"lhs": {"op": "index", "args": ["gen_bin", "g"]},
         "rhs": {"op": "aggregate", "args": [], "output_idx": ["g"], "ranges": {"g": {"from": "generators"}},
                 "expr": {"op": "skolem", "label": "bin", "args": [
                   {"op": "floor", "args": [{"op": "index", "args": ["gx", "g"]}]},
                   {"op": "floor", "args": [{"op": "index", "args": ["gy", "g"]}]}]}}},
        {"lhs": {"op": "index", "args": ["nearest", "i"]},
         "rhs": {"op": "aggregate", "args": [], "output_idx": ["i"], "ranges": {"i": {"from": "points"}},
                 "expr": {"op": "argmin", "args": [], "arg": "g", "ranges": {"g": {"from": "generators"}}, "expr": DIST}}},
        {"lhs": {"op": "index", "args": ["nearest_binned", "i"]},
         "rhs": {"op": "aggregate", "args": [], "output_idx": ["i"], "ranges": {"i": {"from": "points"}},
                 "expr": {"op": "argmin", "args": [], "arg": "g", "ranges": {"g": {"from": "generators"}},
                          "join": [{"on": [["point_bin", "gen_bin"]]}], "expr": DIST}}}])");

std::string nearest_binned() {
  const std::string dx = R"({"op": "-", "args": [{"op": "index", "args": ["px", "i"]}, {"op": "index", "args": ["gx", "g"]}]})";
  const std::string dy = R"({"op": "-", "args": [{"op": "index", "args": ["py", "i"]}, {"op": "index", "args": ["gy", "g"]}]})";
  const std::string dist = R"({"op": "+", "args": [{"op": "*", "args": [)" + dx + ", " + dx + R"(]}, {"op": "*", "args": [)" +
                           dy + ", " + dy + "]}]}";
  std::string text = kNearestBinned;
  for (std::size_t at; (at = text.find("DIST")) != std::string::npos;) text.replace(at, 4, dist);
  return text;
}

esi::esm::FlattenOptions coordinates() {
  esi::esm::FlattenOptions fo;
  fo.inputs = nlohmann::json::parse(
      R"({"M.px": [0.5, 0.95, 1.5, 2.7], "py": 0.0, "M.gx": [0.2, 1.0, 2.0], "M.gy": [0.0, 0.0, 0.0]})");
  return fo;
}

TEST(SkolemJoin, BinKeysPruneTheNearestGeneratorCandidates) {
  Flat f(nearest_binned(), coordinates());
  const auto env = f.observed();
  const std::vector<double> nearest{1, 2, 2, 3}, binned{1, 1, 2, 3};
  for (int i = 1; i <= 4; ++i) {
    EXPECT_EQ(env.at("M.nearest[" + std::to_string(i) + "]"), nearest[i - 1]) << i;
    EXPECT_EQ(env.at("M.nearest_binned[" + std::to_string(i) + "]"), binned[i - 1]) << i;
  }
  // (floor(x), floor(y)) tuples: point 1's bin (0,0) is generator 1's, point 4's (2,0) is
  // generator 3's; point 3's (1,0) is not generator 1's.
  EXPECT_EQ(env.at("M.point_bin[1]"), env.at("M.gen_bin[1]"));
  EXPECT_EQ(env.at("M.point_bin[4]"), env.at("M.gen_bin[3]"));
  EXPECT_NE(env.at("M.point_bin[3]"), env.at("M.gen_bin[1]"));
}

TEST(SkolemJoinHostile, WithoutTheCoordinatesTheKeysCannotBeMinted) {
  // No inputs: px has no value when the model is built, so no bin key can be minted.
  const auto [code, pointer] = flatten_refusal(nearest_binned());
  EXPECT_EQ(code, "unsupported_array_feature");
  EXPECT_EQ(pointer, "/models/M/equations/1");  // point_bin's skolem
  try {
    Flat f(nearest_binned());
  } catch (const esi::Error& e) {
    EXPECT_NE(e.diagnostic().message.find("'M.px[1]', a parameter with no value in the document"), std::string::npos)
        << e.diagnostic().message;
  }
}

// ---- hostile input ----

TEST(DerivedIndexSetHostile, AFromFaqNamingNoNodeIsALocatedError) {
  std::string text = quad_mesh();
  const std::string from = R"("from_faq": "edge_set")";
  text.replace(text.find(from), from.size(), R"("from_faq": "no_such_node")");
  const auto [code, pointer] = flatten_refusal(text);
  EXPECT_EQ(code, "derived_index_set_unknown_producer");
  EXPECT_EQ(pointer, "/index_sets/edges/from_faq");
}

TEST(DerivedIndexSetHostile, ConnectivityWithoutValuesIsALocatedRefusalNotAnEmptySet) {
  // `lo` is a parameter without a value: the edges cannot be computed when the model is built.
  // The document is not wrong (the data may come later), esi cannot build it: unsupported.
  const auto [code, pointer] = flatten_refusal(quad_mesh(R"({"type": "parameter", "shape": ["faces", "local_edges"]})", ""));
  EXPECT_EQ(code, "unsupported_array_feature");
  // The first set materialized (index sets in name order) is edge_face: its producer's
  // equation, index 4 without lo's.
  EXPECT_EQ(pointer, "/models/M/equations/4");
}

TEST(DerivedIndexSetHostile, AKeyReadingAStateIsALocatedError) {
  // lo is a state: its values change while the model runs.
  std::string text = quad_mesh(R"({"type": "unknown", "shape": ["faces", "local_edges"], "default": 1.0})",
                               R"({"lhs": {"op": "D", "args": ["lo"], "wrt": "t"}, "rhs": 0.0},)");
  const auto [code, pointer] = flatten_refusal(text);
  EXPECT_EQ(code, "derived_index_set_not_static");
  EXPECT_EQ(pointer, "/models/M/equations/5");  // edge_face's producer, after D(lo)
}

TEST(DerivedIndexSetHostile, TwoSetsDerivedFromEachOtherAreACycle) {
  // a's producer ranges over b, b's over a.
  const std::string text = array_doc(
      R"({"a": {"kind": "derived", "from_faq": "pa"}, "b": {"kind": "derived", "from_faq": "pb"}})",
      R"({"s": {"type": "unknown", "default": 0.0}, "xa": {"type": "unknown", "shape": ["a"]},
          "xb": {"type": "unknown", "shape": ["b"]}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": 0.0},
          {"lhs": {"op": "index", "args": ["xa", "m"]},
           "rhs": {"op": "aggregate", "id": "pa", "args": [], "semiring": "bool_and_or", "distinct": true,
                   "output_idx": ["m"], "ranges": {"k": {"from": "b"}}, "key": "k", "expr": {"op": "true", "args": []}}},
          {"lhs": {"op": "index", "args": ["xb", "n"]},
           "rhs": {"op": "aggregate", "id": "pb", "args": [], "semiring": "bool_and_or", "distinct": true,
                   "output_idx": ["n"], "ranges": {"k": {"from": "a"}}, "key": "k", "expr": {"op": "true", "args": []}}}])");
  const auto [code, pointer] = flatten_refusal(text);
  EXPECT_EQ(code, "derived_index_set_cycle");
  EXPECT_EQ(pointer, "/index_sets/a/from_faq");
}

TEST(DerivedIndexSetHostile, ASkolemOfValuesKnownOnlyWhileRunningIsRefused) {
  // src_bin from a parameter without a value: a key cannot be minted before the run.
  std::string text = kBins;
  const std::string decl = R"("x": {"type": "unknown", "shape": ["src"]})";
  text.replace(text.find(decl), decl.size(), R"("x": {"type": "parameter", "shape": ["src"]})");
  const std::string eq = R"({"lhs": "x", "rhs": {"op": "const", "args": [], "value": [0.5, 1.5, 2.5]}},)";
  text.replace(text.find(eq), eq.size(), "");
  const auto [code, pointer] = flatten_refusal(text);
  EXPECT_EQ(code, "unsupported_array_feature");
  EXPECT_EQ(pointer, "/models/M/equations/4");  // the candidate set's equation
}

}  // namespace
