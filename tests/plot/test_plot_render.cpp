// The PLplot renderer (esi::plot): PNG pixels decoded again with libpng and checked against
// where the frame PLplot reports puts the data; SVG well-formed with its labels as text; log
// axes, colour maps, contours, and the same bytes whatever was drawn before.
#include <png.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/plot/figure.hpp"

namespace {

using esi::plot::Figure;
using esi::plot::Kind;
using nlohmann::json;

constexpr unsigned kFirstSeries = 0x1f77b4;  // matplotlib's C0, the first series' colour
constexpr unsigned kWhite = 0xffffff;

struct Rgb {
  int width = 0, height = 0;
  std::vector<unsigned char> pixels;  ///< RGB rows
  unsigned at(int x, int y) const {
    const unsigned char* p = pixels.data() + (static_cast<std::size_t>(y) * width + x) * 3;
    return (unsigned{p[0]} << 16) | (unsigned{p[1]} << 8) | p[2];
  }
};

/// The PNG decoded with libpng (an independent reader of what the renderer wrote).
Rgb decode(const std::string& png_bytes) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  EXPECT_NE(png_image_begin_read_from_memory(&image, png_bytes.data(), png_bytes.size()), 0)
      << image.message;
  image.format = PNG_FORMAT_RGB;
  Rgb out;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  EXPECT_NE(png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr), 0)
      << image.message;
  return out;
}

int channel_distance(unsigned a, unsigned b) {
  int d = 0;
  for (int shift : {16, 8, 0})
    d = std::max(
        d, std::abs(static_cast<int>((a >> shift) & 0xff) - static_cast<int>((b >> shift) & 0xff)));
  return d;
}

/// The pixel nearest `colour` within `radius` of (x, y): its largest channel difference.
int nearest_match(const Rgb& img, double x, double y, unsigned colour, int radius = 1) {
  int best = 255;
  const int cx = static_cast<int>(std::lround(x)), cy = static_cast<int>(std::lround(y));
  for (int dy = -radius; dy <= radius; ++dy)
    for (int dx = -radius; dx <= radius; ++dx)
      best = std::min(best, channel_distance(img.at(cx + dx, cy + dy), colour));
  return best;
}

/// Pixel position of a point on the axes' scale, by the frame's linear map.
std::pair<double, double> pixel_of(const esi::plot::Frame& f, double x, double y) {
  return {f.left + (x - f.xmin) / (f.xmax - f.xmin) * (f.right - f.left),
          f.bottom - (y - f.ymin) / (f.ymax - f.ymin) * (f.bottom - f.top)};
}

double luminance(unsigned c) {
  return 0.2126 * (c >> 16) + 0.7152 * ((c >> 8) & 0xff) + 0.0722 * (c & 0xff);
}

/// Text with the numeric character references the svg device writes (&#x41;) decoded
/// (ASCII only, which these labels are).
std::string decoded(const std::string& svg) {
  std::string out;
  for (std::size_t i = 0; i < svg.size(); ++i) {
    if (svg.compare(i, 3, "&#x") == 0) {
      const std::size_t end = svg.find(';', i);
      out += static_cast<char>(std::stoi(svg.substr(i + 3, end - i - 3), nullptr, 16));
      i = end;
    } else {
      out += svg[i];
    }
  }
  return out;
}

/// Well-formed XML in the small sense an SVG viewer needs: every element closed in order,
/// one root <svg>, attribute values quoted.
bool well_formed(const std::string& xml, std::string& why) {
  std::vector<std::string> open;
  std::size_t roots = 0;
  for (std::size_t i = xml.find('<'); i != std::string::npos; i = xml.find('<', i + 1)) {
    if (xml.compare(i, 2, "<?") == 0 || xml.compare(i, 2, "<!") == 0) continue;
    std::size_t end = i + 1;
    char quote = 0;
    for (; end < xml.size() && (quote || xml[end] != '>'); ++end)
      if (quote ? xml[end] == quote : (xml[end] == '"' || xml[end] == '\''))
        quote = quote ? 0 : xml[end];
    if (end >= xml.size()) return why = "unterminated tag at " + std::to_string(i), false;
    const std::string tag = xml.substr(i + 1, end - i - 1);
    if (tag.empty()) return why = "empty tag", false;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1, tag.find_first_of(" \n\t") - 1);
      if (open.empty() || open.back() != name)
        return why = "</" + name + "> closes <" + (open.empty() ? "" : open.back()) + ">", false;
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n\t/"));
    if (open.empty() && ++roots > 1) return why = "more than one root", false;
    if (open.empty() && name != "svg") return why = "root is <" + name + ">", false;
    if (tag.back() != '/') open.push_back(name);
  }
  if (!open.empty()) return why = "<" + open.back() + "> not closed", false;
  return roots == 1 || (why = "no root", false);
}

Figure straight_line() {
  Figure f;
  f.kind = Kind::Line;
  f.title = "a straight line";
  f.xlabel = "time [s]";
  f.ylabel = "x [mol/mol]";
  esi::plot::Series s{"x", {}, {}};
  for (int k = 0; k <= 100; ++k) {
    s.x.push_back(0.1 * k);
    s.y.push_back(0.1 * k);
  }
  f.series.push_back(s);
  return f;
}

// y = x over [0, 10]: the frame is the data range plus 5 % each side, and every sampled
// point of the line is drawn in the first series' colour where the frame maps it; points off
// the line are background.
TEST(PlotRender, ALinesPixelsLieWhereTheFrameMapsItsData) {
  const esi::plot::Images images = esi::plot::render(straight_line());
  const esi::plot::Frame& f = images.frame;
  EXPECT_DOUBLE_EQ(f.xmin, -0.5);
  EXPECT_DOUBLE_EQ(f.xmax, 10.5);
  EXPECT_DOUBLE_EQ(f.ymin, -0.5);
  EXPECT_DOUBLE_EQ(f.ymax, 10.5);
  EXPECT_NEAR(f.left, 0.15 * esi::plot::kWidth, 1.0);
  EXPECT_LT(f.top, f.bottom);
  const Rgb img = decode(images.png);
  ASSERT_EQ(img.width, esi::plot::kWidth);
  ASSERT_EQ(img.height, esi::plot::kHeight);
  for (double v : {1.0, 2.5, 5.0, 7.5, 9.0}) {
    const auto [px, py] = pixel_of(f, v, v);
    EXPECT_LE(nearest_match(img, px, py, kFirstSeries), 40) << "no line at x = y = " << v;
  }
  for (const auto& [x, y] : std::vector<std::pair<double, double>>{{8, 2}, {2, 8}, {5, 1}}) {
    const auto [px, py] = pixel_of(f, x, y);
    EXPECT_EQ(img.at(static_cast<int>(px), static_cast<int>(py)), kWhite)
        << "(" << x << ", " << y << ")";
  }
}

// A line breaks at a missing value (NaN): nothing between the points either side of it.
TEST(PlotRender, ALineBreaksAtAMissingValue) {
  Figure fig = straight_line();
  fig.series[0].x = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                     14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
                     28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40};
  fig.series[0].y = fig.series[0].x;
  for (int k = 15; k <= 25; ++k) fig.series[0].y[k] = NAN;
  const esi::plot::Images images = esi::plot::render(fig);
  const Rgb img = decode(images.png);
  const auto [gx, gy] = pixel_of(images.frame, 20, 20);
  EXPECT_EQ(img.at(static_cast<int>(gx), static_cast<int>(gy)), kWhite);
  for (double v : {7.5, 32.5}) {
    const auto [px, py] = pixel_of(images.frame, v, v);
    EXPECT_LE(nearest_match(img, px, py, kFirstSeries), 40) << v;
  }
}

TEST(PlotRender, TheSvgIsWellFormedAndHoldsItsLabelsAsText) {
  Figure fig = straight_line();
  fig.title = "run #1 <final> & more";
  const esi::plot::Images images = esi::plot::render(fig);
  std::string why;
  EXPECT_TRUE(well_formed(images.svg, why)) << why;
  const std::string text = decoded(images.svg);
  EXPECT_NE(text.find(">time [s]<"), std::string::npos);
  EXPECT_NE(text.find(">x [mol/mol]<"), std::string::npos);
  // '#' is PLplot's text escape and <, & are XML's: each comes out as written.
  EXPECT_NE(text.find(">run #1 <final> & more<"), std::string::npos);
  EXPECT_NE(images.svg.find("width=\"640"), std::string::npos);
}

// x from 1e-2 to 1e2 on a log axis with a marker at each half decade: the frame holds
// log10 of the range (plus 5 %), the markers at 0.1, 1 and 10 lie a quarter, a half and three
// quarters of the way across the data, and a linear axis would have put x = 1 elsewhere.
TEST(PlotRender, ALogAxisPlacesDecadesEvenly) {
  Figure fig;
  fig.kind = Kind::Scatter;
  fig.log_x = true;
  esi::plot::Series s{"y", {}, {}};
  for (int k = -4; k <= 4; ++k) {
    s.x.push_back(std::pow(10.0, 0.5 * k));
    s.y.push_back(1.0);
  }
  s.x.push_back(-1.0);  // not on a log axis: left out
  s.y.push_back(1.0);
  fig.series.push_back(s);
  const esi::plot::Images images = esi::plot::render(fig);
  const esi::plot::Frame& f = images.frame;
  EXPECT_NEAR(f.xmin, -2.2, 1e-12);
  EXPECT_NEAR(f.xmax, 2.2, 1e-12);
  const Rgb img = decode(images.png);
  const double width = f.right - f.left;
  const double y = pixel_of(f, 0, 1).second;
  for (int decade = -1; decade <= 1; ++decade) {
    const double px = f.left + (decade + 2.2) / 4.4 * width;
    EXPECT_LE(nearest_match(img, px, y, kFirstSeries), 40) << "no marker at 10^" << decade;
  }
  const double linear_ten =
      f.left + (10 - 0.01) / (100 - 0.01) * width;  // where a linear axis has x = 10
  EXPECT_EQ(img.at(static_cast<int>(linear_ten), static_cast<int>(y)), kWhite);
  // The decade labels: "10" with the exponent raised, five of them.
  const std::string text = decoded(images.svg);
  std::size_t tens = 0;
  for (std::size_t at = text.find(">10<"); at != std::string::npos; at = text.find(">10<", at + 1))
    ++tens;
  EXPECT_GE(tens, 5u) << "decade labels";
}

/// The x position (SVG units, the PNG's pixels) of the text element that writes `label`.
double svg_text_x(const std::string& decoded_svg, const std::string& label) {
  const std::size_t at = decoded_svg.find(">" + label + "<");
  if (at == std::string::npos) return NAN;
  const std::size_t matrix = decoded_svg.rfind("matrix(", at);
  if (matrix == std::string::npos) return NAN;
  double m[6];
  std::istringstream in(decoded_svg.substr(matrix + 7, 200));
  for (double& v : m) in >> v;
  return m[4];
}

// A log axis from 1000 to 6000 holds one decade: PLplot labels only 10^3, so 2000, 3000 and
// 5000 are labelled too, each centred where the frame puts its log10.
TEST(PlotRender, AShortLogAxisLabelsMultiplesOfItsDecade) {
  Figure fig;
  fig.kind = Kind::Line;
  fig.log_x = true;
  esi::plot::Series s{"T", {}, {}};
  for (int k = 0; k <= 50; ++k) {
    s.x.push_back(1000 + 100 * k);
    s.y.push_back(k);
  }
  fig.series.push_back(s);
  const esi::plot::Images images = esi::plot::render(fig);
  const esi::plot::Frame& f = images.frame;
  const std::string text = decoded(images.svg);
  for (double v : {2000.0, 3000.0, 5000.0}) {
    const double expected = pixel_of(f, std::log10(v), 0).first;
    EXPECT_NEAR(svg_text_x(text, std::to_string(static_cast<int>(v))), expected, 1.5) << v;
  }
  EXPECT_TRUE(std::isnan(svg_text_x(text, "4000")));  // 2, 3 and 5 only over most of a decade
}

// A narrow range about a larger value (39.9889 to 39.9899, as an O3 sweep gives): with PLplot's
// default four digits every tick read "39.99". The labels must differ, lie in the range, and
// each sit where the frame maps the value it reads.
TEST(PlotRender, TicksOfANarrowRangeAboutALargerValueAreDistinct) {
  Figure fig;
  fig.kind = Kind::Line;
  esi::plot::Series s{"O3", {}, {}};
  for (int k = 0; k <= 10; ++k) {
    s.x.push_back(k);
    s.y.push_back(39.9889 + 1e-4 * k);
  }
  fig.series.push_back(s);
  const esi::plot::Images images = esi::plot::render(fig);
  const std::string text = decoded(images.svg);
  std::vector<std::pair<double, double>> ticks;  // (value, SVG y of its text)
  for (std::size_t open = text.find('>'); open != std::string::npos; open = text.find('>', open + 1)) {
    const std::size_t close = text.find('<', open);
    if (close == std::string::npos) break;
    const std::string label = text.substr(open + 1, close - open - 1);
    if (label.size() < 5 || label.compare(0, 3, "39.") != 0) continue;
    std::size_t used = 0;
    const double v = std::stod(label, &used);
    if (used != label.size()) continue;
    const std::size_t matrix = text.rfind("matrix(", open);
    ASSERT_NE(matrix, std::string::npos);
    double m[6];
    std::istringstream in(text.substr(matrix + 7, 200));
    for (double& c : m) in >> c;
    ticks.emplace_back(v, esi::plot::kHeight - m[5]);  // the svg device's y runs upwards
  }
  ASSERT_GE(ticks.size(), 3u) << "y tick labels";
  std::sort(ticks.begin(), ticks.end());
  for (std::size_t k = 0; k < ticks.size(); ++k) {
    EXPECT_GE(ticks[k].first, 39.9889 - 1e-9);
    EXPECT_LE(ticks[k].first, 39.9899 + 1e-9);
    EXPECT_NEAR(ticks[k].second, pixel_of(images.frame, 0, ticks[k].first).second, 1.0)
        << "the label " << ticks[k].first << " is not at its tick";
    if (k > 0) {
      EXPECT_GT(ticks[k].first, ticks[k - 1].first) << "two ticks with one label";
    }
  }
}

