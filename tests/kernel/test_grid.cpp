// Per-region programs (FlattenOptions::grid + kernel::compile_grid) against the reference they
// replace: the same document expanded into one scalar equation per cell and compiled whole.
// Both evaluate the same IEEE operations in the same order, so values are compared with ==.
// Also: program size does not depend on the grid size, and the Tile target gives the bits of
// the whole grid for tiles of several shapes, boundary tiles included.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/kernel/grid.hpp"
#include "esi/kernel/oracle.hpp"
#include "esi/kernel/program.hpp"
#include "support/reseact_docs.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::testing::Doc;
using esi::testing::chemistry_document;
using esi::testing::transport_document;

namespace fs = std::filesystem;
using esi::esm::FlattenOptions;
using esi::esm::System;

std::vector<double> defaults(const System& s) {
  std::vector<double> p;
  for (const auto& v : s.parameters) p.push_back(v.default_value.value_or(NAN));
  return p;
}

/// Initial values of the cell-by-cell system (each state's initial expression or default).
std::vector<double> cell_initial(const System& s) {
  const std::vector<double> p = defaults(s);
  esi::kernel::Env env;
  for (std::size_t i = 0; i < s.parameters.size(); ++i) env[s.parameters[i].name] = p[i];
  env["t"] = 0;
  std::vector<double> u;
  for (const auto& v : s.states)
    u.push_back(v.initial != esi::expr::kNoNode ? esi::kernel::oracle_eval(s.pool, v.initial, env)
                                                 : v.default_value.value_or(NAN));
  return u;
}

/// The whole-grid RHS of the cell-by-cell system, compiled (same lowering as region programs).
std::vector<double> cell_rhs(const System& s, const std::vector<double>& u) {
  const auto prog = esi::kernel::compile(s);
  auto ws = prog.make_workspace(1);
  prog.prepare(ws, defaults(s));
  std::vector<double> du(u.size());
  esi::kernel::RunArgs<double> a;
  a.u = {u.data(), u.size(), 1, 1};
  const double t = 0;
  a.t = std::span<const double>(&t, 1);
  a.du = {du.data(), du.size(), 1, 1};
  esi::kernel::run(prog, ws, a);
  return du;
}

struct Pair {
  System cells, grid;
};

Pair flatten_both(const Doc& d) {
  const auto doc = esi::esm::load_resolved(d.file.string());
  return Pair{esi::esm::flatten(doc, d.cells), esi::esm::flatten(doc, d.grid)};
}
System flatten_grid(const Doc& d) { return esi::esm::flatten(esi::esm::load_resolved(d.file.string()), d.grid); }

/// A state away from free stream (every limiter branch and both wind signs active), the same
/// for both systems by name.
std::vector<double> perturbed(const System& s, const std::vector<double>& u0) {
  std::vector<double> u = u0;
  for (std::size_t i = 0; i < u.size(); ++i) u[i] *= 1.0 + 0.05 * std::sin(0.7 * static_cast<double>(i) + 0.3);
  (void)s;
  return u;
}

/// Region-program RHS against the cell-by-cell one at the cell form's state `u` (states matched
/// by name): every derivative equal, sign of zero included. Returns how many are nonzero.
std::size_t expect_rhs_equal(const Pair& sys, const esi::kernel::GridProgram& gp, esi::kernel::GridWorkspace& ws,
                             const std::vector<double>& u) {
  std::map<std::string, std::size_t> grid_index;
  for (std::size_t i = 0; i < sys.grid.states.size(); ++i) grid_index[sys.grid.states[i].name] = i;
  std::vector<double> ugrid(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) ugrid[grid_index.at(sys.cells.states[i].name)] = u[i];
  const std::vector<double> expect = cell_rhs(sys.cells, u);
  std::vector<double> got(u.size(), NAN);
  esi::kernel::grid_rhs(gp, ws, 0.0, ugrid, got);
  std::size_t nonzero = 0, differ = 0;
  for (std::size_t i = 0; i < u.size(); ++i) {
    const double g = got[grid_index.at(sys.cells.states[i].name)];
    if (g != expect[i] || std::signbit(g) != std::signbit(expect[i])) {
      if (++differ <= 3) ADD_FAILURE() << sys.cells.states[i].name << ": " << g << " != " << expect[i];
    }
    nonzero += expect[i] != 0;
  }
  EXPECT_EQ(differ, 0u);
  return nonzero;
}

