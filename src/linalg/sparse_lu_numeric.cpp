// Numeric work of the lane-batched LU: assemble s I - J, factor, solve. Values are lane-SoA
// (entry q of lane l at v[q * L + l]); every arithmetic statement is a loop over the L lanes of
// one entry, so with L a compile-time constant it becomes a few vector instructions.
//
// Operation encoding (built by plan_sparse_lu, sparse_lu_plan.cpp):
//   Factorisation is row-oriented (Doolittle "IKJ", as KPP's KppDecomp): factor row k is
//   finished before row k+1 is touched. For each L entry q of row k (column c < k, increasing):
//       l = a[q] * r[c]                         (r[c] = 1 / pivot c, see below)
//       a[t] -= l * a[s]   for s in (diag[c], row_ptr[c+1]) — the U part of row c —
//   where the targets t (the entry of row k in column col[s]) are read in sequence from
//   plan.ops; nothing else is stored, the rest follows from row_ptr / col / diag.
//   Each entry receives its updates in increasing pivot order (the order a right-looking
//   elimination applies them too).
//   Once row k is eliminated and its pivot checked, the diagonal entry is replaced by its
//   reciprocal: one division per pivot instead of one per multiplier. A division's latency sits
//   on the elimination's critical path (the next multiplier of row k often depends on the last
//   update), so at L = 1 this is three times faster; the bits differ from dividing, the same
//   way in every lane.
//   Solving walks the factor rows in pivot order on x in ORIGINAL index order:
//   plan.solve_ops[q] is the original index of the column of entry q, so no permutation pass
//   is needed; back substitution multiplies by the stored reciprocal.
//
// Tiny pivots: before row k is eliminated its entries are still the assembled input, so one
// pass over them gives the row's largest magnitude (and whether any entry is inf or NaN). After
// elimination the lane fails if !(|pivot| > tiny * rowmax) or the pivot is not finite. All
// comparisons are branch-free per lane; a failed lane keeps computing garbage on its own.
//
// Bitwise reproducibility: this module is compiled with -ffp-contract=off, no operation mixes
// lanes, and the per-lane operation sequence does not depend on L, so a cell gives the same
// bits in any lane, at any lane width and in any ISA clone (scalar, SSE2, AVX2, AVX-512: all
// IEEE-754 round-to-nearest adds, multiplies and divisions).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "esi/core/error.hpp"
#include "esi/linalg/sparse_lu.hpp"

// x86-64 builds keep the baseline ISA for the library but give the hot kernels AVX2 and
// AVX-512 clones picked at load time (GCC ifunc). Sanitizer builds and other compilers get the
// plain function.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(ESI_LU_NO_CLONES)
#define ESI_LU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ESI_LU_CLONES
#endif

#if defined(__clang__)
#define ESI_LANES _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define ESI_LANES _Pragma("GCC ivdep")
#else
#define ESI_LANES
#endif

namespace esi::linalg {
namespace {

using std::size_t;

template <class T, int L>
[[gnu::always_inline]] inline int factor_lanes(const SparseLuPlan& plan, T* v,
                                               std::uint8_t* lane_failed, T tiny) {
  constexpr T kLargest = std::numeric_limits<T>::max();
  const int n = plan.n;
  const int* row_ptr = plan.row_ptr.data();
  const int* col = plan.col.data();
  const int* diag = plan.diag.data();
  const std::int32_t* target = plan.ops.data();
  T failed[L];  // 0 or 1 per lane
  ESI_LANES for (int l = 0; l < L; ++l) failed[l] = 0;

  for (int k = 0; k < n; ++k) {
    T rowmax[L], nonfinite[L];  // nonfinite: 0, or NaN once an entry was inf or NaN
    ESI_LANES for (int l = 0; l < L; ++l) rowmax[l] = 0, nonfinite[l] = 0;
    for (int q = row_ptr[k]; q < row_ptr[k + 1]; ++q) {
      const T* a = v + static_cast<size_t>(q) * L;
      ESI_LANES for (int l = 0; l < L; ++l) {
        const T m = std::abs(a[l]);
        rowmax[l] = m > rowmax[l] ? m : rowmax[l];
        nonfinite[l] += a[l] - a[l];
      }
    }
    for (int q = row_ptr[k]; q < diag[k]; ++q) {
      const int c = col[q];
      T* lik = v + static_cast<size_t>(q) * L;
      const T* inverse_pivot = v + static_cast<size_t>(diag[c]) * L;
      T multiplier[L];
      ESI_LANES for (int l = 0; l < L; ++l) multiplier[l] = lik[l] = lik[l] * inverse_pivot[l];
      const int end = row_ptr[c + 1];
      for (int s = diag[c] + 1; s < end; ++s) {
        T* t = v + static_cast<size_t>(*target++) * L;
        const T* u = v + static_cast<size_t>(s) * L;
        ESI_LANES for (int l = 0; l < L; ++l) t[l] -= multiplier[l] * u[l];
      }
    }
    T* d = v + static_cast<size_t>(diag[k]) * L;
    ESI_LANES for (int l = 0; l < L; ++l) {
      const T m = std::abs(d[l]);
      const bool ok = (m > tiny * rowmax[l] + nonfinite[l]) & (m <= kLargest);
      failed[l] = ok ? failed[l] : T(1);
      d[l] = T(1) / d[l];
    }
  }
  int count = 0;
  for (int l = 0; l < L; ++l) {
    lane_failed[l] = failed[l] != 0 ? 1 : 0;
    count += lane_failed[l];
  }
  return count;
}

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

// One out-of-line (and ISA-cloned) function per element type and lane width.
#define ESI_LU_KERNELS(T, L)                                                                  \
  ESI_LU_CLONES int factor_##T##_##L(const SparseLuPlan& p, T* v, std::uint8_t* f, T tiny) { \
    return factor_lanes<T, L>(p, v, f, tiny);                                                 \
  }                                                                                           \
  ESI_LU_CLONES void solve_##T##_##L(const SparseLuPlan& p, const T* v, T* x) {              \
    solve_lanes<T, L>(p, v, x);                                                               \
  }                                                                                           \
  ESI_LU_CLONES void assemble_##T##_##L(const SparseLuPlan& p, const T* j, const T* s, T* v) { \
    assemble_lanes<T, L>(p, j, s, v);                                                         \
  }
