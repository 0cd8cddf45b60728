// A Figure drawn with PLplot, twice from the same calls: on the memcairo device into an RGB
// buffer (then PNG through libpng) and on the svg device into memory.
//
// Why these devices (measured on a 101-point line plot, CPU per image): pngcairo spent ~7 ms,
// two thirds of it in cairo's PNG writer (zlib level 6 and adaptive filters, not adjustable);
// this whole figure, PNG through memcairo and libpng at level 1 and the SVG, takes ~3 ms.
// PLplot's svg device is ~0.3 ms against svgcairo's ~1.4 ms, and it writes text as <text>
// elements (svgcairo draws glyph outlines).
#include <plplot.h>
#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/plot/figure.hpp"

namespace esi::plot {
namespace {

// The data area in the page's normalised coordinates (close to the layout of the matplotlib
// script this renderer replaced).
constexpr double kLeft = 0.15, kRight = 0.96, kBottom = 0.12, kTop = 0.88;
constexpr double kMapRight = 0.80, kBarLeft = 0.835, kBarRight = 0.865;
constexpr double kMargin = 0.05;  // of the data range, on each side of line and scatter plots

// cmap0: 0 background, 1 axes and text, 2 legend frame, 3 contour lines, 4.. the series colours
// (matplotlib's tab10 cycle, so the pictures look as they did).
constexpr int kSeriesColour0 = 4, kSeriesColours = 10;
constexpr std::array<unsigned, 14> kCmap0 = {0xffffff, 0x000000, 0xcccccc, 0xffffff, 0x1f77b4,
                                             0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b,
                                             0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
// viridis at 0, 1/8, ..., 1.
constexpr std::array<unsigned, 9> kViridis = {0x440154, 0x472d7b, 0x3b528b, 0x2c728e, 0x21918c,
                                              0x28ae80, 0x5ec962, 0xaddc30, 0xfde725};

struct Range {
  double lo = 0, hi = 1;
};

/// What the drawing needs, computed once for both devices.
struct Prepared {
  const Figure* figure = nullptr;
  std::vector<Series> series;          ///< values on the axes' scale (log10 on a log axis)
  std::vector<double> xedges, yedges;  ///< Map: cell edges on the axes' scale
  std::vector<double> xc, yc;          ///< Map: cell centres on the axes' scale
  Range x, y, z;
  bool has_z = false;
  std::vector<double> contours;  ///< levels strictly inside the finite z range
  bool legend = false;
};

double scaled(double v, bool log) {
  if (!log) return v;
  return v > 0 ? std::log10(v) : NAN;
}

/// A range that can be drawn: equal ends are widened, no finite value gives 0-1.
Range usable(double lo, double hi, bool any) {
  if (!any) return {0, 1};
  if (lo == hi) {
    const double d = lo == 0 ? 1 : 0.05 * std::fabs(lo);
    return {lo - d, hi + d};
  }
  return {lo, hi};
}

Range with_margin(Range r) {
  const double d = (r.hi - r.lo) * kMargin;
  return {r.lo - d, r.hi + d};
}

/// Cell edges from cell centres (each edge halfway between neighbours; the outer ones as far
/// out as the next inner one), as matplotlib's pcolormesh(shading="nearest") places them.
std::vector<double> edges_of(const std::vector<double>& c) {
  std::vector<double> e(c.size() + 1);
  if (c.size() == 1) return {c[0] - 0.5, c[0] + 0.5};
  for (std::size_t i = 1; i < c.size(); ++i) e[i] = 0.5 * (c[i - 1] + c[i]);
  e[0] = c[0] - (e[1] - c[0]);
  e[c.size()] = c.back() + (c.back() - e[c.size() - 1]);
  return e;
}

Prepared prepare(const Figure& f) {
  Prepared p;
  p.figure = &f;
  if (f.kind == Kind::Map) {
    for (double v : f.x) p.xc.push_back(scaled(v, f.log_x));
    for (double v : f.y) p.yc.push_back(scaled(v, f.log_y));
    const auto finite = [](const std::vector<double>& v) {
      return !v.empty() &&
             std::all_of(v.begin(), v.end(), [](double d) { return std::isfinite(d); });
    };
    if (finite(p.xc) && finite(p.yc)) {
      p.xedges = edges_of(p.xc);
      p.yedges = edges_of(p.yc);
      p.x = {std::min(p.xedges.front(), p.xedges.back()),
             std::max(p.xedges.front(), p.xedges.back())};
      p.y = {std::min(p.yedges.front(), p.yedges.back()),
             std::max(p.yedges.front(), p.yedges.back())};
    }
    double lo = INFINITY, hi = -INFINITY;
    for (double v : f.z)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    p.has_z = lo <= hi;
    p.z = usable(lo, hi, p.has_z);
    for (double l : f.contours)
      if (p.has_z && lo < l && l < hi) p.contours.push_back(l);
    std::sort(p.contours.begin(), p.contours.end());
    p.contours.erase(std::unique(p.contours.begin(), p.contours.end()), p.contours.end());
    return p;
  }
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const Series& s : f.series) {
    Series t{s.label, {}, {}, s.ended_early};
    for (std::size_t k = 0; k < s.x.size(); ++k) {
      double x = scaled(s.x[k], f.log_x), y = scaled(s.y[k], f.log_y);
      if (!std::isfinite(x) || !std::isfinite(y))
        x = y = NAN;
      else
        xlo = std::min(xlo, x), xhi = std::max(xhi, x), ylo = std::min(ylo, y),
        yhi = std::max(yhi, y);
      t.x.push_back(x);
      t.y.push_back(y);
    }
    p.series.push_back(std::move(t));
  }
  const bool any = xlo <= xhi;
  p.x = any ? with_margin(usable(xlo, xhi, true)) : Range{0, 1};
  p.y = any ? with_margin(usable(ylo, yhi, true)) : Range{0, 1};
  p.legend = f.series.size() > 1 && f.series.size() <= 12;
  return p;
}

/// PLplot reads '#' as the start of a text escape; "##" is a literal '#'.
std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '#') out += '#';
  }
  return out;
}