/// Initial values of the region form (defaults, then grid_initial) against the cell form's.
std::vector<double> expect_initial_equal(const Pair& sys, const esi::kernel::GridProgram& gp,
                                         esi::kernel::GridWorkspace& ws) {
  std::map<std::string, std::size_t> grid_index;
  for (std::size_t i = 0; i < sys.grid.states.size(); ++i) grid_index[sys.grid.states[i].name] = i;
  std::vector<double> ug(sys.grid.states.size(), NAN);
  for (std::size_t i = 0; i < ug.size(); ++i)
    if (sys.grid.states[i].default_value) ug[i] = *sys.grid.states[i].default_value;
  esi::kernel::grid_initial(gp, ws, ug);
  const std::vector<double> uc = cell_initial(sys.cells);
  for (std::size_t i = 0; i < uc.size(); ++i)
    EXPECT_EQ(ug[grid_index.at(sys.cells.states[i].name)], uc[i]) << sys.cells.states[i].name;
  return uc;
}

TEST(GridPrograms, Transport3dEqualsCellByCellBitwise) {
  esi::testing::TempDir dir;
  for (int n : {7, 9}) {
    const Doc d = transport_document(dir, n);
    if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
    const Pair sys = flatten_both(d);
    ASSERT_EQ(sys.grid.grid_fallback, "");
    ASSERT_FALSE(sys.grid.grid.empty());
    ASSERT_EQ(sys.cells.states.size(), sys.grid.states.size());
    const auto gp = esi::kernel::compile_grid(sys.grid);
    auto ws = esi::kernel::make_grid_workspace(gp, sys.grid, defaults(sys.grid));
    const std::vector<double> uc = expect_initial_equal(sys, gp, ws);
    EXPECT_GT(expect_rhs_equal(sys, gp, ws, uc), 0u) << "n = " << n;
    // Away from free stream every limiter branch and both wind signs are active.
    EXPECT_GT(expect_rhs_equal(sys, gp, ws, perturbed(sys.cells, uc)), uc.size() / 3) << "n = " << n;
  }
}

TEST(GridPrograms, LiftedChemistryWithTransportEqualsCellByCellBitwise) {
  esi::testing::TempDir dir;
  const Doc d = chemistry_document(dir);
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const Pair sys = flatten_both(d);
  ASSERT_EQ(sys.grid.grid_fallback, "");
  ASSERT_EQ(sys.cells.states.size(), 13u * 7 * 7 * 7);
  const auto gp = esi::kernel::compile_grid(sys.grid);
  auto ws = esi::kernel::make_grid_workspace(gp, sys.grid, defaults(sys.grid));
  std::vector<double> u = expect_initial_equal(sys, gp, ws);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] *= 1.0 + 0.05 * std::sin(0.3 * static_cast<double>(i));
  EXPECT_GT(expect_rhs_equal(sys, gp, ws, u), u.size() / 2);  // off free stream
}

TEST(GridPrograms, ProgramSizeDoesNotDependOnTheGrid) {
  esi::testing::TempDir dir;
  std::vector<esi::kernel::GridProgram::Stats> stats;
  std::vector<std::size_t> states;
  for (int n : {7, 12}) {
    const Doc d = transport_document(dir, n);
    if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
    const System s = flatten_grid(d);
    states.push_back(s.states.size());
    stats.push_back(esi::kernel::compile_grid(s).stats());
  }
  EXPECT_LT(states[0] * 5, states[1]);
  EXPECT_EQ(stats[0].programs, stats[1].programs);
  EXPECT_EQ(stats[0].boxes, stats[1].boxes);
  EXPECT_EQ(stats[0].lane_instructions, stats[1].lane_instructions);
  EXPECT_EQ(stats[0].setup_instructions, stats[1].setup_instructions);
}

