// Lane-batched sparse LU (issue 10) on real chemistry patterns: the analytic Jacobian pattern of
// GEOS-Chem fullchem (272 states) and SuperFast (12 states), M = s I - J, against Eigen's dense
// PartialPivLU and Eigen's SparseLU (COLAMD), both one cell at a time, in the same run.
//
// Values are synthetic (the pattern is real): J's nonzeros uniform in [-1, 1] per cell and a
// per-cell shift s above J's largest row sum, so every method factors a well-conditioned
// matrix and no lane fails; the cost of the LU does not depend on the values.
//
// Our buffers are LaneVectors (64-byte aligned; plain std::vector made lu_factor up to 1.6x
// slower, depending on where malloc put it).
// Rows: "lu/<model>/lanes/L:L" (ours, L lanes per block; lanes_f32 in single precision) and
// "lu/<model>/eigen_dense",
// "lu/<model>/eigen_sparse". Each pass goes over all cells block by block: assemble (s I - J
// into factor storage) alone, assemble + factor (the difference is the factorisation), and
// solve (copy of the right-hand side included; every block against the last factor, which
// costs the same), best of 9 passes each in this thread's CPU time.
// Counters (per cell):
//   assemble_ns, factor_ns, solve_ns
//   factor_GFLOPs  (plan.divisions + 2 * plan.multiply_adds) / factor_ns, the sparse plan's
//                  flops for every row, so the Eigen rows read as "equivalent" rates (how fast
//                  the same useful work is done), not Eigen's own flop counts
//   solve_GFLOPs   (2 * plan.solve_multiply_adds + n) / solve_ns
//   n, nnz_J, nnz_LU, fill, flops   the plan (ours)
//   dense_GFLOPs   eigen_dense only: 2n^3/3 / factor_ns, the rate of the dense LU's own flops

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/SparseLU>
#include <benchmark/benchmark.h>

#include "esi/esm/flatten.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/linalg/sparse_lu.hpp"

#ifndef ESI_DEFAULT_CORPUS
#define ESI_DEFAULT_CORPUS ""
#endif

