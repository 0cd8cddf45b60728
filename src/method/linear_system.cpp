#include "method/linear_system.hpp"

#include <Eigen/Dense>
#include <Eigen/SparseLU>
#include <algorithm>
#include <cmath>
#include <limits>

#include "esi/core/error.hpp"
#include "esi/linalg/sparse_lu.hpp"

namespace esi::method::detail {

void Evaluator::rhs(double t, const double* u, double* du) const {
  ++stats->rhs_evaluations;
  problem->rhs(problem->context, t, u, du);
}

void Evaluator::split(double t, const double* u, double* du_explicit, double* du_implicit) const {
  ++stats->rhs_evaluations;
  problem->rhs_split(problem->context, t, u, du_explicit, du_implicit);
}

void Evaluator::implicit_part(double t, const double* u, double* du_implicit,
                              double* scratch) const {
  if (problem->rhs_implicit) {
    ++stats->rhs_evaluations;
    problem->rhs_implicit(problem->context, t, u, du_implicit);
    return;
  }
  split(t, u, scratch, du_implicit);
}

void Evaluator::explicit_part(double t, const double* u, double* du_explicit,
                              double* scratch) const {
  if (problem->rhs_explicit) {
    ++stats->rhs_evaluations;
    problem->rhs_explicit(problem->context, t, u, du_explicit);
    return;
  }
  split(t, u, du_explicit, scratch);
}

namespace {
using SparseMatrix = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;
}  // namespace

struct LinearSystem::Impl {
  Evaluator eval;
  JacobianOf of;
  std::size_t n = 0;
  bool sparse = false;
  void (*analytic)(void*, double, const double*, double*) = nullptr;
  std::vector<double> csr_values;  // analytic Jacobian values in the problem's CSR order
  std::vector<double> u_perturbed, g_perturbed, scratch;
  Eigen::MatrixXd J, M;
  Eigen::PartialPivLU<Eigen::MatrixXd> dense_lu;
  // dense_lu's factors row by row (the transpose of its column-major storage), made by the
  // first transposed solve after a factorization: the transposed solves then run down
  // contiguous rows as the forward ones run down columns.
  std::vector<double> lu_rows;
  bool lu_rows_current = false;
  SparseMatrix sparse_M;
  std::vector<int> csr_to_value;  // csr_to_value[k]: slot of CSR nonzero k in sparse_M
  std::vector<int> diag_to_value;  // diag_to_value[i]: slot of M(i, i)
  Eigen::SparseLU<SparseMatrix, Eigen::COLAMDOrdering<int>> sparse_lu;
  bool eigen_ready = false;  // sparse_M and its symbolic analysis, built on first need
  Eigen::VectorXd rhs_copy;
  /// The planned LU of linalg (Markowitz order, diagonal pivots, no allocation per
  /// factorization) at one lane: about 20x faster than SparseLU's factorize on GEOS-Chem's
  /// 272-state Jacobian. A pivot it finds tiny hands that factorization to SparseLU (partial
  /// pivoting), so no step fails that SparseLU alone would have taken.
  bool planned = false;
  bool planned_factored = false;  // the last factorization is the planned one
  std::shared_ptr<const linalg::SparseLuPlan> shared;  // OdeProblem::lu_plans' or its own
  const linalg::SparseLuPlan& plan() const { return *shared; }
  linalg::LaneVector<double> lu_values;