void set_colours() {
  PLINT r[kCmap0.size()], g[kCmap0.size()], b[kCmap0.size()];
  for (std::size_t i = 0; i < kCmap0.size(); ++i) {
    r[i] = static_cast<PLINT>(kCmap0[i] >> 16);
    g[i] = static_cast<PLINT>((kCmap0[i] >> 8) & 0xff);
    b[i] = static_cast<PLINT>(kCmap0[i] & 0xff);
  }
  plscmap0(r, g, b, static_cast<PLINT>(kCmap0.size()));
  PLFLT pos[kViridis.size()], cr[kViridis.size()], cg[kViridis.size()], cb[kViridis.size()];
  for (std::size_t i = 0; i < kViridis.size(); ++i) {
    pos[i] = static_cast<double>(i) / (kViridis.size() - 1);
    cr[i] = (kViridis[i] >> 16) / 255.0;
    cg[i] = ((kViridis[i] >> 8) & 0xff) / 255.0;
    cb[i] = (kViridis[i] & 0xff) / 255.0;
  }
  plscmap1n(256);
  plscmap1l(1, static_cast<PLINT>(kViridis.size()), pos, cr, cg, cb, nullptr);
}

/// Runs of consecutive finite points.
template <class F>
void for_each_run(const Series& s, F&& draw) {
  std::size_t k = 0;
  while (k < s.x.size()) {
    while (k < s.x.size() && !std::isfinite(s.x[k])) ++k;
    const std::size_t start = k;
    while (k < s.x.size() && std::isfinite(s.x[k])) ++k;
    if (k > start) draw(start, k - start);
  }
}

/// Markers on a line: filled dots when it has few points (matplotlib's "o" below 30).
bool marked(const Series& s) {
  return s.x.size() < 30;
}

