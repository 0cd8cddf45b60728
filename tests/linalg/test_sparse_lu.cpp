// Lane-batched sparse LU: plans (Markowitz order, fill, maps, determinism, pattern errors) and
// numeric results (against Eigen's partial-pivoting LU, across lane widths and lane positions,
// bit for bit against a scalar reference of the same elimination, tiny-pivot flags).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/linalg/sparse_lu.hpp"

namespace {

using namespace esi::linalg;

/// Random square pattern with every diagonal entry and about `density` of the off-diagonal ones.
Pattern random_pattern(int n, double density, unsigned seed, bool with_diagonal = true) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Pattern p;
  p.n = n;
  p.row_ptr.push_back(0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j)
      if ((i == j && with_diagonal) || (i != j && u(rng) < density)) p.col.push_back(j);
    p.row_ptr.push_back(static_cast<int>(p.col.size()));
  }
  return p;
}

/// Nonzero values (input CSR order) of a diagonally dominant matrix on `p`.
std::vector<double> dominant_values(const Pattern& p, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> a(p.col.size());
  for (int i = 0; i < p.n; ++i) {
    double off = 0;
    int d = -1;
    for (int q = p.row_ptr[i]; q < p.row_ptr[i + 1]; ++q) {
      if (p.col[q] == i) {
        d = q;
      } else {
        a[q] = u(rng);
        off += std::abs(a[q]);
      }
    }
    if (d >= 0) a[d] = (off + 0.5 + std::abs(u(rng))) * (u(rng) < 0 ? -1 : 1);
  }
  return a;
}

Eigen::MatrixXd dense_of(const Pattern& p, const std::vector<double>& a) {
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(p.n, p.n);
  for (int i = 0; i < p.n; ++i)
    for (int q = p.row_ptr[i]; q < p.row_ptr[i + 1]; ++q) m(i, p.col[q]) = a[q];
  return m;
}

std::vector<double> random_vector(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> b(n);
  for (auto& x : b) x = u(rng);
  return b;
}

/// Factor storage of one lane (L = 1) holding the input values.
template <class T>
std::vector<T> load(const SparseLuPlan& plan, const std::vector<double>& a) {
  std::vector<T> v(plan.nonzeros(), T(0));
  for (std::size_t j = 0; j < a.size(); ++j) v[plan.from_input[j]] = static_cast<T>(a[j]);
  return v;
}

/// Factors and solves one matrix in lane `lane` of `lanes`; the other lanes hold other
/// matrices on the same pattern. Returns the lane's solution; `factor_out` its factor values.
struct LaneResult {
  std::vector<double> x, factor;
  std::vector<std::uint8_t> failed;
  int failures = 0;
};
LaneResult solve_in_lane(const SparseLuPlan& plan, const Pattern& p, const std::vector<double>& a,
                         const std::vector<double>& b, int lanes, int lane) {
  const std::size_t nnz = plan.nonzeros();
  std::vector<double> v(nnz * lanes), x(static_cast<std::size_t>(p.n) * lanes);
  for (int l = 0; l < lanes; ++l) {
    const auto other = dominant_values(p, 1000 + l);
    const auto vals = load<double>(plan, l == lane ? a : other);
    const auto rhs = l == lane ? b : random_vector(p.n, 2000 + l);
    for (std::size_t q = 0; q < nnz; ++q) v[q * lanes + l] = vals[q];
    for (int i = 0; i < p.n; ++i) x[static_cast<std::size_t>(i) * lanes + l] = rhs[i];
  }
  LaneResult r;
  r.failed.assign(lanes, 7);
  r.failures = lu_factor<double>(plan, v.data(), lanes, r.failed);
  lu_solve<double>(plan, v.data(), x.data(), lanes);
  for (int i = 0; i < p.n; ++i) r.x.push_back(x[static_cast<std::size_t>(i) * lanes + lane]);
  for (std::size_t q = 0; q < nnz; ++q) r.factor.push_back(v[q * lanes + lane]);
  return r;
}

double max_abs(const Eigen::VectorXd& v) { return v.size() ? v.cwiseAbs().maxCoeff() : 0; }

