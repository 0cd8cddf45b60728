// Lane pools (exec/lane_pool.hpp): per-cell Rosenbrock integration of many cells at once.
//
// Oracles: (1) bitwise equality of every cell's result across thread counts, shard sizes,
// lane widths, cell orders and padding (a cell's arithmetic must not depend on its lane);
// (2) each cell against the scalar Integrator run on that cell alone at a tight tolerance
// (an independent linear solver: Eigen's pivoting LU); (3) a closed-form solution of a
// time-dependent decay (exercises per-lane f_t); (4) failures stay in their cell.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/lane_pool.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/linalg/sparse_lu.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using esi::exec::CellData;
using esi::exec::CellModel;
using esi::exec::LanePoolOptions;
using esi::method::MethodId;
using esi::method::ReturnCode;

struct Cells {
  std::size_t count = 0;
  std::vector<double> states, params;
};

esi::esm::System superfast() {
  const fs::path file =
      esi::testing::corpus_dir() / "EarthSciModels/components/gaschem/superfast.esm";
  if (!fs::exists(file)) return {};
  return esi::esm::flatten(esi::esm::load_resolved(file.string()));
}

const std::vector<std::string> kCellParams{"SuperFast.T", "SuperFast.jNO2", "SuperFast.jO32OH",
                                           "SuperFast.jH2O2"};

std::size_t index_of(const esi::esm::System& s, const std::string& name) {
  for (std::size_t i = 0; i < s.states.size(); ++i)
    if (s.states[i].name == name) return i;
  return s.states.size();
}

double param_default(const esi::esm::System& s, const std::string& name) {
  for (const auto& p : s.parameters)
    if (p.name == name) return *p.default_value;
  return NAN;
}

/// SuperFast with temperature and three photolysis rates per cell.
std::shared_ptr<const CellModel> superfast_model(const esi::esm::System& s) {
  esi::exec::CellModelOptions mo;
  mo.cell_parameters = kCellParams;
  return CellModel::build(s, mo);
}

/// Heterogeneous cells as in research/anchors-heavy.md §2.2 (fixed seed): T in 220-300 K,
/// 30 % dark, the rest with photolysis scaled in (0, 1], NO and NO2 times 10^U(0,2).
Cells heterogeneous(const esi::esm::System& s, std::size_t count, unsigned seed = 7) {
  Cells c;
  c.count = count;
  const std::size_t n = s.states.size();
  c.states.resize(n * count);
  c.params.resize(kCellParams.size() * count);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u01(0, 1);
  const std::size_t no = index_of(s, "SuperFast.NO"), no2 = index_of(s, "SuperFast.NO2");
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t i = 0; i < n; ++i) c.states[i * count + k] = *s.states[i].default_value;
    const double boost = std::pow(10.0, 2 * u01(rng));
    c.states[no * count + k] *= boost;
    c.states[no2 * count + k] *= boost;
    c.params[0 * count + k] = 220 + 80 * u01(rng);
    const double light = u01(rng) < 0.3 ? 0.0 : std::sin(0.5 * M_PI * u01(rng));
    for (std::size_t q = 1; q < kCellParams.size(); ++q)
      c.params[q * count + k] = light * param_default(s, kCellParams[q]);
  }
  return c;
}

struct PoolRun {
  std::vector<double> states;
  std::vector<std::int32_t> steps;
  esi::exec::LanePoolStats stats;
};

PoolRun run(const CellModel& model, const Cells& cells, const LanePoolOptions& o, double t1 = 3600) {
  PoolRun r;
  r.states = cells.states;
  r.steps.assign(cells.count, -1);
  CellData d;
  d.cells = cells.count;
  d.states = r.states;
  d.cell_parameters = cells.params;
  r.stats = esi::exec::integrate_cells(model, d, 0, t1, o, r.steps);
  return r;
}

/// The cells in another order: cell perm[k] of `c` becomes cell k.
Cells permuted(const Cells& c, const std::vector<std::size_t>& perm, std::size_t n) {
  Cells out = c;
  const std::size_t q = c.params.size() / c.count;
  for (std::size_t k = 0; k < c.count; ++k) {
    for (std::size_t i = 0; i < n; ++i) out.states[i * c.count + k] = c.states[i * c.count + perm[k]];
    for (std::size_t j = 0; j < q; ++j) out.params[j * c.count + k] = c.params[j * c.count + perm[k]];
  }
  return out;
}