/// A run of points that are all the same point: a line through it would not show.
bool one_point(const Series& s, std::size_t start, std::size_t n) {
  for (std::size_t k = start + 1; k < start + n; ++k)
    if (s.x[k] != s.x[start] || s.y[k] != s.y[start]) return false;
  return true;
}

void draw_series(const Prepared& p) {
  const bool scatter = p.figure->kind == Kind::Scatter;
  for (std::size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    plcol0(kSeriesColour0 + static_cast<PLINT>(i % kSeriesColours));
    for_each_run(s, [&](std::size_t start, std::size_t n) {
      if (!scatter && n > 1) {
        plwidth(1.5);
        plline(static_cast<PLINT>(n), s.x.data() + start, s.y.data() + start);
      }
      if (scatter || marked(s)) {
        plssym(0, scatter ? 1.3 : 1.1);
        plpoin(static_cast<PLINT>(n), s.x.data() + start, s.y.data() + start, 17);
      } else if (one_point(s, start, n)) {
        plssym(0, 1.1);
        plpoin(1, s.x.data() + start, s.y.data() + start, 17);
      }
    });
    if (s.ended_early)  // a large cross where the run stopped
      for (std::size_t k = s.x.size(); k-- > 0;)
        if (std::isfinite(s.x[k]) && std::isfinite(s.y[k])) {
          plssym(0, 2.2);
          plpoin(1, s.x.data() + k, s.y.data() + k, 5);
          break;
        }
  }
  plwidth(1);
}

void draw_cells(const Prepared& p) {
  const Figure& f = *p.figure;
  if (p.xedges.empty() || !p.has_z) return;
  const double span = p.z.hi - p.z.lo;
  for (std::size_t j = 0; j < f.y.size(); ++j)
    for (std::size_t i = 0; i < f.x.size(); ++i) {
      const double v = f.z[j * f.x.size() + i];
      if (!std::isfinite(v)) continue;
      plcol1(std::clamp((v - p.z.lo) / span, 0.0, 1.0));
      PLFLT xs[4] = {p.xedges[i], p.xedges[i + 1], p.xedges[i + 1], p.xedges[i]};
      PLFLT ys[4] = {p.yedges[j], p.yedges[j], p.yedges[j + 1], p.yedges[j + 1]};
      plfill(4, xs, ys);
    }
}

void draw_contours(const Prepared& p) {
  const Figure& f = *p.figure;
  const std::size_t nx = f.x.size(), ny = f.y.size();
  if (p.contours.empty() || nx < 2 || ny < 2 || p.xedges.empty()) return;
  // PLplot's contouring has no notion of a missing value: a field with one draws no lines.
  for (double v : f.z)
    if (!std::isfinite(v)) return;
  std::vector<PLFLT> columns(nx * ny);
  std::vector<PLFLT*> rows(nx);
  for (std::size_t i = 0; i < nx; ++i) {
    rows[i] = columns.data() + i * ny;
    for (std::size_t j = 0; j < ny; ++j) rows[i][j] = f.z[j * nx + i];
  }
  std::vector<PLFLT> xg = p.xc, yg = p.yc;
  PLcGrid grid{xg.data(), yg.data(), nullptr, static_cast<PLINT>(nx), static_cast<PLINT>(ny), 0};
  plcol0(3);
  plwidth(1.5);
  pl_setcontlabelformat(3, 2);
  pl_setcontlabelparam(0.006, 0.8, 0.3, 1);
  plcont(rows.data(), static_cast<PLINT>(nx), static_cast<PLINT>(ny), 1, static_cast<PLINT>(nx), 1,
         static_cast<PLINT>(ny), p.contours.data(), static_cast<PLINT>(p.contours.size()), pltr1,
         &grid);
  pl_setcontlabelparam(0.006, 0.3, 0.1, 0);
  plwidth(1);
}

/// Where the legend goes: a PLplot position inside the data area and its offsets.
struct LegendPlace {
  PLINT position = 0;
  double dx = 0, dy = 0;
};

