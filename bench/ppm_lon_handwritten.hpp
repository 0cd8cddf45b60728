// The zonal PPM flux divergence of EarthSciDiscretizations' latlon3d stencils, written by hand
// in C++ from the templates (stencils/ppmflux_D_lon_interior, ppmflux_lev_face_flux,
// ppmflux_lev_cell_aR / _aL, ppm_lev_edge_mono / _core, ppm_lev_slope_mono / ppm_lev_slope,
// ppm_limit_right, ppmflux_limit_left), interior cells i = 4 .. NLON-3 only. Each function is
// one template with its operations in the template's order, so the result can be compared
// with the region program bit for bit. Used by bench/bench_grid.cpp (the peer of the region
// program) and tests/kernel/test_ppm_handwritten.cpp (the check that they agree).
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace esi::ppm {

/// The inputs of the zonal term: q on lon x lat x lev, Mx on lon_nodes x lat x lev (first
/// index fastest), and the metric factor dphi_lat[j] / (dlam dS_lat[j]) per latitude.
struct LonGrid {
  int nlon = 0, nlat = 0, nlev = 0;
  double dlon_deg = 0;  ///< every cell width of the window (uniform zonal spacing)
  std::vector<double> q, mx, metric;
};

namespace detail {

// The spec's min/max (NaN-propagating compare-and-select; src/kernel/scalar_ops.hpp).
inline double vmin(double a, double b) { return (a < b || a != a) ? a : b; }
inline double vmax(double a, double b) { return (a > b || a != a) ? a : b; }

/// ppm_lev_slope
inline double slope(double am, double a0, double ap, double dm, double d0, double dp) {
  return (d0 / (dm + d0 + dp)) * ((((2 * dm) + d0) / (dp + d0)) * (ap - a0) + ((d0 + (2 * dp)) / (dm + d0)) * (a0 - am));
}

/// ppm_lev_slope_mono
inline double slope_mono(double am, double a0, double ap, double dm, double d0, double dp) {
  if (!(((ap - a0) * (a0 - am)) > 0)) return 0;
  const double bound = 2 * vmin(std::abs(a0 - am), std::abs(ap - a0));
  return vmax(-bound, vmin(bound, slope(am, a0, ap, dm, d0, dp)));
}

/// ppm_lev_edge_core
inline double edge_core(double a0, double ap, double dm, double d0, double dp, double dpp, double sj, double sjp1) {
  return (a0 + ((d0 / (d0 + dp)) * (ap - a0))) +
         ((1 / (dm + d0 + dp + dpp)) *
          (((((2 * dp) * d0) / (d0 + dp)) * (((dm + d0) / ((2 * d0) + dp)) - ((dpp + dp) / ((2 * dp) + d0)))) * (ap - a0) +
           (-((d0 * (dm + d0)) / ((2 * d0) + dp))) * sjp1 + ((dp * (dp + dpp)) / ((2 * dp) + d0)) * sj));
}

/// ppm_lev_edge_mono: the edge value between a0 and ap.
inline double edge_mono(double am, double a0, double ap, double app, double dm, double d0, double dp, double dpp) {
  return edge_core(a0, ap, dm, d0, dp, dpp, slope_mono(am, a0, ap, dm, d0, dp), slope_mono(a0, ap, app, d0, dp, dpp));
}

/// ppm_limit_right
inline double limit_right(double ql, double qr, double qi) {
  if (((qr - qi) * (qi - ql)) <= 0) return qi;
  if (-((qr - ql) * (qr - ql)) > ((qr - ql) * (6 * (qi - ((1.0 / 2) * (ql + qr)))))) return (3 * qi) - (2 * ql);
  return qr;
}

/// ppmflux_limit_left
inline double limit_left(double ql, double qr, double qi) {
  if (((qr - qi) * (qi - ql)) <= 0) return qi;
  if (((qr - ql) * (6 * (qi - ((1.0 / 2) * (ql + qr))))) > ((qr - ql) * (qr - ql))) return (3 * qi) - (2 * qr);
  return ql;
}

// The same three templates with both arms computed and one selected (what the region program's
// ifelse does), so the compiler can use masks instead of branches that rough data mispredicts.
inline double slope_mono_select(double am, double a0, double ap, double dm, double d0, double dp) {
  const double bound = 2 * vmin(std::abs(a0 - am), std::abs(ap - a0));
  const double limited = vmax(-bound, vmin(bound, slope(am, a0, ap, dm, d0, dp)));
  return (((ap - a0) * (a0 - am)) > 0) ? limited : 0.0;
}

inline double edge_mono_select(double am, double a0, double ap, double app, double dm, double d0, double dp,
                               double dpp) {
  return edge_core(a0, ap, dm, d0, dp, dpp, slope_mono_select(am, a0, ap, dm, d0, dp),
                   slope_mono_select(a0, ap, app, d0, dp, dpp));
}

inline double limit_right_select(double ql, double qr, double qi) {
  const double steep = (-((qr - ql) * (qr - ql)) > ((qr - ql) * (6 * (qi - ((1.0 / 2) * (ql + qr)))))) ? (3 * qi) - (2 * ql) : qr;
  return (((qr - qi) * (qi - ql)) <= 0) ? qi : steep;
}

inline double limit_left_select(double ql, double qr, double qi) {
  const double steep = (((qr - ql) * (6 * (qi - ((1.0 / 2) * (ql + qr))))) > ((qr - ql) * (qr - ql))) ? (3 * qi) - (2 * qr) : ql;
  return (((qr - qi) * (qi - ql)) <= 0) ? qi : steep;
}

/// ppmflux_lev_face_flux with a uniform width d: the donor-cell PPM endpoint times the face
/// velocity w; a[0..5] = aL2, aL1, aC, aRc, aR1, aR2.
/// Select: the ifelse templates as selects instead of branches (same values).
template <bool Select = false>
inline double face_flux(const double* a, double w, double d) {
  double aR, aL;
  if constexpr (Select) {
    aR = limit_right_select(edge_mono_select(a[0], a[1], a[2], a[3], d, d, d, d),
                            edge_mono_select(a[1], a[2], a[3], a[4], d, d, d, d), a[2]);
    aL = limit_left_select(edge_mono_select(a[1], a[2], a[3], a[4], d, d, d, d),
                           edge_mono_select(a[2], a[3], a[4], a[5], d, d, d, d), a[3]);
  } else {
    // ppmflux_lev_cell_aR of the window a[0..4] (centre a[2])
    aR = limit_right(edge_mono(a[0], a[1], a[2], a[3], d, d, d, d), edge_mono(a[1], a[2], a[3], a[4], d, d, d, d), a[2]);
    // ppmflux_lev_cell_aL of the window a[1..5] (centre a[3])
    aL = limit_left(edge_mono(a[1], a[2], a[3], a[4], d, d, d, d), edge_mono(a[2], a[3], a[4], a[5], d, d, d, d), a[3]);
  }
  return vmax(w, 0) * aR + vmin(w, 0) * aL;
}

inline std::size_t at(const LonGrid& g, int nx, int i, int j, int k) {
  return static_cast<std::size_t>(i - 1) + static_cast<std::size_t>(nx) * (static_cast<std::size_t>(j - 1) +
                                                                          static_cast<std::size_t>(g.nlat) * (k - 1));
}

}  // namespace detail

/// dq/dt = -D(Mx q, wrt lon) on the interior cells, as ppmflux_D_lon_interior writes it: two
/// face fluxes per cell. `out` holds the interior box (i = 4..NLON-3, every j, k), i fastest.
template <bool Select = false>
inline void lon_tendency_interior(const LonGrid& g, std::span<double> out) {
  const double d = g.dlon_deg;
  std::size_t o = 0;
  for (int k = 1; k <= g.nlev; ++k)
    for (int j = 1; j <= g.nlat; ++j) {
      const double* q = g.q.data() + detail::at(g, g.nlon, 1, j, k) - 1;     // q[i] = cell i
      const double* mx = g.mx.data() + detail::at(g, g.nlon + 1, 1, j, k) - 1;  // mx[i] = face i
      const double metric = g.metric[static_cast<std::size_t>(j - 1)];
      for (int i = 4; i <= g.nlon - 3; ++i)
        out[o++] = -(metric * (detail::face_flux<Select>(q + i - 2, mx[i + 1], d) -
                               detail::face_flux<Select>(q + i - 3, mx[i], d)));
    }
}

/// The same tendency with each face flux computed once (faces 4 .. NLON-2 of a row): what a
/// hand-written model does, and what a per-cell template cannot say. Same values bit for bit.
template <bool Select = false>
inline void lon_tendency_interior_by_face(const LonGrid& g, std::span<double> out) {
  const double d = g.dlon_deg;
  std::vector<double> flux(static_cast<std::size_t>(g.nlon) + 2);
  std::size_t o = 0;
  for (int k = 1; k <= g.nlev; ++k)
    for (int j = 1; j <= g.nlat; ++j) {
      const double* q = g.q.data() + detail::at(g, g.nlon, 1, j, k) - 1;
      const double* mx = g.mx.data() + detail::at(g, g.nlon + 1, 1, j, k) - 1;
      const double metric = g.metric[static_cast<std::size_t>(j - 1)];
      for (int f = 4; f <= g.nlon - 2; ++f) flux[f] = detail::face_flux<Select>(q + f - 3, mx[f], d);
      for (int i = 4; i <= g.nlon - 3; ++i) out[o++] = -(metric * (flux[i + 1] - flux[i]));
    }
}

}  // namespace esi::ppm
