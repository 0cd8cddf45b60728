// The iteration matrix M = alpha I - J of implicit methods on a sparse system (n > 64): the
// planned LU without pivoting, and Eigen's SparseLU with partial pivoting for a factorization
// whose diagonal pivot the plan finds zero. Exact solutions of 2 x 2 blocks are the oracle.
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "esi/method/integrator.hpp"
#include "esi/method/problem.hpp"
#include "method/linear_system.hpp"

namespace {

using esi::method::IntegratorStats;
using esi::method::OdeProblem;
using esi::method::detail::Evaluator;
using esi::method::detail::JacobianOf;
using esi::method::detail::LinearSystem;

constexpr int kPairs = 40;  // 80 states: past the dense limit, so the sparse path runs
static_assert(2 * kPairs > static_cast<int>(esi::method::detail::kDenseLimit));

/// J in pairs (2k, 2k+1): [[d_k, c], [c, d_k]] with d_k = diagonal, c = coupling (context).
struct Pairs {
  double diagonal = 0, coupling = 0;
};

void pair_jacobian(void* context, double, const double*, double* values) {
  const Pairs& p = *static_cast<const Pairs*>(context);
  for (int i = 0; i < 2 * kPairs; ++i) {  // row i: columns in increasing order
    const bool first = i % 2 == 0;
    values[2 * i] = first ? p.diagonal : p.coupling;
    values[2 * i + 1] = first ? p.coupling : p.diagonal;
  }
}

void no_rhs(void*, double, const double*, double* du) {
  for (int i = 0; i < 2 * kPairs; ++i) du[i] = 0;
}

OdeProblem pair_problem(Pairs& pairs) {
  OdeProblem p;
  p.size = 2 * kPairs;
  p.context = &pairs;
  p.rhs = no_rhs;
  p.jacobian = pair_jacobian;
  p.jac_row_ptr.push_back(0);
  for (int i = 0; i < 2 * kPairs; ++i) {
    const int lo = i - i % 2;
    p.jac_col.push_back(lo);
    p.jac_col.push_back(lo + 1);
    p.jac_row_ptr.push_back(static_cast<int>(p.jac_col.size()));
  }
  return p;
}

/// The pair problem with its Jacobian evaluated, ready to factor.
struct PairSystem {
  Pairs pairs;
  OdeProblem problem;
  IntegratorStats stats;
  LinearSystem system;
  PairSystem(double diagonal, double coupling)
      : pairs{diagonal, coupling},
        problem(pair_problem(pairs)),
        system(Evaluator{&problem, &stats}, JacobianOf::Rhs) {
    std::vector<double> u(2 * kPairs, 0.0), g(2 * kPairs, 0.0);
    system.evaluate_jacobian(0.0, u.data(), g.data());
  }
};

/// Solves M x = b for b_i = i + 1 and checks x against the 2 x 2 closed form of every block
/// M = [[a, -c], [-c, a]], a = alpha - d: x = [a b0 + c b1, c b0 + a b1] / (a^2 - c^2).
void expect_block_solutions(LinearSystem& system, double alpha, const Pairs& p) {
  std::vector<double> x(2 * kPairs);
  for (int i = 0; i < 2 * kPairs; ++i) x[i] = i + 1;
  ASSERT_TRUE(system.solve(x.data()));
  const double a = alpha - p.diagonal, c = p.coupling, det = a * a - c * c;
  for (int k = 0; k < kPairs; ++k) {
    const double b0 = 2 * k + 1, b1 = 2 * k + 2;
    EXPECT_NEAR(x[2 * k], (a * b0 + c * b1) / det, 1e-13 * std::abs(b1 / det)) << "pair " << k;
    EXPECT_NEAR(x[2 * k + 1], (c * b0 + a * b1) / det, 1e-13 * std::abs(b1 / det)) << "pair " << k;
  }
}

TEST(LinearSystem, ASparseSystemFactorsAndSolvesToTheClosedForm) {
  PairSystem s(1.0, 0.5);
  ASSERT_TRUE(s.system.factorize(3.0));  // blocks [[2, -0.5], [-0.5, 2]]: diagonal pivots fine
  expect_block_solutions(s.system, 3.0, s.pairs);
}

// alpha = d makes every diagonal of M zero: [[0, -c], [-c, 0]] is nonsingular but has no
// diagonal pivot, which the planned LU refuses; the factorization must still succeed (by
// partial pivoting) and solve exactly, and the next well-posed one must go back to the plan.
TEST(LinearSystem, AZeroDiagonalPivotIsFactoredWithPivotingInstead) {
  PairSystem s(2.0, 0.75);
  ASSERT_TRUE(s.system.factorize(2.0));
  expect_block_solutions(s.system, 2.0, s.pairs);
  ASSERT_TRUE(s.system.factorize(10.0));
  expect_block_solutions(s.system, 10.0, s.pairs);
  EXPECT_EQ(s.stats.factorizations, 2);
}

// A singular M (alpha - d = c: blocks [[c, -c], [-c, c]]) is reported, not thrown or solved.
TEST(LinearSystem, ASingularMatrixIsReportedAsAFailedFactorization) {
  PairSystem s(1.0, 0.5);
  EXPECT_FALSE(s.system.factorize(1.5));
  EXPECT_FALSE(s.system.factorize(NAN));
}

}  // namespace

// Linear systems over one problem share its LU plan (OdeProblem::lu_plans): the second reuses
// the first's, and both still solve to the closed form. A problem of another pattern handed
// the same cache plans its own and leaves the cache as it was.
TEST(LinearSystem, SystemsOfOneProblemShareTheirPlan) {
  Pairs pairs{1.0, 0.5};
  OdeProblem problem = pair_problem(pairs);
  problem.lu_plans = std::make_shared<esi::method::SparseLuPlanCache>();
  IntegratorStats stats;
  std::vector<double> u(2 * kPairs, 0.0), g(2 * kPairs, 0.0);
  LinearSystem first(Evaluator{&problem, &stats}, JacobianOf::Rhs);
  ASSERT_NE(problem.lu_plans->plan, nullptr);
  LinearSystem second(Evaluator{&problem, &stats}, JacobianOf::Rhs);
  EXPECT_EQ(problem.lu_plans->plan.use_count(), 3);  // the cache and both systems
  for (LinearSystem* s : {&first, &second}) {
    s->evaluate_jacobian(0.0, u.data(), g.data());
    ASSERT_TRUE(s->factorize(3.0));
    expect_block_solutions(*s, 3.0, pairs);
  }
  // The diagonal alone: another pattern.
  OdeProblem diagonal = problem;
  diagonal.jacobian = [](void*, double, const double*, double* values) {
    for (int i = 0; i < 2 * kPairs; ++i) values[i] = 1.0;
  };
  diagonal.jac_col.clear();
  diagonal.jac_row_ptr = {0};
  for (int i = 0; i < 2 * kPairs; ++i) {
    diagonal.jac_col.push_back(i);
    diagonal.jac_row_ptr.push_back(i + 1);
  }
  LinearSystem third(Evaluator{&diagonal, &stats}, JacobianOf::Rhs);
  EXPECT_EQ(problem.lu_plans->plan.use_count(), 3);
  EXPECT_EQ(problem.lu_plans->col, problem.jac_col);
  third.evaluate_jacobian(0.0, u.data(), g.data());
  ASSERT_TRUE(third.factorize(3.0));
  std::vector<double> x(2 * kPairs, 4.0);
  ASSERT_TRUE(third.solve(x.data()));
  for (double xi : x) EXPECT_DOUBLE_EQ(xi, 2.0);  // (3 - 1) x = 4
}