/// The elimination written out plainly (no operation list, a search per target), compiled in
/// this file for the baseline ISA: the library's kernels (vector clones) must match it bit for
/// bit.
std::vector<double> reference_factor(const SparseLuPlan& plan, std::vector<double> a) {
  auto at = [&](int k, int c) {
    const auto b = plan.col.begin() + plan.row_ptr[k], e = plan.col.begin() + plan.row_ptr[k + 1];
    const auto it = std::lower_bound(b, e, c);
    EXPECT_TRUE(it != e && *it == c);
    return static_cast<std::size_t>(it - plan.col.begin());
  };
  // Multipliers use the pivot's reciprocal, which the factor keeps on the diagonal.
  for (int k = 0; k < plan.n; ++k) {
    for (int q = plan.row_ptr[k]; q < plan.diag[k]; ++q) {
      const int c = plan.col[q];
      const double l = a[q] * a[plan.diag[c]];
      a[q] = l;
      for (int s = plan.diag[c] + 1; s < plan.row_ptr[c + 1]; ++s) a[at(k, plan.col[s])] -= l * a[s];
    }
    a[plan.diag[k]] = 1 / a[plan.diag[k]];
  }
  return a;
}

bool same_bits(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

// (1) Random diagonally dominant systems: our solve equals Eigen's partial-pivoting solve.
TEST(SparseLu, MatchesEigenDenseOnRandomPatterns) {
  unsigned seed = 1;
  for (int n : {1, 2, 3, 7, 20, 64, 150, 300})
    for (double density : {0.01, 0.05, 0.2, 0.6}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " density=" + std::to_string(density));
      const Pattern p = random_pattern(n, density, ++seed);
      const auto plan = plan_sparse_lu(p);
      const auto a = dominant_values(p, ++seed);
      const auto b = random_vector(n, ++seed);
      for (int lanes : {1, 8}) {
        const auto r = solve_in_lane(plan, p, a, b, lanes, lanes - 1);
        EXPECT_EQ(r.failures, 0);
        const Eigen::MatrixXd A = dense_of(p, a);
        const Eigen::VectorXd B = Eigen::Map<const Eigen::VectorXd>(b.data(), n);
        const Eigen::VectorXd ref = A.partialPivLu().solve(B);
        const Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(r.x.data(), n);
        EXPECT_LE(max_abs(x - ref), 1e-12 * max_abs(ref));
        const double scale = A.cwiseAbs().rowwise().sum().maxCoeff() * max_abs(x) + max_abs(B);
        EXPECT_LE(max_abs(A * x - B), 1e-14 * scale);
      }
    }
}

// (1b) The transposed solve with the same factors equals Eigen's solve of A^T, per lane.
TEST(SparseLu, TransposedSolveMatchesEigenOnRandomPatterns) {
  unsigned seed = 500;
  for (int n : {1, 5, 40, 150})
    for (double density : {0.02, 0.2}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " density=" + std::to_string(density));
      const Pattern p = random_pattern(n, density, ++seed);
      const auto plan = plan_sparse_lu(p);
      const int lanes = 4;
      std::vector<std::vector<double>> a(lanes), b(lanes);
      std::vector<double> v(plan.nonzeros() * lanes), x(std::size_t(n) * lanes);
      for (int l = 0; l < lanes; ++l) {
        a[l] = dominant_values(p, ++seed);
        b[l] = random_vector(n, ++seed);
        const auto vals = load<double>(plan, a[l]);
        for (std::size_t q = 0; q < plan.nonzeros(); ++q) v[q * lanes + l] = vals[q];
        for (int i = 0; i < n; ++i) x[std::size_t(i) * lanes + l] = b[l][i];
      }
      std::vector<std::uint8_t> failed(lanes, 0);
      ASSERT_EQ(lu_factor<double>(plan, v.data(), lanes, failed), 0);
      lu_solve_transposed<double>(plan, v.data(), x.data(), lanes);
      for (int l = 0; l < lanes; ++l) {
        const Eigen::MatrixXd At = dense_of(p, a[l]).transpose();
        const Eigen::VectorXd B = Eigen::Map<const Eigen::VectorXd>(b[l].data(), n);
        const Eigen::VectorXd ref = At.partialPivLu().solve(B);
        Eigen::VectorXd got(n);
        for (int i = 0; i < n; ++i) got[i] = x[std::size_t(i) * lanes + l];
        EXPECT_LE(max_abs(got - ref), 1e-12 * max_abs(ref)) << "lane " << l;
      }
    }
}

// (2) A sparse (Markowitz) plan and a dense natural-order plan of the same matrix agree.
TEST(SparseLu, SparsePlanAgreesWithDensePlan) {
  for (int n : {4, 30, 90}) {
    const Pattern p = random_pattern(n, 0.1, 40 + n);
    const auto a = dominant_values(p, 50 + n);
    const auto b = random_vector(n, 60 + n);
    const auto sparse = plan_sparse_lu(p);
    const auto dense = plan_dense_lu(n);
    EXPECT_EQ(dense.nonzeros(), static_cast<std::size_t>(n) * n);
    EXPECT_LT(sparse.nonzeros(), dense.nonzeros());
    // The dense plan sees the matrix through a full pattern.
    Pattern full = random_pattern(n, 1.0, 0);
    std::vector<double> a_full(full.col.size(), 0.0);
    for (int i = 0; i < n; ++i)
      for (int q = p.row_ptr[i]; q < p.row_ptr[i + 1]; ++q) a_full[i * n + p.col[q]] = a[q];
    const auto xs = solve_in_lane(sparse, p, a, b, 4, 2).x;
    const auto xd = solve_in_lane(dense, full, a_full, b, 1, 0).x;
    double scale = 0;
    for (double v : xd) scale = std::max(scale, std::abs(v));
    for (int i = 0; i < n; ++i) EXPECT_NEAR(xs[i], xd[i], 1e-13 * scale) << "i=" << i;
  }
}

// (3) The same matrix gives the same bits in every lane position and at every lane width,
// and the same bits as the plain scalar elimination compiled for the baseline ISA.
TEST(SparseLu, BitwiseAcrossLanesWidthsAndIsa) {
  const Pattern p = random_pattern(45, 0.12, 7);
  const auto plan = plan_sparse_lu(p);
  ASSERT_GT(plan.fill, 0u);  // the test should exercise fill entries
  const auto a = dominant_values(p, 8);
  const auto b = random_vector(p.n, 9);
  const auto base = solve_in_lane(plan, p, a, b, 1, 0);
  EXPECT_TRUE(same_bits(base.factor, reference_factor(plan, load<double>(plan, a))));
  for (int lanes : kLuLaneWidths)
    for (int lane : {0, lanes / 2, lanes - 1}) {
      SCOPED_TRACE("lanes=" + std::to_string(lanes) + " lane=" + std::to_string(lane));
      const auto r = solve_in_lane(plan, p, a, b, lanes, lane);
      EXPECT_EQ(r.failures, 0);
      EXPECT_TRUE(same_bits(r.factor, base.factor));
      EXPECT_TRUE(same_bits(r.x, base.x));
    }
}

// lu_factor eliminates kFactorRowGroup rows together (pivots inside a group, partial last
// groups, rows sharing pivots): still the plain row-by-row elimination's bits, on a dense plan
// (every pivot of a group's earlier rows is inside the group) and on sparse ones whose size is
// not a multiple of the group.
TEST(SparseLu, GroupedEliminationHasTheRowByRowBits) {
  for (int n : {1, 2, 7, 13, 61}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const Pattern full = random_pattern(n, 1.0, 0);
    const Pattern sparse = random_pattern(n, 0.15, 70 + n);
    for (const auto& [plan, p] :
         {std::pair{plan_dense_lu(n), full}, std::pair{plan_sparse_lu(sparse), sparse}}) {
      const auto a = dominant_values(p, 80 + n);
      for (int lanes : {1, 8}) {
        const auto r = solve_in_lane(plan, p, a, random_vector(n, 90 + n), lanes, lanes - 1);
        EXPECT_EQ(r.failures, 0);
        EXPECT_TRUE(same_bits(r.factor, reference_factor(plan, load<double>(plan, a))));
      }
    }
  }
}

// Alignment changes speed only: a 64-byte aligned LaneVector and a buffer 8 bytes off give the
// same bits.
TEST(SparseLu, AlignmentDoesNotChangeBits) {
  const Pattern p = random_pattern(40, 0.1, 17);
  const auto plan = plan_sparse_lu(p);
  const int lanes = 8;
  const std::size_t nnz = plan.nonzeros();
  std::mt19937 rng(18);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> jac(p.col.size() * lanes), shift(lanes, 4.0), b(p.n * lanes);
  for (auto& e : jac) e = u(rng);
  for (auto& e : b) e = u(rng);
  LaneVector<double> aligned(nnz * lanes), xa(b.begin(), b.end());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned.data()) % kLuAlignment, 0u);
  std::vector<double> off_buffer(nnz * lanes + 1), xo_buffer(b.size() + 1);
  double* off = off_buffer.data() + 1;
  double* xo = xo_buffer.data() + 1;
  std::copy(b.begin(), b.end(), xo);
  std::vector<std::uint8_t> failed(lanes);
  assemble_shifted<double>(plan, jac.data(), shift.data(), aligned.data(), lanes);
  assemble_shifted<double>(plan, jac.data(), shift.data(), off, lanes);
  EXPECT_EQ(lu_factor<double>(plan, aligned.data(), lanes, failed), 0);
  EXPECT_EQ(lu_factor<double>(plan, off, lanes, failed), 0);
  lu_solve<double>(plan, aligned.data(), xa.data(), lanes);
  lu_solve<double>(plan, off, xo, lanes);
  EXPECT_EQ(std::memcmp(aligned.data(), off, nnz * lanes * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(xa.data(), xo, b.size() * sizeof(double)), 0);
}

TEST(SparseLu, FloatSolvesAndIsBitwiseAcrossWidths) {
  const Pattern p = random_pattern(30, 0.15, 11);
  const auto plan = plan_sparse_lu(p);
  const auto a = dominant_values(p, 12);
  const auto b = random_vector(p.n, 13);
  const auto xd = solve_in_lane(plan, p, a, b, 1, 0).x;
  std::vector<float> first;
  for (int lanes : kLuLaneWidths) {
    const int lane = lanes - 1;
    std::vector<float> v(plan.nonzeros() * lanes), x(static_cast<std::size_t>(p.n) * lanes);
    const auto vals = load<float>(plan, a);
    for (std::size_t q = 0; q < plan.nonzeros(); ++q)
      for (int l = 0; l < lanes; ++l) v[q * lanes + l] = vals[q] * (l == lane ? 1.0f : 0.5f + l);
    for (int i = 0; i < p.n; ++i)
      for (int l = 0; l < lanes; ++l) x[i * lanes + l] = static_cast<float>(b[i]);
    std::vector<std::uint8_t> failed(lanes);
    EXPECT_EQ(lu_factor<float>(plan, v.data(), lanes, failed), 0);
    lu_solve<float>(plan, v.data(), x.data(), lanes);
    std::vector<float> mine;
    for (int i = 0; i < p.n; ++i) mine.push_back(x[i * lanes + lane]);
    for (int i = 0; i < p.n; ++i) EXPECT_NEAR(mine[i], xd[i], 1e-5 * (1 + std::abs(xd[i])));
    if (first.empty()) first = mine;
    EXPECT_EQ(std::memcmp(first.data(), mine.data(), first.size() * sizeof(float)), 0)
        << "lanes=" << lanes;
  }
}

Pattern arrowhead(int n) {  // dense row 0 and column 0, plus the diagonal
  Pattern p;
  p.n = n;
  p.row_ptr.push_back(0);
  for (int j = 0; j < n; ++j) p.col.push_back(j);
  p.row_ptr.push_back(n);
  for (int i = 1; i < n; ++i) {
    p.col.push_back(0), p.col.push_back(i);
    p.row_ptr.push_back(static_cast<int>(p.col.size()));
  }
  return p;
}

// (4) Markowitz: the hub of an arrowhead goes after its leaves (no fill); the natural order
// fills it all.
TEST(SparseLuPlan, ArrowheadHubAfterLeavesHasNoFill) {
  const int n = 9;
  const Pattern p = arrowhead(n);
  const auto plan = plan_sparse_lu(p);
  // Leaves first; once one leaf is left the hub and it tie (cost 1) and the smaller index wins.
  EXPECT_EQ(plan.order, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 0, 8}));
  EXPECT_EQ(plan.fill, 0u);
  EXPECT_EQ(plan.nonzeros(), static_cast<std::size_t>(3 * n - 2));
  EXPECT_EQ(plan.divisions, static_cast<std::size_t>(n - 1));  // one per leaf in the hub row
  EXPECT_EQ(plan.multiply_adds, static_cast<std::size_t>(n - 1));  // each updates the hub pivot
  EXPECT_EQ(plan.solve_multiply_adds, static_cast<std::size_t>(2 * (n - 1)));
  std::vector<int> natural(n);
  for (int i = 0; i < n; ++i) natural[i] = i;
  const auto filled = plan_sparse_lu_in_order(p, natural);
  EXPECT_EQ(filled.fill, static_cast<std::size_t>((n - 1) * (n - 2)));
  EXPECT_EQ(filled.nonzeros(), static_cast<std::size_t>(n * n));
  // Both orders solve the same system.
  const auto a = dominant_values(p, 3);
  const auto b = random_vector(n, 4);
  const auto x1 = solve_in_lane(plan, p, a, b, 2, 1).x, x2 = solve_in_lane(filled, p, a, b, 2, 0).x;
  for (int i = 0; i < n; ++i) EXPECT_NEAR(x1[i], x2[i], 1e-14 * (1 + std::abs(x2[i])));
  EXPECT_EQ(describe(plan), "n=9 nnz=25 fill=0 div=8 fma=8");
}

TEST(SparseLuPlan, TridiagonalHasNoFill) {
  const int n = 50;
  Pattern p;
  p.n = n;
  p.row_ptr.push_back(0);
  for (int i = 0; i < n; ++i) {
    for (int j = std::max(0, i - 1); j <= std::min(n - 1, i + 1); ++j) p.col.push_back(j);
    p.row_ptr.push_back(static_cast<int>(p.col.size()));
  }
  const auto plan = plan_sparse_lu(p);
  EXPECT_EQ(plan.fill, 0u);
  EXPECT_EQ(plan.nonzeros(), p.col.size());
  EXPECT_EQ(plan.divisions, static_cast<std::size_t>(n - 1));
  EXPECT_EQ(plan.multiply_adds, static_cast<std::size_t>(n - 1));
  for (int k = 0; k < n; ++k) EXPECT_EQ(plan.order[k], k);  // ends first, ties to the smaller
}

// Plan maps: from_input / diag_of point at the right factor entries; missing diagonals added.
TEST(SparseLuPlan, MapsPointAtTheirEntries) {
  const Pattern p = random_pattern(40, 0.1, 21, /*with_diagonal=*/false);
  const auto plan = plan_sparse_lu(p);
  ASSERT_EQ(plan.from_input.size(), p.col.size());
  auto row_of = [&](int q) {
    return static_cast<int>(std::upper_bound(plan.row_ptr.begin(), plan.row_ptr.end(), q) -
                            plan.row_ptr.begin()) - 1;
  };
  for (int i = 0; i < p.n; ++i) {
    EXPECT_EQ(plan.order[plan.position[i]], i);
    EXPECT_EQ(row_of(plan.diag_of[i]), plan.position[i]);
    EXPECT_EQ(plan.col[plan.diag_of[i]], plan.position[i]);
    for (int q = p.row_ptr[i]; q < p.row_ptr[i + 1]; ++q) {
      EXPECT_EQ(row_of(plan.from_input[q]), plan.position[i]);
      EXPECT_EQ(plan.col[plan.from_input[q]], plan.position[p.col[q]]);
    }
  }
  std::size_t diagonals_in_input = 0;
  for (int i = 0; i < p.n; ++i)
    for (int q = p.row_ptr[i]; q < p.row_ptr[i + 1]; ++q) diagonals_in_input += p.col[q] == i;
  EXPECT_EQ(plan.nonzeros(), p.col.size() + (p.n - diagonals_in_input) + plan.fill);
  for (int k = 0; k < p.n; ++k)
    for (int q = plan.row_ptr[k] + 1; q < plan.row_ptr[k + 1]; ++q)
      EXPECT_LT(plan.col[q - 1], plan.col[q]);
}

// (5) The same pattern gives the same plan, vector for vector.
TEST(SparseLuPlan, Deterministic) {
  const Pattern p = random_pattern(120, 0.04, 31);
  const auto a = plan_sparse_lu(p), b = plan_sparse_lu(p);
  EXPECT_EQ(a.order, b.order);
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.col, b.col);
  EXPECT_EQ(a.from_input, b.from_input);
  EXPECT_EQ(a.diag_of, b.diag_of);
  EXPECT_EQ(a.ops, b.ops);
  EXPECT_EQ(a.solve_ops, b.solve_ops);
  EXPECT_EQ(a.fill, b.fill);
  EXPECT_EQ(a.multiply_adds, b.multiply_adds);
  EXPECT_EQ(markowitz_order(p), a.order);
  // A plan in its own order is the same plan.
  const auto c = plan_sparse_lu_in_order(p, a.order);
  EXPECT_EQ(c.col, a.col);
  EXPECT_EQ(c.ops, a.ops);
}

// (6) A tiny, zero or non-finite pivot flags exactly its lane; the other lanes' bits are
// unchanged.
TEST(SparseLu, TinyPivotFlagsOnlyItsLane) {
  const Pattern p = random_pattern(12, 0.3, 51);
  const auto plan = plan_sparse_lu(p);
  const int lanes = 8, nnz = static_cast<int>(plan.nonzeros());
  std::vector<std::vector<double>> lane_values(lanes);
  for (int l = 0; l < lanes; ++l) lane_values[l] = load<double>(plan, dominant_values(p, 60 + l));
  // Lane 3: the first pivot's row is zero except the pivot, which is 0 (exactly singular).
  const int first = plan.order[0];
  lane_values[3][plan.diag_of[first]] = 0;
  // Lane 5: a NaN in some row. Lane 6: a pivot of 1e-20 against entries of size ~1.
  lane_values[5][plan.from_input[p.row_ptr[4]]] = std::numeric_limits<double>::quiet_NaN();
  // A factor row with no L entries keeps its assembled pivot; give it 1e-20 next to U
  // entries of size ~1.
  int quiet = -1;
  for (int k = 0; k < plan.n && quiet < 0; ++k)
    if (plan.row_ptr[k] == plan.diag[k] && plan.diag[k] + 1 < plan.row_ptr[k + 1]) quiet = k;
  ASSERT_GE(quiet, 0);
  lane_values[6][plan.diag[quiet]] = 1e-20;
  lane_values[6][plan.diag[quiet] + 1] = 1.0;
  std::vector<double> v(static_cast<std::size_t>(nnz) * lanes);
  for (int q = 0; q < nnz; ++q)
    for (int l = 0; l < lanes; ++l) v[q * lanes + l] = lane_values[l][q];
  std::vector<std::uint8_t> failed(lanes, 9);
  EXPECT_EQ(lu_factor<double>(plan, v.data(), lanes, failed), 3);
  EXPECT_EQ(failed, (std::vector<std::uint8_t>{0, 0, 0, 1, 0, 1, 1, 0}));
  for (int l : {0, 1, 2, 4, 7}) {
    std::vector<double> single = lane_values[l], mine(nnz);
    std::vector<std::uint8_t> one(1, 9);
    EXPECT_EQ(lu_factor<double>(plan, single.data(), 1, one), 0);
    EXPECT_EQ(one[0], 0);
    for (int q = 0; q < nnz; ++q) mine[q] = v[q * lanes + l];
    EXPECT_TRUE(same_bits(mine, single)) << "lane " << l;
  }
  // With tiny = 0 the 1e-20 pivot passes; the zero and NaN lanes still fail.
  for (int q = 0; q < nnz; ++q)
    for (int l = 0; l < lanes; ++l) v[q * lanes + l] = lane_values[l][q];
  EXPECT_EQ(lu_factor<double>(plan, v.data(), lanes, failed, 0.0), 2);
  EXPECT_EQ(failed, (std::vector<std::uint8_t>{0, 0, 0, 1, 0, 1, 0, 0}));
}

TEST(SparseLu, InfiniteEntryFlagsItsLane) {
  const Pattern p = random_pattern(6, 0.5, 71);
  const auto plan = plan_sparse_lu(p);
  const int lanes = 2;
  std::vector<double> v(plan.nonzeros() * lanes);
  const auto a = load<double>(plan, dominant_values(p, 72));
  for (std::size_t q = 0; q < a.size(); ++q) v[q * lanes] = v[q * lanes + 1] = a[q];
  v[plan.diag_of[plan.order.back()] * lanes + 1] = std::numeric_limits<double>::infinity();
  std::vector<std::uint8_t> failed(lanes);
  EXPECT_EQ(lu_factor<double>(plan, v.data(), lanes, failed), 1);
  EXPECT_EQ(failed, (std::vector<std::uint8_t>{0, 1}));
}