/// The place where the legend (`width` x `height`, fractions of the data area) covers the
/// fewest data points, tried in matplotlib's "best" order: the four corners, then the middle of
/// the right and left sides, of the bottom and top, and the centre.
LegendPlace legend_place(const Prepared& p, double width, double height) {
  constexpr double kDx = 0.02, kDy = 0.03;  // the legend's distance from the frame
  enum Side { Low, Middle, High };
  const std::pair<Side, Side> order[] = {{High, High},  {Low, High},    {Low, Low},
                                         {High, Low},   {High, Middle}, {Low, Middle},
                                         {Middle, Low}, {Middle, High}, {Middle, Middle}};
  const auto span = [](Side side, double size, double gap) {
    if (side == Low) return std::pair{0.0, size + gap};
    if (side == High) return std::pair{1 - size - gap, 1.0};
    return std::pair{0.5 - size / 2, 0.5 + size / 2};
  };
  LegendPlace best;
  std::size_t fewest = SIZE_MAX;
  for (const auto& [horizontal, vertical] : order) {
    const auto [u0, u1] = span(horizontal, width, kDx);
    const auto [v0, v1] = span(vertical, height, kDy);
    std::size_t covered = 0;
    for (const Series& s : p.series)
      for (std::size_t k = 0; k < s.x.size(); ++k) {
        if (!std::isfinite(s.x[k])) continue;
        const double u = (s.x[k] - p.x.lo) / (p.x.hi - p.x.lo),
                     v = (s.y[k] - p.y.lo) / (p.y.hi - p.y.lo);
        covered += u0 <= u && u <= u1 && v0 <= v && v <= v1;
      }
    if (covered >= fewest) continue;
    fewest = covered;
    best.position = (horizontal == Low    ? PL_POSITION_LEFT
                     : horizontal == High ? PL_POSITION_RIGHT
                                          : 0) |
                    (vertical == Low    ? PL_POSITION_BOTTOM
                     : vertical == High ? PL_POSITION_TOP
                                        : 0);
    // PLplot moves a legend centred on a side along the side for a non-zero offset.
    best.dx = horizontal == Middle ? 0 : kDx;
    best.dy = vertical == Middle ? 0 : kDy;
  }
  return best;
}

void draw_legend(const Prepared& p) {
  const std::size_t n = p.series.size();
  std::vector<PLINT> opts(n), colours(n), text_colours(n, 1), styles(n, 1), numbers(n, 1);
  std::vector<PLFLT> widths(n, 1.5), scales(n, 1.1);
  std::vector<std::string> texts(n);
  std::vector<const char*> text_ptrs(n), symbols(n, "#(728)");
  std::size_t longest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool dots = p.figure->kind == Kind::Scatter || marked(p.series[i]);
    opts[i] =
        (p.figure->kind == Kind::Scatter ? 0 : PL_LEGEND_LINE) | (dots ? PL_LEGEND_SYMBOL : 0);
    colours[i] = kSeriesColour0 + static_cast<PLINT>(i % kSeriesColours);
    texts[i] = escaped(p.series[i].label);
    text_ptrs[i] = texts[i].c_str();
    longest = std::max(longest, p.series[i].label.size());
  }
  // The legend's size as a fraction of the data area, estimated from the text (PLplot gives
  // it only after drawing, and each device measures text its own way): rows of 2 character
  // heights, characters 0.85 heights wide plus 7.5 heights for the sample and the margins
  // (fitted to what pllegend reported for the corpus' 20 legends: the width within -13 % to
  // +20 %, the height within 5 %).
  PLFLT def_height = 0, height = 0;
  plgchr(&def_height, &height);
  PLFLT xmin = 0, xmax = 0, ymin = 0, ymax = 0;
  plgspa(&xmin, &xmax, &ymin, &ymax);
  const double char_mm = height * 0.8;
  const double w_mm = (kRight - kLeft) * (xmax - xmin), h_mm = (kTop - kBottom) * (ymax - ymin);
  const double legend_w = (char_mm * (0.85 * static_cast<double>(longest) + 7.5)) / w_mm;
  const double legend_h = (char_mm * (2.0 * static_cast<double>(n) + 0.2)) / h_mm;
  const LegendPlace place = legend_place(p, legend_w, legend_h);
  PLFLT w = 0, h = 0;
  pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
           PL_POSITION_INSIDE | PL_POSITION_VIEWPORT | place.position, place.dx, place.dy, 0.06, 0,
           2, 1, 0, 0, static_cast<PLINT>(n), opts.data(), 0.8, 0.8, 1.6, 0, text_colours.data(),
           text_ptrs.data(), nullptr, nullptr, nullptr, nullptr, colours.data(), styles.data(),
           widths.data(), colours.data(), scales.data(), numbers.data(), symbols.data());
}

void draw_colour_bar(const Prepared& p) {
  plvpor(kBarLeft, kBarRight, kBottom, kTop);
  plwind(0, 1, p.z.lo, p.z.hi);
  constexpr int kSteps = 128;
  const double dz = (p.z.hi - p.z.lo) / kSteps;
  for (int k = 0; k < kSteps; ++k) {
    plcol1((k + 0.5) / kSteps);
    PLFLT xs[4] = {0, 1, 1, 0};
    PLFLT ys[4] = {p.z.lo + k * dz, p.z.lo + k * dz, p.z.lo + (k + 1) * dz, p.z.lo + (k + 1) * dz};
    plfill(4, xs, ys);
  }
  plcol0(1);
  plbox("bc", 0, 0, "bcmstv", 0, 0);
  plmtex("r", 6.0, 0.5, 0.5, escaped(p.figure->zlabel).c_str());
}

/// A log axis labels only its decades: one that holds fewer than two (1000 to 6000, say) also
/// gets labels at 2, 3 and 5 times a power of ten (every multiple when it spans under a third
/// of a decade), as matplotlib labels minor ticks there; one so short that no multiple falls
/// inside gets three values spread over it. `side` is "b" (x) or "lv" (y). Returns the
/// longest label written, in characters (0: none).
std::size_t label_short_log_axis(double lo, double hi, const char* side) {
  int decades = 0;
  for (double k = std::ceil(lo); k <= hi; ++k) ++decades;
  if (decades >= 2 || !(hi > lo)) return 0;
  std::size_t longest = 0;
  const auto put = [&](double at, const char* text) {
    longest = std::max(longest, std::strlen(text));
    const double frac = (at - lo) / (hi - lo);
    if (side[0] == 'b')
      plmtex("b", 1.5, frac, 0.5, text);
    else
      plmtex("lv", 0.5, frac, 1.0, text);
  };
  const bool every = hi - lo < 0.34;
  int placed = 0;
  for (double k = std::floor(lo); k <= std::ceil(hi); ++k)
    for (int m = 2; m <= 9; ++m) {
      if (!every && m != 2 && m != 3 && m != 5) continue;
      const double at = k + std::log10(static_cast<double>(m));
      if (at < lo || at > hi) continue;
      char text[48];
      if (k >= -3 && k <= 4)
        std::snprintf(text, sizeof text, "%g", m * std::pow(10.0, k));
      else
        std::snprintf(text, sizeof text, "%d\u00d710#u%d#d", m, static_cast<int>(k));
      put(at, text);
      ++placed;
    }
  if (placed + decades >= 2) return longest;
  for (double frac : {0.1, 0.5, 0.9}) {
    char text[48];
    std::snprintf(text, sizeof text, "%.3g", std::pow(10.0, lo + frac * (hi - lo)));
    put(lo + frac * (hi - lo), text);
  }
  return longest;
}