namespace {

namespace fs = std::filesystem;
using esi::linalg::Pattern;
using esi::linalg::SparseLuPlan;

struct LuCase {
  std::string error;
  Pattern pattern;
  SparseLuPlan plan;
  std::size_t cells = 0;
  std::vector<double> jac;    // cell-major: jac[c * nnz_J + j]
  std::vector<double> shift;  // per cell
  std::vector<double> rhs;    // rhs[c * n + i]
};

fs::path gaschem(const std::string& file) {
  const char* env = std::getenv("ESI_CORPUS");
  const fs::path root = (env && *env) ? fs::path(env) : fs::path(ESI_DEFAULT_CORPUS);
  return root / "EarthSciModels/components/gaschem" / file;
}

LuCase make_case(const std::string& name) {
  LuCase c;
  const auto path = gaschem(name == "superfast" ? "superfast.esm" : "geoschem_fullchem.esm");
  if (!fs::exists(path)) {
    c.error = "corpus file not found: " + path.string() + " (set ESI_CORPUS)";
    return c;
  }
  const auto jp = esi::kernel::compile_jacobian(esi::esm::flatten(esi::esm::load_resolved(path)));
  c.pattern.n = static_cast<int>(jp.row_ptr.size()) - 1;
  c.pattern.row_ptr = jp.row_ptr;
  c.pattern.col = jp.col;
  c.plan = esi::linalg::plan_sparse_lu(c.pattern);
  c.cells = name == "superfast" ? 4096 : 256;
  const int n = c.pattern.n;
  const std::size_t nnz = c.pattern.col.size();
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  c.jac.resize(nnz * c.cells);
  c.rhs.resize(static_cast<std::size_t>(n) * c.cells);
  for (std::size_t cell = 0; cell < c.cells; ++cell) {
    double widest = 0;
    for (int i = 0; i < n; ++i) {
      double row = 0;
      for (int q = c.pattern.row_ptr[i]; q < c.pattern.row_ptr[i + 1]; ++q)
        row += std::abs(c.jac[cell * nnz + q] = u(rng));
      widest = std::max(widest, row);
    }
    c.shift.push_back(2 * widest + 1 + u(rng));
    for (int i = 0; i < n; ++i) c.rhs[cell * n + i] = u(rng);
  }
  return c;
}

const LuCase& lu_case(const std::string& name) {
  static std::map<std::string, LuCase> cases;
  auto it = cases.find(name);
  if (it == cases.end()) it = cases.emplace(name, make_case(name)).first;
  return it->second;
}

/// This thread's CPU time in seconds (a loaded machine skews it less than wall time).
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Best-of-9 seconds (thread CPU time) of pass(stage) for stage 0 (assemble), 1 (assemble +
/// factor), 2 (solve, against the factor the last stage-1 pass left).
template <class Pass>
std::array<double, 3> time_stages(Pass&& pass) {
  std::array<double, 3> best{1e300, 1e300, 1e300};
  for (int stage = 0; stage < 3; ++stage) pass(stage);  // warm up
  for (int rep = 0; rep < 9; ++rep)
    for (int stage = 0; stage < 3; ++stage) {
      const double t0 = thread_seconds();
      pass(stage);
      best[stage] = std::min(best[stage], thread_seconds() - t0);
    }
  return best;
}

void report(benchmark::State& state, const LuCase& c, std::array<double, 3> s, std::size_t cells) {
  const auto& p = c.plan;
  const double per = 1e9 / static_cast<double>(cells);
  const double assemble = s[0] * per, factor = std::max(s[1] - s[0], 0.0) * per, solve = s[2] * per;
  const double factor_flops = static_cast<double>(p.divisions + 2 * p.multiply_adds);
  const double solve_flops = static_cast<double>(2 * p.solve_multiply_adds + p.n);
  state.counters["assemble_ns"] = assemble;
  state.counters["factor_ns"] = factor;
  state.counters["solve_ns"] = solve;
  state.counters["factor_GFLOPs"] = factor_flops / factor;
  state.counters["solve_GFLOPs"] = solve_flops / solve;
  state.counters["n"] = p.n;
  state.counters["nnz_J"] = static_cast<double>(p.input_nonzeros);
  state.counters["nnz_LU"] = static_cast<double>(p.nonzeros());
  state.counters["fill"] = static_cast<double>(p.fill);
  state.counters["flops"] = factor_flops;
  state.counters["u_loads"] = static_cast<double>(p.factor_u_loads);  // of multiply_adds row by row
}

template <class T>
void BM_LaneLu(benchmark::State& state, const std::string& name) {
  const LuCase& c = lu_case(name);
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
  const int L = static_cast<int>(state.range(0));
  const auto& plan = c.plan;
  const int n = plan.n;
  const std::size_t nnz_j = plan.input_nonzeros, blocks = c.cells / L;
  // Lane-SoA inputs per block, laid out once (the Jacobian program writes them this way).
  esi::linalg::LaneVector<T> jac(nnz_j * c.cells), shift(c.cells), rhs(static_cast<std::size_t>(n) * c.cells);
  for (std::size_t b = 0; b < blocks; ++b)
    for (int l = 0; l < L; ++l) {
      const std::size_t cell = b * L + l;
      for (std::size_t j = 0; j < nnz_j; ++j) jac[b * nnz_j * L + j * L + l] = static_cast<T>(c.jac[cell * nnz_j + j]);
      for (int i = 0; i < n; ++i) rhs[b * n * L + i * L + l] = static_cast<T>(c.rhs[cell * n + i]);
      shift[cell] = static_cast<T>(c.shift[cell]);
    }
  esi::linalg::LaneVector<T> values(plan.nonzeros() * L), x(static_cast<std::size_t>(n) * L);
  std::vector<std::uint8_t> failed(L);
  int failures = 0;
  auto pass = [&](int stage) {
    for (std::size_t b = 0; b < blocks; ++b) {
      if (stage == 2) {  // every block's right-hand side against the last factor (same cost)
        std::copy_n(rhs.data() + b * n * L, n * L, x.data());
        esi::linalg::lu_solve<T>(plan, values.data(), x.data(), L);
      } else {
        esi::linalg::assemble_shifted<T>(plan, jac.data() + b * nnz_j * L,
                                              shift.data() + b * L, values.data(), L);
        if (stage == 1) failures += esi::linalg::lu_factor<T>(plan, values.data(), L, failed);
      }
      benchmark::DoNotOptimize(values.data());
      benchmark::DoNotOptimize(x.data());
    }
  };
  std::array<double, 3> s{};
  for (auto _ : state) s = time_stages(pass);
  if (failures) return state.SkipWithError("a lane failed");
  report(state, c, s, blocks * L);
}

void BM_EigenDense(benchmark::State& state, const std::string& name) {
  const LuCase& c = lu_case(name);
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
  const int n = c.pattern.n;
  const std::size_t nnz_j = c.pattern.col.size(), cells = std::min<std::size_t>(c.cells, n > 100 ? 32 : c.cells);
  Eigen::MatrixXd M(n, n);
  Eigen::PartialPivLU<Eigen::MatrixXd> lu(n);
  Eigen::VectorXd x(n);
  auto pass = [&](int stage) {
    for (std::size_t cell = 0; cell < cells; ++cell) {
      if (stage == 2) {
        x = lu.solve(Eigen::Map<const Eigen::VectorXd>(c.rhs.data() + cell * n, n));
      } else {
        M.setZero();
        for (int i = 0; i < n; ++i) {
          for (int q = c.pattern.row_ptr[i]; q < c.pattern.row_ptr[i + 1]; ++q)
            M(i, c.pattern.col[q]) = -c.jac[cell * nnz_j + q];
          M(i, i) += c.shift[cell];
        }
        if (stage == 1) lu.compute(M);
      }
      benchmark::DoNotOptimize(M.data());
      benchmark::DoNotOptimize(x.data());
    }
  };
  std::array<double, 3> s{};
  for (auto _ : state) s = time_stages(pass);
  report(state, c, s, cells);
  // Eigen's own flops (2n^3/3 for the factorisation) per factor_ns: how busy the dense LU is.
  state.counters["dense_GFLOPs"] = 2.0 * n * n * n / 3.0 / state.counters["factor_ns"];
}

void BM_EigenSparse(benchmark::State& state, const std::string& name) {
  const LuCase& c = lu_case(name);
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
  const int n = c.pattern.n;
  const std::size_t nnz_j = c.pattern.col.size(), cells = std::min<std::size_t>(c.cells, 256);
  // Pattern of J plus the diagonal, compressed; value slot of each input nonzero and diagonal.
  using Sparse = Eigen::SparseMatrix<double>;
  std::vector<Eigen::Triplet<double>> triplets;
  for (int i = 0; i < n; ++i) {
    triplets.emplace_back(i, i, 1.0);
    for (int q = c.pattern.row_ptr[i]; q < c.pattern.row_ptr[i + 1]; ++q)
      if (c.pattern.col[q] != i) triplets.emplace_back(i, c.pattern.col[q], 1.0);
  }
  Sparse M(n, n);
  M.setFromTriplets(triplets.begin(), triplets.end());
  M.makeCompressed();
  std::vector<int> slot(nnz_j), diag_slot(n);
  for (int i = 0; i < n; ++i) {
    for (int q = c.pattern.row_ptr[i]; q < c.pattern.row_ptr[i + 1]; ++q)
      slot[q] = static_cast<int>(&M.coeffRef(i, c.pattern.col[q]) - M.valuePtr());
    diag_slot[i] = static_cast<int>(&M.coeffRef(i, i) - M.valuePtr());
  }
  Eigen::SparseLU<Sparse, Eigen::COLAMDOrdering<int>> lu;
  lu.analyzePattern(M);
  Eigen::VectorXd x(n);
  double* v = M.valuePtr();
  auto pass = [&](int stage) {
    for (std::size_t cell = 0; cell < cells; ++cell) {
      if (stage == 2) {
        x = lu.solve(Eigen::Map<const Eigen::VectorXd>(c.rhs.data() + cell * n, n));
      } else {
        std::fill(v, v + M.nonZeros(), 0.0);
        for (std::size_t q = 0; q < nnz_j; ++q) v[slot[q]] = -c.jac[cell * nnz_j + q];
        for (int i = 0; i < n; ++i) v[diag_slot[i]] += c.shift[cell];
        if (stage == 1) lu.factorize(M);
      }
      benchmark::DoNotOptimize(v);
      benchmark::DoNotOptimize(x.data());
    }
  };
  std::array<double, 3> s{};
  for (auto _ : state) s = time_stages(pass);
  if (lu.info() != Eigen::Success) return state.SkipWithError("Eigen SparseLU failed");
  report(state, c, s, cells);
}

const bool registered = [] {
  for (const std::string name : {"fullchem", "superfast"}) {
    auto* ours = benchmark::RegisterBenchmark(("lu/" + name + "/lanes").c_str(), BM_LaneLu<double>, name);
    for (int L : {1, 4, 8, 16, 32}) ours->Arg(L);
    ours->ArgName("L")->Iterations(1)->Unit(benchmark::kMillisecond);
    auto* single = benchmark::RegisterBenchmark(("lu/" + name + "/lanes_f32").c_str(), BM_LaneLu<float>, name);
    for (int L : {8, 16, 32}) single->Arg(L);
    single->ArgName("L")->Iterations(1)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("lu/" + name + "/eigen_dense").c_str(), BM_EigenDense, name)
        ->Iterations(1)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("lu/" + name + "/eigen_sparse").c_str(), BM_EigenSparse, name)
        ->Iterations(1)->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace

