// The grid programs on threads (make_grid_workspace(..., threads)): each stage runs in slabs
// along its longest axis, one per thread, so rows are cut at other places and run on other
// lane counts than on one thread. Every cell is still computed by the same program from the
// same inputs, so grid_initial, grid_rhs and grid_array_values must give the 1-thread bits
// (compared with ==, sign of zero included) for any thread count, tape or native code.
// Also: a program's time registers, now kept while its lanes hold one t, follow t and the
// parameters exactly as when they were computed per block.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/kernel/grid.hpp"
#include "esi/kernel/native.hpp"
#include "esi/kernel/program.hpp"
#include "kernel/kernel_cases.hpp"
#include "support/reseact_docs.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::esm::System;
using esi::testing::Doc;

std::vector<double> parameter_defaults(const System& s) {
  std::vector<double> p;
  for (const auto& v : s.parameters) p.push_back(v.default_value.value_or(NAN));
  return p;
}

System flatten_grid(const Doc& d) { return esi::esm::flatten(esi::esm::load_resolved(d.file.string()), d.grid); }

/// Bitwise equality, sign of zero and NaN payloads included; reports the first few misses.
void expect_same_bits(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(double)) != 0 && ++differ <= 3)
      ADD_FAILURE() << what << ": entry " << i << " is " << got[i] << ", 1 thread gives " << want[i];
  EXPECT_EQ(differ, 0u) << what;
}

struct Outcome {
  std::vector<double> initial, rhs, rhs_later;
  std::vector<std::vector<double>> observed;  // grid_array_values of each observed array
};

/// Initial values, the RHS at a state off free stream at two times, and every observed array.
Outcome evaluate(const esi::kernel::GridProgram& gp, const System& s, unsigned threads) {
  auto ws = esi::kernel::make_grid_workspace(gp, s, parameter_defaults(s), threads);
  Outcome o;
  o.initial.assign(s.states.size(), 0.0);
  for (std::size_t i = 0; i < s.states.size(); ++i)
    if (s.states[i].default_value) o.initial[i] = *s.states[i].default_value;
  esi::kernel::grid_initial(gp, ws, o.initial);
  std::vector<double> u = o.initial;
  for (std::size_t i = 0; i < u.size(); ++i) u[i] *= 1.0 + 0.05 * std::sin(0.37 * static_cast<double>(i) + 0.1);
  o.rhs.assign(u.size(), NAN);
  esi::kernel::grid_rhs(gp, ws, 0.0, u, o.rhs);
  o.rhs_later.assign(u.size(), NAN);
  esi::kernel::grid_rhs(gp, ws, 1800.0, u, o.rhs_later);
  for (std::size_t k = 0; k < gp.arrays.size(); ++k)
    if (gp.arrays[k].kind == esi::kernel::GridArray::Kind::Observed) {
      const auto v = esi::kernel::grid_array_values(gp, ws, 1800.0, u, k);
      o.observed.emplace_back(v.begin(), v.end());
    }
  return o;
}

esi::kernel::GridProgram compile_native(const System& s) {
  esi::kernel::GridCompileOptions native;
  native.native = true;
  return esi::kernel::compile_grid(s, native);
}

bool has_native_code(const esi::kernel::GridProgram& gp) {
  for (const auto& st : gp.stages)
    for (const auto& b : st.blocks)
      if (b.program.native() != nullptr) return true;
  return false;
}

void expect_threads_equal_one_thread(const esi::kernel::GridProgram& gp, const System& s, const std::string& name) {
  const Outcome one = evaluate(gp, s, 1);
  std::size_t nonzero = 0;
  for (double v : one.rhs) nonzero += v != 0;
  ASSERT_GT(nonzero, one.rhs.size() / 3) << name << ": the state is meant to be off free stream";
  for (unsigned threads : {2u, 3u, 5u}) {
    const Outcome o = evaluate(gp, s, threads);
    const std::string what = name + " on " + std::to_string(threads) + " threads";
    expect_same_bits(o.initial, one.initial, what + ", grid_initial");
    expect_same_bits(o.rhs, one.rhs, what + ", grid_rhs");
    expect_same_bits(o.rhs_later, one.rhs_later, what + ", grid_rhs at t = 1800");
    ASSERT_EQ(o.observed.size(), one.observed.size());
    for (std::size_t k = 0; k < o.observed.size(); ++k)
      expect_same_bits(o.observed[k], one.observed[k], what + ", observed array " + std::to_string(k));
  }
}

