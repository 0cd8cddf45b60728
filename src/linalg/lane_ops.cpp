// Lane-SoA stage operations (lane_ops.hpp): one kernel per width (compile-time L, so every lane
// loop is a few vector instructions with the running sums in registers), ISA clones per
// lanes.hpp.
#include "esi/linalg/lane_ops.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "linalg/lanes.hpp"

namespace esi::linalg {
namespace {

using std::size_t;

/// acc[l] = sum_j w[j] k_j[x0 + l] over the stages with a nonzero weight, in stage order: one
/// state's weighted stage sum in every lane (the same sums in the same order wherever used).
template <int L>
[[gnu::always_inline]] inline void weighted_stage_sum(const double* k, size_t k_stride, size_t x0,
                                                      const double* w, int count, double* acc) {
  ESI_LANES for (int l = 0; l < L; ++l) acc[l] = 0.0;
  for (int j = 0; j < count; ++j) {
    if (w[j] == 0.0) continue;
    const double wj = w[j];
    const double* kj = k + size_t(j) * k_stride + x0;
    ESI_LANES for (int l = 0; l < L; ++l) acc[l] += wj * kj[l];
  }
}

template <int L>
[[gnu::always_inline]] inline void combination(size_t n, const double* base, const double* k,
                                               size_t k_stride, const double* w, int count,
                                               double* out) {
  for (size_t x0 = 0; x0 < n * L; x0 += L) {
    double acc[L];
    weighted_stage_sum<L>(k, k_stride, x0, w, count, acc);
    if (base) {
      ESI_LANES for (int l = 0; l < L; ++l) out[x0 + l] = base[x0 + l] + acc[l];
    } else {
      ESI_LANES for (int l = 0; l < L; ++l) out[x0 + l] = acc[l];
    }
  }
}

template <int L>
[[gnu::always_inline]] inline void stage_rhs(size_t n, const double* f, const double* ft,
                                             const double* k, size_t k_stride, const double* c,
                                             int count, const double* coef, const double* scale,
                                             double* out) {
  double s[L];
  ESI_LANES for (int l = 0; l < L; ++l) s[l] = scale[l];
  for (size_t x0 = 0; x0 < n * L; x0 += L) {
    double coupling[L];
    ESI_LANES for (int l = 0; l < L; ++l) coupling[l] = 0.0;
    for (int j = 0; j < count; ++j) {
      if (c[j] == 0.0) continue;
      const double* kj = k + size_t(j) * k_stride + x0;
      const double* cj = coef + size_t(j) * L;
      ESI_LANES for (int l = 0; l < L; ++l) coupling[l] += cj[l] * kj[l];
    }
    if (ft) {
      ESI_LANES for (int l = 0; l < L; ++l) out[x0 + l] =
          f[x0 + l] + coupling[l] + s[l] * ft[x0 + l];
    } else {
      ESI_LANES for (int l = 0; l < L; ++l) out[x0 + l] = f[x0 + l] + coupling[l];
    }
  }
}

/// One state's terms of the Hairer weighted RMS norm of every lane: (e / (atol + rtol *
/// max(|u0|, |u1|)))^2 added to sum, and bad set where u1 is not finite.
template <int L>
[[gnu::always_inline]] inline void add_weighted_squares(const double* e, const double* a0,
                                                        const double* a1, double at, double rtol,
                                                        double* sum, double* bad) {
  constexpr double kLargest = std::numeric_limits<double>::max();
  ESI_LANES for (int l = 0; l < L; ++l) {
    const double m1 = std::abs(a1[l]);
    const double w = e[l] / (at + rtol * std::max(std::abs(a0[l]), m1));
    sum[l] += w * w;
    bad[l] = m1 <= kLargest ? bad[l] : 1.0;
  }
}

template <int L>
[[gnu::always_inline]] inline void finish_norms(size_t n, const double* sum, const double* bad,
                                                double* out, std::uint8_t* nonfinite) {
  for (int l = 0; l < L; ++l) {
    out[l] = std::sqrt(sum[l] / double(n));
    nonfinite[l] = bad[l] != 0.0 ? 1 : 0;
  }
}

template <int L>
[[gnu::always_inline]] inline void error_norms(size_t n, const double* e, const double* u0,
                                               const double* u1, const double* atol, double rtol,
                                               double* out, std::uint8_t* nonfinite) {
  double sum[L], bad[L];
  ESI_LANES for (int l = 0; l < L; ++l) sum[l] = 0.0, bad[l] = 0.0;
  for (size_t i = 0; i < n; ++i)
    add_weighted_squares<L>(e + i * L, u0 + i * L, u1 + i * L, atol[i], rtol, sum, bad);
  finish_norms<L>(n, sum, bad, out, nonfinite);
}

template <int L>
[[gnu::always_inline]] inline void step_end(size_t n, const double* u0, const double* k,
                                            size_t k_stride, const double* b,
                                            const double* btilde, int stages, const double* atol,
                                            double rtol, double* u1, double* out,
                                            std::uint8_t* nonfinite) {
  double sum[L], bad[L];
  ESI_LANES for (int l = 0; l < L; ++l) sum[l] = 0.0, bad[l] = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const size_t x0 = i * L;
    if (b) {
      double acc[L];
      weighted_stage_sum<L>(k, k_stride, x0, b, stages, acc);
      ESI_LANES for (int l = 0; l < L; ++l) u1[x0 + l] = u0[x0 + l] + acc[l];
    }
    double e[L];
    weighted_stage_sum<L>(k, k_stride, x0, btilde, stages, e);
    add_weighted_squares<L>(e, u0 + x0, u1 + x0, atol[i], rtol, sum, bad);
  }
  finish_norms<L>(n, sum, bad, out, nonfinite);
}

template <int L>
[[gnu::always_inline]] inline void select(size_t n, const std::uint8_t* take, const double* from,
                                          double* to) {
  // A bitwise blend (all-ones mask: from's bits, else to's): branch-free, so it vectorizes,
  // where a per-lane conditional copy stayed a scalar loop with a branch per lane.
  std::uint64_t mask[L];
  for (int l = 0; l < L; ++l) mask[l] = take[l] != 0 ? ~std::uint64_t(0) : 0;
  for (size_t x0 = 0; x0 < n * L; x0 += L) {
    ESI_LANES for (int l = 0; l < L; ++l) {
      const std::uint64_t a = std::bit_cast<std::uint64_t>(from[x0 + l]);
      const std::uint64_t b = std::bit_cast<std::uint64_t>(to[x0 + l]);
      to[x0 + l] = std::bit_cast<double>((a & mask[l]) | (b & ~mask[l]));
    }
  }
}

#define ESI_LANE_OPS_KERNELS(T, L)                                                             \
  ESI_LU_CLONES void combination_##T##_##L(size_t n, const double* base, const double* k,     \
                                           size_t ks, const double* w, int count,             \
                                           double* out) {                                     \
    combination<L>(n, base, k, ks, w, count, out);                                            \
  }                                                                                           \
  ESI_LU_CLONES void stage_rhs_##T##_##L(size_t n, const double* f, const double* ft,         \
                                         const double* k, size_t ks, const double* c,         \
                                         int count, const double* coef, const double* scale,  \
                                         double* out) {                                       \
    stage_rhs<L>(n, f, ft, k, ks, c, count, coef, scale, out);                                \
  }                                                                                           \
  ESI_LU_CLONES void error_norms_##T##_##L(size_t n, const double* e, const double* u0,       \
                                           const double* u1, const double* atol, double rtol, \
                                           double* out, std::uint8_t* nonfinite) {            \
    error_norms<L>(n, e, u0, u1, atol, rtol, out, nonfinite);                                 \
  }                                                                                           \
  ESI_LU_CLONES void step_end_##T##_##L(size_t n, const double* u0, const double* k, size_t ks, \
                                        const double* b, const double* bt, int stages,        \
                                        const double* atol, double rtol, double* u1,          \
                                        double* out, std::uint8_t* nonfinite) {               \
    step_end<L>(n, u0, k, ks, b, bt, stages, atol, rtol, u1, out, nonfinite);                 \
  }                                                                                           \
  ESI_LU_CLONES void select_##T##_##L(size_t n, const std::uint8_t* take, const double* from, \
                                      double* to) {                                           \
    select<L>(n, take, from, to);                                                             \
  }