// A 3 x 2 heatmap: each cell's centre pixel has the colour map's colour for its value, and the
// lightness of the cells rises with the value (viridis), whichever the cells' order; a missing
// value leaves its cell blank.
TEST(PlotRender, HeatmapCellsFollowTheColourMapOrderOfTheirValues) {
  Figure fig;
  fig.kind = Kind::Map;
  fig.x = {1, 2, 3};
  fig.y = {10, 20};
  fig.z = {5, 1, 3, 0, NAN, 4};  // rows per y
  fig.zlabel = "x [mol] (final)";
  const esi::plot::Images images = esi::plot::render(fig);
  const esi::plot::Frame& f = images.frame;
  EXPECT_DOUBLE_EQ(f.xmin, 0.5);  // cell edges halfway between centres
  EXPECT_DOUBLE_EQ(f.xmax, 3.5);
  EXPECT_DOUBLE_EQ(f.ymin, 5);
  EXPECT_DOUBLE_EQ(f.ymax, 25);
  const Rgb img = decode(images.png);
  std::vector<std::pair<double, unsigned>> cells;
  for (std::size_t j = 0; j < 2; ++j)
    for (std::size_t i = 0; i < 3; ++i) {
      const auto [px, py] = pixel_of(f, fig.x[i], fig.y[j]);
      const unsigned c = img.at(static_cast<int>(px), static_cast<int>(py));
      const double v = fig.z[j * 3 + i];
      if (std::isnan(v)) {
        EXPECT_EQ(c, kWhite);
        continue;
      }
      EXPECT_LE(channel_distance(c, esi::plot::colormap_rgb(v / 5.0)), 3) << "value " << v;
      cells.emplace_back(v, c);
    }
  std::sort(cells.begin(), cells.end());
  for (std::size_t k = 1; k < cells.size(); ++k)
    EXPECT_GT(luminance(cells[k].second), luminance(cells[k - 1].second)) << cells[k].first;
  EXPECT_NE(decoded(images.svg).find(">x [mol] (final)<"), std::string::npos);
}

// z = x on a 21 x 11 grid with a contour at 0.25: a white line crosses the map where x = 0.25,
// not where x = 0.6 (there the map's colour is the colour map's for 0.6).
TEST(PlotRender, AContourIsDrawnWhereTheFieldHasItsLevel) {
  Figure fig;
  fig.kind = Kind::Map;
  for (int i = 0; i <= 20; ++i) fig.x.push_back(0.05 * i);
  for (int j = 0; j <= 10; ++j) fig.y.push_back(0.1 * j);
  for (double y : fig.y)
    for (double x : fig.x) fig.z.push_back(x + 0 * y);
  fig.contours = {0.25, 7.0};  // 7 is outside the field: not drawn
  const esi::plot::Images images = esi::plot::render(fig);
  const Rgb img = decode(images.png);
  int white_rows = 0;
  for (double y : {0.12, 0.33, 0.55, 0.77}) {
    const auto [px, py] = pixel_of(images.frame, 0.25, y);
    double lightest = 0;  // the line is antialiased: the lightest pixel across it
    for (int dx = -2; dx <= 2; ++dx)
      lightest =
          std::max(lightest,
                   luminance(img.at(static_cast<int>(std::lround(px)) + dx, static_cast<int>(py))));
    white_rows += lightest > 200;  // viridis at 0.25 is about 80
    const auto [qx, qy] = pixel_of(images.frame, 0.6, y);
    EXPECT_LE(channel_distance(img.at(static_cast<int>(qx), static_cast<int>(qy)),
                               esi::plot::colormap_rgb(0.6)),
              6);
  }
  EXPECT_GE(white_rows, 3) << "the contour at 0.25 (its label may cover one place)";
}