TEST(GridThreads, Transport3dOnThreadsEqualsOneThreadBitwise) {
  esi::testing::TempDir dir;
  for (int n : {7, 9}) {
    const Doc d = esi::testing::transport_document(dir, n);
    if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
    const System s = flatten_grid(d);
    ASSERT_EQ(s.grid_fallback, "");
    expect_threads_equal_one_thread(esi::kernel::compile_grid(s), s, "transport_3d n = " + std::to_string(n));
  }
}

TEST(GridThreads, ReseactChemistryOnThreadsEqualsOneThreadBitwise) {
  esi::testing::TempDir dir;
  const Doc d = esi::testing::chemistry_document(dir);
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const System s = flatten_grid(d);
  ASSERT_EQ(s.grid_fallback, "");
  expect_threads_equal_one_thread(esi::kernel::compile_grid(s), s, "reseact_3d_chem 7x7x7");
}

TEST(GridThreads, NativeProgramsOnThreadsEqualTheTapeOnOneThreadBitwise) {
  esi::testing::TempDir dir;
  const Doc d = esi::testing::transport_document(dir, 7);
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const System s = flatten_grid(d);
  const auto gp_native = compile_native(s);
  if (!has_native_code(gp_native)) GTEST_SKIP() << "no native code on this machine (no compiler)";
  const Outcome tape = evaluate(esi::kernel::compile_grid(s), s, 1);
  for (unsigned threads : {1u, 2u, 3u}) {
    const Outcome o = evaluate(gp_native, s, threads);
    const std::string what = "native on " + std::to_string(threads) + " threads";
    expect_same_bits(o.rhs, tape.rhs, what + ", grid_rhs");
    expect_same_bits(o.rhs_later, tape.rhs_later, what + ", grid_rhs at t = 1800");
  }
}

// Rows of 16 or more cells along the first axis run along it, and native code then reads
// each unit-stride field of a full chunk straight from its array (per-field pointers), the
// fields constant along the row from a broadcast copy, and gathers the rest. 20 x 7 x 20: rows
// of 20 cells (two full chunks of 8 and one of 4) and, on the Tile target, of 20 and 17.
TEST(GridThreads, NativeRowsReadingFieldsInPlaceEqualTheTapeBitwise) {
  esi::testing::TempDir dir;
  const Doc d = esi::testing::transport_document(dir, 20, 7, 20);
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const System s = flatten_grid(d);
  ASSERT_EQ(s.grid_fallback, "");
  const auto gp_native = compile_native(s);
  if (!has_native_code(gp_native)) GTEST_SKIP() << "no native code on this machine (no compiler)";
  const auto gp_tape = esi::kernel::compile_grid(s);
  const Outcome tape = evaluate(gp_tape, s, 1);
  std::size_t finite_nonzero = 0;
  for (double v : tape.rhs) finite_nonzero += std::isfinite(v) && v != 0;
  ASSERT_GT(finite_nonzero, tape.rhs.size() / 3);
  for (unsigned threads : {1u, 2u}) {
    const Outcome o = evaluate(gp_native, s, threads);
    const std::string what = "native 20x7x20 on " + std::to_string(threads) + " threads";
    expect_same_bits(o.rhs, tape.rhs, what + ", grid_rhs");
    expect_same_bits(o.rhs_later, tape.rhs_later, what + ", grid_rhs at t = 1800");
  }
  // Tiles: each native tile's tendencies equal the tape's whole-grid ones.
  auto ws = esi::kernel::make_grid_workspace(gp_native, s, parameter_defaults(s));
  std::vector<double> u(s.states.size(), 0.0);
  esi::kernel::grid_initial(gp_native, ws, u);
  for (std::size_t i = 0; i < u.size(); ++i)
    u[i] *= 1.0 + 0.05 * std::sin(0.37 * static_cast<double>(i) + 0.1);
  std::vector<double> whole(u.size(), NAN);
  {
    auto tape_ws = esi::kernel::make_grid_workspace(gp_tape, s, parameter_defaults(s));
    esi::kernel::grid_rhs(gp_tape, tape_ws, 0.0, u, whole);
  }
  std::vector<esi::kernel::GridArray> state_arrays;
  for (const auto& a : gp_native.arrays)
    if (a.kind == esi::kernel::GridArray::Kind::State) state_arrays.push_back(a);
  for (const esi::kernel::GridBox& tile : {esi::kernel::GridBox{{1, 1, 1}, {20, 4, 5}},
                                           esi::kernel::GridBox{{4, 3, 16}, {20, 7, 20}}}) {
    const auto states = esi::kernel::grid_tile_states(gp_native, tile, u);
    std::int64_t cells = 1;
    for (int a = 0; a < 3; ++a) cells *= tile.hi[a] - tile.lo[a] + 1;
    std::vector<double> dy(static_cast<std::size_t>(cells) * state_arrays.size(), NAN), want;
    esi::kernel::grid_rhs_tile(gp_native, ws, 0.0, tile, states, dy);
    for (const auto& a : state_arrays)
      for (std::int64_t z = tile.lo[2]; z <= tile.hi[2]; ++z)
        for (std::int64_t y = tile.lo[1]; y <= tile.hi[1]; ++y)
          for (std::int64_t x = tile.lo[0]; x <= tile.hi[0]; ++x)
            want.push_back(whole[static_cast<std::size_t>(
                a.first_state + (x - 1) + (y - 1) * a.strides[1] + (z - 1) * a.strides[2])]);
    expect_same_bits(dy, want,
                     "native tile from (" + std::to_string(tile.lo[0]) + "," +
                         std::to_string(tile.lo[1]) + "," + std::to_string(tile.lo[2]) + ")");
  }
}

