// Running programs: a cell's result does not depend on its lane, on the block width or on the
// target (checked bitwise, f64 and f32), padding lanes are dropped, and `run` never allocates
// (counted by replacing the global operator new in this test binary); one Program serves many
// threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <thread>

#include "esi/kernel/native.hpp"
#include "esi/kernel/program.hpp"
#include "kernel/kernel_cases.hpp"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// Counting replacements for the global allocation functions (this binary only). GCC cannot
// see that these deletes pair with the mallocs above.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  ++g_allocations;
  const std::size_t al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (std::max<std::size_t>(n, 1) + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return ::operator new(n, a); }
// The nothrow forms too, so every allocation in the binary pairs with the frees below (the
// sanitizers check that pairing).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocations;
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  ++g_allocations;
  const std::size_t al = static_cast<std::size_t>(a);
  return std::aligned_alloc(al, (std::max<std::size_t>(n, 1) + al - 1) / al * al);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t& t) noexcept {
  return ::operator new(n, a, t);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace esi::kernel;

namespace {

const esi::esm::System& all_ops() {
  static const esi::esm::System s = esi::testing::system_from(esi::testing::all_ops_model());
  return s;
}

/// A domain of `cells` columns: random states around the defaults, a per-cell time and a
/// per-cell forcing field F.
template <class T>
struct Domain {
  std::size_t cells;
  std::vector<T> u;  // u[s * cells + c]
  std::vector<double> t;
  std::vector<T> forcing;
  std::vector<double> p;

  Domain(const esi::esm::System& s, std::size_t n, std::uint64_t seed) : cells(n) {
    std::mt19937_64 rng(seed);
    u.assign(s.states.size() * n, T(0));
    for (std::size_t c = 0; c < n; ++c) {
      const auto v = esi::testing::perturbed(s.states, rng);
      for (std::size_t i = 0; i < v.size(); ++i) u[i * n + c] = static_cast<T>(v[i]);
      t.push_back(1.6e9 + 1234.5 * static_cast<double>(c));
      forcing.push_back(static_cast<T>(0.5 + 0.01 * static_cast<double>(c)));
    }
    p = esi::testing::defaults(s.parameters);
  }
};

/// Runs the Lanes program on `cells` with a workspace of width `width`; du[k * n + l].
template <class T>
std::vector<T> run_lanes(const Program& prog, const Domain<T>& d, const std::vector<std::int32_t>& cells,
                         std::size_t width, DType dtype) {
  Workspace ws = prog.make_workspace(width, dtype);
  prog.prepare(ws, d.p);
  const std::size_t n = cells.size();
  std::vector<double> t(n);
  for (std::size_t l = 0; l < n; ++l) t[l] = d.t[cells[l]];
  const ForcingField<T> f{d.forcing.data(), 1};
  std::vector<T> du(prog.output_count() * n, T(-1));
  RunArgs<T> a;
  a.u = {d.u.data(), prog.state_count(), d.cells, d.cells};
  a.cells = cells;
  a.t = t;
  a.forcing = std::span(&f, 1);
  a.du = {du.data(), prog.output_count(), n, n};
  run(prog, ws, a);
  return du;
}

/// Reference: each cell alone (Whole target, one lane, width 1).
template <class T>
std::vector<std::vector<T>> per_cell(const esi::esm::System& s, const Domain<T>& d, DType dtype) {
  CompileOptions o;
  o.forcing = {"M.F"};
  const Program prog = compile(s, o);
  Workspace ws = prog.make_workspace(1, dtype);
  prog.prepare(ws, d.p);
  std::vector<std::vector<T>> out;
  for (std::size_t c = 0; c < d.cells; ++c) {
    std::vector<T> u(s.states.size());
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = d.u[i * d.cells + c];
    const ForcingField<T> f{&d.forcing[c], 0};
    out.push_back(esi::testing::run_whole<T>(prog, ws, u, 1, {d.t[c]}, std::span(&f, 1)));
  }
  return out;
}

std::vector<std::vector<std::int32_t>> cell_tables(std::size_t cells) {
  std::vector<std::int32_t> ident(cells), rev(cells);
  for (std::size_t c = 0; c < cells; ++c) ident[c] = rev[cells - 1 - c] = static_cast<std::int32_t>(c);
  std::vector<std::int32_t> shuffled = ident;
  std::mt19937 rng(4);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::vector<std::int32_t> dup{3, 3, 0, 17, 3, 36, 2, 2, 9, 11, 30, 5, 8};  // 13 lanes, repeats
  std::vector<std::int32_t> many;  // 300 lanes: several full 128-blocks plus a padded tail
  for (int k = 0; k < 300; ++k) many.push_back(static_cast<std::int32_t>((k * 7) % cells));
  return {ident, rev, shuffled, dup, many, {12}};
}

template <class T>
void check_lane_independence(DType dtype) {
  const auto& s = all_ops();
  const Domain<T> d(s, 37, 21);
  const auto ref = per_cell(s, d, dtype);
  CompileOptions o;
  o.target = Target::Lanes;
  o.forcing = {"M.F"};
  const Program prog = compile(s, o);
  std::size_t checked = 0;
  for (const auto& cells : cell_tables(d.cells)) {
    for (int width : kLaneWidths) {
      const auto du = run_lanes(prog, d, cells, static_cast<std::size_t>(width), dtype);
      const std::size_t n = cells.size();
      for (std::size_t l = 0; l < n; ++l)
        for (std::size_t k = 0; k < prog.output_count(); ++k, ++checked)
          ASSERT_EQ(std::memcmp(&du[k * n + l], &ref[cells[l]][k], sizeof(T)), 0)
              << "width " << width << " lane " << l << " cell " << cells[l] << " row " << k << ": "
              << du[k * n + l] << " vs " << ref[cells[l]][k];
    }
  }
  EXPECT_GT(checked, 10000u);
}

}  // namespace

TEST(Run, LaneResultsAreBitwiseIndependentOfLaneAndWidthF64) {
  check_lane_independence<double>(DType::F64);
}

TEST(Run, LaneResultsAreBitwiseIndependentOfLaneAndWidthF32) {
  check_lane_independence<float>(DType::F32);
}

TEST(Run, WholeTargetWithManyInstancesMatchesSingleInstances) {
  const auto& s = all_ops();
  CompileOptions o;
  o.forcing = {"M.F"};
  const Program prog = compile(s, o);
  const Domain<double> d(s, 37, 5);
  const auto ref = per_cell(s, d, DType::F64);
  for (std::size_t width : {4u, 16u, 128u}) {
    Workspace ws = prog.make_workspace(width);
    prog.prepare(ws, d.p);
    const ForcingField<double> f{d.forcing.data(), 1};
    const auto du = esi::testing::run_whole<double>(prog, ws, d.u, d.cells, d.t, std::span(&f, 1));
    for (std::size_t c = 0; c < d.cells; ++c)
      for (std::size_t k = 0; k < prog.output_count(); ++k)
        ASSERT_EQ(du[k * d.cells + c], ref[c][k]) << "width " << width << " cell " << c;
  }
}

TEST(Run, WorkspaceWidthIsTheSmallestInstantiationThatFits) {
  const Program prog = compile(all_ops());
  EXPECT_EQ(prog.make_workspace(1).width(), 1);
  EXPECT_EQ(prog.make_workspace(3).width(), 4);
  EXPECT_EQ(prog.make_workspace(13).width(), 16);
  EXPECT_EQ(prog.make_workspace(128).width(), 128);
  EXPECT_EQ(prog.make_workspace(1000).width(), 128);
}

void expect_no_allocation_in_run(const Program& prog);

TEST(Run, EvaluationDoesNotAllocate) {
  CompileOptions o;
  o.target = Target::Lanes;
  o.forcing = {"M.F"};
  expect_no_allocation_in_run(compile(all_ops(), o));
}

TEST(Run, NativeEvaluationDoesNotAllocate) {
  CompileOptions o;
  o.target = Target::Lanes;
  o.forcing = {"M.F"};
  NativeOptions n;
  n.cache_dir = (std::filesystem::temp_directory_path() / "esi-test-native-cache").string();
  const Program prog = with_native(compile(all_ops(), o), n);
  ASSERT_TRUE(prog.is_native()) << prog.native_status();
  expect_no_allocation_in_run(prog);
}

void expect_no_allocation_in_run(const Program& prog) {
  const auto& s = all_ops();
  const Domain<double> d(s, 37, 8);
  const auto cells = cell_tables(d.cells)[4];  // 300 lanes
  std::vector<double> t(cells.size(), 1.7e9), du(prog.output_count() * cells.size());
  const ForcingField<double> f{d.forcing.data(), 1};
  Workspace ws = prog.make_workspace(32);
  RunArgs<double> a;
  a.u = {d.u.data(), prog.state_count(), d.cells, d.cells};
  a.cells = cells;
  a.t = t;
  a.forcing = std::span(&f, 1);
  a.du = {du.data(), prog.output_count(), cells.size(), cells.size()};
  const long before = g_allocations.load();
  prog.prepare(ws, d.p);
  for (int rep = 0; rep < 3; ++rep) run(prog, ws, a);
  const long during = g_allocations.load() - before;
  EXPECT_EQ(during, 0);
  // The counter works: building a workspace does allocate.
  const long b2 = g_allocations.load();
  Workspace other = prog.make_workspace(8);
  EXPECT_GT(g_allocations.load(), b2);
  EXPECT_TRUE(std::isfinite(du[0]));
}

TEST(Run, PaddingLanesAreDroppedAndOutputsStayInTheirColumns) {
  const auto& s = all_ops();
  const Program prog = compile(s);
  const Domain<double> d(s, 16, 3);
  Workspace ws = prog.make_workspace(16);
  prog.prepare(ws, d.p);
  // 13 instances read from a 16-column view; du has 16 columns, the last 3 must stay untouched.
  const std::size_t n = 13, cols = 16;
  std::vector<double> du(prog.output_count() * cols, -7.0);
  RunArgs<double> a;
  a.u = {d.u.data(), prog.state_count(), n, d.cells};
  a.t = std::span(d.t.data(), n);
  a.du = {du.data(), prog.output_count(), n, cols};
  run(prog, ws, a);
  for (std::size_t k = 0; k < prog.output_count(); ++k)
    for (std::size_t c = 0; c < cols; ++c)
      EXPECT_EQ(du[k * cols + c] == -7.0, c >= n) << "row " << k << " column " << c;
}

TEST(Run, OneProgramSharedByThreadsGivesTheSerialResults) {
  const auto& s = all_ops();
  CompileOptions o;
  o.target = Target::Lanes;
  o.forcing = {"M.F"};
  const Program prog = compile(s, o);  // shared, const
  const Domain<double> d(s, 37, 13);
  const auto tables = cell_tables(d.cells);
  std::vector<std::vector<double>> serial;
  for (const auto& cells : tables) serial.push_back(run_lanes(prog, d, cells, 32, DType::F64));
  std::vector<std::vector<std::vector<double>>> got(4);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 5; ++rep)
        for (const auto& cells : tables) got[k].push_back(run_lanes(prog, d, cells, 8 << (k % 3), DType::F64));
    });
  for (auto& t : threads) t.join();
  for (int k = 0; k < 4; ++k)
    for (std::size_t i = 0; i < got[k].size(); ++i) ASSERT_EQ(got[k][i], serial[i % tables.size()]);
}