/// PLplot's `digmax` for a linear axis: 4 (so values from 1e4 up or below 1e-2 get a power of
/// ten), or the significant digits between the axis' largest magnitude and its tick spacing
/// when that is more: with 4, PLplot rounds the ticks of 39.9889..39.9899 all to "39.99".
/// The spacing is estimated as a tenth of the span rounded down to a power of ten, at most one
/// digit finer than PLplot's own choice of 1, 2 or 5 times a power of ten.
int label_digits(const Range& r, bool log) {
  constexpr int kDefault = 4;
  const double span = r.hi - r.lo, big = std::max(std::fabs(r.lo), std::fabs(r.hi));
  if (log || !(span > 0) || !(big > 0) || !std::isfinite(span)) return kDefault;
  const int leading = static_cast<int>(std::floor(std::log10(big)));
  const int spacing = static_cast<int>(std::floor(std::log10(span / 10)));
  if (leading >= 4 || leading < -2) return kDefault;  // a power of ten is shown anyway
  return std::clamp(leading - spacing + 1, kDefault, 12);
}

/// Every PLplot call of one image, on a stream plinit() has just started.
Frame draw(const Prepared& p) {
  const Figure& f = *p.figure;
  const bool map = f.kind == Kind::Map;
  pladv(0);
  plschr(0, 0.9);
  // Labels from 1e4 up, or below 1e-2, as a mantissa and a power of ten; more digits where
  // the ticks of a narrow range about a larger value need them to differ (39.9890, 39.9892).
  plsxax(label_digits(p.x, f.log_x), 0);
  plsyax(label_digits(p.y, f.log_y), 0);  // read again below for the y label's place
  plvpor(kLeft, map ? kMapRight : kRight, kBottom, kTop);
  plwind(p.x.lo, p.x.hi, p.y.lo, p.y.hi);
  Frame frame;
  {
    PLFLT x0 = 0, x1 = 0, y0 = 0, y1 = 0;
    plgvpd(&x0, &x1, &y0, &y1);
    frame.left = x0 * kWidth;
    frame.right = x1 * kWidth;
    frame.top = (1 - y1) * kHeight;
    frame.bottom = (1 - y0) * kHeight;
    plgvpw(&frame.xmin, &frame.xmax, &frame.ymin, &frame.ymax);
  }
  if (map) {
    draw_cells(p);
    draw_contours(p);
  } else {
    draw_series(p);
  }
  plcol0(1);
  const std::string xopt = std::string("bcnst") + (f.log_x ? "l" : ""),
                    yopt = std::string("bcnstv") + (f.log_y ? "l" : "");
  plbox(xopt.c_str(), 0, 0, yopt.c_str(), 0, 0);
  if (f.log_x) label_short_log_axis(p.x.lo, p.x.hi, "b");
  // Tick labels take up to about 4.5 character heights; wider ones written here push the
  // y label out.
  const int y_digits = label_digits(p.y, f.log_y);
  const std::size_t y_labels = f.log_y ? label_short_log_axis(p.y.lo, p.y.hi, "lv")
                               : y_digits > 4 ? static_cast<std::size_t>(y_digits) + 2  // sign, point
                                              : 0;
  plmtex("b", 3.0, 0.5, 0.5, escaped(f.xlabel).c_str());
  plmtex("l", std::max(5.2, 0.85 * static_cast<double>(y_labels) + 1.5), 0.5, 0.5,
         escaped(f.ylabel).c_str());
  plmtex("t", 1.0, 0.5, 0.5, escaped(f.title).c_str());
  if (p.legend) draw_legend(p);
  if (map) draw_colour_bar(p);
  return frame;
}

void append_png(png_structp png, png_bytep data, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), n);
}

