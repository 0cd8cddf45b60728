// lu_factor: the lane-batched LU's factorisation (solve and assembly: sparse_lu_numeric.cpp,
// kept at -O2, where -O3 made the solve 2x slower; this file is built with -O3). Values are
// lane-SoA (entry q of lane l at v[q * L + l]); every arithmetic statement is a loop over the L
// lanes of one entry, so with L a compile-time constant it becomes a few vector instructions.
//
// Operation encoding (built by plan_sparse_lu, sparse_lu_plan.cpp):
//   Factorisation is row-oriented (Doolittle "IKJ", as KPP's KppDecomp): each entry of row k
//   receives its updates in increasing pivot order, the multiplier of L entry (k, c) formed
//   when that entry is final:
//       l = a[q] * r[c]                        (r[c] = 1 / pivot c, see below)
//       a[t] -= l * a[s]   for s in (diag[c], row_ptr[c+1]) — the U part of row c.
//   Rows are eliminated kFactorRowGroup (G) at a time, so that each U entry a[s] is loaded once
//   for all rows of the group that hold pivot c (fullchem: 41 % fewer U loads at G = 4, counted
//   in plan.factor_u_loads; the factorisation 1.3x faster at 16 lanes; bench/RESULTS.md).
//   Per group of rows k0 .. k1-1:
//       P, then P times:  c, h, q_1 .. q_h, then for every s of row c's U part: t_1 .. t_h
//   — the distinct pivots c of the group's L entries, increasing; h the group rows that hold
//   c (q_r their L positions) and t_r the target of a[s] in each of them. A pivot inside the
//   group (c >= k0) is used only after its row is finished; each row is finished (pivot
//   checked, replaced by its reciprocal) once the pivots before it are applied. Per entry this
//   is the same operation sequence as eliminating one row at a time: the same bits.
//   Once row k is eliminated and its pivot checked, the diagonal entry is replaced by its
//   reciprocal: one division per pivot instead of one per multiplier (a division's latency
//   sits on the chain from one multiplier of row k to the next; L = 1 runs 2-3x faster). The
//   bits differ from dividing, the same way in every lane.
//   (Finishing each entry in a register instead, one store per entry rather than per update,
//   was no faster once buffers were 64-byte aligned, except at L = 1; see bench/RESULTS.md.)
//   plan.solve_ops (the solve's encoding) is described in sparse_lu_numeric.cpp.
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

#include "esi/linalg/sparse_lu.hpp"
#include "linalg/lanes.hpp"

