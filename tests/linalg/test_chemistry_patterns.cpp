// The lane-batched LU on the analytic Jacobian patterns of two corpus mechanisms (SuperFast,
// 12 states; GEOS-Chem fullchem, 272 states): the Markowitz plan keeps the fill small and
// solves s I - J like Eigen's partial-pivoting LU. Skipped when the corpus is absent.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>

#include "esi/esm/flatten.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/linalg/sparse_lu.hpp"
#include "support/temp_dir.hpp"

namespace {

using namespace esi::linalg;

Pattern jacobian_pattern(const std::string& file) {
  const auto path = esi::testing::corpus_dir() / "EarthSciModels/components/gaschem" / file;
  const auto jp = esi::kernel::compile_jacobian(esi::esm::flatten(esi::esm::load_resolved(path)));
  return Pattern{static_cast<int>(jp.row_ptr.size()) - 1, jp.row_ptr, jp.col};
}

class ChemistryPattern : public ::testing::TestWithParam<const char*> {};

TEST_P(ChemistryPattern, MarkowitzPlanSolvesShiftedJacobian) {
  if (esi::testing::corpus_dir().empty()) GTEST_SKIP() << "corpus not found (set ESI_CORPUS)";
  const Pattern p = jacobian_pattern(GetParam());
  const auto plan = plan_sparse_lu(p);
  const int n = p.n;
  // Elimination in the natural order fills far more than the Markowitz order.
  std::vector<int> natural(n);
  for (int i = 0; i < n; ++i) natural[i] = i;
  const auto natural_plan = plan_sparse_lu_in_order(p, natural);
  EXPECT_LE(plan.fill, natural_plan.fill);
  EXPECT_LE(plan.multiply_adds, natural_plan.multiply_adds);
  // fullchem: Markowitz n=272 nnz=3832 fill=838 fma=13712; natural order fill=22454
  // fma=801825.
  if (n > 100) {
    EXPECT_LT(plan.fill * 10, natural_plan.fill);
    EXPECT_LT(plan.multiply_adds * 20, natural_plan.multiply_adds);
  }
  // s I - J with J uniform in [-1, 1] and s = 3: no diagonal dominance (rows of J are long), so
  // unpivoted elimination is tested on a matrix Eigen pivots on.
  const int lanes = 4;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> jac(p.col.size() * lanes), shift(lanes, 3.0);
  for (auto& x : jac) x = u(rng);
  std::vector<double> v(plan.nonzeros() * lanes), x(static_cast<std::size_t>(n) * lanes);
  for (auto& e : x) e = u(rng);
  const std::vector<double> b = x;
  assemble_shifted<double>(plan, jac.data(), shift.data(), v.data(), lanes);
  std::vector<std::uint8_t> failed(lanes);
  ASSERT_EQ(lu_factor<double>(plan, v.data(), lanes, failed), 0);
  lu_solve<double>(plan, v.data(), x.data(), lanes);
  for (int l = 0; l < lanes; ++l) {
    Eigen::MatrixXd M = shift[l] * Eigen::MatrixXd::Identity(n, n);
    Eigen::VectorXd B(n), X(n);
    for (int i = 0; i < n; ++i) {
      for (int q = p.row_ptr[i]; q < p.row_ptr[i + 1]; ++q) M(i, p.col[q]) -= jac[q * lanes + l];
      B[i] = b[i * lanes + l];
      X[i] = x[i * lanes + l];
    }
    const Eigen::VectorXd ref = M.partialPivLu().solve(B);
    const double cond_scale = ref.cwiseAbs().maxCoeff();
    EXPECT_LE((X - ref).cwiseAbs().maxCoeff(), 1e-10 * cond_scale) << "lane " << l;
    EXPECT_LE((M * X - B).cwiseAbs().maxCoeff(),
              1e-13 * (M.cwiseAbs().rowwise().sum().maxCoeff() * X.cwiseAbs().maxCoeff()));
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, ChemistryPattern,
                         ::testing::Values("superfast.esm", "geoschem_fullchem.esm"));

}  // namespace