/// RGB rows as PNG: zlib level 1, no filter. Over the EarthSciModels corpus' 818 plots this
/// was both faster and smaller than the Sub filter (3.1 s against 3.4 s of drawing, 25 against
/// 29 kB a PNG) and than zlib's RLE strategy; adaptive filtering and higher levels (cairo's own
/// PNG writer) cost a third of the drawing.
std::string encode_png(const std::vector<unsigned char>& rgb) {
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    throw Error("plot_failed", "", "", "libpng could not start (out of memory)");
  }
  std::vector<png_bytep> rows(kHeight);
  for (int r = 0; r < kHeight; ++r)
    rows[r] = const_cast<png_bytep>(rgb.data() + static_cast<std::size_t>(r) * kWidth * 3);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw Error("plot_failed", "", "", "libpng could not encode the image");
  }
  png_set_write_fn(png, &out, append_png, nullptr);
  png_set_compression_level(png, 1);
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
  png_set_IHDR(png, info, kWidth, kHeight, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
  png_set_rows(png, info, rows.data());
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

/// PLplot's warnings (plabort: a call it refused, the drawing goes on) are kept here and
/// render() fails with the first; its fatal errors exit the process (esi draws in forked
/// workers, whose exit status says so).
std::string g_plplot_error;
void keep_error(PLCHAR_VECTOR message) {
  if (g_plplot_error.empty()) g_plplot_error = message ? message : "unknown error";
}

/// Whether PLplot has `device`: plinit() would otherwise ask for one on the terminal.
bool has_device(const std::string& device) {
  static const std::vector<std::string> devices = [] {
    int n = 128;
    const char* menus[128];
    const char* names[128];
    const char** menu_list = menus;
    const char** name_list = names;
    plgDevs(&menu_list, &name_list, &n);
    return std::vector<std::string>(names, names + n);
  }();
  return std::find(devices.begin(), devices.end(), device) != devices.end();
}

/// Starts a stream on `device` with the page size and colours every image shares.
void begin(const char* device) {
  plsdev(device);
  plspage(0, 0, kWidth, kHeight, 0, 0);
  plscolbg(255, 255, 255);
  set_colours();
  plinit();
}

}  // namespace

unsigned colormap_rgb(double t) {
  t = std::clamp(t, 0.0, 1.0) * (kViridis.size() - 1);
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(t), kViridis.size() - 2);
  const double u = t - static_cast<double>(k);
  unsigned out = 0;
  for (int shift : {16, 8, 0}) {
    const double a = (kViridis[k] >> shift) & 0xff, b = (kViridis[k + 1] >> shift) & 0xff;
    out |= static_cast<unsigned>(std::lround(a + u * (b - a))) << shift;
  }
  return out;
}

std::string unavailable() {
  for (const char* device : {"memcairo", "svg"})
    if (!has_device(device))
      return std::string("PLplot has no '") + device +
             "' device (install plplot-driver-cairo and libplplot17)";
  return "";
}

std::string renderer_id() {
  char version[80] = "";
  plgver(version);
  // Bump the revision whenever a change alters the images drawn from the same data.
  return std::string("esi-plot 1, PLplot ") + version;
}

Images render(const Figure& figure) {
  if (const std::string why = unavailable(); !why.empty()) throw Error("plot_failed", "", "", why);
  const Prepared p = prepare(figure);
  Images images;
  g_plplot_error.clear();
  plsabort(keep_error);
  // Raster: memcairo draws over the buffer it is given (white: the background).
  std::vector<unsigned char> rgb(static_cast<std::size_t>(kWidth) * kHeight * 3, 255);
  plsmem(kWidth, kHeight, rgb.data());
  begin("memcairo");
  images.frame = draw(p);
  plend();
  if (!g_plplot_error.empty())
    throw Error("plot_failed", "", "", "PLplot (memcairo): " + g_plplot_error);
  images.png = encode_png(rgb);
  // Vector: the svg device writes into a memory stream (plend closes it).
  char* buffer = nullptr;
  std::size_t size = 0;
  FILE* stream = open_memstream(&buffer, &size);
  if (!stream) throw Error("plot_failed", "", "", "cannot open a memory stream for the SVG");
  plsfile(stream);
  begin("svg");
  draw(p);
  plend();
  images.svg.assign(buffer ? buffer : "", size);
  std::free(buffer);
  if (!g_plplot_error.empty())
    throw Error("plot_failed", "", "", "PLplot (svg): " + g_plplot_error);
  return images;
}

}  // namespace esi::plot