  void setup_sparse();
  void setup_eigen();
  bool factorize_eigen(double alpha);
  void finite_difference_jacobian(double t, const double* u, const double* g_at_u);
  void scatter_analytic_to_dense();
  void evaluate_g(double t, const double* u, double* out) {
    if (of == JacobianOf::Rhs)
      eval.rhs(t, u, out);
    else
      eval.implicit_part(t, u, out, scratch.data());
  }
};

/// Systems up to this size factor with the planned LU; above it Markowitz planning (whose cost
/// grows faster than the nonzeros) is left to SparseLU's COLAMD.
constexpr std::size_t kPlannedLimit = 4096;

/// The plan for `pattern`: the problem's shared one when it has a cache and the cache holds a
/// plan for this pattern (made here when empty), else a plan of its own.
static std::shared_ptr<const linalg::SparseLuPlan> shared_plan(const OdeProblem& p, const linalg::Pattern& pattern) {
  if (!p.lu_plans) return std::make_shared<const linalg::SparseLuPlan>(linalg::plan_sparse_lu(pattern));
  SparseLuPlanCache& cache = *p.lu_plans;
  const std::lock_guard<std::mutex> lock(cache.mutex);
  const bool same = cache.row_ptr == pattern.row_ptr && cache.col == pattern.col;
  if (cache.plan && same) return cache.plan;
  auto plan = std::make_shared<const linalg::SparseLuPlan>(linalg::plan_sparse_lu(pattern));
  if (!cache.plan) {
    cache.row_ptr = pattern.row_ptr;
    cache.col = pattern.col;
    cache.plan = plan;
  }
  return plan;
}

void LinearSystem::Impl::setup_sparse() {
  const OdeProblem& p = *eval.problem;
  if (n <= kPlannedLimit) {
    linalg::Pattern pattern;
    pattern.n = int(n);
    pattern.row_ptr.assign(p.jac_row_ptr.begin(), p.jac_row_ptr.end());
    pattern.col.assign(p.jac_col.begin(), p.jac_col.end());
    try {
      shared = shared_plan(p, pattern);
      lu_values.resize(plan().nonzeros());
      planned = true;
      return;
    } catch (const Error&) {
      // A pattern the planner refuses (columns not increasing): SparseLU takes it as it is.
    }
  }
  setup_eigen();
}

void LinearSystem::Impl::setup_eigen() {
  eigen_ready = true;
  const OdeProblem& p = *eval.problem;
  std::vector<Eigen::Triplet<double, int>> entries;
  for (std::size_t i = 0; i < n; ++i) {
    entries.emplace_back(int(i), int(i), 0.0);
    for (int k = p.jac_row_ptr[i]; k < p.jac_row_ptr[i + 1]; ++k)
      entries.emplace_back(int(i), p.jac_col[k], 0.0);
  }
  sparse_M.resize(int(n), int(n));
  sparse_M.setFromTriplets(entries.begin(), entries.end());  // duplicates (diagonal) summed
  sparse_M.makeCompressed();
  const double* base = sparse_M.valuePtr();
  csr_to_value.resize(p.jac_col.size());
  diag_to_value.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    diag_to_value[i] = int(&sparse_M.coeffRef(int(i), int(i)) - base);
    for (int k = p.jac_row_ptr[i]; k < p.jac_row_ptr[i + 1]; ++k)
      csr_to_value[k] = int(&sparse_M.coeffRef(int(i), p.jac_col[k]) - base);
  }
  sparse_lu.analyzePattern(sparse_M);
}

LinearSystem::LinearSystem(const Evaluator& eval, JacobianOf of) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.eval = eval;
  m.of = of;
  m.n = eval.problem->size;
  m.analytic = of == JacobianOf::Rhs ? eval.problem->jacobian : eval.problem->implicit_jacobian;
  const bool has_pattern = eval.problem->jac_row_ptr.size() == m.n + 1;
  if (m.analytic && has_pattern) m.csr_values.resize(eval.problem->jac_col.size());
  m.sparse = m.analytic && has_pattern && m.n > kDenseLimit;
  m.u_perturbed.resize(m.n);
  m.g_perturbed.resize(m.n);
  m.scratch.resize(m.n);
  m.rhs_copy.resize(Eigen::Index(m.n));
  if (m.sparse) {
    m.setup_sparse();
  } else {
    m.J.setZero(Eigen::Index(m.n), Eigen::Index(m.n));
    m.M.setZero(Eigen::Index(m.n), Eigen::Index(m.n));
    m.dense_lu = Eigen::PartialPivLU<Eigen::MatrixXd>(Eigen::Index(m.n));
  }
}

LinearSystem::~LinearSystem() = default;
LinearSystem::LinearSystem(LinearSystem&&) noexcept = default;
LinearSystem& LinearSystem::operator=(LinearSystem&&) noexcept = default;

// Forward differences, one column per state, step sqrt(eps) * max(|u_j|, 1) as FiniteDiff.jl
// (the scale OrdinaryDiffEq uses); the perturbation actually applied is (u_j + d) - u_j.
void LinearSystem::Impl::finite_difference_jacobian(double t, const double* u,
                                                    const double* g_at_u) {
  const double sqrt_eps = std::sqrt(std::numeric_limits<double>::epsilon());
  std::copy(u, u + n, u_perturbed.begin());
  for (std::size_t j = 0; j < n; ++j) {
    const double step = sqrt_eps * std::max(std::abs(u[j]), 1.0);
    u_perturbed[j] = u[j] + step;
    const double applied = u_perturbed[j] - u[j];
    evaluate_g(t, u_perturbed.data(), g_perturbed.data());
    for (std::size_t i = 0; i < n; ++i)
      J(Eigen::Index(i), Eigen::Index(j)) = (g_perturbed[i] - g_at_u[i]) / applied;
    u_perturbed[j] = u[j];
  }
}

void LinearSystem::Impl::scatter_analytic_to_dense() {
  const OdeProblem& p = *eval.problem;
  J.setZero();
  for (std::size_t i = 0; i < n; ++i)
    for (int k = p.jac_row_ptr[i]; k < p.jac_row_ptr[i + 1]; ++k)
      J(Eigen::Index(i), p.jac_col[k]) = csr_values[k];
}