TEST(GridPrograms, TilesEqualTheWholeGridBitwise) {
  esi::testing::TempDir dir;
  const Doc d = transport_document(dir, 10);
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const System s = flatten_grid(d);
  const auto gp = esi::kernel::compile_grid(s);
  auto ws = esi::kernel::make_grid_workspace(gp, s, defaults(s));
  std::vector<double> u(s.states.size());
  esi::kernel::grid_initial(gp, ws, u);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] *= 1.0 + 0.05 * std::cos(0.37 * static_cast<double>(i));
  std::vector<double> whole(u.size(), NAN);
  esi::kernel::grid_rhs(gp, ws, 0.0, u, whole);
  const auto halo = esi::kernel::grid_tile_halo(gp);
  ASSERT_EQ(halo.size(), 3u);
  EXPECT_GE(halo[0], 3);  // the PPM reconstruction reads three cells each way

  std::vector<esi::kernel::GridArray> state_arrays;
  for (const auto& a : gp.arrays)
    if (a.kind == esi::kernel::GridArray::Kind::State) state_arrays.push_back(a);
  const std::vector<std::int64_t> ext = state_arrays.at(0).extents;
  // Tile shapes: slabs along each axis, small cubes (corners and edges on every boundary), and
  // one tile that is the whole grid.
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{4, 10, 10}, {10, 3, 10}, {10, 10, 3}, {3, 4, 7}, {10, 10, 10}}) {
    std::size_t tiles = 0;
    std::vector<int> covered(u.size(), 0);
    for (std::int64_t k = 1; k <= ext[2]; k += shape[2])
      for (std::int64_t j = 1; j <= ext[1]; j += shape[1])
        for (std::int64_t i = 1; i <= ext[0]; i += shape[0]) {
          esi::kernel::GridBox tile{{i, j, k},
                                    {std::min(i + shape[0] - 1, ext[0]), std::min(j + shape[1] - 1, ext[1]),
                                     std::min(k + shape[2] - 1, ext[2])}};
          const auto states = esi::kernel::grid_tile_states(gp, tile, u);
          std::int64_t cells = 1;
          for (int d = 0; d < 3; ++d) cells *= tile.hi[d] - tile.lo[d] + 1;
          std::vector<double> dy(static_cast<std::size_t>(cells) * state_arrays.size(), NAN);
          esi::kernel::grid_rhs_tile(gp, ws, 0.0, tile, states, dy);
          ++tiles;
          std::size_t at = 0;
          for (const auto& a : state_arrays)
            for (std::int64_t z = tile.lo[2]; z <= tile.hi[2]; ++z)
              for (std::int64_t y = tile.lo[1]; y <= tile.hi[1]; ++y)
                for (std::int64_t x = tile.lo[0]; x <= tile.hi[0]; ++x, ++at) {
                  const auto idx = static_cast<std::size_t>(a.first_state + (x - 1) + (y - 1) * a.strides[1] +
                                                            (z - 1) * a.strides[2]);
                  ASSERT_EQ(dy[at], whole[idx]) << a.name << " (" << x << "," << y << "," << z << ") tile "
                                                << shape[0] << "x" << shape[1] << "x" << shape[2];
                  ++covered[idx];
                }
        }
    EXPECT_GT(tiles, 0u);
    for (const auto& a : state_arrays)
      for (std::int64_t c = 0; c < ext[0] * ext[1] * ext[2]; ++c)
        ASSERT_EQ(covered[static_cast<std::size_t>(a.first_state + c)], 1);
  }
}

TEST(GridPrograms, BoxesPartitionEveryEquationsCellsAndInspectCountsThePrograms) {
  esi::testing::TempDir dir;
  const Doc d = transport_document(dir, 8);
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const System s = flatten_grid(d);
  for (const auto& g : s.grid) {
    std::int64_t total = 1;
    for (auto e : g.extents) total *= e;
    std::vector<int> hits(static_cast<std::size_t>(total), 0);
    for (const auto& r : g.regions) {
      ASSERT_EQ(r.rhs.size(), g.targets.size());
      std::vector<std::int64_t> x = r.lo;
      while (true) {
        std::int64_t at = 0, stride = 1;
        for (std::size_t k = 0; k < x.size(); ++k) {
          at += (x[k] - 1) * stride;
          stride *= g.extents[k];
        }
        ++hits[static_cast<std::size_t>(at)];
        std::size_t k = 0;
        while (k < x.size() && x[k] == r.hi[k]) x[k] = r.lo[k], ++k;
        if (k == x.size()) break;
        ++x[k];
      }
    }
    for (int h : hits) ASSERT_EQ(h, 1) << g.targets[0] << ": every cell in exactly one box";
  }
  const auto description = esi::esm::describe(s);
  ASSERT_TRUE(description.contains("regions"));
  std::size_t programs = 0;
  for (const auto& e : description["regions"]["equations"]) programs += e["programs"].get<std::size_t>();
  EXPECT_EQ(programs, esi::kernel::compile_grid(s).stats().programs);
}

TEST(GridPrograms, TileStorageOfTheWrongSizeIsALocatedError) {
  esi::testing::TempDir dir;
  const Doc d = transport_document(dir, 7);
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const System s = flatten_grid(d);
  const auto gp = esi::kernel::compile_grid(s);
  auto ws = esi::kernel::make_grid_workspace(gp, s, defaults(s));
  std::vector<double> states(10), dy(10);
  try {
    esi::kernel::grid_rhs_tile(gp, ws, 0.0, esi::kernel::GridBox{{1, 1, 1}, {2, 2, 2}}, states, dy);
    FAIL() << "expected grid_tile_shape";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "grid_tile_shape");
  }
}

}  // namespace