// (7) Malformed patterns are refused with invalid_pattern and a pointer to the culprit.
TEST(SparseLuPlan, InvalidPatternsThrow) {
  auto code_and_pointer = [](const Pattern& p) -> std::string {
    try {
      plan_sparse_lu(p);
    } catch (const esi::Error& e) {
      EXPECT_FALSE(e.diagnostic().message.empty());
      return e.code() + " " + e.diagnostic().pointer;
    }
    return "no error";
  };
  EXPECT_EQ(code_and_pointer({-1, {0}, {}}), "invalid_pattern /n");
  EXPECT_EQ(code_and_pointer({2, {0, 1}, {0}}), "invalid_pattern /row_ptr");
  EXPECT_EQ(code_and_pointer({1, {1, 1}, {0}}), "invalid_pattern /row_ptr/0");
  EXPECT_EQ(code_and_pointer({2, {0, 2, 1}, {0, 1}}), "invalid_pattern /row_ptr/2");
  EXPECT_EQ(code_and_pointer({2, {0, 1, 3}, {0, 1}}), "invalid_pattern /row_ptr/2");
  EXPECT_EQ(code_and_pointer({2, {0, 1, 2}, {0, 2}}), "invalid_pattern /col/1");
  EXPECT_EQ(code_and_pointer({2, {0, 1, 2}, {0, -1}}), "invalid_pattern /col/1");
  EXPECT_EQ(code_and_pointer({2, {0, 2, 3}, {1, 0, 1}}), "invalid_pattern /col/1");
  EXPECT_EQ(code_and_pointer({2, {0, 2, 3}, {1, 1, 1}}), "invalid_pattern /col/1");
  EXPECT_EQ(code_and_pointer({0, {0}, {}}), "no error");
  const Pattern ok{2, {0, 1, 2}, {0, 1}};
  const std::vector<int> repeated{1, 1}, short_order{0};
  EXPECT_THROW(plan_sparse_lu_in_order(ok, repeated), esi::Error);
  EXPECT_THROW(plan_sparse_lu_in_order(ok, short_order), esi::Error);
  try {
    plan_dense_lu(-2);
    ADD_FAILURE() << "no error";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "invalid_pattern");
  }
}

TEST(SparseLu, EmptySystem) {
  const auto plan = plan_sparse_lu(Pattern{0, {0}, {}});
  EXPECT_EQ(plan.nonzeros(), 0u);
  std::vector<std::uint8_t> failed(4, 9);
  EXPECT_EQ(lu_factor<double>(plan, nullptr, 4, failed), 0);
  EXPECT_EQ(failed, (std::vector<std::uint8_t>{0, 0, 0, 0}));
  lu_solve<double>(plan, nullptr, nullptr, 4);
}

// (8) assemble_shifted writes shift - J everywhere (missing diagonals and fill included), and
// the assembled matrix solves like Eigen's dense s I - J.
TEST(SparseLu, AssembleShiftedWritesShiftMinusJacobian) {
  const Pattern p = random_pattern(25, 0.15, 81, /*with_diagonal=*/false);
  const auto plan = plan_sparse_lu(p);
  ASSERT_GT(plan.fill, 0u);
  const int lanes = 4;
  std::mt19937 rng(82);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> jac(p.col.size() * lanes), shift{30.0, 55.5, 100.0, 1e3};
  for (auto& x : jac) x = u(rng);
  std::vector<double> v(plan.nonzeros() * lanes, std::numeric_limits<double>::quiet_NaN());
  assemble_shifted<double>(plan, jac.data(), shift.data(), v.data(), lanes);
  for (int l = 0; l < lanes; ++l) {
    Eigen::MatrixXd M = shift[l] * Eigen::MatrixXd::Identity(p.n, p.n);
    for (int i = 0; i < p.n; ++i)
      for (int q = p.row_ptr[i]; q < p.row_ptr[i + 1]; ++q) M(i, p.col[q]) -= jac[q * lanes + l];
    // Every factor entry equals M at its (original) row and column: the L = I-shifted input,
    // exact zeros at fill positions.
    for (int k = 0; k < plan.n; ++k)
      for (int q = plan.row_ptr[k]; q < plan.row_ptr[k + 1]; ++q)
        EXPECT_EQ(v[q * lanes + l], M(plan.order[k], plan.order[plan.col[q]]))
            << "lane " << l << " factor entry " << q;
    const auto b = random_vector(p.n, 90 + l);
    std::vector<double> x(static_cast<std::size_t>(p.n) * lanes, 0.0);
    for (int i = 0; i < p.n; ++i) x[i * lanes + l] = b[i];
    std::vector<double> f = v;
    std::vector<std::uint8_t> failed(lanes);
    EXPECT_EQ(lu_factor<double>(plan, f.data(), lanes, failed), 0);
    lu_solve<double>(plan, f.data(), x.data(), lanes);
    const Eigen::VectorXd ref =
        M.partialPivLu().solve(Eigen::Map<const Eigen::VectorXd>(b.data(), p.n));
    for (int i = 0; i < p.n; ++i) EXPECT_NEAR(x[i * lanes + l], ref[i], 1e-12 * max_abs(ref));
  }
  // Float: same entries in single precision.
  std::vector<float> jf(jac.begin(), jac.end()), sf(shift.begin(), shift.end());
  std::vector<float> vf(plan.nonzeros() * lanes, -1.0f);
  assemble_shifted<float>(plan, jf.data(), sf.data(), vf.data(), lanes);
  for (int i = 0; i < p.n; ++i)
    EXPECT_EQ(vf[plan.diag_of[i] * lanes + 2], [&] {
      float d = sf[2];
      for (int q = p.row_ptr[i]; q < p.row_ptr[i + 1]; ++q)
        if (p.col[q] == i) d = -jf[q * lanes + 2] + sf[2];
      return d;
    }());
}

}  // namespace