void LinearSystem::evaluate_jacobian(double t, const double* u, const double* g_at_u) {
  Impl& m = *impl_;
  ++m.eval.stats->jacobian_evaluations;
  if (m.csr_values.empty() && m.analytic == nullptr) {
    m.finite_difference_jacobian(t, u, g_at_u);
    return;
  }
  if (m.csr_values.empty()) {
    // An analytic callback without a CSR pattern cannot be read; fall back to differences.
    m.finite_difference_jacobian(t, u, g_at_u);
    return;
  }
  m.analytic(m.eval.problem->context, t, u, m.csr_values.data());
  if (!m.sparse) m.scatter_analytic_to_dense();
}

bool LinearSystem::load_jacobian(const double* values) {
  Impl& m = *impl_;
  if (m.csr_values.empty()) return false;
  std::copy(values, values + m.csr_values.size(), m.csr_values.begin());
  if (!m.sparse) m.scatter_analytic_to_dense();
  return true;
}

std::size_t LinearSystem::jacobian_size() const { return impl_->csr_values.size(); }

bool LinearSystem::factorize(double alpha) {
  Impl& m = *impl_;
  ++m.eval.stats->factorizations;
  if (!m.sparse) {
    m.M = -m.J;
    m.M.diagonal().array() += alpha;
    if (!m.M.allFinite()) return false;
    m.dense_lu.compute(m.M);
    m.lu_rows_current = false;
    const auto diag = m.dense_lu.matrixLU().diagonal();
    return diag.allFinite() && (diag.array() != 0.0).all();
  }
  m.planned_factored = false;
  if (m.planned) {
    if (!std::isfinite(alpha)) return false;
    for (double v : m.csr_values)
      if (!std::isfinite(v)) return false;
    linalg::assemble_shifted(m.plan(), m.csr_values.data(), &alpha, m.lu_values.data(), 1);
    std::uint8_t failed = 0;
    if (linalg::lu_factor(m.plan(), m.lu_values.data(), 1, std::span<std::uint8_t>(&failed, 1)) == 0) {
      m.planned_factored = true;
      return true;
    }
  }
  return m.factorize_eigen(alpha);
}

bool LinearSystem::Impl::factorize_eigen(double alpha) {
  if (!eigen_ready) setup_eigen();
  double* values = sparse_M.valuePtr();
  std::fill(values, values + sparse_M.nonZeros(), 0.0);
  for (std::size_t k = 0; k < csr_values.size(); ++k) values[csr_to_value[k]] -= csr_values[k];
  for (std::size_t i = 0; i < n; ++i) values[diag_to_value[i]] += alpha;
  for (Eigen::Index k = 0; k < sparse_M.nonZeros(); ++k)
    if (!std::isfinite(values[k])) return false;
  sparse_lu.factorize(sparse_M);  // allocates (Eigen's supernodal storage)
  return sparse_lu.info() == Eigen::Success;
}

bool LinearSystem::solve(double* x) {
  Impl& m = *impl_;
  ++m.eval.stats->linear_solves;
  if (m.planned_factored) {
    linalg::lu_solve(m.plan(), m.lu_values.data(), x, 1);
    return true;
  }
  Eigen::Map<Eigen::VectorXd> xv(x, Eigen::Index(m.n));
  m.rhs_copy = xv;
  if (!m.sparse) {
    xv.noalias() = m.dense_lu.solve(m.rhs_copy);
    return true;
  }
  xv = m.sparse_lu.solve(m.rhs_copy);
  return m.sparse_lu.info() == Eigen::Success;
}

bool LinearSystem::solve_transposed(double* x) {
  Impl& m = *impl_;
  if (m.planned_factored) {
    linalg::lu_solve_transposed(m.plan(), m.lu_values.data(), x, 1);
    return true;
  }
  Eigen::Map<Eigen::VectorXd> xv(x, Eigen::Index(m.n));
  m.rhs_copy = xv;
  if (!m.sparse) {
    xv.noalias() = m.dense_lu.transpose().solve(m.rhs_copy);
    return true;
  }
  xv = m.sparse_lu.transpose().solve(m.rhs_copy);
  return m.sparse_lu.info() == Eigen::Success;
}

const double* LinearSystem::jacobian_values() const {
  return impl_->csr_values.empty() ? nullptr : impl_->csr_values.data();
}

// ---- What sensitivity sweeps keep of a factorization, and their solves ----