namespace esi::linalg {
namespace {

using std::size_t;

// Shifted: v holds J in factor storage (0 at fill), and row k becomes shift I - J in the
// row-maximum pass just before its elimination: -J_ij, and -J_ii + s at the diagonal, the
// values assemble_shifted writes. Fill starts at -0 here and at +0 there; the two agree
// after the first nonzero update (z - p == -p for either zero), so they can differ only in
// the sign of a zero that no nonzero product ever reached.
// One entry of scan_row: x = a (Form 0), -a (1) or -a + shift (2), stored back unless Form 0,
// folded into the running maximum magnitude and the inf/NaN detector (x - x is NaN only then).
template <class T, int L, int Form>
[[gnu::always_inline]] inline void scan_entry(T* a, const T* shift, T* max_so_far, T* nan_so_far) {
  ESI_LANES for (int l = 0; l < L; ++l) {
    T x = a[l];
    if constexpr (Form >= 1) x = -x;
    if constexpr (Form == 2) x = x + shift[l];
    if constexpr (Form >= 1) a[l] = x;
    const T m = std::abs(x);
    max_so_far[l] = m > max_so_far[l] ? m : max_so_far[l];
    nan_so_far[l] += x - x;
  }
}

// Row k's pass before elimination: its largest magnitude and whether an entry is inf or NaN,
// after forming shift - J in place when Shifted.
template <class T, int L, bool Shifted>
[[gnu::always_inline]] inline void scan_row(const SparseLuPlan& plan, int k, T* v, const T* shift,
                                            T* rowmax, T* nonfinite) {
  // Local accumulators, each entry formed in a register: through the rowmax/nonfinite pointers
  // g++ stored both after every entry and loaded the entry again (it cannot rule out aliasing
  // with v); about 1-2 % of a fullchem lane-pool step.
  T max_so_far[L], nan_so_far[L];
  ESI_LANES for (int l = 0; l < L; ++l) max_so_far[l] = 0, nan_so_far[l] = 0;
  const int begin = plan.row_ptr[k], d = plan.diag[k], end = plan.row_ptr[k + 1];
  constexpr int kOff = Shifted ? 1 : 0, kDiag = Shifted ? 2 : 0;
  for (int q = begin; q < d; ++q)
    scan_entry<T, L, kOff>(v + static_cast<size_t>(q) * L, shift, max_so_far, nan_so_far);
  scan_entry<T, L, kDiag>(v + static_cast<size_t>(d) * L, shift, max_so_far, nan_so_far);
  for (int q = d + 1; q < end; ++q)
    scan_entry<T, L, kOff>(v + static_cast<size_t>(q) * L, shift, max_so_far, nan_so_far);
  ESI_LANES for (int l = 0; l < L; ++l) rowmax[l] = max_so_far[l], nonfinite[l] = nan_so_far[l];
}

// t -= m[r] * u for every U entry u of the pivot row and each of the M group rows r that hold
// the pivot: one load of u per M updates.
template <class T, int L, int M>
[[gnu::always_inline]] inline void update_rows(T* v, const std::int32_t*& target, const T (*m)[L],
                                               int begin, int end) {
  for (int s = begin; s < end; ++s) {
    const T* u = v + static_cast<size_t>(s) * L;
    for (int r = 0; r < M; ++r) {
      T* t = v + static_cast<size_t>(target[r]) * L;
      ESI_LANES for (int l = 0; l < L; ++l) t[l] -= m[r][l] * u[l];
    }
    target += M;
  }
}

template <class T, int L, bool Shifted>
[[gnu::always_inline]] inline int factor_lanes(const SparseLuPlan& plan, T* v,
                                               std::uint8_t* lane_failed, T tiny,
                                               const T* shift) {
  constexpr int G = kFactorRowGroup;
  constexpr T kLargest = std::numeric_limits<T>::max();
  const int n = plan.n;
  const int* row_ptr = plan.row_ptr.data();
  const int* diag = plan.diag.data();
  const std::int32_t* op = plan.ops.data();
  T failed[L];  // 0 or 1 per lane
  ESI_LANES for (int l = 0; l < L; ++l) failed[l] = 0;
  T rowmax[G][L], nonfinite[G][L];  // nonfinite: 0, or NaN once an entry was inf or NaN
  T multiplier[G][L];

  for (int k0 = 0; k0 < n; k0 += G) {
    const int k1 = std::min(n, k0 + G);
    for (int k = k0; k < k1; ++k)
      scan_row<T, L, Shifted>(plan, k, v, shift, rowmax[k - k0], nonfinite[k - k0]);
    // Row k is final once every pivot before it was applied: check its pivot, store 1 / pivot.
    int next = k0;
    auto finish_rows_through = [&](int last) {
      for (; next <= last; ++next) {
        T* d = v + static_cast<size_t>(diag[next]) * L;
        const T* rm = rowmax[next - k0];
        const T* nf = nonfinite[next - k0];
        ESI_LANES for (int l = 0; l < L; ++l) {
          const T m = std::abs(d[l]);
          const bool ok = (m > tiny * rm[l] + nf[l]) & (m <= kLargest);
          failed[l] = ok ? failed[l] : T(1);
          d[l] = T(1) / d[l];
        }
      }
    };
    const int pivots = *op++;
    for (int i = 0; i < pivots; ++i) {
      const int c = *op++;
      const int holders = *op++;
      finish_rows_through(c);  // a pivot inside the group: its row is complete
      const T* inverse_pivot = v + static_cast<size_t>(diag[c]) * L;
      for (int r = 0; r < holders; ++r) {
        T* lik = v + static_cast<size_t>(*op++) * L;
        ESI_LANES for (int l = 0; l < L; ++l) multiplier[r][l] = lik[l] = lik[l] * inverse_pivot[l];
      }
      const int begin = diag[c] + 1, end = row_ptr[c + 1];
      // 1 .. kFactorRowGroup holders (the plan names at least one), each count its own loop
      static_assert(kFactorRowGroup == 4, "one update_rows case per holder count");
      switch (holders) {
        case 1:
          update_rows<T, L, 1>(v, op, multiplier, begin, end);
          break;
        case 2:
          update_rows<T, L, 2>(v, op, multiplier, begin, end);
          break;
        case 3:
          update_rows<T, L, 3>(v, op, multiplier, begin, end);
          break;
        default:
          update_rows<T, L, 4>(v, op, multiplier, begin, end);
          break;
      }
    }
    finish_rows_through(k1 - 1);
  }
  int count = 0;
  for (int l = 0; l < L; ++l) {
    lane_failed[l] = failed[l] != 0 ? 1 : 0;
    count += lane_failed[l];
  }
  return count;
}

#define ESI_LU_FACTOR_KERNEL(T, L)                                                            \
  ESI_LU_CLONES int factor_##T##_##L(const SparseLuPlan& p, T* v, std::uint8_t* f, T tiny) { \
    return factor_lanes<T, L, false>(p, v, f, tiny, nullptr);                                 \
  }                                                                                           \
  ESI_LU_CLONES int factor_shifted_##T##_##L(const SparseLuPlan& p, T* v, std::uint8_t* f,   \
                                             T tiny, const T* s) {                            \
    return factor_lanes<T, L, true>(p, v, f, tiny, s);                                        \
  }