TEST(GridThreads, MoreThreadsThanCellsAlongTheLongestAxisStillCoverEveryCell) {
  esi::testing::TempDir dir;
  const Doc d = esi::testing::transport_document(dir, 7);
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const System s = flatten_grid(d);
  const auto gp = esi::kernel::compile_grid(s);
  const Outcome one = evaluate(gp, s, 1);
  const Outcome many = evaluate(gp, s, 64);  // 7 slabs at most; no cell left NaN, none twice
  expect_same_bits(many.rhs, one.rhs, "64 threads, grid_rhs");
}

// Time registers: computed once per t for every lane, kept while the lanes hold that t, and
// recomputed when t or the parameters change. Each result must equal a fresh workspace's.
TEST(GridThreads, TimeRegistersFollowTimeAndParameters) {
  using esi::testing::ddt;
  using esi::testing::eq;
  using esi::testing::op;
  const nlohmann::json doc = {
      {"models",
       {{"M",
         {{"variables",
           {{"x", {{"type", "unknown"}, {"default", 1.0}}},
            {"k", {{"type", "parameter"}, {"default", 0.5}}}}},
          {"equations",
           nlohmann::json::array({eq(ddt("x"), op("*", {op("+", {"k", op("sin", {op("*", {"k", "t"})})}), "x"}))})}}}}}};
  const System s = esi::testing::system_from_json(doc);
  const auto prog = esi::kernel::compile(s);
  ASSERT_TRUE(prog.reads_time());
  auto run_at = [&](esi::kernel::Workspace& ws, double t, std::size_t cells) {
    std::vector<double> u(cells), du(cells, NAN);
    for (std::size_t c = 0; c < cells; ++c) u[c] = 1.0 + 0.25 * static_cast<double>(c);
    esi::kernel::RunArgs<double> a;
    a.u = {u.data(), 1, cells, cells};
    a.t = std::span<const double>(&t, 1);
    a.du = {du.data(), 1, cells, cells};
    esi::kernel::run(prog, ws, a);
    return du;
  };
  auto fresh = [&](double t, double k, std::size_t cells) {
    auto ws = prog.make_workspace(16);
    const double p[1] = {k};
    prog.prepare(ws, p);
    return run_at(ws, t, cells);
  };
  auto ws = prog.make_workspace(16);
  const double p1[1] = {0.5}, p2[1] = {2.0};
  prog.prepare(ws, p1);
  EXPECT_EQ(run_at(ws, 3.0, 5), fresh(3.0, 0.5, 5));
  EXPECT_EQ(run_at(ws, 3.0, 40), fresh(3.0, 0.5, 40));  // several blocks, then a narrower one
  EXPECT_EQ(run_at(ws, 7.0, 2), fresh(7.0, 0.5, 2));
  EXPECT_EQ(run_at(ws, 3.0, 16), fresh(3.0, 0.5, 16));
  prog.prepare(ws, p2);  // same t, other parameters: the time registers must be rebuilt
  EXPECT_EQ(run_at(ws, 3.0, 16), fresh(3.0, 2.0, 16));
  EXPECT_NE(fresh(3.0, 2.0, 16), fresh(3.0, 0.5, 16));
  // Per-lane times in between: lanes then hold other times, and one t again recomputes them.
  {
    std::vector<double> u(4, 1.0), du(4), ts = {1.0, 2.0, 3.0, 4.0};
    esi::kernel::RunArgs<double> a;
    a.u = {u.data(), 1, 4, 4};
    a.t = ts;
    a.du = {du.data(), 1, 4, 4};
    esi::kernel::run(prog, ws, a);
  }
  EXPECT_EQ(run_at(ws, 3.0, 16), fresh(3.0, 2.0, 16));
}

}  // namespace
