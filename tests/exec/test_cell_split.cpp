// Gridded runs whose pointwise part (pointwise.hpp) runs on lane pools, Lie-split from the
// rest (SimulateOptions::cell_split).
//
// Oracles: an exact solution of a per-cell decay whose rate depends on the cell's position
// (no grid part: the split is exact); Lie splitting's first order in the split step against an
// unsplit tight reference (the error halves when the step halves); bitwise equality across
// thread counts; and reseact_3d_chem (SuperFast on the PPM grid) for an hour with no negative
// or non-finite concentration (issue 9, item 2).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/plan/pointwise_split.hpp"
#include "esi/exec/simulate.hpp"
#include "support/reseact_docs.hpp"
#include "support/grid_and_cells.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using esi::method::MethodId;
using esi::method::ReturnCode;

std::string doc_text(const std::string& variables, const std::string& equations) {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "index_sets": {"x": {"kind": "interval", "size": 6}},
            "models": {"M": {"variables": )" + variables + R"(, "equations": )" + equations + "}}}";
}

// k(i) = 0.01 i; du_i/dt = -k(i) u_i (+ optionally diffusion between neighbours).
const std::string kVariables = R"({
  "u": {"type": "unknown", "shape": ["x"], "default": 1.0},
  "k": {"type": "observed", "shape": ["x"]},
  "K": {"type": "parameter", "default": 0.002}})";

std::string equations(bool diffusion) {
  const std::string rate = R"({"lhs": "k", "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [],
        "ranges": {"i": [1, 6]}, "expr": {"op": "*", "args": [0.01, "i"]}}})";
  const std::string decay = R"({"op": "*", "args": [{"op": "-", "args": ["k"]}, "u"]})";
  if (!diffusion)
    return "[" + rate + R"(, {"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": )" + decay + "}]";
  const std::string diff = R"({"op": "makearray", "args": [],
        "regions": [[[2, 5]], [[1, 1]], [[6, 6]]],
        "values": [
          {"op": "aggregate", "output_idx": ["i"], "args": ["u"], "ranges": {"i": [2, 5]},
           "expr": {"op": "*", "args": ["K", {"op": "+", "args": [
              {"op": "index", "args": ["u", {"op": "+", "args": ["i", 1]}]},
              {"op": "*", "args": [-2, {"op": "index", "args": ["u", "i"]}]},
              {"op": "index", "args": ["u", {"op": "-", "args": ["i", 1]}]}]}]}},
          {"op": "*", "args": ["K", {"op": "-", "args": [{"op": "index", "args": ["u", 2]}, {"op": "index", "args": ["u", 1]}]}]},
          {"op": "*", "args": ["K", {"op": "-", "args": [{"op": "index", "args": ["u", 5]}, {"op": "index", "args": ["u", 6]}]}]}
        ]})";
  return "[" + rate + R"(, {"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": {"op": "+", "args": [)" +
         diff + ", " + decay + "]}}]";
}

using Loaded = esi::testing::GridAndCells;

esi::exec::SimulateOptions split_options(double t1, double step, int threads = 1) {
  esi::exec::SimulateOptions o;
  o.t1 = t1;
  o.integrator.method = MethodId::SSPRK43;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-12;
  esi::exec::SimulateOptions::CellSplit split;
  split.cells.rtol = 1e-10;
  split.cells.atol = {1e-12};
  split.cells.lanes = 4;
  split.cells.threads = threads;
  split.step = step;
  o.cell_split = split;
  return o;
}

std::vector<double> final_row(const esi::exec::Trajectory& tr) {
  const std::size_t n = tr.names.size();
  return {tr.values.end() - static_cast<std::ptrdiff_t>(n), tr.values.end()};
}

TEST(CellSplit, PointwiseDecayWithPositionDependentRatesIsExact) {
  Loaded m(doc_text(kVariables, equations(false)));
  std::string why;
  const auto split = esi::plan::split_pointwise(m.grid, why);
  ASSERT_TRUE(split) << why;
  EXPECT_FALSE(split->has_rest);
  ASSERT_EQ(split->cell.states.size(), 1u);
  EXPECT_EQ(split->cell.states[0].name, "M.u");
  const auto tr = esi::exec::simulate(m.grid, split_options(100, 0));
  ASSERT_EQ(tr.code, ReturnCode::Success) << tr.message;
  EXPECT_FALSE(tr.cell_summary.empty());
  EXPECT_EQ(tr.cell_stats.cells, 6u);
  const auto last = final_row(tr);
  for (int i = 1; i <= 6; ++i) {
    const int j = tr.column(esi::esm::cell_name("M.u", {i}));
    ASSERT_GE(j, 0);
    EXPECT_NEAR(last[std::size_t(j)], std::exp(-0.01 * i * 100), 1e-8) << "cell " << i;
  }
}

