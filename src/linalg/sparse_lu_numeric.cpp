// lu_solve and assemble_shifted of the lane-batched LU (the factorisation and the operation
// encoding: lu_factor.cpp). Values are lane-SoA (entry q of lane l at v[q * L + l]); every
// arithmetic statement is a loop over the L lanes of one entry.
//
// Solving walks the factor rows in pivot order on x in ORIGINAL index order: plan.solve_ops[q]
// is the original index of the column of entry q, so no permutation pass is needed; forward
// substitution accumulates each row in registers (unit diagonal), back substitution multiplies
// by the reciprocal pivot lu_factor left on the diagonal.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "esi/linalg/sparse_lu.hpp"
#include "linalg/lanes.hpp"

namespace esi::linalg {
namespace {

using std::size_t;

template <class T, int L>
[[gnu::always_inline]] inline void solve_lanes(const SparseLuPlan& plan, const T* v, T* x) {
  const int n = plan.n;
  const int* row_ptr = plan.row_ptr.data();
  const int* diag = plan.diag.data();
  const int* order = plan.order.data();
  const std::int32_t* source = plan.solve_ops.data();
  for (int k = 0; k < n; ++k) {  // L y = P b (unit diagonal)
    T* xt = x + static_cast<size_t>(order[k]) * L;
    T acc[L];
    ESI_LANES for (int l = 0; l < L; ++l) acc[l] = xt[l];
    for (int q = row_ptr[k]; q < diag[k]; ++q) {
      const T* a = v + static_cast<size_t>(q) * L;
      const T* xs = x + static_cast<size_t>(source[q]) * L;
      ESI_LANES for (int l = 0; l < L; ++l) acc[l] -= a[l] * xs[l];
    }
    ESI_LANES for (int l = 0; l < L; ++l) xt[l] = acc[l];
  }
  for (int k = n - 1; k >= 0; --k) {  // U x = y
    T* xt = x + static_cast<size_t>(order[k]) * L;
    T acc[L];
    ESI_LANES for (int l = 0; l < L; ++l) acc[l] = xt[l];
    for (int q = diag[k] + 1; q < row_ptr[k + 1]; ++q) {
      const T* a = v + static_cast<size_t>(q) * L;
      const T* xs = x + static_cast<size_t>(source[q]) * L;
      ESI_LANES for (int l = 0; l < L; ++l) acc[l] -= a[l] * xs[l];
    }
    const T* inverse_pivot = v + static_cast<size_t>(diag[k]) * L;
    ESI_LANES for (int l = 0; l < L; ++l) xt[l] = acc[l] * inverse_pivot[l];
  }
}

template <class T, int L>
[[gnu::always_inline]] inline void assemble_lanes(const SparseLuPlan& plan, const T* jacobian,
                                                  const T* shift, T* v) {
  std::fill(v, v + plan.col.size() * L, T(0));
  const size_t inputs = plan.from_input.size();
  for (size_t j = 0; j < inputs; ++j) {
    T* d = v + static_cast<size_t>(plan.from_input[j]) * L;
    const T* s = jacobian + j * L;
    ESI_LANES for (int l = 0; l < L; ++l) d[l] = -s[l];
  }
  for (int i = 0; i < plan.n; ++i) {  // -J_ii + s == s - J_ii exactly (IEEE subtraction)
    T* d = v + static_cast<size_t>(plan.diag_of[i]) * L;
    ESI_LANES for (int l = 0; l < L; ++l) d[l] += shift[l];
  }
}

#define ESI_LU_SOLVE_KERNELS(T, L)                                                            \
  ESI_LU_CLONES void solve_##T##_##L(const SparseLuPlan& p, const T* v, T* x) {              \
    solve_lanes<T, L>(p, v, x);                                                               \
  }                                                                                           \
  ESI_LU_CLONES void assemble_##T##_##L(const SparseLuPlan& p, const T* j, const T* s, T* v) { \
    assemble_lanes<T, L>(p, j, s, v);                                                         \
  }