/// The images of `fig` drawn in a fresh process (forked before anything else is drawn in it).
std::string drawn_alone(const Figure& fig) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const esi::plot::Images images = esi::plot::render(fig);
    const std::string both = images.png + images.svg;
    for (std::size_t sent = 0; sent < both.size();) {
      const ssize_t n = ::write(fds[1], both.data() + sent, both.size() - sent);
      if (n <= 0) ::_exit(1);
      sent += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

// PLplot keeps global state between streams: a plot drawn after others (a log axis, a legend,
// a colour map with contours, one with no finite point) gives the bytes it gives alone.
TEST(PlotRender, APlotDrawnAfterOthersGivesTheBytesItGivesAlone) {
  Figure legend = straight_line();
  legend.log_y = true;
  legend.series.push_back({"second", {1, 2, 3}, {1e-3, 1e-2, 1e-1}});
  Figure map;
  map.kind = Kind::Map;
  map.log_x = true;
  map.x = {1, 10, 100};
  map.y = {0, 1};
  map.z = {1, 2, 3, 4, 5, 6};
  map.contours = {3.5};
  Figure empty = straight_line();
  for (double& v : empty.series[0].y) v = NAN;
  Figure scatter;
  scatter.kind = Kind::Scatter;
  scatter.series = {{"p", {1, 2, 3}, {3, 1, 2}}, {"q", {1, 2, 3}, {0.5, 0.25, 4}}};
  const std::vector<Figure> figures = {legend, map, empty, scatter, straight_line()};
  std::vector<std::string> together;
  for (const Figure& fig : figures) {
    const esi::plot::Images images = esi::plot::render(fig);
    together.push_back(images.png + images.svg);
  }
  for (std::size_t k = 0; k < figures.size(); ++k) {
    const std::string alone = drawn_alone(figures[k]);
    EXPECT_GT(alone.size(), 2000u) << k;
    EXPECT_TRUE(alone == together[k]) << "figure " << k << " differs when drawn after the others";
  }
  EXPECT_NE(together[2], together[4]);  // the figures really differ
}

TEST(PlotRender, PlotsJsonFormsAreRead) {
  const Figure line =
      esi::plot::figure_from_json(json::parse(R"({"type": "line", "title": "t", "xlabel": "k [1/s]",
      "xscale": "log", "lines": [{"label": "a", "x": [1, 2], "y": [3, null]}]})"));
  EXPECT_EQ(line.kind, Kind::Line);
  EXPECT_TRUE(line.log_x);
  EXPECT_FALSE(line.log_y);
  ASSERT_EQ(line.series.size(), 1u);
  EXPECT_TRUE(std::isnan(line.series[0].y[1]));
  const Figure field =
      esi::plot::figure_from_json(json::parse(R"({"type": "field_snapshot", "x": [0, 1],
      "y": [0, 1, 2], "z": [[1, 2], [3, 4], [5, null]], "contours": [2.5], "zlabel": "u"})"));
  EXPECT_EQ(field.kind, Kind::Map);
  EXPECT_EQ(field.z.size(), 6u);
  EXPECT_EQ(field.contours, std::vector<double>{2.5});
  const Figure profile = esi::plot::figure_from_json(json::parse(R"({"type": "field_slice",
      "lines": [{"label": "u", "x": [0, 1], "y": [1, 2]}]})"));
  EXPECT_EQ(profile.kind, Kind::Line);
}

TEST(PlotRender, MalformedPlotDataIsLocated) {
  try {
    esi::plot::figure_from_json(
        json::parse(R"({"type": "heatmap", "x": [1, 2], "y": [1, 2], "z": [[1, 2], [3]]})"),
        "plots.json", "/plots/3");
    FAIL() << "a ragged z was accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "invalid_plot_data");
    EXPECT_EQ(e.diagnostic().pointer, "/plots/3/z/1");
    EXPECT_EQ(e.diagnostic().file, "plots.json");
  }
  try {
    esi::plot::figure_from_json(json::parse(R"({"type": "pie", "lines": []})"), "p.json",
                                "/plots/0");
    FAIL() << "an unknown type was accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.diagnostic().pointer, "/plots/0/type");
  }
}

}  // namespace