TEST(CellSplit, LieSplittingConvergesAtFirstOrderInTheSplitStep) {
  Loaded m(doc_text(kVariables, equations(true)));
  std::string why;
  const auto split = esi::plan::split_pointwise(m.grid, why);
  ASSERT_TRUE(split) << why;
  EXPECT_TRUE(split->has_rest);
  // Unsplit reference: one equation per cell, Rodas5P at a tight tolerance.
  esi::exec::SimulateOptions ro;
  ro.t1 = 200;
  ro.integrator.method = MethodId::Rodas5P;
  ro.integrator.rtol = 1e-12;
  ro.integrator.atol = 1e-14;
  const auto ref = esi::exec::simulate(m.cells, ro);
  ASSERT_EQ(ref.code, ReturnCode::Success) << ref.message;
  const auto ref_last = final_row(ref);
  auto error = [&](double step) {
    const auto tr = esi::exec::simulate(m.grid, split_options(200, step));
    EXPECT_EQ(tr.code, ReturnCode::Success) << tr.message;
    const auto last = final_row(tr);
    double worst = 0;
    for (std::size_t j = 0; j < ref.state_count; ++j) {
      const int k = tr.column(ref.names[j]);
      worst = std::max(worst, std::abs(last[std::size_t(k)] - ref_last[j]));
    }
    return worst;
  };
  const double e1 = error(40), e2 = error(20), e3 = error(10);
  EXPECT_GT(e1, 1e-7);  // the split is really there
  EXPECT_NEAR(e1 / e2, 2.0, 0.4);
  EXPECT_NEAR(e2 / e3, 2.0, 0.4);
}

TEST(CellSplit, ThreadCountDoesNotChangeABit) {
  Loaded m(doc_text(kVariables, equations(true)));
  const auto a = esi::exec::simulate(m.grid, split_options(200, 20, 1));
  const auto b = esi::exec::simulate(m.grid, split_options(200, 20, 2));
  ASSERT_EQ(a.code, ReturnCode::Success) << a.message;
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.cell_stats.accepted, b.cell_stats.accepted);
}

TEST(CellSplit, Reseact3dChemRunsAnHourWithNoNegativeOrNonFiniteConcentration) {
  esi::testing::TempDir dir;
  const esi::testing::Doc d = esi::testing::chemistry_document(dir);  // NLEV = 7: 343 cells
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto doc = esi::esm::load_resolved(d.file.string());
  const esi::esm::System sys = esi::esm::flatten(doc, d.grid);
  std::string why;
  const auto split = esi::plan::split_pointwise(sys, why);
  ASSERT_TRUE(split) << why;
  EXPECT_TRUE(split->has_rest);
  EXPECT_EQ(split->cell.states.size(), 12u);  // SuperFast's species; m has no chemistry
  esi::exec::SimulateOptions o;
  o.t1 = 3600;
  o.saveat = 1800;
  o.document = &doc;
  o.integrator.method = MethodId::SSPRK43;
  o.integrator.rtol = 1e-4;
  o.integrator.atol = 1e-9;
  esi::exec::SimulateOptions::CellSplit cs;
  cs.cells.rtol = 1e-4;
  cs.cells.atol = {1e-9};
  cs.step = 300;
  o.cell_split = cs;
  const auto tr = esi::exec::simulate(sys, o);
  ASSERT_EQ(tr.code, ReturnCode::Success) << tr.message;
  ASSERT_EQ(tr.times.back(), 3600);
  std::size_t species_cells = 0;
  for (std::size_t j = 0; j < tr.state_count; ++j) {
    if (tr.names[j].rfind("SuperFast.", 0) != 0) continue;
    ++species_cells;
    for (std::size_t k = 0; k < tr.times.size(); ++k) {
      const double v = tr.at(k, j);
      ASSERT_TRUE(std::isfinite(v)) << tr.names[j] << " at " << tr.times[k];
      ASSERT_GE(v, 0.0) << tr.names[j] << " at " << tr.times[k];
    }
  }
  EXPECT_EQ(species_cells, 12u * tr.cell_stats.cells);
  EXPECT_GT(tr.cell_stats.accepted, 0);
}

}  // namespace