// Only the planned sparse LU's factors are kept: a small dense LU costs about what copying
// its n^2 values into fresh tape memory does (measured on POLLU), so it is refactorized.
std::size_t LinearSystem::factor_size() const {
  const Impl& m = *impl_;
  return m.sparse && m.planned ? m.plan().nonzeros() + 1 : 1;  // the last slot: 1 when kept
}

void LinearSystem::save_factors(double* out) const {
  const Impl& m = *impl_;
  const std::size_t size = factor_size();
  out[size - 1] = 0;
  if (size == 1 || !m.planned_factored) return;  // dense, or Eigen's SparseLU fallback
  std::copy(m.lu_values.begin(), m.lu_values.end(), out);
  out[size - 1] = 1;
}

bool LinearSystem::load_factors(const double* in) {
  Impl& m = *impl_;
  if (in[factor_size() - 1] != 1) return false;
  std::copy(in, in + m.lu_values.size(), m.lu_values.begin());
  m.planned_factored = true;
  return true;
}

// Dense: with P A = L U (Eigen's convention: (P v)[perm[i]] = v[i]), A x = b is
// L U x = P b and A^T x = b is U^T L^T (P x) = b, written out over PartialPivLU's factors
// (Eigen's own transposed solve took 3x the forward solve's time at n = 20).
bool LinearSystem::sensitivity_solve(double* x, bool transposed) {
  Impl& m = *impl_;
  if (m.sparse) {
    if (!m.planned_factored) return transposed ? solve_transposed(x) : solve(x);
    ++m.eval.stats->linear_solves;
    if (transposed) linalg::lu_solve_transposed(m.plan(), m.lu_values.data(), x, 1);
    else linalg::lu_solve(m.plan(), m.lu_values.data(), x, 1);
    return true;
  }
  ++m.eval.stats->linear_solves;
  const std::size_t n = m.n;
  const double* lu = m.dense_lu.matrixLU().data();
  const int* perm = m.dense_lu.permutationP().indices().data();
  double* y = m.u_perturbed.data();  // scratch of n values
  // Column c of the factors is lu[c * n ...]: the loops run down columns (L, U) or along
  // the rows of the transposes, both contiguous.
  if (!transposed) {
    for (std::size_t i = 0; i < n; ++i) y[perm[i]] = x[i];
    for (std::size_t c = 0; c < n; ++c)  // L (unit lower)
      for (std::size_t r = c + 1; r < n; ++r) y[r] -= lu[c * n + r] * y[c];
    for (std::size_t c = n; c-- > 0;) {  // U
      y[c] /= lu[c * n + c];
      for (std::size_t r = 0; r < c; ++r) y[r] -= lu[c * n + r] * y[c];
    }
    std::copy(y, y + n, x);
    return true;
  }
  if (!m.lu_rows_current) {
    m.lu_rows.resize(n * n);
    for (std::size_t c = 0; c < n; ++c)
      for (std::size_t r = 0; r < n; ++r) m.lu_rows[r * n + c] = lu[c * n + r];
    m.lu_rows_current = true;
  }
  // Row r of the factors is lu_rows[r * n ...]: column r of U^T and of L^T, so both
  // substitutions are column sweeps (axpy over a contiguous row), with no running sum.
  // (Eigen's packets vectorize the sweeps, which -O2 leaves scalar.)
  using Segment = Eigen::Map<Eigen::VectorXd>;
  using ConstSegment = Eigen::Map<const Eigen::VectorXd>;
  const double* rows = m.lu_rows.data();
  std::copy(x, x + n, y);
  for (std::size_t c = 0; c < n; ++c) {  // U^T (lower)
    const double yc = y[c] / rows[c * n + c];
    y[c] = yc;
    const auto tail = Eigen::Index(n - c - 1);
    Segment(y + c + 1, tail) -= yc * ConstSegment(rows + c * n + c + 1, tail);
  }
  for (std::size_t c = n; c-- > 0;)  // L^T (unit upper)
    Segment(y, Eigen::Index(c)) -= y[c] * ConstSegment(rows + c * n, Eigen::Index(c));
  for (std::size_t i = 0; i < n; ++i) x[i] = y[perm[i]];  // x = P^T (P x)
  return true;
}

double LinearSystem::gershgorin_bound() const {
  const Impl& m = *impl_;
  double bound = 0;
  if (!m.sparse) {
    for (Eigen::Index i = 0; i < m.J.rows(); ++i) bound = std::max(bound, m.J.row(i).cwiseAbs().sum());
    return bound;
  }
  const OdeProblem& p = *m.eval.problem;
  for (std::size_t i = 0; i < m.n; ++i) {
    double row = 0;
    for (int k = p.jac_row_ptr[i]; k < p.jac_row_ptr[i + 1]; ++k) row += std::abs(m.csr_values[k]);
    bound = std::max(bound, row);
  }
  return bound;
}

}  // namespace esi::method::detail