namespace {

// (9) lu_factor_shifted on J in factor storage (0 at fill) gives what assemble_shifted +
// lu_factor give: the same failed lanes and equal entries, with the same bits wherever the
// entry is not zero (a fill entry starts at -0 instead of +0; see lu_factor.cpp).
template <class T>
void expect_shifted_factor_matches(int lanes) {
  SCOPED_TRACE("lanes=" + std::to_string(lanes) + (sizeof(T) == 4 ? " float" : " double"));
  const Pattern p = random_pattern(30, 0.12, 91, /*with_diagonal=*/false);
  const auto plan = plan_sparse_lu(p);
  ASSERT_GT(plan.fill, 0u);
  std::mt19937 rng(92);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> jac(p.col.size() * lanes), shift(lanes);
  for (auto& x : jac) x = T(u(rng));
  for (int l = 0; l < lanes; ++l) shift[l] = T(40 + 7 * l);
  // Exact zeros in J (a dark cell's photolysis terms); a NaN in the last lane; lane 1 all
  // zero with no shift (a zero pivot).
  for (std::size_t j = 0; j < p.col.size(); j += 5) jac[j * lanes] = T(0);
  if (lanes > 1) jac[lanes + lanes - 1] = std::numeric_limits<T>::quiet_NaN();
  if (lanes > 2) {
    shift[1] = T(0);
    for (std::size_t j = 0; j < p.col.size(); ++j) jac[j * lanes + 1] = T(0);
  }
  LaneVector<T> assembled(plan.nonzeros() * lanes), direct(plan.nonzeros() * lanes, T(0));
  assemble_shifted<T>(plan, jac.data(), shift.data(), assembled.data(), lanes);
  for (std::size_t j = 0; j < p.col.size(); ++j)
    for (int l = 0; l < lanes; ++l) direct[plan.from_input[j] * lanes + l] = jac[j * lanes + l];
  std::vector<std::uint8_t> failed_a(lanes, 9), failed_d(lanes, 7);
  const int na = lu_factor<T>(plan, assembled.data(), lanes, failed_a);
  const int nd = lu_factor_shifted<T>(plan, direct.data(), shift.data(), lanes, failed_d);
  EXPECT_EQ(na, nd);
  EXPECT_EQ(failed_a, failed_d);
  EXPECT_EQ(na, (lanes > 1 ? 1 : 0) + (lanes > 2 ? 1 : 0));
  for (std::size_t q = 0; q < plan.nonzeros(); ++q)
    for (int l = 0; l < lanes; ++l) {
      if (failed_a[l]) continue;  // a failed lane's values are unspecified
      const T a = assembled[q * lanes + l], d = direct[q * lanes + l];
      EXPECT_TRUE(a == d && (a == T(0) || std::memcmp(&a, &d, sizeof(T)) == 0))
          << "entry " << q << " lane " << l << ": " << a << " vs " << d;
    }
}

}  // namespace

TEST(SparseLu, ShiftedFactorFormsAndFactorsLikeAssembleShifted) {
  for (int lanes : kLuLaneWidths) {
    expect_shifted_factor_matches<double>(lanes);
    expect_shifted_factor_matches<float>(lanes);
  }
}