ESI_LU_ALL_WIDTHS(ESI_LU_SOLVE_KERNELS, double)
ESI_LU_ALL_WIDTHS(ESI_LU_SOLVE_KERNELS, float)

void solve_dispatch(const SparseLuPlan& p, const double* v, double* x, int lanes) {
  ESI_LU_DISPATCH(solve, double, lanes, p, v, x)
}
void solve_dispatch(const SparseLuPlan& p, const float* v, float* x, int lanes) {
  ESI_LU_DISPATCH(solve, float, lanes, p, v, x)
}
void assemble_dispatch(const SparseLuPlan& p, const double* j, const double* s, double* v,
                       int lanes) {
  ESI_LU_DISPATCH(assemble, double, lanes, p, j, s, v)
}
void assemble_dispatch(const SparseLuPlan& p, const float* j, const float* s, float* v,
                       int lanes) {
  ESI_LU_DISPATCH(assemble, float, lanes, p, j, s, v)
}

}  // namespace

template <class T>
void lu_solve(const SparseLuPlan& plan, const T* factored, T* x, int lanes) {
  solve_dispatch(plan, factored, x, lanes);
}

// M = P^T L U P, so M^T x = b is U^T L^T (P x) = P b: forward through U^T (pivot first, then
// its row scattered down), then back through L^T (unit diagonal, each row scattered up). Rows
// of the factor are read as columns of the transpose, so no transposed copy is stored. One
// loop over lanes per entry; the adjoint runs this once per stage, far less often than
// lu_solve, so it is not instantiated per width.
template <class T>
void lu_solve_transposed(const SparseLuPlan& plan, const T* v, T* x, int lanes) {
  const auto L = static_cast<size_t>(lanes);
  const int* row_ptr = plan.row_ptr.data();
  const int* diag = plan.diag.data();
  const int* order = plan.order.data();
  const std::int32_t* source = plan.solve_ops.data();
  for (int k = 0; k < plan.n; ++k) {  // U^T z = P b
    T* xk = x + static_cast<size_t>(order[k]) * L;
    const T* inverse_pivot = v + static_cast<size_t>(diag[k]) * L;
    for (size_t l = 0; l < L; ++l) xk[l] *= inverse_pivot[l];
    for (int q = diag[k] + 1; q < row_ptr[k + 1]; ++q) {
      const T* a = v + static_cast<size_t>(q) * L;
      T* xs = x + static_cast<size_t>(source[q]) * L;
      for (size_t l = 0; l < L; ++l) xs[l] -= a[l] * xk[l];
    }
  }
  for (int k = plan.n - 1; k >= 0; --k) {  // L^T (P x) = z
    const T* xk = x + static_cast<size_t>(order[k]) * L;
    for (int q = row_ptr[k]; q < diag[k]; ++q) {
      const T* a = v + static_cast<size_t>(q) * L;
      T* xs = x + static_cast<size_t>(source[q]) * L;
      for (size_t l = 0; l < L; ++l) xs[l] -= a[l] * xk[l];
    }
  }
}

template <class T>
void assemble_shifted(const SparseLuPlan& plan, const T* jacobian, const T* shift, T* values,
                      int lanes) {
  assemble_dispatch(plan, jacobian, shift, values, lanes);
}

template void lu_solve<double>(const SparseLuPlan&, const double*, double*, int);
template void lu_solve<float>(const SparseLuPlan&, const float*, float*, int);
template void lu_solve_transposed<double>(const SparseLuPlan&, const double*, double*, int);
template void lu_solve_transposed<float>(const SparseLuPlan&, const float*, float*, int);
template void assemble_shifted<double>(const SparseLuPlan&, const double*, const double*, double*,
                                       int);
template void assemble_shifted<float>(const SparseLuPlan&, const float*, const float*, float*,
                                      int);

}  // namespace esi::linalg