#define ESI_LU_ALL_WIDTHS(T) \
  ESI_LU_KERNELS(T, 1)       \
  ESI_LU_KERNELS(T, 2)       \
  ESI_LU_KERNELS(T, 4)       \
  ESI_LU_KERNELS(T, 8)       \
  ESI_LU_KERNELS(T, 16)      \
  ESI_LU_KERNELS(T, 32)      \
  ESI_LU_KERNELS(T, 64)
ESI_LU_ALL_WIDTHS(double)
ESI_LU_ALL_WIDTHS(float)

#define ESI_LU_DISPATCH(fn, T, lanes, ...)          \
  switch (lanes) {                                  \
    case 1: return fn##_##T##_1(__VA_ARGS__);       \
    case 2: return fn##_##T##_2(__VA_ARGS__);       \
    case 4: return fn##_##T##_4(__VA_ARGS__);       \
    case 8: return fn##_##T##_8(__VA_ARGS__);       \
    case 16: return fn##_##T##_16(__VA_ARGS__);     \
    case 32: return fn##_##T##_32(__VA_ARGS__);     \
    case 64: return fn##_##T##_64(__VA_ARGS__);     \
    default: ESI_ASSERT(!"lanes is one of kLuLaneWidths"); \
  }

int factor_dispatch(const SparseLuPlan& p, double* v, int lanes, std::uint8_t* f, double tiny) {
  ESI_LU_DISPATCH(factor, double, lanes, p, v, f, tiny)
  return 0;
}
int factor_dispatch(const SparseLuPlan& p, float* v, int lanes, std::uint8_t* f, float tiny) {
  ESI_LU_DISPATCH(factor, float, lanes, p, v, f, tiny)
  return 0;
}
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
int lu_factor(const SparseLuPlan& plan, T* values, int lanes, std::span<std::uint8_t> lane_failed,
              T tiny) {
  ESI_ASSERT(lanes >= 1 && lane_failed.size() >= static_cast<size_t>(lanes));
  return factor_dispatch(plan, values, lanes, lane_failed.data(), tiny);
}

template <class T>
void lu_solve(const SparseLuPlan& plan, const T* factored, T* x, int lanes) {
  solve_dispatch(plan, factored, x, lanes);
}

template <class T>
void assemble_shifted(const SparseLuPlan& plan, const T* jacobian, const T* shift, T* values,
                      int lanes) {
  assemble_dispatch(plan, jacobian, shift, values, lanes);
}

template int lu_factor<double>(const SparseLuPlan&, double*, int, std::span<std::uint8_t>, double);
template int lu_factor<float>(const SparseLuPlan&, float*, int, std::span<std::uint8_t>, float);
template void lu_solve<double>(const SparseLuPlan&, const double*, double*, int);
template void lu_solve<float>(const SparseLuPlan&, const float*, float*, int);
template void assemble_shifted<double>(const SparseLuPlan&, const double*, const double*, double*,
                                       int);
template void assemble_shifted<float>(const SparseLuPlan&, const float*, const float*, float*,
                                      int);

}  // namespace esi::linalg