TEST(LanePool, ResultsAreBitwiseIndependentOfThreadsShardsLanesOrderAndPadding) {
  const esi::esm::System s = superfast();
  if (s.states.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto model = superfast_model(s);
  const std::size_t n = s.states.size();
  const Cells cells = heterogeneous(s, 61);  // prime: every lane width pads somewhere
  LanePoolOptions base;
  base.lanes = 8;
  base.shard_cells = 16;
  const PoolRun ref = run(*model, cells, base);
  ASSERT_EQ(ref.stats.failed_cells, 0u) << ref.stats.message;
  // Heterogeneous cells take different numbers of steps: per-cell control is real.
  const auto [lo, hi] = std::minmax_element(ref.steps.begin(), ref.steps.end());
  EXPECT_LT(*lo, *hi);
  EXPECT_GT(ref.stats.lane_slots, ref.stats.accepted + ref.stats.rejected - 1);

  auto expect_same = [&](const PoolRun& r, const std::string& what) {
    ASSERT_EQ(r.stats.failed_cells, 0u) << what << ": " << r.stats.message;
    EXPECT_EQ(r.states, ref.states) << what;
    EXPECT_EQ(r.steps, ref.steps) << what;
    EXPECT_EQ(r.stats.accepted, ref.stats.accepted) << what;
  };
  for (int threads : {1, 2}) {
    for (std::size_t shard : {std::size_t(5), std::size_t(16), std::size_t(61), std::size_t(1000)}) {
      for (int lanes : {1, 4, 8, 16, 32, 64}) {
        LanePoolOptions o = base;
        o.threads = threads, o.shard_cells = shard, o.lanes = lanes;
        expect_same(run(*model, cells, o), "threads " + std::to_string(threads) + " shard " +
                                               std::to_string(shard) + " lanes " +
                                               std::to_string(lanes));
      }
    }
  }
  // A shard's tail narrows the block (64 -> 32 -> 16 -> 8 lanes here, all cells loaded at once,
  // moved to the front lanes as the others finish: the bits above did not change): fewer lane
  // slots than a block that stays 64 wide until its slowest cell ends.
  {
    LanePoolOptions o = base;
    o.lanes = 64, o.shard_cells = 1000;
    const PoolRun r = run(*model, cells, o);
    EXPECT_LT(r.stats.lane_slots, 64 * r.stats.max_cell_steps);
    EXPECT_GE(r.stats.lane_slots, 8 * r.stats.max_cell_steps);
  }
  // Shuffled cell order: each cell's result moves with it, bit for bit.
  std::vector<std::size_t> perm(cells.count);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(3));
  LanePoolOptions o = base;
  o.threads = 2;
  const PoolRun shuffled = run(*model, permuted(cells, perm, n), o);
  for (std::size_t k = 0; k < cells.count; ++k) {
    EXPECT_EQ(shuffled.steps[k], ref.steps[perm[k]]);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(shuffled.states[i * cells.count + k], ref.states[i * cells.count + perm[k]])
          << s.states[i].name << " of cell " << perm[k];
  }
}