ESI_LU_ALL_WIDTHS(ESI_LANE_OPS_KERNELS, double)

}  // namespace

void lane_combination(size_t n, int lanes, const double* base, const double* k, size_t k_stride,
                      const double* w, int count, double* out) {
  ESI_LU_DISPATCH(combination, double, lanes, n, base, k, k_stride, w, count, out)
}

void lane_stage_rhs(size_t n, int lanes, const double* f, const double* ft, const double* k,
                    size_t k_stride, const double* c, int count, const double* coef,
                    const double* scale, double* out) {
  ESI_LU_DISPATCH(stage_rhs, double, lanes, n, f, ft, k, k_stride, c, count, coef, scale, out)
}

void lane_error_norms(size_t n, int lanes, const double* e, const double* u0, const double* u1,
                      const double* atol, double rtol, double* out, std::uint8_t* nonfinite) {
  ESI_LU_DISPATCH(error_norms, double, lanes, n, e, u0, u1, atol, rtol, out, nonfinite)
}

void lane_step_end(size_t n, int lanes, const double* u0, const double* k, size_t k_stride,
                   const double* b, const double* btilde, int stages, const double* atol,
                   double rtol, double* u1, double* out, std::uint8_t* nonfinite) {
  ESI_LU_DISPATCH(step_end, double, lanes, n, u0, k, k_stride, b, btilde, stages, atol, rtol, u1,
                  out, nonfinite)
}

void lane_select(size_t n, int lanes, const std::uint8_t* take, const double* from, double* to) {
  ESI_LU_DISPATCH(select, double, lanes, n, take, from, to)
}

}  // namespace esi::linalg