ESI_LU_ALL_WIDTHS(ESI_LU_FACTOR_KERNEL, double)
ESI_LU_ALL_WIDTHS(ESI_LU_FACTOR_KERNEL, float)

int factor_dispatch(const SparseLuPlan& p, double* v, int lanes, std::uint8_t* f, double tiny) {
  ESI_LU_DISPATCH(factor, double, lanes, p, v, f, tiny)
  return 0;
}
int factor_dispatch(const SparseLuPlan& p, float* v, int lanes, std::uint8_t* f, float tiny) {
  ESI_LU_DISPATCH(factor, float, lanes, p, v, f, tiny)
  return 0;
}

int factor_shifted_dispatch(const SparseLuPlan& p, double* v, int lanes, std::uint8_t* f,
                            double tiny, const double* s) {
  ESI_LU_DISPATCH(factor_shifted, double, lanes, p, v, f, tiny, s)
  return 0;
}
int factor_shifted_dispatch(const SparseLuPlan& p, float* v, int lanes, std::uint8_t* f,
                            float tiny, const float* s) {
  ESI_LU_DISPATCH(factor_shifted, float, lanes, p, v, f, tiny, s)
  return 0;
}

}  // namespace

template <class T>
int lu_factor_shifted(const SparseLuPlan& plan, T* values, const T* shift, int lanes,
                      std::span<std::uint8_t> lane_failed, T tiny) {
  ESI_ASSERT(lanes >= 1 && lane_failed.size() >= static_cast<size_t>(lanes));
  return factor_shifted_dispatch(plan, values, lanes, lane_failed.data(), tiny, shift);
}

template int lu_factor_shifted<double>(const SparseLuPlan&, double*, const double*, int,
                                       std::span<std::uint8_t>, double);
template int lu_factor_shifted<float>(const SparseLuPlan&, float*, const float*, int,
                                      std::span<std::uint8_t>, float);

template <class T>
int lu_factor(const SparseLuPlan& plan, T* values, int lanes, std::span<std::uint8_t> lane_failed,
              T tiny) {
  ESI_ASSERT(lanes >= 1 && lane_failed.size() >= static_cast<size_t>(lanes));
  return factor_dispatch(plan, values, lanes, lane_failed.data(), tiny);
}

template int lu_factor<double>(const SparseLuPlan&, double*, int, std::span<std::uint8_t>, double);
template int lu_factor<float>(const SparseLuPlan&, float*, int, std::span<std::uint8_t>, float);

}  // namespace esi::linalg