// Native kernels (vectorized across lanes, kernel/native.hpp) give the tape's bits in a lane
// pool at every block width (1 to 64: narrower and wider than the native vector of 8, blocks
// that pad), on one and two threads: every cell's state and step count equal.
TEST(LanePool, NativeKernelsGiveTheTapesBitsAtEveryWidth) {
  const esi::esm::System s = superfast();
  if (s.states.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto tape = superfast_model(s);
  esi::exec::CellModelOptions mo;
  mo.cell_parameters = kCellParams;
  mo.native = true;
  const auto native = CellModel::build(s, mo);
  if (native->native_status().rfind("native ", 0) != 0)
    GTEST_SKIP() << "no native code here: " << native->native_status();
  const Cells cells = heterogeneous(s, 83, 11);
  LanePoolOptions base;
  base.shard_cells = 20;
  base.lanes = 8;
  const PoolRun ref = run(*tape, cells, base);
  ASSERT_EQ(ref.stats.failed_cells, 0u) << ref.stats.message;
  for (int lanes : esi::linalg::kLuLaneWidths)
    for (int threads : {1, 2}) {
      LanePoolOptions o = base;
      o.lanes = lanes, o.threads = threads;
      const PoolRun r = run(*native, cells, o);
      const std::string what = std::to_string(lanes) + " lanes, " + std::to_string(threads) + " threads";
      ASSERT_EQ(r.stats.failed_cells, 0u) << what << ": " << r.stats.message;
      EXPECT_EQ(r.states, ref.states) << what;
      EXPECT_EQ(r.steps, ref.steps) << what;
    }
}

// Each cell against the scalar Integrator on that cell alone (Eigen's pivoting LU, its own
// controller instance): at the same tolerance the two runs take the same steps up to
// rounding, and both stay near a tight-tolerance Rodas4 reference.
TEST(LanePool, EachCellAgreesWithTheScalarIntegratorAndATightReference) {
  const esi::esm::System s = superfast();
  if (s.states.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto model = superfast_model(s);
  const std::size_t n = s.states.size();
  const Cells cells = heterogeneous(s, 12, 11);
  LanePoolOptions o;
  o.rtol = 1e-6;
  o.atol = {1e-10};
  const PoolRun r = run(*model, cells, o);
  ASSERT_EQ(r.stats.failed_cells, 0u) << r.stats.message;
  double worst_vs_scalar = 0, worst_vs_tight = 0;
  for (std::size_t k = 0; k < cells.count; ++k) {
    esi::esm::System one = s;
    for (std::size_t i = 0; i < n; ++i) {
      auto& state = one.states.mutable_entry(i);
      state.default_value = cells.states[i * cells.count + k];
      state.initial = esi::expr::kNoNode;
    }
    for (std::size_t q = 0; q < kCellParams.size(); ++q)
      for (auto& p : one.parameters)
        if (p.name == kCellParams[q]) p.default_value = cells.params[q * cells.count + k];
    esi::exec::SimulateOptions so;
    so.t1 = 3600;
    so.integrator.method = MethodId::Rodas3;
    so.integrator.rtol = o.rtol;
    so.integrator.atol = 1e-10;
    const auto scalar = esi::exec::simulate(one, so);
    so.integrator.method = MethodId::Rodas4;
    so.integrator.rtol = 1e-11;
    so.integrator.atol = 1e-16;
    const auto tight = esi::exec::simulate(one, so);
    ASSERT_EQ(scalar.code, ReturnCode::Success) << scalar.message;
    ASSERT_EQ(tight.code, ReturnCode::Success) << tight.message;
    const std::size_t last = (scalar.times.size() - 1) * scalar.names.size();
    const std::size_t last_t = (tight.times.size() - 1) * tight.names.size();
    for (std::size_t i = 0; i < n; ++i) {
      const double lane = r.states[i * cells.count + k];
      const double a = scalar.values[last + i], b = tight.values[last_t + i];
      const double floor = 1e-8;  // ppb: below this a species is noise at these tolerances
      if (std::abs(b) < floor) continue;
      worst_vs_scalar = std::max(worst_vs_scalar, std::abs(lane - a) / std::abs(a));
      worst_vs_tight = std::max(worst_vs_tight, std::abs(lane - b) / std::abs(b));
    }
  }
  EXPECT_LT(worst_vs_scalar, 1e-6);  // same algorithm, only the LU's rounding differs
  EXPECT_LT(worst_vs_tight, 1e-3);   // rtol 1e-6 over 1 h of stiff chemistry
  EXPECT_GT(worst_vs_tight, 0.0);    // a lane pool is not the reference itself
}

// dA/dt = -k0 (1 + sin(w t)) A has A(t) = A0 exp(-k0 (t + (1 - cos(w t)) / w)): the RHS
// reads t, so every lane differences f_t at its own t and step.
TEST(LanePool, TimeDependentDecayMatchesItsClosedForm) {
  const std::string doc = R"({
    "esm": "1.0.0", "metadata": {"name": "decay"},
    "models": {"D": {
      "variables": {
        "A": {"type": "unknown", "default": 1.0},
        "k0": {"type": "parameter", "default": 0.01},
        "w": {"type": "parameter", "default": 0.002}
      },
      "equations": [{"lhs": {"op": "D", "args": ["A"], "wrt": "t"},
                     "rhs": {"op": "*", "args": [{"op": "-", "args": ["k0"]}, "A",
                        {"op": "+", "args": [1, {"op": "sin", "args": [{"op": "*", "args": ["w", "t"]}]}]}]}}]
    }}})";
  esi::testing::TempDir dir;
  const fs::path file = dir.write("decay.esm", doc);
  const esi::esm::System s = esi::esm::flatten(esi::esm::load_resolved(file.string()));
  esi::exec::CellModelOptions mo;
  mo.cell_parameters = {"D.k0"};
  const auto model = CellModel::build(s, mo);
  Cells cells;
  cells.count = 10;
  for (std::size_t k = 0; k < cells.count; ++k) {
    cells.states.push_back(1.0 + double(k));
    cells.params.push_back(1e-3 * double(k + 1));
  }
  LanePoolOptions o;
  o.lanes = 4;
  o.rtol = 1e-8;
  o.atol = {1e-12};
  const double t1 = 1000, w = 0.002;
  const PoolRun r = run(*model, cells, o, t1);
  ASSERT_EQ(r.stats.failed_cells, 0u) << r.stats.message;
  for (std::size_t k = 0; k < cells.count; ++k) {
    const double k0 = cells.params[k];
    const double exact = cells.states[k] * std::exp(-k0 * (t1 + (1 - std::cos(w * t1)) / w));
    EXPECT_NEAR(r.states[k] / exact, 1.0, 1e-6) << "cell " << k;
  }
}

TEST(LanePool, AFailingCellFailsAloneAndOthersKeepTheirBits) {
  const esi::esm::System s = superfast();
  if (s.states.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto model = superfast_model(s);
  const Cells good = heterogeneous(s, 20, 5);
  Cells bad = good;
  bad.states[index_of(s, "SuperFast.O3") * bad.count + 13] = NAN;
  LanePoolOptions o;
  const PoolRun a = run(*model, good, o), b = run(*model, bad, o);
  ASSERT_EQ(a.stats.failed_cells, 0u);
  EXPECT_EQ(b.stats.failed_cells, 1u);
  EXPECT_EQ(b.stats.worst, ReturnCode::NonFinite);
  EXPECT_NE(b.stats.message.find("cell 13"), std::string::npos) << b.stats.message;
  for (std::size_t k = 0; k < good.count; ++k) {
    if (k == 13) continue;
    for (std::size_t i = 0; i < s.states.size(); ++i)
      ASSERT_EQ(a.states[i * good.count + k], b.states[i * good.count + k]);
  }
}

// With an FSAL method (Rosenbrock23: its last stage is f at (t + h, u1)) every lane that
// accepted keeps its f0 from that stage, so each narrowing of a shard's tail must move f0 with
// the lane's state: the results at 16 and 64 lanes (narrowed to 8) equal those at 8 (never
// narrowed) bit for bit.
TEST(LanePool, NarrowingCarriesEachLanesFsalDerivative) {
  const esi::esm::System s = superfast();
  if (s.states.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto model = superfast_model(s);
  const Cells cells = heterogeneous(s, 61, 5);
  LanePoolOptions o;
  o.method = MethodId::Rosenbrock23;
  o.lanes = 8, o.shard_cells = 1000;
  const PoolRun ref = run(*model, cells, o);
  ASSERT_EQ(ref.stats.failed_cells, 0u) << ref.stats.message;
  for (int lanes : {16, 64}) {
    o.lanes = lanes;
    const PoolRun r = run(*model, cells, o);
    ASSERT_EQ(r.stats.failed_cells, 0u) << r.stats.message;
    EXPECT_EQ(r.states, ref.states) << "lanes " << lanes;
    EXPECT_EQ(r.steps, ref.steps) << "lanes " << lanes;
  }
}

TEST(LanePool, AStageAtThePreviousStagesPointCostsNoRhs) {
  // Rodas3's second stage sits at u0 and ROS3P's third at its second stage's point: each lane
  // attempt evaluates f only at the distinct stage points after the first (Rodas3 2, ROS3P 1),
  // plus f(u0) once per new step and a few calls per cell for its starting step (half a call
  // per lane-step bounds those here). Evaluating every stage would cost one more per attempt.
  const esi::esm::System s = superfast();
  if (s.states.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto model = superfast_model(s);
  const Cells cells = heterogeneous(s, 40, 3);
  for (const auto& [method, distinct] :
       {std::pair{MethodId::Rodas3, 2L}, std::pair{MethodId::ROS3P, 1L}}) {
    LanePoolOptions o;
    o.method = method;
    const PoolRun r = run(*model, cells, o);
    ASSERT_EQ(r.stats.failed_cells, 0u) << r.stats.message;
    ASSERT_GT(r.stats.lane_slots, 0);
    EXPECT_GE(r.stats.rhs_evaluations, distinct * r.stats.lane_slots);
    EXPECT_LT(2 * r.stats.rhs_evaluations, (2 * distinct + 3) * r.stats.lane_slots);
  }
}

TEST(LanePool, BadOptionsAndNamesAreClearErrors) {
  const esi::esm::System s = superfast();
  if (s.states.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  esi::exec::CellModelOptions mo;
  mo.cell_parameters = {"SuperFast.Tx"};
  try {
    (void)CellModel::build(s, mo);
    FAIL() << "expected unknown_parameter";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "unknown_parameter");
  }
  mo.cell_parameters = kCellParams;
  const auto model = CellModel::build(s, mo);
  const Cells cells = heterogeneous(s, 3);
  auto code_of = [&](LanePoolOptions o) {
    try {
      (void)run(*model, cells, o);
    } catch (const esi::Error& e) {
      return e.diagnostic().code;
    }
    return std::string("none");
  };
  LanePoolOptions o;
  o.method = MethodId::Tsit5;
  EXPECT_EQ(code_of(o), "invalid_lane_pool_options");
  o = {};
  o.lanes = 3;
  EXPECT_EQ(code_of(o), "invalid_lane_pool_options");
  o = {};
  o.atol = {1, 2};
  EXPECT_EQ(code_of(o), "invalid_lane_pool_options");
}

}  // namespace
